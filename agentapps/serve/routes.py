"""The run endpoints of `agentapps serve`: `/invocations`, `/chat` (server-sent events), `/approve`,
`/cancel`, `/steer` and `/follow-up` (messages for a stream's running agent), and the read-only `/skills` and `/healthz`."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from agentapps.agent.steering import checked_message
from agentapps.core.jsontext import encoder
from agentapps.errors import (
    AgentAppsError,
    DeniedError,
    LimitError,
    StoreUnavailableError,
    UsageError,
)
from agentapps.serve.calls import (
    admit,
    checked_args,
    meta_of,
    needs_approval,
    offered,
    release,
    reserve,
    thread_for,
)
from agentapps.serve.http import Refused, endpoint, header, read_json, status_of, text_field
from agentapps.serve.runs import LiveRun

if TYPE_CHECKING:
    from agentapps.serve.state import Server


ANSWER_JSON = encoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))  # made once: per call, half its cost


def _server(request: Request) -> Server:
    return request.app.state.server  # type: ignore[no-any-return]


async def _prepared(request: Request, *, streaming: bool) -> tuple[Server, str, LiveRun]:
    server = _server(request)
    who = request.state.identity
    data = await read_json(request, server.options.max_body)
    tool = offered(server, data.get("skill"))
    args = checked_args(server, tool, data.get("args"))
    meta = meta_of(server, tool)
    if not streaming and needs_approval(server, tool, meta):
        raise Refused(400, UsageError(f"Skill '{tool.name}' has trust rules, so its calls may need approval, "
                                      "which needs a stream: use POST /chat.", skill=tool.name))
    thread = await thread_for(server, tool, meta, args, data.get("threadId"), who)
    return server, who, LiveRun(server, tool.name, args, owner=who, thread=thread, streaming=streaming,
                                traceparent=header(request, b"traceparent"))


@endpoint
async def invocations(request: Request) -> Response:
    """Run a skill to the end; the answer is the object `agentapps run --json` prints."""
    server, who, run = await _prepared(request, streaming=False)
    await reserve(server, who)
    try:  # in this request's task: a task of its own per run cost a tenth of a trivial request
        await run.run_here("The server is shutting down.")
    finally:
        release(server, who)
    # the bytes JSONResponse would send, from one encoder (it builds a new one per response)
    return Response(ANSWER_JSON(run.outcome).encode(), status_of(run.outcome), media_type="application/json")


def sse(name: str, data: Any) -> bytes:
    """One server-sent event: `event:` and one `data:` line of JSON. `json.dumps` escapes every
    line break (`\\n`, `\\r`, and U+2028 as ASCII), so one data line is always the whole frame.

    Framed here rather than by sse-starlette (issue 20 weighed 3.7.0): importing it replaces
    uvicorn's `Server.handle_exit` for the whole process and starts a shutdown watcher task on each
    event loop, beside `serve`'s own stop sequence; its default `\\r\\n` separator would also change
    the bytes the chat page parses. What it would add here (keep-alive comments, no-cache headers,
    ending the run when the client leaves) `_events` and `chat` already do."""
    return f"event: {name}\ndata: {json.dumps(data, default=str)}\n\n".encode()


async def _events(server: Server, run: LiveRun) -> AsyncIterator[bytes]:
    try:
        yield sse("stream-start", {"streamId": run.id, "skill": run.skill, "threadId": run.thread})
        while True:
            try:
                item = await asyncio.wait_for(run.events.get(), server.options.heartbeat)
            except TimeoutError:
                yield b": keep-alive\n\n"
                continue
            if item is None:
                return
            yield sse(*item)
    finally:  # the end, or the client went away: nobody is listening, so the run stops
        run.cancel("The client closed the stream.")
        server.live.pop(run.id, None)
        with contextlib.suppress(Exception):  # else the record expires on its own
            await server.coord.close_stream(run.id)


@endpoint
async def chat(request: Request) -> Response:
    """Run a skill and stream its events (text/event-stream) until its result or error."""
    server, who, run = await _prepared(request, streaming=True)
    server.live[run.id] = run
    try:
        await server.coord.open_stream(run.id, who, server.options.timeout + 60)
        await admit(server, who, run)
    except BaseException:
        server.live.pop(run.id, None)
        raise
    return StreamingResponse(_events(server, run), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _owned_stream(request: Request) -> tuple[Server, dict[str, Any], str]:
    server = _server(request)
    data = await read_json(request, server.options.max_body)
    stream = text_field(data, "streamId")
    assert stream is not None
    owner = await server.coord.stream_owner(stream)
    if owner is None:
        raise Refused(404, UsageError(f"No open stream '{stream}'."))
    if owner != request.state.identity:
        raise Refused(403, DeniedError("Only the client that started the stream may decide on it, cancel it "
                                       "or send its agent messages."))
    return server, data, stream


@endpoint
async def approve(request: Request) -> Response:
    """Decide a pending approval: {streamId, approvalId, decision: approve|deny}."""
    server, data, stream = await _owned_stream(request)
    approval = text_field(data, "approvalId")
    decision = data.get("decision")
    if decision not in ("approve", "deny"):
        raise Refused(400, UsageError("'decision' must be 'approve' or 'deny'."))
    if not await server.coord.decide(stream, str(approval), decision):
        raise Refused(409, UsageError(f"No pending approval '{approval}' on stream '{stream}': it was decided, "
                                      "timed out, or never asked."))
    return JSONResponse({"ok": True, "streamId": stream, "approvalId": approval, "decision": decision})


@endpoint
async def cancel(request: Request) -> Response:
    """Cancel a stream's run: {streamId}. Its pending approvals are denied."""
    server, _, stream = await _owned_stream(request)
    await server.coord.cancel(stream)
    return JSONResponse({"ok": True, "streamId": stream})


