"""The typer app for every command but the hot path `run` (which cli/__init__ dispatches first)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import typer

from agentapps.cli import render, runs, sessions
from agentapps.errors import AgentAppsError

app = typer.Typer(
    name="agentapps",
    help="Run AI skills (markdown prompts and Python code) through a middleware pipeline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
sessions.register(app)
runs.register(app)


def _invoke(skill: str, args: dict[str, Any]) -> tuple[Any, Any]:
    from agentapps.boot import bootstrap
    from agentapps.context.manager import invoke_root

    root = bootstrap()
    return asyncio.run(invoke_root(root, skill, args)), root


def _guard(fn: Any, as_json: bool = False) -> Any:
    try:
        return fn()
    except AgentAppsError as exc:
        render.emit_error(exc, verbose=False)
        if as_json:  # machines asked for JSON: they get it on failure too
            render.emit_json({"ok": False, "error": exc.to_dict()})
        raise typer.Exit(exc.exit_code) from None


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True,
                               "allow_interspersed_args": False, "help_option_names": []})
def run(ctx: typer.Context) -> None:
    """Run a skill: agentapps run [OPTIONS] SKILL [--param value ...] (see 'agentapps run --help')."""
    from agentapps.cli.run import run_command

    raise typer.Exit(run_command(list(ctx.args)))


@app.command("list")
def list_(
    query: str = typer.Option(None, "--query", "-Q", help="Text to find in names and descriptions."),
    tag: list[str] = typer.Option(None, "--tag", "-t", help="Only skills with this tag (repeatable: all must match)."),
    all_: bool = typer.Option(False, "--all", "-a", help="Include hidden skills."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the skills on the search path (the winners; see 'which' for what they shadow)."""

    def body() -> None:
        args: dict[str, Any] = {"includeHidden": all_}
        if query:
            args["query"] = query
        if tag:
            args["tags"] = list(tag)
        items, root = _invoke("skill-list", args)  # a thin wrapper: the skill does the listing
        _, problems = root.globals.lookup.list_all()  # the index is warm: this only reads it again
        for problem in problems:
            render.warn(str(problem))
        if as_json:
            render.emit_json({"skills": items, "problems": [str(p) for p in problems]})
            return
        width = max((len(i["name"]) for i in items), default=4)
        for item in items:
            sys.stdout.write(f"{item['name']:<{width}}  {item['source']:<8}  {item['description']}\n".rstrip() + "\n")

    _guard(body, as_json)


@app.command()
def describe(ref: str = typer.Argument(..., help="Skill name or path."),
             as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Show a skill's interface, cascaded metadata and middleware chain."""

    def body() -> None:
        info, _ = _invoke("skill-describe", {"name": ref})
        if as_json:
            render.emit_json(info)
            return
        out = [f"{info['name']}  ({info['kind']} skill, {info['source']})", f"  {info['description']}",
               f"  file: {info['path']}"]
        if info.get("allowed_tools") is not None:
            out.append(f"  allowed-tools: {info['allowed_tools']}")
        out.append("  params: " + (json.dumps(info["params"]) if info["params"] else "none"))
        if info.get("returns"):
            out.append("  returns: " + json.dumps(info["returns"]))
        chain = "static (middleware; runs without a chain)" if info["static"] else " -> ".join(info["chain"])
        out.append(f"  chain: {chain}")
        sys.stdout.write("\n".join(out) + "\n")

    _guard(body, as_json)


@app.command()
def which(name: str = typer.Argument(..., help="Skill name (or a path, which shadows nothing)."),
          as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Show which file a skill name resolves to, and every definition it shadows."""
    from agentapps.boot import bootstrap
    from agentapps.errors import SkillNotFoundError
    from agentapps.tools.catalog import summary
    from agentapps.tools.catalog import which as which_rows
    from agentapps.tools.names import did_you_mean, ref_kind

    def body() -> None:
        lookup = bootstrap().globals.lookup
        if ref_kind(name) != "name":  # a path or URI bypasses the search path: it is its own winner
            rows = [summary(lookup.resolve(name))]
        else:
            rows = which_rows(lookup, name)
        if not rows:
            raise SkillNotFoundError(f"Unknown skill '{name}'.{did_you_mean(name, lookup.all_names())}")
        if as_json:
            render.emit_json({"name": name, "winner": rows[0], "shadowed": rows[1:]})
            return
        for i, row in enumerate(rows):
            label = "" if i == 0 else "shadowed: "
            sys.stdout.write(f"{label}{row['path']}  ({row['source']})\n")

    _guard(body, as_json)


@app.command()
def check(paths: list[Path] = typer.Argument(
              None, help="Folders (scanned like a project) or skill files; default: the project."),
          strict: bool = typer.Option(False, "--strict", help="Treat warnings as errors."),
          as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Validate skills without running them; exit 2 when there are errors."""
    from agentapps.check.run import check as check_skills

    def body() -> int:
        report = check_skills(Path.cwd(), paths or [], strict=strict)
        if as_json:
            render.emit_json(report.to_dict())
        else:
            sys.stdout.write(report.text())
        return report.exit_code

    raise typer.Exit(_guard(body, as_json))


@app.command()
def init(directory: Path = typer.Argument(Path("."), help="Project folder (default: here).")) -> None:
    """Create a main skill, an example skill and .agent-apps/ (never overwrites a file)."""
    from agentapps.scaffold import init_project

    def body() -> None:
        rows = init_project(directory.resolve())
        for status, path in rows:
            sys.stdout.write(f"{status:<8} {path}\n")
        if any(status == "created" and str(path).endswith("greet.skill.py") for status, path in rows):
            sys.stdout.write("Next: agentapps run greet --name Ada\n")

    _guard(body)
