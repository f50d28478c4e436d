"""What `agentapps run` reads besides argv: --args-file and piped stdin, capped and UTF-8 only."""

from __future__ import annotations

import json
import sys
from typing import Any

from agentapps.cli.skillargs import property_for
from agentapps.errors import ArgsError, UsageError


def read_capped(spec: str, label: str) -> str:
    """The text of a file (or stdin for '-'), refused past the args limit: /dev/zero must not hang us."""
    from agentapps.schemas.validation import MAX_ARGS_BYTES

    try:
        if spec == "-":
            data = sys.stdin.buffer.read(MAX_ARGS_BYTES + 1) if sys.stdin is not None else b""
        else:
            with open(spec, "rb") as handle:
                data = handle.read(MAX_ARGS_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"Cannot read {label}: {exc.strerror or exc}.") from None
    if len(data) > MAX_ARGS_BYTES:
        raise ArgsError(f"{label} holds more than 1 MiB; the limit for args is 1 MiB.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ArgsError(f"{label} is not UTF-8 text (invalid byte at offset {exc.start}).") from None


def read_args_file(spec: str) -> dict[str, Any]:
    text = read_capped(spec, f"--args-file {spec}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArgsError(f"--args-file {spec} is not valid JSON: {exc.msg} at line {exc.lineno}.") from None
    except RecursionError:
        raise ArgsError(f"--args-file {spec} is nested too deeply to read.") from None
    if not isinstance(data, dict):
        raise ArgsError(f"--args-file {spec} must hold a JSON object.")
    return data


def stdin_input(params: dict[str, Any] | None, args: dict[str, Any], used_stdin: bool) -> None:
    props = (params or {}).get("properties") or {}
    key = property_for("input", props)
    if key is None or key in args or used_stdin:
        return
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return
    except (OSError, ValueError):
        return
    data = read_capped("-", "stdin")
    if data:
        args[key] = data
