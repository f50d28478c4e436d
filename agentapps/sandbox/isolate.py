"""The Sandbox: model-written JavaScript snippets in a V8 isolate, in a process of its own, per run.

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
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from agentapps.errors import ArgsError
from agentapps.sandbox import pool
from agentapps.sandbox.engine import Engine, IsolateDied, IsolateFault, IsolateMemoryError
from agentapps.sandbox.results import InvokeFn, SandboxLimits, SnippetResult, error
from agentapps.sandbox.snippet import Snippet

DEFAULT_LIMITS = SandboxLimits()
RESET_NOTE = (" The sandbox was reset and `memory` restored from its last snapshot (taken after "
              "each completed snippet).")
CLOSE_WAIT_S = 2.0
START_TIMEOUT_S = 30.0  # for the sandbox process to start; a loaded machine can take seconds


@cache
def _prelude_template() -> str:
    return (Path(__file__).parent / "prelude.js").read_text(encoding="utf-8")


def prelude(limits: SandboxLimits, memory_json: str, middleware: bool = False) -> str:
    """The prelude script for a fresh isolate: limits and the `memory` seed filled in, and the
    `target` global when the agent serves middleware."""
    config = {
        "maxLength": limits.max_length,
        "maxOutput": limits.max_output_chars,
        "maxInvokes": limits.max_invokes,
        "maxArgBytes": limits.max_arg_bytes,
        "maxValue": limits.max_value_bytes,
        "memory": memory_json,
        "middleware": middleware,
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
                 memory: dict[str, Any] | None = None, *, middleware: bool = False) -> None:
        try:
            self._memory_json = json.dumps({} if memory is None else memory, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ArgsError(f"The sandbox memory seed is not JSON: {exc}.") from None
        self._limits = limits
        self._middleware = middleware  # `target.manager.next()` exists (its calls arrive as NEXT)
        self._busy = False
        self._closed = False
        self._dead: list[Engine] = []  # killed, not yet reaped
        # started now, to overlap the caller's first model call; in a host that keeps a spare
        # ready, taken at the first snippet instead (a run that answers without code takes none)
        self._engine: Engine | None = None if pool.warm() else Engine(limits, self._prelude())

    @property
    def memory(self) -> Any:
        """The JSON value of the `memory` global after the last completed snippet."""
        return json.loads(self._memory_json)

    def set_timeout(self, seconds: float) -> None:
        """Change the wall-clock limit of the next snippets (it is applied by this process only,
        so it can change after the sandbox process started)."""
        self._limits = replace(self._limits, timeout_s=seconds)

    @property
    def pid(self) -> int | None:
        """The sandbox process's id (None between a failure and the next snippet)."""
        return None if self._engine is None else self._engine.pid

    def close(self) -> None:
        """Kill the sandbox process; it never needs to exit cleanly (idempotent)."""
        self._closed = True
        self._discard()
        self._dead = [engine for engine in self._dead if not engine.reap(CLOSE_WAIT_S)]
        pool.replenish()  # a process taken for a snippet that never ran (a warm host's spare)

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
        engine = self._engine
        snippet = Snippet(self._limits, invoke)
        try:
            final, failure = await self._attempt(engine, snippet, code)
        except BaseException:  # cancelled from outside: never leave agent code running
            self._discard()
            raise
        finally:
            snippet.cancel_invokes()
            pool.replenish()  # the spare this run took (if it took one), now that its snippet is done
        if failure is None:
            if final is not None and final["memory"] is not None:
                self._memory_json = final["memory"]
            return snippet.result(None, final)
        self._discard()
        self._engine = Engine(self._limits, self._prelude())  # warm for the next snippet
        failure["message"] += RESET_NOTE
        return snippet.result(failure, final)

    async def _attempt(self, engine: Engine, snippet: Snippet, code: str
                       ) -> tuple[dict[str, Any] | None, dict[str, str] | None]:
        """Run the snippet: its final state, and the failure (if any) after which the process must
        be replaced. Waiting for the process to start does not count against the snippet."""
        limits = self._limits
        final = None
        try:
            try:
                async with asyncio.timeout(START_TIMEOUT_S):
                    await engine.started()
                    if not engine.seeded:
                        if self._memory_json != "{}":
                            await engine.call(("S", "memory", self._memory_json))
                        engine.seeded = True
            except TimeoutError:
                return None, error("runtime", "The sandbox process did not start within "
                                   f"{START_TIMEOUT_S:g} s.")
            async with asyncio.timeout(limits.timeout_s):
                final = await snippet.drive(engine, code)
        except TimeoutError:
            return None, error("timeout", f"The snippet ran longer than {limits.timeout_s:g} s "
                               "(wall clock) and was stopped.")
        except IsolateMemoryError:
            return None, error("memory", f"The snippet exceeded the {_mib(limits.heap_bytes)} "
                               "heap limit.")
        except IsolateFault as exc:
            return None, error("runtime", f"The sandbox bridge failed ({exc}).")
        except IsolateDied:  # how, once it is gone (outside the timeout)
            return None, await self._obituary(engine)
        refused = final["memory_refused"]
        if refused is not None:  # the live `memory` is not what the snapshot says: reset to it
            return final, error("limit", f"Limit reached: {refused}.")
        return final, None

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
        # the `memory` seed is set after the prelude (in _attempt): every run of the same limits
        # posts the same prelude, so the warm spare (pool.py) fits runs whatever their args
        return prelude(self._limits, "{}", self._middleware)
