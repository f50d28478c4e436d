"""The sandbox's vocabulary: limits, the result of one snippet, and the invoke callback type."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

InvokeFn = Callable[[str, Any], Awaitable[Any]]
"""(bare skill name, JSON args) -> JSON-able result; any Exception it raises reaches JS as an Error."""

ErrorType = Literal["timeout", "memory", "syntax", "runtime", "limit", "invoke"]


@dataclass(frozen=True)
class SandboxLimits:
    """The limits of one sandbox: time, memory, output and invoke counts."""

    timeout_s: float = 30.0  # wall clock per snippet, including the invokes it awaits
    heap_bytes: int = 128 * 1024 * 1024  # V8's hard heap limit in the isolate
    # RLIMIT_DATA of the sandbox process: what V8 allocates outside its heap (compiler zones,
    # huge backing stores) ends there. V8 does not start under 600 MiB (measured).
    process_bytes: int = 1 << 30
    max_output_chars: int = 30_000  # console output kept: head and tail, with the original size
    max_invokes: int = 50  # ctx.manager.invoke calls per snippet
    max_arg_bytes: int = 1 << 20  # UTF-8 size of one invoke's JSON args
    max_value_bytes: int = 4 << 20  # UTF-8 JSON of the return value, the finish value, `memory`
    max_depth: int = 100  # bracket nesting of any JSON value agent code hands over (args too)
    max_length: int = 1 << 24  # longest array/string that looping builtins may walk (see prelude.js)


@dataclass
class SnippetResult:
    """What one snippet did: its value or error, and its console output."""

    ok: bool
    value: Any  # the JSON value the snippet returned, or None
    logs: str  # captured console output, truncated to head and tail
    finished: bool  # ctx.manager.finish(...) was called
    finish_value: Any
    error: dict[str, str] | None  # {"type": ErrorType, "message": str}
    invokes: int  # invoke calls that reached the host


def error(type_: ErrorType, message: str) -> dict[str, str]:
    return {"type": type_, "message": message}


def join_logs(head: str, tail: str, total: int, limit: int) -> str:
    """Rebuild console output from the isolate's head and tail buffers, noting what was cut."""
    if total <= limit:
        return (head + tail).removesuffix("\n")
    half = limit // 2
    kept_head, kept_tail = head[:half], (head + tail)[-half:]
    omitted = total - len(kept_head) - len(kept_tail)
    note = f"\n[... {omitted} characters omitted; console output was {total} characters ...]\n"
    return (kept_head + note + kept_tail).removesuffix("\n")
