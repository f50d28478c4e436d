"""Callback refs: in-memory skills named `{label}-{8 hex}` whose callers wait for an answer.

`refs` creates, serves and releases them in this process (or, with `store: redis`, on the project's
Redis server through `remote`, so any process of the project may answer). A runtime service above
the stores, like the event bus: the skill files and the onion below it never import it.
"""
