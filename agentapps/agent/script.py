"""The scripted-provider file format, its per-process cursor, and the recorder that writes it.

A script is JSON (or YAML): `{"turns": [{"text": "...", "code": "..." | ["...", ...]}, ...]}`.
Each turn is one model reply: `code` becomes `invoke` tool calls, a turn without `code` is a
final answer. Optional per turn: `usage` ({inputTokens, outputTokens, cacheReadInputTokens,
cacheWriteInputTokens}), `error` (the model call fails with this message), `delay` (seconds
before the reply), `model` (the model that answered, when a fallback did). A turn with `summary`
(text) is the answer to a context-editing summary call, not a model turn. Unknown keys are ignored.

Every agent run of one process that plays the same file shares one cursor, so a recorded run
whose agent code started sub-agents replays exactly (a sub-agent's turns follow the turn that
started it). A run that starts after the script was used up plays it again from the top.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.agent.slots import AGENT_RECORDER, AGENT_SCRIPTS
from agentapps.core.atomic import write_atomic
from agentapps.errors import ConfigError, StoreWriteError

if TYPE_CHECKING:
    from agentapps.context.context import Globals

MAX_SCRIPT_BYTES = 64 * 1024 * 1024  # far above any real recording; /dev/zero must not be read forever


@dataclass(frozen=True)
class Turn:
    """One scripted model turn: its text, the code it runs, its usage, or the error it raises."""

    text: str = ""
    code: tuple[str, ...] = ()
    usage: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    delay: float = 0.0
    summary: str | None = None
    model: str | None = None


def _bad(path: Path, where: str, why: str) -> ConfigError:
    return ConfigError(f"In the script, {where} {why}.", file=path)


def _turn(raw: Any, path: Path, n: int) -> Turn:
    where = f"turn {n}"
    if not isinstance(raw, dict):
        raise _bad(path, where, "must be an object like {\"text\": ..., \"code\": ...}")
    text, code, usage = raw.get("text", ""), raw.get("code", ()), raw.get("usage") or {}
    error, delay = raw.get("error"), raw.get("delay", 0)
    if not isinstance(text, str):
        raise _bad(path, where, "has a `text` that is not a string")
    codes = (code,) if isinstance(code, str) else code
    if not isinstance(codes, (list, tuple)) or not all(isinstance(c, str) for c in codes):
        raise _bad(path, where, "has a `code` that is neither a string nor a list of strings")
    if not isinstance(usage, dict) or not all(isinstance(v, int) for v in usage.values()):
        raise _bad(path, where, "has a `usage` that is not an object of token counts")
    if error is not None and not isinstance(error, str):
        raise _bad(path, where, "has an `error` that is not a string")
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or delay < 0:
        raise _bad(path, where, "has a `delay` that is not a number of seconds")
    summary, model = raw.get("summary"), raw.get("model")
    for key, value in (("summary", summary), ("model", model)):
        if value is not None and not isinstance(value, str):
            raise _bad(path, where, f"has a `{key}` that is not a string")
    return Turn(text, tuple(codes), dict(usage), error, float(delay), summary, model)


def load_script(path: Path) -> list[Turn]:
    """Read and check a script file; every problem is a ConfigError naming the file."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_SCRIPT_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"Cannot read the script: {exc.strerror or exc}.", file=path) from None
    if len(raw) > MAX_SCRIPT_BYTES:
        raise ConfigError(f"The script is larger than {MAX_SCRIPT_BYTES // 2**20} MiB.", file=path)
    try:
        raw_text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"The script is not UTF-8 text (invalid byte at offset {exc.start}).",
                          file=path) from None
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(raw_text)
        else:
            data = json.loads(raw_text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"The script is not valid JSON: {exc.msg}.", file=path,
                          line=exc.lineno) from None
    except RecursionError:
        raise ConfigError("The script is nested too deeply to read.", file=path) from None
    except Exception as exc:  # noqa: BLE001 - yaml.YAMLError and friends
        raise ConfigError(f"The script is not valid YAML: {exc}.", file=path) from None
    if not isinstance(data, dict) or not isinstance(data.get("turns"), list):
        raise ConfigError("The script must be an object with a `turns` list.", file=path)
    return [_turn(raw, path, n) for n, raw in enumerate(data["turns"], 1)]


@dataclass
class Cursor:
    """Where the agent runs of this process are in one script."""

    path: Path
    turns: list[Turn]
    index: int = 0

    def begin_run(self) -> None:
        if self.index >= len(self.turns):
            self.index = 0

    def take(self) -> Turn | None:
        if self.index >= len(self.turns):
            return None
        self.index += 1
        return self.turns[self.index - 1]


def cursor_for(g: Globals, path: Path) -> Cursor:
    """The process-wide cursor of `path` (kept in the run's `AGENT_SCRIPTS`)."""
    cursors = g.internals.get(AGENT_SCRIPTS)
    key = str(path.resolve())
    if key not in cursors:
        cursors[key] = Cursor(path, load_script(path))
    return cursors[key]


@dataclass
class Recorder:
    """Collects every agent turn of the process in play order and writes them as a script."""

    path: Path
    turns: list[dict[str, Any] | None] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    redact: Callable[[Any], Any] = field(default=lambda data: data)
    # why the last write failed (a full disk): the run goes on and ends with its result, and the
    # door reports this after it (see `write`)
    failed: StoreWriteError | None = None

    def reserve(self) -> int:
        """Hold a slot at turn start, so sub-agent turns land after the turn that started them."""
        self.turns.append(None)
        return len(self.turns) - 1

    def fill(self, slot: int, text: str, codes: list[str], usage: dict[str, int],
             model: str | None = None) -> None:
        turn: dict[str, Any] = {"text": text}
        if codes:
            turn["code"] = codes[0] if len(codes) == 1 else list(codes)
        if any(usage.values()):
            turn["usage"] = {k: v for k, v in usage.items() if v}
        if model:
            turn["model"] = model
        self.turns[slot] = turn

    def add_summary(self, summary: str, usage: dict[str, int]) -> None:
        """A context-editing summary call, played back by agent-scripted when it compacts."""
        turn: dict[str, Any] = {"summary": summary}
        if any(usage.values()):
            turn["usage"] = {k: v for k, v in usage.items() if v}
        self.turns.append(turn)

    def write(self) -> None:
        """Write every turn so far over the file. It never raises: a recording is a side record,
        and the answer it records is paid for already. A failure is kept in `failed` (cleared by a
        later write that succeeds) for the door to report once the run has ended."""
        turns = [t for t in self.turns if t is not None]
        if not turns:
            return  # a run that failed before any model turn must not replace an earlier recording
        body = self.redact({"turns": turns, **({"recorded": self.info} if self.info else {})})
        try:
            write_atomic(self.path, (json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode())
        except OSError as exc:
            self.failed = StoreWriteError(
                f"The recording was not saved: {exc.strerror or exc}; a file already there "
                "is left as it was. Free some disk space (or fix the folder's permissions) and record "
                "again.", file=self.path)
            return
        self.failed = None


def recorder_for(g: Globals, path: str | None) -> Recorder | None:
    if not path:
        return None
    found = g.internals.get(AGENT_RECORDER)
    if not isinstance(found, Recorder):
        found = Recorder(Path(path), redact=g.internals.redactor.redact_data)
        g.internals.set(AGENT_RECORDER, found)
    return found
