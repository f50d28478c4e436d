"""Redis fixtures for the store tests (tests/support/redis_server.py)."""

from tests.support.redis_server import redis_project, redis_url  # noqa: F401 - fixtures
