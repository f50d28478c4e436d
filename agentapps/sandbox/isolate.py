"""The Sandbox: runs model-written JavaScript snippets in a V8 isolate in its own process, per agent run.

Each snippet is the body of an async function. Its only way out is `ctx.manager.invoke(name,
args)`, a promise settled by Python, and `ctx.manager.finish(value)`. The bridge is pull-based:
Python starts the snippet, then polls the isolate for invoke requests (JSON text), runs them as
tasks on the caller's event loop, and delivers their results (JSON text) back, until the
snippet's promise has settled and no invoke is outstanding. Nothing but strings crosses, and
Python re-checks every limit the prelude enforces. The isolate lives in a child process (see
engine.py): a timeout, a heap-limit hit, a tampered bridge or the process dying (V8 fatal error,
RLIMIT_DATA) replaces the process, and the next snippet finds a fresh one with `memory` restored
from the last snapshot.
"""

from __future__ import annotations

import asyncio
import json
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from agentapps.errors import ArgsError
from agentapps.sandbox.engine import Engine, IsolateDied, IsolateFault, IsolateMemoryError
from agentapps.sandbox.results import InvokeFn, SandboxLimits, SnippetResult, error
from agentapps.sandbox.snippet import Snippet

DEFAULT_LIMITS = SandboxLimits()
RESET_NOTE = (" The sandbox was reset and `memory` restored from its last snapshot (taken after "
              "each completed snippet).")
CLOSE_WAIT_S = 2.0


@cache
def _prelude_template() -> str:
    return (Path(__file__).parent / "prelude.js").read_text(encoding="utf-8")


def prelude(limits: SandboxLimits, memory_json: str) -> str:
    """The prelude script for a fresh isolate: limits and the `memory` seed filled in."""
    config = {
        "maxLength": limits.max_length,
        "maxOutput": limits.max_output_chars,
        "maxInvokes": limits.max_invokes,
        "maxArgBytes": limits.max_arg_bytes,
        "maxValue": limits.max_value_bytes,
        "memory": memory_json,
    }
    return _prelude_template().replace("__AGENTAPPS_CONFIG__", json.dumps(config))


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


class Sandbox:
    """A V8 isolate in a child process for one agent run; use as a (sync or async) context manager.

    The process starts here, so it warms up while the caller does other work (the first model
    call); `run` waits for it only if it is not ready yet.
    """

    def __init__(self, limits: SandboxLimits = DEFAULT_LIMITS,
                 memory: dict[str, Any] | None = None) -> None:
        try:
            self._memory_json = json.dumps({} if memory is None else memory, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ArgsError(f"The sandbox memory seed is not JSON: {exc}.") from None
        self._limits = limits
        self._busy = False
        self._closed = False
        self._dead: list[Engine] = []  # killed, not yet reaped
        self._engine: Engine | None = Engine(limits, self._prelude())

    @property
    def memory(self) -> Any:
        """The JSON value of the `memory` global after the last completed snippet."""
        return json.loads(self._memory_json)

    @property
    def pid(self) -> int | None:
        """The sandbox process's id (None between a failure and the next snippet)."""
        return None if self._engine is None else self._engine.pid

    def close(self) -> None:
        """Kill the sandbox process; it never needs to exit cleanly (idempotent)."""
        self._closed = True
        self._discard()
        self._dead = [engine for engine in self._dead if not engine.reap(CLOSE_WAIT_S)]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.close()

    async def run(self, code: str, invoke: InvokeFn) -> SnippetResult:
        """Run one snippet to completion (or to its limits) and report what happened."""
        if self._closed:
            raise RuntimeError("this Sandbox is closed")
        if self._busy:
            raise RuntimeError("Sandbox.run is not re-entrant: await the previous snippet first")
        self._busy = True
        try:
            return await self._run(code, invoke)
        finally:
            self._busy = False

    async def _run(self, code: str, invoke: InvokeFn) -> SnippetResult:
        self._dead = [engine for engine in self._dead if not engine.reap(0)]
        if self._engine is None:
            self._engine = Engine(self._limits, self._prelude())
        engine, limits = self._engine, self._limits
        snippet = Snippet(limits, invoke)
        final: dict[str, Any] | None = None
        try:
            async with asyncio.timeout(limits.timeout_s):
                try:
                    final = await snippet.drive(engine, code)
                except IsolateMemoryError:
                    failure = error("memory", f"The snippet exceeded the {_mib(limits.heap_bytes)} "
                                    "heap limit.")
                except IsolateFault as exc:
                    failure = error("runtime", f"The sandbox bridge failed ({exc}).")
                except IsolateDied:
                    failure = None
                else:
                    refused = final["memory_refused"]
                    if refused is None:
                        if final["memory"] is not None:
                            self._memory_json = final["memory"]
                        return snippet.result(None, final)
                    # the live `memory` is not what the snapshot says: reset to the snapshot
                    failure = error("limit", f"Limit reached: {refused}.")
        except TimeoutError:
            failure = error("timeout", f"The snippet ran longer than {limits.timeout_s:g} s "
                            "(wall clock) and was stopped.")
        except BaseException:  # cancelled from outside: never leave agent code running
            self._discard()
            raise
        finally:
            snippet.cancel_invokes()
        if failure is None:  # the process died: how, once it is gone (outside the timeout)
            failure = await self._obituary(engine)
        self._discard()
        self._engine = Engine(limits, self._prelude())  # warm for the next snippet
        failure["message"] += RESET_NOTE
        return snippet.result(failure, final)

    async def _obituary(self, engine: Engine) -> dict[str, str]:
        death = await engine.death()
        if death.out_of_memory:
            return error("memory", "The snippet ran out of memory: its sandbox process (capped at "
                         f"{_mib(self._limits.process_bytes)}) was stopped ({death.summary()}).")
        return error("runtime", f"The sandbox process crashed ({death.summary()}).")

    def _discard(self) -> None:
        if self._engine is not None:
            self._engine.kill()
            self._dead.append(self._engine)
            self._engine = None

    def _prelude(self) -> str:
        return prelude(self._limits, self._memory_json)
