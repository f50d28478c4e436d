"""Markdown text directives: scanning `:name[label]{attrs}` out of skill bodies."""
