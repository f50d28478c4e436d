"""state-wait: block until a state key exists (another skill or process sets it), then return its value."""

import asyncio
import time

from agentapps.errors import LimitError
from agentapps.stores.state import store_for

frontmatter = {
    "name": "state-wait",
    "description": (
        "Wait until a key exists in the key-value state and return its value: at once if it is set "
        "already, otherwise as soon as another skill (or, with the file store, another process) sets "
        "it. Fails with a limit error after `timeout` seconds."
    ),
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "key": {"type": "string", "minLength": 1, "maxLength": 256,
                        "description": "The key to wait for, e.g. 'job:123:done'."},
                "timeout": {"type": "number", "minimum": 0, "maximum": 86400, "default": 60,
                            "description": "Seconds to wait before giving up (fractions allowed)."},
                "store": {"type": "string", "enum": ["file", "memory"], "default": "file",
                          "description": "Backend: 'file' (.agent-apps/state/, works across processes) "
                                         "or 'memory' (this process only)."},
            },
            "required": ["key"],
            "additionalProperties": False,
        },
        "tags": ["runtime", "state"],
    },
}


async def run(ctx, args):
    store = _store(ctx, args.get("store", "file"))
    key, timeout = args["key"], float(args.get("timeout", 60))
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        try:
            return store.wait(key, 0)  # a zero timeout checks once without blocking the event loop
        except LimitError:
            pass
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LimitError(
                f"Timed out after {timeout:g} s waiting for state key {key!r}; raise the timeout or "
                "check that something sets the key.",
                skill="state-wait",
            )
        await asyncio.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.1)


def _store(ctx, kind):
    return store_for(ctx.globals.internals, ctx.globals.config.data_dir, kind)
