"""The typer app for every command but `run` and `list`, which parse their own argv (cli/__init__ dispatches them first)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from agentapps.cli import hub, render, repl_command, runs, serve, sessions
from agentapps.cli.app_invoke import invoke_command_skill
from agentapps.cli.commands import COMMANDS, SUMMARY

app = typer.Typer(
    name="agentapps",
    help=SUMMARY,
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},  # `agentapps check -h` as every tool takes it
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: rendering it with rich costs more than the rest of the command
)
sessions.register(app)
runs.register(app)
serve.register(app)
repl_command.register(app)
hub.register(app)


@app.command(help=COMMANDS["describe"])
def describe(ref: str = typer.Argument(..., help="Skill name or path."),
             as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    info, root = invoke_command_skill("skill-describe", {"name": ref})
    from agentapps.tools.foreign import mapping

    name = info["name"]
    local = _local_overrides(root, ref)
    foreign = mapping(info.get("allowed_tools"))
    if as_json:
        render.emit_json({**info, "localOverrides": local, "foreignTools": foreign})
        return
    out = [f"{name}  ({info['kind']} skill, {info['source']})", f"  {info['description']}",
           f"  file: {info['path']}"]
    if info.get("allowed_tools") is not None:
        out.append(f"  allowed-tools: {info['allowed_tools']}")
    for item in foreign:
        mapped = " ".join(item["mapsTo"]) or f"nothing ({item['problem']})"
        out.append(f"    {item['name']} -> {mapped}")
    out.append("  params: " + (json.dumps(info["params"]) if info["params"] else "none"))
    if info.get("returns"):
        out.append("  returns: " + json.dumps(info["returns"]))
    chain = "static (middleware; runs without a chain)" if info["static"] else " -> ".join(info["chain"])
    out.append(f"  chain: {chain}")
    if local["overrides"]:
        out.append(f"  local overrides of the main skill '{local['main']}' (file < AGENTAPPS_LOCAL_* "
                   f"< --local), {'applied to this skill' if local['applies'] else 'not applied to this skill'}:")
        out += [f"    {o['path']} = {json.dumps(o['value'])}  ({o['source']})" for o in local["overrides"]]
    sys.stdout.write("\n".join(out) + "\n")


def _local_overrides(root: Any, ref: str) -> dict[str, Any]:
    """The AGENTAPPS_LOCAL_* overrides in effect, and whether the described skill gets them (it
    does when the main skill is its authority, or is it)."""
    from agentapps.cascade.resolve import applies_authority

    cfg = root.globals.config
    changes = cfg.overrides.get("local") or []
    main = cfg.main_tool
    applies = False
    if changes and main is not None:
        tool = root.globals.lookup.resolve(ref)
        applies = tool.path == main.path or applies_authority(tool, main, cfg.project)
    return {"main": main.name if main else None, "applies": applies,
            "overrides": [o.shown() for o in changes]}


@app.command(help=COMMANDS["which"])
def which(name: str = typer.Argument(..., help="Skill name (or a path, which shadows nothing)."),
          as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    from agentapps.boot import bootstrap
    from agentapps.tools.catalog import summary
    from agentapps.tools.catalog import which as which_rows
    from agentapps.tools.names import ref_kind

    lookup = bootstrap().globals.lookup
    if ref_kind(name) != "name":  # a path or URI bypasses the search path: it is its own winner
        rows = [summary(lookup.resolve(name))]
    else:
        rows = which_rows(lookup, name)
    if not rows:
        raise lookup.not_found(name)
    if as_json:
        render.emit_json({"name": name, "winner": rows[0], "shadowed": rows[1:]})
        return
    for i, row in enumerate(rows):
        label = "" if i == 0 else "shadowed: "
        source = f"{row['source']} {row['package']}" if row.get("package") else row["source"]
        origin = f", compiled from {row['compiledFrom']}" if row.get("compiledFrom") else ""
        sys.stdout.write(f"{label}{row['path']}  ({source}{origin})\n")


@app.command(help=COMMANDS["check"])
def check(paths: list[Path] = typer.Argument(
              None, help="Folders (scanned like a project) or skill files; default: the project."),
          strict: bool = typer.Option(False, "--strict", help="Treat warnings as errors."),
          as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> int:
    from agentapps.check.run import check as check_skills

    report = check_skills(Path.cwd(), paths or [], strict=strict)
    if as_json:
        render.emit_json(report.to_dict())
    else:
        sys.stdout.write(report.text())
    return report.exit_code


@app.command("test", help=COMMANDS["test"])
def test(targets: list[str] = typer.Argument(
             None, help="Skill names, skill or tests files, folders; default: every tests file of the project."),
         jobs: int = typer.Option(4, "--jobs", "-j", metavar="N", help="Cases run at once."),
         junit: Path = typer.Option(None, "--junit", metavar="FILE", help="Also write the results as JUnit XML to FILE."),
         record: bool = typer.Option(False, "--record", help="Record each case's model turns again from the "
                                     "live model (the skill's, or --model)."),
         model: str = typer.Option(None, "--model", metavar="ID", help="With --record: the model to record from."),
         as_json: bool = typer.Option(False, "--json", help="Print JSON."),
         quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only failing cases and the summary.")) -> int:
    from agentapps.cli.testing import test_command

    return test_command(targets or [], jobs=jobs, junit=junit, record=record, model=model, as_json=as_json,
                        quiet=quiet)


@app.command("compile", help=COMMANDS["compile"])
def compile_(names: list[str] = typer.Argument(..., help="Markdown skills to compile (names or files)."),
             model: str = typer.Option(None, "--model", metavar="ID", help="The model that writes the code."),
             replay: Path = typer.Option(None, "--replay", metavar="FILE",
                                         help="Play the compiling agent's model turns from FILE (offline)."),
             as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> int:
    from agentapps.cli.compiling import compile_command

    return compile_command(names, model=model, replay=replay, as_json=as_json)


@app.command(help=COMMANDS["init"])
def init(directory: Path = typer.Argument(Path("."), help="Project folder (default: here).")) -> None:
    from agentapps.scaffold import init_project

    rows = init_project(directory.resolve())
    for status, path in rows:
        sys.stdout.write(f"{status:<8} {path}\n")
    if any(status == "created" and str(path).endswith("greet.skill.py") for status, path in rows):
        sys.stdout.write("Next: agentapps run greet --name Ada\n")


@app.command("mcp-server", help=COMMANDS["mcp-server"])
def mcp_server(
    transport: str = typer.Option("stdio", "--transport", help="stdio (for a client that starts it) or http."),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP: address to bind (not loopback needs --token)."),
    port: int = typer.Option(8080, "--port", help="HTTP: port (0 picks a free one)."),
    allowed_tools: str = typer.Option(None, "--allowed-tools", help="Offer only skills these globs select."),
    token: str = typer.Option(None, "--token", envvar="AGENTAPPS_MCP_TOKEN", help="HTTP: bearer token clients send."),
    allow_origin: list[str] = typer.Option(None, "--allow-origin", help="HTTP: a browser Origin to accept."),
    approve: list[str] = typer.Option(None, "--approve", help="Approve calls trust rules would ask about."),
    heartbeat: float = typer.Option(10.0, "--heartbeat", help="Seconds between progress heartbeats (0: none)."),
    cwd: Path = typer.Option(None, "--cwd", help="Serve the project found from this folder (default: here)."),
) -> int:
    from agentapps.mcp_server.command import serve

    return serve(transport=transport, host=host, port=port, allowed_tools=allowed_tools, token=token,
                 origins=allow_origin or [], approve=approve or [], heartbeat=heartbeat,
                 cwd=cwd.resolve() if cwd else None)


@app.command(help=COMMANDS["worker"])
def worker(
    topic: str = typer.Argument(None, help="The topic whose events to handle (a Redis stream)."),
    group: str = typer.Option(None, "--group", help="Consumer group: workers in one group split the events."),
    handler: str = typer.Option(None, "--handler", help="Skill run for each event, with args {event}."),
    schedules: bool = typer.Option(False, "--schedules",
                                   help="Also run the project's stored schedules (schedule-create), "
                                        "each due time once across servers and workers; alone "
                                        "without a TOPIC."),
    concurrency: int = typer.Option(1, "--concurrency", help="Events handled at once by this worker."),
    max_events: int = typer.Option(None, "--max-events", help="Exit after handling this many events."),
    visibility: float = typer.Option(None, "--visibility-timeout",
                                     help="Seconds before an unacknowledged event is redelivered "
                                          "(default: stores.visibilityTimeout, else 30)."),
    max_deliveries: int = typer.Option(None, "--max-deliveries",
                                       help="Deliveries before an event goes to TOPIC.dead-letter "
                                            "(default: stores.maxDeliveries, else 5)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines (warnings and the summary stay)."),
) -> int:
    from agentapps.cli.worker import run_worker

    return run_worker(topic, group=group, handler=handler, concurrency=concurrency, max_events=max_events,
                      visibility=visibility, max_deliveries=max_deliveries, as_json=as_json, quiet=quiet,
                      schedules=schedules)
