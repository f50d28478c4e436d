"""`agentapps run`: runner options, then the skill ref, then the skill's own params."""

from __future__ import annotations

import json
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentapps.cli import render
from agentapps.cli.skillargs import parse_skill_args, property_for
from agentapps.errors import AgentAppsError, ArgsError, InterruptedError_, UsageError

RUN_USAGE = """Usage: agentapps run [OPTIONS] SKILL [--param value ...]

Run a skill by name or path. Runner options go before SKILL; the skill's params go after it.

Options:
  --json               Print one JSON object: {ok, skill, result, error, duration_ms} plus,
                       for agents, usage, cost, models, turns, steps and stop_reason.
  --dry-run            Validate the args and show what would run, without running it.
  --args-file FILE     Read the skill's args as a JSON object from FILE ('-' for stdin).
  --arg KEY=VALUE      Set one arg (a string; repeatable).
  --arg-json JSON      Merge a JSON object into the args.
  --model ID           Model id for agents (overrides model.id and AGENTAPPS_MODEL).
  --record FILE        Write the agent's model turns to FILE (a script --replay can play).
  --replay FILE        Play the model turns in FILE instead of calling a model (offline).
  --timeout SECONDS    Stop the run after this long (exit 4).
  --max-cost USD       Stop agents before a model turn would take the run's cost past USD (exit 4).
  --approve PATTERN    Approve calls that trust rules would ask about (skill glob; repeatable).
  -v, --verbose        Show tracebacks and debug logs on stderr.
  -q, --quiet          Show nothing on stderr but errors.
  -h, --help           Show this message. 'agentapps run SKILL --help' shows the skill's params.

Exit codes: 0 ok, 1 the skill failed, 2 bad input, 3 denied, 4 a limit was reached, 130 interrupted.
"""


@dataclass
class RunOptions:
    json: bool = False
    dry_run: bool = False
    verbose: bool = False
    quiet: bool = False
    args_file: str | None = None
    model: str | None = None
    record: str | None = None
    replay: str | None = None
    timeout: float | None = None
    max_cost: float | None = None
    approve: list[str] = field(default_factory=list)
    arg_tokens: list[str] = field(default_factory=list)
    ref: str | None = None
    rest: list[str] = field(default_factory=list)


def parse_run_options(tokens: list[str]) -> RunOptions | None:
    """None means: print the usage and stop."""
    opts = RunOptions()
    i = 0
    while i < len(tokens):
        token = tokens[i]
        name, eq, inline = token.partition("=")

        def value(name: str = name, eq: str = eq, inline: str = inline) -> str:
            """The option's value: after `=`, else the next token (consumed)."""
            nonlocal i
            if eq:
                return inline
            if i + 1 >= len(tokens):
                raise UsageError(f"{name} needs a value.")
            i += 1
            return tokens[i]

        if token in ("-h", "--help"):
            return None
        if token == "--json":
            opts.json = True
        elif token == "--dry-run":
            opts.dry_run = True
        elif token in ("-v", "--verbose"):
            opts.verbose = True
        elif token in ("-q", "--quiet"):
            opts.quiet = True
        elif name == "--args-file":
            opts.args_file = value()
        elif name == "--model":
            opts.model = value()
        elif name in ("--record", "--replay"):
            setattr(opts, name[2:], str(Path(value()).absolute()))  # the shell already expanded ~
        elif name in ("--arg", "--arg-json"):
            opts.arg_tokens += [name, value()]
        elif name == "--approve":
            opts.approve.append(value())
        elif name == "--timeout":
            raw = value()
            try:
                opts.timeout = float(raw)
            except ValueError:
                raise UsageError(f"--timeout expects seconds, got {raw!r}.") from None
            if not 0 < opts.timeout <= 30 * 24 * 3600:  # also refuses nan and inf
                raise UsageError(f"--timeout must be more than 0 and at most 2592000 seconds, got {raw!r}.")
        elif name == "--max-cost":
            raw = value()
            try:
                opts.max_cost = float(raw)
            except ValueError:
                raise UsageError(f"--max-cost expects US dollars, got {raw!r}.") from None
            if not 0 < opts.max_cost < 1e9:  # also refuses nan and inf
                raise UsageError(f"--max-cost must be more than 0 US dollars, got {raw!r}.")
        elif token.startswith("-") and token != "-":
            raise UsageError(f"Unknown runner option {name!r}; see 'agentapps run --help'. "
                             "Skill params go after the skill name.")
        else:
            opts.ref, opts.rest = token, tokens[i + 1 :]
            return opts
        i += 1
    return opts


def _read_args_file(spec: str) -> dict[str, Any]:
    try:
        text = sys.stdin.read() if spec == "-" else Path(spec).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"Cannot read --args-file {spec}: {exc.strerror}.") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArgsError(f"--args-file {spec} is not valid JSON: {exc.msg} at line {exc.lineno}.") from None
    if not isinstance(data, dict):
        raise ArgsError(f"--args-file {spec} must hold a JSON object.")
    return data


def _stdin_input(params: dict[str, Any] | None, args: dict[str, Any], used_stdin: bool) -> None:
    props = (params or {}).get("properties") or {}
    key = property_for("input", props)
    if key is None or key in args or used_stdin:
        return
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return
        data = sys.stdin.read()
    except (OSError, ValueError):
        return
    if data:
        args[key] = data


