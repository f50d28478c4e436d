"""cascade package."""