# a message's refusal (coord.Answer) as the error the client is told of; other statuses: UsageError
REFUSALS: dict[int, type[AgentAppsError]] = {429: LimitError, 503: StoreUnavailableError}


async def _message(request: Request, kind: str) -> Response:
    server, data, stream = await _owned_stream(request)
    try:
        text = checked_message(kind, data.get("message"))
    except UsageError as exc:
        raise Refused(400, exc) from None
    held = server.live.get(stream)
    # a stream another replica holds answers there; the answer comes back here
    answer = held.take(kind, text) if held is not None else await server.coord.message(stream, kind, text)
    if answer.status != 202:
        raise Refused(answer.status, REFUSALS.get(answer.status, UsageError)(answer.why))
    return JSONResponse({"ok": True, "streamId": stream, "queued": kind}, status_code=202)


@endpoint
async def steer(request: Request) -> Response:
    """Steer a stream's agent: {streamId, message}. Its running tool calls stop and the message is
    the next model step's."""
    return await _message(request, "steer")


@endpoint
async def follow_up(request: Request) -> Response:
    """Queue the next user turn of a stream's agent: {streamId, message}, taken when the model
    would otherwise end the run."""
    return await _message(request, "follow-up")


@endpoint
async def skills(request: Request) -> Response:
    """The skills served here, with their params and returns schemas."""
    server = _server(request)
    server.exposure.refresh()
    rows = []
    for offer in server.exposure.offers.values():
        tool = server.g.lookup.find(offer.name)
        rows.append({"name": offer.name, "description": offer.shape.get("description"),
                     "kind": tool.kind, "params": offer.shape["inputSchema"],
                     "returns": offer.shape.get("outputSchema"), "webhook": bool(tool.metadata.get("webhook")),
                     "schedule": tool.metadata.get("schedule")})
    return JSONResponse({"skills": rows})


async def healthz(request: Request) -> Response:
    server = _server(request)
    return JSONResponse({"ok": True, "runs": len(server.live) + len(server.background)})
