"""MCP both ways: the cost agentapps adds to a tool call, as a client and as a server.

In one process and one event loop, three sessions stay open on three stdio servers, and batches
of calls alternate between them (warm: servers started, schemas cached):

  direct   the SDK client (`mcp.Client`, handshake protocol) calls `echo` on a minimal SDK server;
  client   a code skill calls `bench-echo` through `ctx.manager.invoke`: the full pipeline, then
           agentapps' session with the same kind of server (`metadata.mcp` in the main skill);
  server   the SDK client calls the code skill `echo` through `agentapps mcp-server`.

Targets (issue 13): client / direct <= 1.2x, server / direct <= 1.5x. The ratios are of medians
per call measured in the same run. For information, a cold call: `agentapps run -q bench-echo` as
a fresh process (it starts the server, loads the SDK, calls once) against a fresh Python script
doing the same with the SDK client alone (median of 5 each, alternating).

    .venv/bin/python benchmarks/mcp.py [--quick] [--batches B] [--calls N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _common import footer, header, median, table, time_process, us, verdict

# this file is named like the SDK package: keep its folder off the path so `import mcp` finds the SDK
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

CLIENT_TARGET = 1.2
SERVER_TARGET = 1.5

SERVER = """
import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

TOOL = types.Tool(name="echo", description="Echo.", input_schema={
    "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[TOOL])


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text=params.arguments["text"])])


