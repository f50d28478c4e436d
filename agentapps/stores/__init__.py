"""Persistent stores: key-value state (and, later, sessions)."""
