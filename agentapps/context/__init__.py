"""context package."""