server = Server("bench", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"""

ECHO = """
frontmatter = {"name": "echo", "description": "Echo.", "metadata": {"params": {
    "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}


def run(ctx, args):
    return args["text"]
"""

DRIVER = """
import time

frontmatter = {"name": "driver", "metadata": {"params": {"type": "object", "properties": {"n": {"type": "integer"}}}}}


async def run(ctx, args):
    start = time.perf_counter()
    for _ in range(args["n"]):
        if await ctx.manager.invoke("bench-echo", {"text": "hi"}) != "hi":
            raise RuntimeError("bench-echo answered wrongly")
    return {"seconds": time.perf_counter() - start}
"""


COLD_SDK = """
import anyio, sys
from mcp import Client, StdioServerParameters


async def main():
    async with Client(StdioServerParameters(command=sys.executable, args=[sys.argv[1]]), mode="legacy") as c:
        assert (await c.call_tool("echo", {"text": "hi"})).content[0].text == "hi"


anyio.run(main)
"""


def make_project(tmp: Path) -> Path:
    project = tmp / "proj"
    (project / ".agent-apps").mkdir(parents=True)
    (tmp / "home").mkdir()
    server = project / "bench_server.py"  # in the project: the OS sandbox shows it (its /tmp is private)
    server.write_text(SERVER.lstrip(), encoding="utf-8")
    main = {"role": "main", "mcp": {"bench": {"command": sys.executable, "args": [str(server)]}}}
    (project / "main.skill.md").write_text(f"---\nname: main\nmetadata: {json.dumps(main)}\n---\n", encoding="utf-8")
    (project / "echo.skill.py").write_text(textwrap.dedent(ECHO).lstrip(), encoding="utf-8")
    (project / "driver.skill.py").write_text(textwrap.dedent(DRIVER).lstrip(), encoding="utf-8")
    for key in [k for k in os.environ if k.startswith("AGENTAPPS_")]:
        del os.environ[key]
    os.environ["HOME"] = str(tmp / "home")
    os.chdir(project)
    return project


async def measure(project: Path, server: Path, batches: int, calls: int) -> dict[str, list[float]]:
    from mcp import Client, StdioServerParameters

    from agentapps.boot import bootstrap
    from agentapps.context.manager import invoke_root
    from agentapps.core.cleanup import run_cleanups

    env = {**os.environ, "NO_COLOR": "1"}
    direct = Client(StdioServerParameters(command=sys.executable, args=[str(server)], env=env), mode="legacy",
                    cache=None)
    served = Client(StdioServerParameters(command=sys.executable, args=["-m", "agentapps", "mcp-server"],
                                          cwd=str(project), env=env), mode="legacy", cache=None)
    root = bootstrap(project)
    times: dict[str, list[float]] = {"direct": [], "client": [], "server": []}

    async def sdk_batch(client: Client, tool: str) -> float:
        start = time.perf_counter()
        for _ in range(calls):
            result = await client.call_tool(tool, {"text": "hi"})
            if result.content[0].text != "hi":  # type: ignore[union-attr]
                raise RuntimeError(f"{tool} answered wrongly")
        return (time.perf_counter() - start) / calls

    async def agentapps_batch() -> float:
        result = await invoke_root(root, "driver", {"n": calls})
        return float(result["seconds"]) / calls

    try:
        async with direct, served:
            await sdk_batch(direct, "echo")  # warm-up: caches, validators, the agentapps session
            await sdk_batch(served, "echo")
            await agentapps_batch()
            for _ in range(batches):
                times["direct"].append(await sdk_batch(direct, "echo"))
                times["client"].append(await agentapps_batch())
                times["server"].append(await sdk_batch(served, "echo"))
    finally:
        await run_cleanups(root.globals.internals)
    return times


def cold(project: Path, tmp: Path, runs: int) -> tuple[float, float]:
    """Median seconds of a one-call fresh process: agentapps, and the SDK client alone."""
    script = tmp / "cold_sdk.py"
    script.write_text(COLD_SDK.lstrip(), encoding="utf-8")
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    ours = [sys.executable, "-m", "agentapps", "run", "-q", "bench-echo", "--text", "hi"]
    theirs = [sys.executable, str(script), str(project / "bench_server.py")]
    times: dict[int, list[float]] = {0: [], 1: []}
    for _ in range(runs):
        for i, argv in enumerate((ours, theirs)):
            times[i].append(time_process(argv, cwd=project, env=env))
    return median(times[0]), median(times[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="5 batches instead of 20")
    parser.add_argument("--batches", type=int, help="alternating batches (default 20, or 5 with --quick)")
    parser.add_argument("--calls", type=int, default=100, help="calls per batch (default 100)")
    opts = parser.parse_args()
    batches = opts.batches or (5 if opts.quick else 20)
    header(f"MCP: {batches} alternating batches of {opts.calls} warm stdio tool calls each way")
    with tempfile.TemporaryDirectory(prefix="aa-bench-mcp-") as tmp:
        project = make_project(Path(tmp))
        times = asyncio.run(measure(project, project / "bench_server.py", batches, opts.calls))
        cold_ours, cold_sdk = (None, None) if opts.quick else cold(project, Path(tmp), 5)  # no target: not with --quick
    direct, client, server = (median(times[k]) for k in ("direct", "client", "server"))
    table(["per call (median of batches)", "time", "ratio to direct"], [
        ["direct: SDK client -> minimal SDK server", us(direct), "1.00x"],
        ["client: skill -> pipeline -> agentapps session -> same server", us(client), f"{client / direct:.2f}x"],
        ["server: SDK client -> agentapps mcp-server -> code skill", us(server), f"{server / direct:.2f}x"],
    ])
    if cold_ours is None or cold_sdk is None:
        print("cold one-call process: not with --quick (no target)")
    else:
        print(f"cold one-call process: agentapps run {cold_ours:.2f} s, SDK client script {cold_sdk:.2f} s "
              f"({cold_ours / cold_sdk:.2f}x; no target)")
    client_ok, server_ok = client / direct <= CLIENT_TARGET, server / direct <= SERVER_TARGET
    print(f"client ratio {client / direct:.2f}x (target <= {CLIENT_TARGET}x): {'met' if client_ok else 'missed'}")
    print(f"server ratio {server / direct:.2f}x (target <= {SERVER_TARGET}x): {'met' if server_ok else 'missed'}")
    footer()
    verdict(client_ok and server_ok, f"client {client / direct:.2f}x (<= {CLIENT_TARGET}x), "
                                     f"server {server / direct:.2f}x (<= {SERVER_TARGET}x)")


if __name__ == "__main__":
    main()
