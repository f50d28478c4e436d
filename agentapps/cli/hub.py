"""`agentapps add SOURCE`, `agentapps install [--frozen]` and `agentapps hub search|add|remove|update|list`:
each runs its hub skill (so a project can shadow it) and prints the skill's text, or `--json` the
whole `{results, text}`."""

from __future__ import annotations

import sys
from typing import Any

import typer

from agentapps.cli import render
from agentapps.cli.app_invoke import invoke_command_skill
from agentapps.cli.commands import COMMANDS

_DEPS = "Approve pip-installing the Python dependencies the packages declare (never done without it)."


def _show(skill: str, args: dict[str, Any], as_json: bool) -> None:
    answer, _ = invoke_command_skill(skill, {k: v for k, v in args.items() if v is not None and v != []})
    if as_json:
        render.emit_json(answer)
        return
    sys.stdout.write(str(answer.get("text", "")).rstrip("\n") + "\n")


def register(app: typer.Typer) -> None:
    """Add `add`, `install` and the `hub` group to `app`."""

    @app.command("add", help=COMMANDS["add"])
    def add(source: str = typer.Argument(..., help="github:OWNER/REPO[/PATH][@REF], a git URL[#REF] or a folder."),
            name: str = typer.Option(None, "--name", help="Package name (default: the folder's or repository's)."),
            path: str = typer.Option(None, "--path", help="Folder inside the repository (default: skills/ if any)."),
            ref: str = typer.Option(None, "--ref", help="Branch, tag or commit (default: the default branch)."),
            install_deps: bool = typer.Option(False, "--install-deps", help=_DEPS),
            as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        _show("hub-add-source", {"source": source, "name": name, "path": path, "ref": ref,
                                 "installDeps": install_deps or None}, as_json)

    @app.command("install", help=COMMANDS["install"])
    def install(frozen: bool = typer.Option(False, "--frozen", help="Never change the lock file; exit 5 on any "
                                            "mismatch (the CI mode)."),
                install_deps: bool = typer.Option(False, "--install-deps", help=_DEPS),
                as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        _show("hub-install", {"frozen": frozen or None, "installDeps": install_deps or None}, as_json)

    hub = typer.Typer(help=COMMANDS["hub"], no_args_is_help=True, rich_markup_mode=None)

    @hub.command("search")
    def search(query: str = typer.Argument("", help="Text to find (empty: every package)."),
               as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Search the configured registries."""
        _show("hub-search", {"query": query}, as_json)

    @hub.command("add")
    def hub_add(name: str = typer.Argument(..., help="NAME, NAME@RANGE (npm semver: ^1.2.0, ~1.2, >=1 <2, 1.x)."),
                install_deps: bool = typer.Option(False, "--install-deps", help=_DEPS),
                as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Install a package and its dependencies from the registries."""
        _show("hub-add", {"name": name, "installDeps": install_deps or None}, as_json)

    @hub.command("remove")
    def remove(name: str = typer.Argument(..., help="The package to remove."),
               as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Uninstall a package and drop it from the lock file."""
        _show("hub-remove", {"name": name}, as_json)

    @hub.command("update")
    def update(names: list[str] = typer.Argument(None, help="Only these packages (default: all)."),
               install_deps: bool = typer.Option(False, "--install-deps", help=_DEPS),
               as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Newer versions within the requested ranges, newer commits of followed refs."""
        _show("hub-update", {"names": names or None, "installDeps": install_deps or None}, as_json)

    @hub.command("list")
    def list_(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """The locked packages and whether each is installed as pinned."""
        _show("hub-list", {}, as_json)

    app.add_typer(hub, name="hub")
