"""Loopback fakes of external services (Bedrock) that real clients talk to in tests."""
