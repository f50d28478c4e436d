"""MCP test helpers: projects whose main skill declares the SDK-written fake server (mcp_server.py),
in-process runs that close their servers, and checks that no server process outlives a run."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

FAKE = Path(__file__).resolve().parent / "mcp_server.py"
SECRET = "hunter2-canary-5f3a"


def fake_entry(pidfile: Path | None = None, **extra: Any) -> dict[str, Any]:
    env = {"TOKEN": "${MCP_TEST_SECRET}"}
    if pidfile is not None:
        env["PIDFILE"] = str(pidfile)
    return {"command": sys.executable, "args": [str(FAKE)], "env": env, **extra}


def write_main(project: Any, servers: dict[str, Any], *, seed: bool = True, **meta: Any) -> None:
    """A main skill declaring `servers`; `seed` writes the fake server's tool list to the cache as
    a first listing would, so a test starts the server once (for its calls), not twice."""
    # the fake server reports its pid for checks made from here: run bare, since a sandboxed server's
    # pid is its namespace's (tests/process/test_os_sandbox.py checks sandboxed servers)
    metadata = {"role": "main", "mcp": servers, "sandbox": "off", **meta}
    project.write("main.skill.md", f"---\nname: main\ndescription: Test project.\nmetadata: {json.dumps(metadata)}\n---\nMain.\n")
    if seed:
        seed_cache(project, servers)


def seed_cache(project: Any, servers: dict[str, Any]) -> None:
    from agentapps.errors import AgentAppsError
    from agentapps.mcp.config import parse_server
    from agentapps.types import ToolDef
    from tests.fakes.mcp_server import TOOLS

    owner = ToolDef("main", "markdown", {"metadata": {"role": "main"}}, path=project.root / "main.skill.md",
                    root=project.root, root_kind="project")
    tools = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in TOOLS]
    for name, entry in servers.items():
        if entry.get("args") != [str(FAKE)]:
            continue
        try:
            spec = parse_server(owner, name, entry, project.root)
        except AgentAppsError:
            continue
        path = project.root / ".agent-apps" / "cache" / "mcp" / f"{spec.prefix}-{spec.key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"server": name, "tools": tools}))


def pids(pidfile: Path) -> list[int]:
    return [int(p) for p in pidfile.read_text().split()] if pidfile.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead: it only waits for its parent to read its exit code
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def assert_all_gone(pidfile: Path, within: float = 3.0) -> None:
    started = pids(pidfile)
    assert started, "the server never started"
    deadline = time.monotonic() + within
    while any(alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in started if alive(p)] == []


def run_calls(project: Any, calls: list[tuple[str, dict[str, Any]]], approve: list[str] | None = None) -> list[Any]:
    """Invoke each call in one event loop of one process (one server start), then close up;
    an AgentAppsError is returned in place of the result. `approve` is `--approve`."""
    from agentapps.context.manager import invoke_root
    from agentapps.core.cleanup import run_cleanups
    from agentapps.errors import AgentAppsError

    root = project.boot()
    root.globals.config.overrides["approve"] = list(approve or [])

    async def go() -> list[Any]:
        out: list[Any] = []
        try:
            for ref, args in calls:
                try:
                    out.append(await invoke_root(root, ref, args))
                except AgentAppsError as exc:
                    out.append(exc)
        finally:
            await run_cleanups(root.globals.internals)
        return out

    return asyncio.run(go())
