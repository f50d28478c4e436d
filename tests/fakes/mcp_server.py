"""A test MCP server written with the SDK's low-level Server: `python mcp_server.py [--http PORT]`.

Its tools cover what a client meets: plain and structured results, isError, a crash mid-call, a
hang that blocks the whole process, huge output, elicitation, progress, a destructive tool, and
the environment it was given. Each start appends its pid to $PIDFILE (when set), so tests can
check that no server outlives the run.
"""

from __future__ import annotations

import os
import sys
import time

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
NONE = {"type": "object", "properties": {}}
TOOLS = [
    types.Tool(name="echo", description="Echo the text back.", input_schema=TEXT),
    types.Tool(name="add", description="Add two numbers.",
               input_schema={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                             "required": ["a", "b"]},
               output_schema={"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}),
    types.Tool(name="fail", description="Always fails.", input_schema=NONE),
    types.Tool(name="crash", description="Exits in the middle of the call.", input_schema=NONE),
    types.Tool(name="hang", description="Blocks the server for an hour.", input_schema=NONE),
    types.Tool(name="huge", description="Returns `size` characters.",
               input_schema={"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]}),
    types.Tool(name="ask_name", description="Asks the user for a name.", input_schema=NONE),
    types.Tool(name="env", description="Returns an environment variable.",
               input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    types.Tool(name="delete_all", description="Deletes everything.", input_schema=NONE,
               annotations=types.ToolAnnotations(destructive_hint=True)),
    types.Tool(name="peek", description="Reads; annotated destructive but read-only.", input_schema=NONE,
               annotations=types.ToolAnnotations(destructive_hint=True, read_only_hint=True)),
    types.Tool(name="auth", description="Returns the Authorization header it received (HTTP).", input_schema=NONE),
    types.Tool(name="grow", description="Adds the tool `extra` and says the tool list changed.", input_schema=NONE),
    types.Tool(name="slow", description="Reports progress, then answers.",
               input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}}),
]


def text(value: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)], is_error=error)


EXTRA: list[types.Tool] = []


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS + EXTRA)


async def call_tool(ctx, params):
    name, args = params.name, params.arguments or {}
    if name == "echo":
        return text(args["text"])
    if name == "add":
        total = args["a"] + args["b"]
        return types.CallToolResult(content=[types.TextContent(type="text", text=str(total))],
                                    structured_content={"sum": total})
    if name == "fail":
        return text("the widget is broken", error=True)
    if name == "crash":
        sys.stderr.write(f"fatal: the server fell over (token {os.environ.get('TOKEN')})\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "hang":
        time.sleep(3600)  # noqa: ASYNC251 - blocking on purpose: a hung server answers nothing, not even stdin
    if name == "huge":
        return text("x" * int(args["size"]))
    if name == "ask_name":
        answer = await ctx.session.elicit_form(
            "What is your name?", {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            related_request_id=ctx.request_id)
        if answer.action != "accept":
            return text(f"no name ({answer.action})")
        return text(f"hello {answer.content['name']}")
    if name == "env":
        return text(os.environ.get(args["name"], "<unset>"))
    if name in ("delete_all", "peek"):
        return text(f"{name} done")
    if name == "auth":
        request = getattr(ctx, "request", None)
        return text(str(request.headers.get("authorization")) if request is not None else "<stdio>")
    if name == "grow":
        EXTRA.append(types.Tool(name="extra", description="Added at run time.", input_schema=NONE))
        await ctx.session.send_tool_list_changed()
        return text("grown")
    if name == "extra":
        return text("extra done")
    if name == "slow":
        seconds = float(args.get("seconds", 0.3))
        for step in range(3):
            await ctx.session.report_progress(step + 1, 3, f"step {step + 1}")
            await anyio.sleep(seconds / 3)
        return text("slow done")
    return text(f"unknown tool {name}", error=True)


server = Server("fake", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    if os.environ.get("PIDFILE"):
        with open(os.environ["PIDFILE"], "a") as out:
            out.write(f"{os.getpid()}\n")
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        import uvicorn

        app = server.streamable_http_app()
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
        return
    from mcp.server.stdio import stdio_server

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, options)

    anyio.run(serve)


if __name__ == "__main__":
    main()
