"""Outbound network access: address policy and a pinned, capped HTTP client."""
