"""The Sandbox: runs model-written JavaScript snippets in one V8 isolate per agent run.

Each snippet is the body of an async function. Its only way out is `ctx.manager.invoke(name,
args)`, a promise settled by Python, and `ctx.manager.finish(value)`. The bridge is pull-based:
Python starts the snippet, then polls the isolate for invoke requests (JSON text), runs them as
tasks on the caller's event loop, and delivers their results (JSON text) back, until the
snippet's promise has settled and no invoke is outstanding. Nothing but strings crosses, and
Python re-checks every limit the prelude enforces. See engine.py for why no blocking mini-racer
call is used once agent code has run. A timeout, a heap-limit hit or a tampered bridge closes
the isolate; the next snippet gets a fresh one with `memory` restored from the last snapshot.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from agentapps.errors import ArgsError
from agentapps.sandbox.engine import Engine, IsolateFault, IsolateMemoryError
from agentapps.sandbox.results import InvokeFn, SandboxLimits, SnippetResult, error
from agentapps.sandbox.snippet import Snippet

DEFAULT_LIMITS = SandboxLimits()
RESET_NOTE = (" The sandbox was reset and `memory` restored from its last snapshot (taken after "
              "each completed snippet).")


@cache
def _prelude_template() -> str:
    return (Path(__file__).parent / "prelude.js").read_text(encoding="utf-8")


class Sandbox:
    """A V8 isolate for one agent run; use as a (sync or async) context manager."""

    def __init__(self, limits: SandboxLimits = DEFAULT_LIMITS,
                 memory: dict[str, Any] | None = None) -> None:
        try:
            self._memory_json = json.dumps({} if memory is None else memory, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ArgsError(f"The sandbox memory seed is not JSON: {exc}.") from None
        self._limits = limits
        self._bridge = "__agentapps_" + secrets.token_hex(8)
        self._busy = False
        self._engine = Engine()
        try:
            self._engine.open_sync(self._prelude(), limits.heap_bytes)
        except BaseException:
            self._engine.close()
            raise

    @property
    def memory(self) -> Any:
        """The JSON value of the `memory` global after the last completed snippet."""
        return json.loads(self._memory_json)

    def close(self) -> None:
        self._engine.close()

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
        if self._engine.closed:
            raise RuntimeError("this Sandbox is closed")
        if self._busy:
            raise RuntimeError("Sandbox.run is not re-entrant: await the previous snippet first")
        self._busy = True
        try:
            return await self._run(code, invoke)
        finally:
            self._busy = False

    async def _run(self, code: str, invoke: InvokeFn) -> SnippetResult:
        snippet = Snippet(self._limits, invoke, self._bridge)
        try:
            if not self._engine.ready:
                await self._engine.open(self._prelude(), self._limits.heap_bytes)
            async with asyncio.timeout(self._limits.timeout_s):
                try:
                    final = await snippet.drive(self._engine, code)
                except IsolateMemoryError:
                    mib = f"{self._limits.heap_bytes / (1 << 20):g}"
                    failure = error("memory", f"The snippet exceeded the {mib} MiB heap limit.")
                except IsolateFault as exc:
                    failure = error("runtime", f"The sandbox bridge failed ({exc}).")
                else:
                    if final["memory"] is not None:
                        self._memory_json = final["memory"]
                    return snippet.result(None, final)
        except TimeoutError:
            failure = error("timeout", f"The snippet ran longer than {self._limits.timeout_s:g} s "
                            "(wall clock) and was stopped.")
        except BaseException:  # cancelled from outside: never leave agent code running
            self._engine.reopen_sync(self._prelude(), self._limits.heap_bytes)
            raise
        finally:
            snippet.cancel_invokes()
        await self._engine.reopen(self._prelude(), self._limits.heap_bytes)
        failure["message"] += RESET_NOTE
        return snippet.result(failure)

    def _prelude(self) -> str:
        config = {
            "maxLength": self._limits.max_length,
            "maxOutput": self._limits.max_output_chars,
            "maxInvokes": self._limits.max_invokes,
            "maxArgBytes": self._limits.max_arg_bytes,
            "memory": self._memory_json,
        }
        return (_prelude_template().replace("__AGENTAPPS_BRIDGE__", self._bridge)
                .replace("__AGENTAPPS_CONFIG__", json.dumps(config)))
