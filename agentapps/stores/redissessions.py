"""The Redis session backend: one list per session key, appended and trimmed to the rolling window
in one transaction (MULTI/EXEC), so appends from many processes never lose or reorder entries."""

from __future__ import annotations

import json

from agentapps.stores.link import RedisLink
from agentapps.stores.sessions import Entry, checked_key, decode_entries


class RedisSessionStore:
    """Sessions under `agentapps:{namespace}:session:{key}`, shared by every process of the project."""

    def __init__(self, link: RedisLink, kind: str = "session") -> None:
        self.link = link
        self.kind = kind  # `checkpoint`: an agent run's checkpoints (agentapps.agent.checkpoint)

    def _key(self, key: str) -> str:
        return self.link.key(self.kind, checked_key(key))

    def load(self, key: str) -> list[Entry]:
        name = self._key(key)
        items = self.link.call(self.link.client.lrange, name, 0, -1)
        return decode_entries(items, f"Session {key!r:.60} on the Redis server at {self.link.where}",
                              f"delete the Redis key '{name}' to start the session afresh")

    def append(self, key: str, entry: Entry, max_entries: int, *, ttl: float | None = None) -> None:
        """Append `entry`, keep the last `max_entries`; with `ttl` (seconds) the key expires that
        long after this write."""
        name = self._key(key)
        text = json.dumps(entry, ensure_ascii=False)

        def write() -> None:
            with self.link.client.pipeline(transaction=True) as pipe:
                pipe.rpush(name, text)
                pipe.ltrim(name, -max_entries, -1)
                if ttl is not None:
                    pipe.pexpire(name, int(ttl * 1000))
                pipe.execute()

        self.link.call(write)

    def all_keys(self) -> list[str]:
        return self.link.names(self.link.key(self.kind, ""))

    def clear(self, key: str) -> bool:
        return bool(self.link.call(self.link.client.delete, self._key(key)))
