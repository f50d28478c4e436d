"""`agentapps runs list|show ID|stats`: read the run log (.agent-apps/runs/runs.db)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import typer

from agentapps.cli import render
from agentapps.cli.commands import COMMANDS
from agentapps.core.terminal import is_terminal
from agentapps.errors import UsageError


def _path() -> Path:
    from agentapps.boot import bootstrap
    from agentapps.runlog import log_path

    return log_path(bootstrap().globals.config.log_dir)


def _after(text: str | None) -> float | None:
    from agentapps.runlog.query import since

    return since(text) if text else None


def _when(epoch: Any) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(epoch)))


def _cost(value: Any) -> str:
    return "-" if value is None else f"${value:.4f}"


UNFINISHED = -1  # agentapps.agent.checkpoint.UNFINISHED: the record of a run that has not ended


def _exit(code: Any) -> str:
    """A record's exit code as shown: `unfinished` for a run still running, or killed before it could
    say how it ended (resumable: see docs/runs.md, "Resume")."""
    return "unfinished" if code == UNFINISHED else str(code)


def _tokens(row: dict[str, Any]) -> int:
    return sum(int(row.get(k) or 0) for k in ("input_tokens", "output_tokens", "cache_read_tokens",
                                              "cache_write_tokens"))


def print_table(headers: list[str], rows: list[list[str]], left: tuple[int, ...]) -> None:
    """Columns laid out by rich (by display width, so wide characters stay aligned), written as
    plain text: no colour, no borders, and escaped on a terminal as every other output is. A pipe
    gets each row on one line; a terminal's width folds the widest cells instead."""
    import shutil
    from io import StringIO

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    terminal = is_terminal(sys.stdout)
    table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 1), show_header=True, header_style=None)
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i in left else "right", no_wrap=not terminal)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))  # Text: a `[` in a skill name is not markup
    out = StringIO()
    width = shutil.get_terminal_size().columns if terminal else 1_000_000
    Console(file=out, width=width, color_system=None, force_terminal=False, legacy_windows=False).print(table)
    for line in out.getvalue().splitlines():
        sys.stdout.write(render.on(sys.stdout, line.rstrip()) + "\n")


def register(app: typer.Typer) -> None:
    """Add the `runs` command group to `app`."""
    runs = typer.Typer(help=COMMANDS["runs"] + " (.agent-apps/runs/runs.db; AGENTAPPS_RUN_LOG=off stops "
                       "writing it).", no_args_is_help=True, rich_markup_mode=None)

    @runs.command("list")
    def list_(skill: str = typer.Option(None, "--skill", help="Only runs of this skill."),
              since: str = typer.Option(None, "--since", help="Only runs since: 30m, 12h, 7d, 2w or a date."),
              limit: int = typer.Option(50, "--limit", min=1, help="At most this many runs (newest first)."),
              as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """List recent runs, newest first."""
        from agentapps.runlog.query import list_runs

        rows = list_runs(_path(), skill=skill, after=_after(since), limit=limit)
        if as_json:
            render.emit_json({"runs": rows})
            return
        if not rows:
            render.info("No runs logged yet." if not (skill or since) else "No runs match.")
            return
        print_table(["ID", "STARTED", "SKILL", "MODEL", "EXIT", "TURNS", "TOKENS", "COST", "TIME"],
               [[str(r["id"]), _when(r["started_at"]), r["skill"], r["model"] or "-", _exit(r["exit_code"]),
                 str(r["turns"]), str(_tokens(r)), _cost(r["cost"]), f"{(r['duration_ms'] or 0) / 1000:.2f}s"]
                for r in rows], left=(1, 2, 3))

    @runs.command("show")
    def show(run_id: int = typer.Argument(..., metavar="ID", help="The run's id (see 'agentapps runs list')."),
             as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Show one run: every field, and tokens and cost per model."""
        from agentapps.runlog.query import get_run

        path = _path()
        row = get_run(path, run_id)
        if row is None:
            raise UsageError(f"No run {run_id} in {path}; 'agentapps runs list' shows the ids.")
        if as_json:
            render.emit_json(row)
            return
        models = row.pop("models")
        row["started_at"] = _when(row["started_at"])
        row["cost"] = _cost(row["cost"])
        if row["exit_code"] == UNFINISHED:
            row["exit_code"] = (f"unfinished (still running, or killed: 'agentapps run --resume {run_id}' "
                                "continues it)")
        lines = [f"{key:<19}{'-' if value is None else value}\n" for key, value in row.items()]
        lines += [f"model {m['model']}: {m['input_tokens']} in, {m['output_tokens']} out, "
                  f"{m['cache_read_tokens']} cache read, {m['cache_write_tokens']} cache write, "
                  f"{_cost(m['cost'])}\n" for m in models]
        sys.stdout.write(render.on(sys.stdout, "".join(lines)))  # model text and errors: escaped

    @runs.command("stats")
    def stats(skill: str = typer.Option(None, "--skill", help="Only this skill."),
              since: str = typer.Option(None, "--since", help="Only runs since: 30m, 12h, 7d, 2w or a date."),
              as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Runs, failures, unfinished runs, tokens and cost per skill and model over a period."""
        from agentapps.runlog.query import stats as totals

        rows = totals(_path(), skill=skill, after=_after(since))
        if as_json:
            render.emit_json({"stats": rows})
            return
        if not rows:
            render.info("No runs logged yet." if not (skill or since) else "No runs match.")
            return
        print_table(["SKILL", "MODEL", "RUNS", "FAILED", "UNFINISHED", "IN", "OUT", "CACHE READ", "CACHE WRITE", "COST"],
               [[r["skill"], r["model"] or "-", str(r["runs"]), str(r["failed"]), str(r["unfinished"]), str(r["input_tokens"]),
                 str(r["output_tokens"]), str(r["cache_read_tokens"]), str(r["cache_write_tokens"]),
                 _cost(r["cost"])] for r in rows], left=(0, 1))

    @runs.command("resume", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def resume(ctx: typer.Context,
               run_id: int = typer.Argument(..., metavar="ID", help="The run's id (see 'agentapps runs list')."),
               force: bool = typer.Option(False, "--force", help="Resume even though the skill file changed.")) -> None:
        """Continue a failed, interrupted or timed-out agent run from its last completed turn (the same
        as 'agentapps run --resume ID'; runner options such as --json and --timeout may follow)."""
        from agentapps.cli.run import run_command

        raise typer.Exit(run_command(["--resume", str(run_id), *(["--force"] if force else []), *ctx.args]))

    app.add_typer(runs, name="runs")
