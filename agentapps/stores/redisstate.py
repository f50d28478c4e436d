"""The Redis state backend: one hash per key (`v` the value's canonical JSON, `w` the token of the
write that put it there), written by a Lua script that checks `expect`, writes, sets or clears the
time-to-live and publishes on the key's channel as one atomic step.

The write token makes a compare-and-swap safe to retry after a lost connection: if the first
attempt was applied and only its answer was lost, the retry finds its own token and succeeds
instead of reporting a conflict (and the caller's retry loop adding twice). `wait` subscribes to
the key's channel first and reads the key after that, so a write between the two is never missed;
a reconnection re-subscribes and reads again.
"""

from __future__ import annotations

import builtins
import secrets
import time
from collections.abc import Callable
from typing import Any, Final

from agentapps.errors import StoreCorruptError
from agentapps.stores.keys import MISSING, canonical, conflict, timed_out, validate_key
from agentapps.stores.link import RedisLink
from agentapps.stores.stored import NotStored, decode

SET: Final = """
local current = redis.call('HGET', KEYS[1], 'v')
if ARGV[3] == 'absent' and current and current ~= 'null' then
  if redis.call('HGET', KEYS[1], 'w') == ARGV[5] then return 1 end
  return 0
end
if ARGV[3] == 'equal' and current ~= ARGV[4] then
  if current and redis.call('HGET', KEYS[1], 'w') == ARGV[5] then return 1 end
  return 0
end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'w', ARGV[5])
if ARGV[2] == '' then redis.call('PERSIST', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
redis.call('PUBLISH', ARGV[6], '1')
return 1
"""


class RedisStateStore:
    """State under `agentapps:{namespace}:state:{key}`, shared by every process of the project."""

    def __init__(self, link: RedisLink, *, redact: Callable[[Any], Any] | None = None) -> None:
        self.link = link
        self.redact = redact
        self._set = link.script(SET)

    def _key(self, key: str) -> str:
        return self.link.key("state", validate_key(key))

    def _channel(self, key: str) -> str:
        return self.link.key("state-set", key)

    def get(self, key: str) -> Any | None:
        name = self._key(key)
        text = self.link.call(self.link.client.hget, name, "v")
        return None if text is None else self._decode(key, name, text)

    def _decode(self, key: str, name: str, text: bytes | str) -> Any:
        try:
            return decode(text, "a state value")
        except NotStored as exc:
            raise StoreCorruptError(f"State key {key!r:.60} on the Redis server at {self.link.where} {exc}; it was "
                                    f"left untouched — delete the Redis key '{name}' or set the key again.") from None

    def set(self, key: str, value: Any, *, expect: Any = MISSING, ttl: float | None = None) -> None:
        name = self._key(key)
        text = canonical(self.redact(value) if self.redact is not None else value)
        mode, expected = "", ""
        if expect is not MISSING:
            expected = canonical(expect, "expect value")
            mode = "absent" if expected == "null" else "equal"
        ttl_ms = "" if ttl is None else str(max(1, round(ttl * 1000)))
        token = secrets.token_hex(8)
        done = self.link.call(self._set, [name], text, ttl_ms, mode, expected, token, self._channel(key))
        if not done:
            raise conflict(key, expect)

    def delete(self, key: str) -> bool:
        return bool(self.link.call(self.link.client.delete, self._key(key)))

    def list(self, prefix: str = "") -> builtins.list[str]:
        return self.link.names(self.link.key("state", ""), prefix)

    async def wait(self, key: str, timeout: float) -> Any:
        name, channel = self._key(key), self._channel(key)
        link = self.link
        pubsub = link.client.pubsub()  # type: ignore[no-untyped-call]
        deadline = time.monotonic() + timeout
        # Subscribe before reading: a write in between is then announced, never lost.
        link.call(pubsub.subscribe, channel)
        try:
            while True:
                text = link.call(link.client.hget, name, "v")
                if text is not None:
                    return self._decode(key, name, text)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise timed_out(key, timeout)
                # Any message means "look again": a write's announcement, or the confirmation
                # that a reconnected subscription is back (writes while it was away are unannounced).
                heard = await link.slices(lambda seconds: link.call(pubsub.get_message, timeout=seconds), left)
                if heard is None and time.monotonic() >= deadline:
                    raise timed_out(key, timeout)
        finally:
            try:
                pubsub.close()
            except Exception:  # noqa: BLE001, S110 - closing a connection that is already gone
                pass