class _Terminated(BaseException):
    pass


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()  # only before the event loop runs; then supervise.py takes over


def run_command(tokens: list[str]) -> int:
    try:
        opts = parse_run_options(tokens)
    except AgentAppsError as exc:
        render.emit_error(exc, verbose=False)
        return exc.exit_code
    if opts is None:
        sys.stdout.write(RUN_USAGE)
        return 0
    if opts.record and opts.record == opts.replay:
        render.emit_error(UsageError("--record and --replay name the same file; record to another file."),
                          verbose=False)
        return 2
    started = time.perf_counter()
    skill_name: str | None = opts.ref
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    extras: dict[str, Any] = {}
    internals: dict[str, Any] = {}
    progress: Any = None
    args: dict[str, Any] = {}
    data_dir: Path | None = None
    try:
        from agentapps.boot import bootstrap
        from agentapps.cascade.interface import params_of
        from agentapps.context.manager import invoke_root

        root = bootstrap()
        g = root.globals
        internals = g.internals
        data_dir = g.config.data_dir
        g.config.overrides.update({k: v for k, v in (("model", opts.model), ("record", opts.record),
                                                     ("replay", opts.replay), ("approve", opts.approve),
                                                     ("maxCost", opts.max_cost)) if v})
        if not opts.quiet:
            from agentapps.cli.progress import Progress

            progress = g.internals["reporter"] = Progress(sys.stderr)
        if opts.ref is None:
            if g.config.main_tool is None:
                raise UsageError("Name a skill to run: agentapps run SKILL [--param value ...]; "
                                 "'agentapps list' shows what is available.")
            tool = g.config.main_tool
        else:
            tool = g.lookup.resolve(opts.ref)
        skill_name = tool.name
        if "--help" in opts.rest or "-h" in opts.rest:
            from agentapps.cli.help import skill_help

            sys.stdout.write(skill_help(tool, params_of(tool, g.lookup)))
            return 0
        args = _read_args_file(opts.args_file) if opts.args_file else {}
        params = params_of(tool, g.lookup)
        args.update(parse_skill_args(opts.arg_tokens + opts.rest, params, skill=tool.name))
        _stdin_input(params, args, used_stdin=opts.args_file == "-")
        g.internals["dry_run"] = opts.dry_run
        try:
            from agentapps.cli.supervise import run_supervised

            result: Any = run_supervised(invoke_root(root, tool, args), g, opts.timeout)
        finally:
            if progress is not None:
                progress.close()
            extras = _agent_extras(g.internals.get("agent.totals"))
    except (KeyboardInterrupt, _Terminated) as exc:
        number = 15 if isinstance(exc, _Terminated) else 2
        stop = InterruptedError_("Interrupted.", signal_number=number)
        code = _fail(stop, opts, skill_name, started, extras, internals)
        return _logged(code, stop, opts, skill_name, args, started, internals, data_dir)
    except Exception as exc:  # noqa: BLE001 - the one place errors become exit codes
        code = _fail(exc, opts, skill_name, started, extras, internals)
        return _logged(code, exc, opts, skill_name, args, started, internals, data_dir)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if opts.json:
        render.emit_json({"ok": True, "skill": skill_name, "result": result, "error": None,
                          "duration_ms": round((time.perf_counter() - started) * 1000, 1), **extras}, internals)
    elif isinstance(result, dict) and result.get("dryRun") and "system" in result:
        # a markdown dry run reads best as the text the model would get (--json keeps the object)
        render.emit_result(f"{result['system']}\n--- user message ---\n{result['userMessage']}\n", internals)
    else:
        render.emit_result(result, internals)
    return _logged(0, None, opts, skill_name, args, started, internals, data_dir)


def _logged(code: int, error: BaseException | None, opts: RunOptions, skill: str | None,
            args: dict[str, Any], started: float, internals: dict[str, Any],
            data_dir: Path | None) -> int:
    """Append this run to the run log (agentapps.runlog; never fails the run) and pass `code` on."""
    if not opts.dry_run and skill is not None:
        from agentapps.runlog import log_run

        log_run(data_dir, skill=skill, args=args, internals=internals, exit_code=code, error=error,
                started=started)
    return code


def _agent_extras(totals: Any) -> dict[str, Any]:
    """--json keys for agent runs: token usage, cost (null when a model has no known price), the
    same per model, turns and steps over every agent run of the process, and the stop reason of
    the outermost one."""
    if not isinstance(totals, dict):
        return {}
    return {key: totals.get(key) for key in ("usage", "cost", "models", "turns", "steps", "stop_reason")}


def _fail(exc: BaseException, opts: RunOptions, skill: str | None, started: float,
          extras: dict[str, Any] | None = None, internals: dict[str, Any] | None = None) -> int:
    render.emit_error(exc, verbose=opts.verbose, internals=internals)
    code = render.exit_code(exc)
    if opts.json:
        error = exc.to_dict() if isinstance(exc, AgentAppsError) else {
            "type": type(exc).__name__, "message": render.error_line(exc), "exit_code": code}
        render.emit_json({"ok": False, "skill": skill, "result": None, "error": error,
                          "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                          **(extras or {})}, internals)
    return code
