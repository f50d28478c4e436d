"""The runner options of `agentapps run`: one table drives the parser, the usage text, and the
skill-argument parser's check for runner options placed after the skill name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentapps.core.shown import fields_repr
from agentapps.errors import UsageError


class RunnerOption:
    """One option of `agentapps run` (before the skill ref): its spellings, field and help."""

    FIELDS = ("names", "dest", "help", "metavar", "convert", "repeat")
    __slots__ = FIELDS
    names: tuple[str, ...]  # spellings, short first: ("-v", "--verbose")
    dest: str  # the RunOptions field it sets
    help: str
    metavar: str | None  # None: a flag that takes no value
    convert: Callable[[str], Any] | None
    repeat: bool  # values collect into a list

    def __init__(self, names: tuple[str, ...], dest: str, help: str, metavar: str | None = None,
                 convert: Callable[[str], Any] | None = None, repeat: bool = False) -> None:
        self.names, self.dest, self.help = names, dest, help
        self.metavar, self.convert, self.repeat = metavar, convert, repeat

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)


class RunOptions:
    """The runner options of one `agentapps run`, and the skill ref and the tokens after it."""

    FIELDS = ("json", "dry_run", "verbose", "quiet", "args_file", "model", "record", "replay", "timeout",
              "max_cost", "approve", "local", "resume", "force", "arg_tokens", "ref", "rest")
    __slots__ = FIELDS
    json: bool
    dry_run: bool
    verbose: bool
    quiet: bool
    args_file: str | None
    model: str | None
    record: str | None
    replay: str | None
    timeout: float | None
    max_cost: float | None
    approve: list[str]
    local: list[Any]  # agentapps.cascade.local.Override, in order
    resume: int | None  # the run-log id of the run to continue
    force: bool  # --resume even though the skill file changed
    arg_tokens: list[str]
    ref: str | None
    rest: list[str]

    def __init__(self, json: bool = False, dry_run: bool = False, verbose: bool = False, quiet: bool = False,
                 args_file: str | None = None, model: str | None = None, record: str | None = None,
                 replay: str | None = None, timeout: float | None = None, max_cost: float | None = None,
                 approve: list[str] | None = None, local: list[Any] | None = None,
                 resume: int | None = None, force: bool = False,
                 arg_tokens: list[str] | None = None, ref: str | None = None, rest: list[str] | None = None) -> None:
        self.json, self.dry_run, self.verbose, self.quiet = json, dry_run, verbose, quiet
        self.args_file, self.model, self.record, self.replay = args_file, model, record, replay
        self.timeout, self.max_cost = timeout, max_cost
        self.approve = [] if approve is None else approve
        self.local = [] if local is None else local
        self.resume, self.force = resume, force
        self.arg_tokens = [] if arg_tokens is None else arg_tokens
        self.ref = ref
        self.rest = [] if rest is None else rest

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"--timeout expects seconds, got {raw!r}.") from None
    if not 0 < value <= 30 * 24 * 3600:  # also refuses nan and inf
        raise UsageError(f"--timeout must be more than 0 and at most 2592000 seconds, got {raw!r}.")
    return value


def _dollars(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"--max-cost expects US dollars, got {raw!r}.") from None
    if not 0 < value < 1e9:  # also refuses nan and inf
        raise UsageError(f"--max-cost must be more than 0 US dollars, got {raw!r}.")
    return value


MAX_RUN_ID = 2**63 - 1  # the largest id the run log (SQLite) can hold


def _run_id(raw: str) -> int:
    # ASCII digits only ('²' is a digit to str.isdigit but not to int) and within SQLite's integers
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_RUN_ID:
        raise UsageError(f"--resume expects a run id (a number 'agentapps runs list' shows), got {raw!r:.60}.")
    return int(raw)


def _approve_pattern(raw: str) -> str:
    from agentapps.tools.policy import Rule

    try:
        Rule.parse(raw)
    except UsageError as exc:
        raise UsageError(f"--approve {raw!r}: {exc.message}") from None
    return raw


def _local_text(raw: str) -> Any:
    from agentapps.cascade.local import parse_option

    return parse_option(raw, as_json=False)


def _local_json(raw: str) -> Any:
    from agentapps.cascade.local import parse_option

    return parse_option(raw, as_json=True)


def _absolute(raw: str) -> str:
    return str(Path(raw).absolute())  # the shell already expanded ~


OPTIONS: tuple[RunnerOption, ...] = (
    RunnerOption(("--json",), "json", "Print one JSON object: {ok, skill, result, error, duration_ms} plus, "
                 "for agents, usage, cost, models, turns, steps and stop_reason."),
    RunnerOption(("--dry-run",), "dry_run", "Validate the args and show what would run, without running it."),
    RunnerOption(("--args-file",), "args_file", "Read the skill's args as a JSON object from FILE ('-' for stdin).",
                 "FILE"),
    RunnerOption(("--arg",), "arg_tokens", "Set one arg (a string; repeatable).", "KEY=VALUE", repeat=True),
    RunnerOption(("--arg-json",), "arg_tokens", "Merge a JSON object into the args.", "JSON", repeat=True),
    RunnerOption(("--model",), "model", "Model id for agents (overrides model.id and AGENTAPPS_MODEL).", "ID"),
    RunnerOption(("--record",), "record", "Write the agent's model turns to FILE (a script --replay can play).",
                 "FILE", _absolute),
    RunnerOption(("--replay",), "replay", "Play the model turns in FILE instead of calling a model (offline).",
                 "FILE", _absolute),
    RunnerOption(("--timeout",), "timeout", "Stop the run after this long (exit 4).", "SECONDS", _seconds),
    RunnerOption(("--max-cost",), "max_cost", "Stop agents before a model turn would take the run's cost past "
                 "USD (exit 4).", "USD", _dollars),
    RunnerOption(("--approve",), "approve", "Approve calls that trust rules would ask about (allowed-tools "
                 "syntax: a skill glob, #tag, or name(arg=glob); repeatable).", "PATTERN", _approve_pattern,
                 repeat=True),
    RunnerOption(("--local",), "local", "Override the main skill's metadata for this run (text; a number "
                 "or boolean where it replaces one; repeatable; after AGENTAPPS_LOCAL_* variables).",
                 "KEY.PATH=VALUE", _local_text, repeat=True),
    RunnerOption(("--local-json",), "local", "Override the main skill's metadata with a JSON value "
                 "(repeatable, in order with --local).", "KEY.PATH=JSON", _local_json, repeat=True),
    RunnerOption(("--resume",), "resume", "Continue run RUN_ID (failed, interrupted or timed out) from its last "
                 "completed agent turn, with its skill, args and settings; name no skill.", "RUN_ID", _run_id),
    RunnerOption(("--force",), "force", "With --resume: resume even though the skill file changed since."),
    RunnerOption(("-v", "--verbose"), "verbose", "Show tracebacks and debug logs on stderr."),
    RunnerOption(("-q", "--quiet"), "quiet", "Show nothing on stderr but errors."),
    RunnerOption(("-h", "--help"), "help", "Show this message. 'agentapps run SKILL --help' shows the skill's params."),
)
_BY_NAME = {name: option for option in OPTIONS for name in option.names}
LONG_NAMES = frozenset(n[2:] for o in OPTIONS for n in o.names if n.startswith("--"))
SHORT_NAMES = frozenset(n for o in OPTIONS for n in o.names if not n.startswith("--"))

EXIT_CODES = ("Exit codes: 0 ok, 1 the skill failed, 2 bad input, 3 denied, 4 a limit was reached, 130 interrupted;\n"
              "--resume: 6 no such run, 7 the run ended well, 8 no checkpoint, 9 the skill file changed.")


def usage() -> str:
    """The text of `agentapps run --help`, made from the table."""
    spelled = [", ".join(o.names) + (f" {o.metavar}" if o.metavar else "") for o in OPTIONS]
    width = max(len(s) for s in spelled)
    rows = [f"  {s:<{width}}  {o.help}" for s, o in zip(spelled, OPTIONS, strict=True)]
    return ("Usage: agentapps run [OPTIONS] SKILL [--param value ...]\n\n"
            "Run a skill by name or path. Runner options go before SKILL; the skill's params go after it.\n\n"
            "Options:\n" + "\n".join(rows) + "\n\n" + EXIT_CODES + "\n")


# the seed's flags, refused with what to use here instead
SEED_FLAGS = {
    "--config": "configuration is the main skill's metadata; change it for one run with --local "
                "KEY.PATH=VALUE, --local-json or AGENTAPPS_LOCAL_* (docs/running.md).",
    "--global": "user-wide skills live in ~/.agent-apps/skills; change configuration for one run with "
                "--local KEY.PATH=VALUE (docs/running.md).",
}


def parse(tokens: list[str]) -> RunOptions | None:
    """Runner options up to the skill ref, then the rest verbatim. None means: show the usage."""
    opts = RunOptions()
    i = 0
    while i < len(tokens):
        token = tokens[i]
        name, eq, inline = token.partition("=")
        option = _BY_NAME.get(token) or (_BY_NAME.get(name) if eq else None)
        if option is None:
            if name in SEED_FLAGS:
                raise UsageError(f"agentapps run has no {name}: {SEED_FLAGS[name]}")
            if token.startswith("-") and token != "-" and opts.resume is not None:
                raise UsageError(f"Unknown runner option {name!r}; see 'agentapps run --help'. --resume RUN_ID "
                                 "takes no skill params: it runs the skill with the args of run RUN_ID.")
            if token.startswith("-") and token != "-":
                raise UsageError(f"Unknown runner option {name!r}; see 'agentapps run --help'. Skill params "
                                 "go after the skill name (for the main skill, name it too, or give "
                                 f"--arg {name.lstrip('-')}=VALUE).")
            opts.ref, opts.rest = token, tokens[i + 1:]
            return opts
        if option.dest == "help":
            return None
        if option.metavar is None:
            setattr(opts, option.dest, True)
        else:
            if eq:
                raw = inline
            elif i + 1 < len(tokens):
                i += 1
                raw = tokens[i]
            else:
                raise UsageError(f"{name} needs a value.")
            value = option.convert(raw) if option.convert else raw
            if option.dest == "arg_tokens":  # parsed with the skill's params, after the ref
                opts.arg_tokens += [name, value]
            elif option.repeat:
                getattr(opts, option.dest).append(value)
            else:
                setattr(opts, option.dest, value)
        i += 1
    return opts
