"""Redis fixtures for the runtime skill and worker tests (tests/support/redis_server.py)."""

from tests.support.redis_server import redis_project, redis_url  # noqa: F401 - fixtures
