"""File skills confined to the project."""
