"""`agentapps sessions list|show KEY|clear KEY`: inspect the file session store (.agent-apps/sessions/)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

from agentapps.cli import render
from agentapps.cli.commands import COMMANDS
from agentapps.errors import StoreCorruptError, UsageError

if TYPE_CHECKING:
    from agentapps.stores.sessions import FileSessionStore


def _store() -> FileSessionStore:
    from agentapps.boot import bootstrap
    from agentapps.stores.sessions import FileSessionStore

    return FileSessionStore(bootstrap().globals.config.data_dir / "sessions")


def _missing(key: str, store: FileSessionStore) -> UsageError:
    return UsageError(f"No session {key!r:.80} in {store.root}; 'agentapps sessions list' shows the keys.")


def _entries(count: int) -> str:
    return f"{count} entry" if count == 1 else f"{count} entries"


def register(app: typer.Typer) -> None:
    """Add the `sessions` command group to `app`."""
    sessions = typer.Typer(
        help=COMMANDS["sessions"] + " Skills write it with `session: {key: ..., store: file}`.",
        no_args_is_help=True,
        rich_markup_mode=None,
    )

    @sessions.command("list")
    def list_(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """List the stored sessions: key, number of entries, time and skill of the last one."""
        store = _store()
        found, problems = store.survey()
        for problem in problems:
            render.warn(render.error_line(problem))
        rows: list[dict[str, Any]] = []
        for key, entries in found:
            last = entries[-1] if entries and isinstance(entries[-1], dict) else {}
            rows.append({"key": key, "entries": len(entries), "last": last.get("at"), "skill": last.get("skill")})
        if as_json:
            render.emit_json({"sessions": rows})
            return
        if not rows:
            render.info(f"No sessions in {store.root}.")
            return
        width = max(len(r["key"]) for r in rows)
        for r in rows:
            noun = "entry" if r["entries"] == 1 else "entries"
            line = f"{r['key']:<{width}}  {r['entries']:>3} {noun:<7}  {r['last'] or '-'}  {r['skill'] or ''}"
            sys.stdout.write(render.on(sys.stdout, line.rstrip()) + "\n")

    @sessions.command("show")
    def show(
        key: str = typer.Argument(..., help="The session key."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON on one line (it is always JSON)."),
    ) -> None:
        """Print one session as JSON: its key and entries, oldest first."""
        store = _store()
        entries = store.load(key)
        if not entries and key not in store.all_keys():
            raise _missing(key, store)
        if as_json:
            render.emit_json({"key": key, "entries": entries})
        else:
            render.emit_result({"key": key, "entries": entries})

    @sessions.command("clear")
    def clear(key: str = typer.Argument(..., help="The session key.")) -> None:
        """Delete one session from the file store."""
        store = _store()
        try:
            what = _entries(len(store.load(key)))
        except StoreCorruptError:
            what = "its file was corrupt"  # removing it is the remedy the error gives
        if not store.clear(key):
            raise _missing(key, store)
        sys.stdout.write(render.on(sys.stdout, f"Cleared session {key!r} ({what}).") + "\n")

    app.add_typer(sessions, name="sessions")
