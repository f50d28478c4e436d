"""One call served by `agentapps mcp-server`: the full pipeline as `agentapps run` does it, with
its agent events sent as progress (plus a heartbeat), its trust questions asked of the client
through elicitation, and a client's cancellation cancelling the run."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import time
from typing import TYPE_CHECKING, Any

import mcp_types as types

from agentapps.agent.steering import INBOX
from agentapps.context.context import Globals
from agentapps.errors import AgentAppsError, InterruptedError_
from agentapps.lifecycle.failure import one_line, record
from agentapps.lifecycle.served import REPORT, begin, invoke
from agentapps.mcp.elicit import FORWARD, Answer
from agentapps.mcp_server.messages import Running
from agentapps.secrets import redact
from agentapps.tools.policy import Policy
from agentapps.trust import ASK

if TYPE_CHECKING:
    from agentapps.runstate import Internals

log = logging.getLogger("agentapps.mcp")
MAX_MESSAGE = 500  # characters of one progress message


class Sink:
    """Progress notifications for one call: agent events in order, and a heartbeat when quiet."""

    def __init__(self, session: Any, heartbeat: float, internals: Internals) -> None:
        self.session = session
        self.heartbeat = heartbeat if heartbeat > 0 else None
        self.internals = internals
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.started = time.monotonic()
        self.count = 0
        self.task = asyncio.ensure_future(self._send())

    def event(self, type_: str, data: dict[str, Any]) -> None:
        text = describe(type_, data)
        if text is None:
            return
        text = one_line(text, self.internals.redactor)[:MAX_MESSAGE]  # redacted whole, then cut
        if _on_loop(self.loop):
            self.queue.put_nowait(text)
        else:  # reported from a worker thread
            self.loop.call_soon_threadsafe(self.queue.put_nowait, text)

    async def _send(self) -> None:
        while True:
            try:
                text = await asyncio.wait_for(self.queue.get(), self.heartbeat)
            except TimeoutError:
                text = f"still running ({time.monotonic() - self.started:.0f} s)"
            if text is None:
                return
            self.count += 1
            try:
                await self.session.report_progress(self.count, None, text)
            except Exception:  # a client gone away must not break the run
                log.debug("progress notification failed", exc_info=True)

    async def close(self) -> None:
        self.queue.put_nowait(None)
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self.task), 1.0)
        self.task.cancel()


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def first_line(code: Any) -> str:
    lines = [line.strip() for line in str(code or "").splitlines() if line.strip()]
    return lines[0][:80] if lines else ""


def describe(type_: str, data: dict[str, Any]) -> str | None:
    """One line for a progress notification (None: not worth one)."""
    if type_ == "agent-start":
        return f"agent {data.get('skill')} started ({data.get('model')})"
    if type_ == "turn-start":
        return f"turn {data.get('turnNumber')}: waiting for the model"
    if type_ == "agent-message" and not data.get("delta"):
        return str(data.get("text") or "") or None
    if type_ == "tool-call":
        args = data.get("args")
        return f"running {data.get('tool')}: {first_line(args.get('code') if isinstance(args, dict) else '')}"
    if type_ in ("tool-result", "tool-error"):
        return f"{'error' if type_ == 'tool-error' else 'done'}: {data.get('tool')}"
    if type_ in ("agent-retry", "agent-error") and data.get("willRetry", type_ == "agent-retry"):
        return f"retrying: {data.get('error')}"
    if type_ == "agent-complete":
        return f"agent finished: {data.get('stopReason')}"
    if type_ in ("agent-steer", "agent-follow-up"):
        return f"{type_[6:]} taken: {data.get('text')}"
    if type_ == "mcp-start":
        return f"starting MCP server '{data.get('server')}'"
    if type_ == "mcp-reconnect":
        return f"MCP server '{data.get('server')}' had lost its session; '{data.get('tool')}' sent again"
    if type_ == "mcp-progress":
        return f"{data.get('server')}: {data.get('message') or data.get('progress')}"
    return None


APPROVAL = {"type": "object", "required": ["answer"], "properties": {"answer": {
    "type": "string", "enum": ["once", "deny"], "title": "Allow this call?",
    "description": "once: allow this call; deny: refuse it."}}}


class Client:
    """What this call may ask of the MCP client: approvals and forwarded questions (elicitation)."""

    def __init__(self, session: Any, request_id: Any) -> None:
        self.session = session
        self.request_id = request_id
        self.loop = asyncio.get_running_loop()
        caps = session.client_capabilities
        self.can_ask = caps is not None and caps.elicitation is not None and session.can_send_request
        self.asking: set[concurrent.futures.Future[Any]] = set()  # approval questions awaiting an answer

    async def _elicit(self, message: str, schema: dict[str, Any]) -> Any:
        return await self.session.elicit_form(message, schema, related_request_id=self.request_id)

    def approve(self, question: str, timeout: float) -> str:
        """trust.ASK: runs in decide()'s worker thread; the question goes out on the loop."""
        future = asyncio.run_coroutine_threadsafe(self._elicit(question, APPROVAL), self.loop)
        self.asking.add(future)
        try:
            answer = future.result(timeout)
        except Exception:  # noqa: BLE001 - no answer in time, called off, or the client refused to answer
            future.cancel()
            return "deny"
        finally:
            self.asking.discard(future)
        content = answer.content or {}
        return str(content.get("answer")) if answer.action == "accept" else "deny"

    def call_off(self) -> None:
        """Withdraw the approval questions waiting for the client (a steer stopped the calls that
        asked them): the requests are cancelled, and the calls denied."""
        for future in list(self.asking):
            future.cancel()

    async def forward(self, server: str, message: str, schema: dict[str, Any]) -> Answer:
        if not self.can_ask:
            return "decline", None
        answer = await self._elicit(f"MCP server '{server}' asks: {message}", schema)
        return answer.action, answer.content


def _text(result: Any) -> str:
    if result is None:
        return ""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)


def success(result: Any, structured: bool, internals: Internals) -> types.CallToolResult:
    text = redact(_text(result), internals)
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    if structured and isinstance(result, dict):
        clean = json.loads(redact(json.dumps(result, ensure_ascii=False, default=str), internals))
        return types.CallToolResult(content=content, structured_content=clean)
    return types.CallToolResult(content=content)


def _traceparent(ctx: Any) -> str | None:
    """The W3C `traceparent` the call carried: in its request's `_meta` (MCP SEP-414, any transport,
    stdio too), else in the header of the HTTP request that carried it."""
    found = (ctx.meta or {}).get("traceparent")
    if isinstance(found, str):
        return found
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    found = headers.get("traceparent") if headers is not None else None
    return found if isinstance(found, str) else None


def failure(error: dict[str, Any]) -> types.CallToolResult:
    """The run's error record as an error tool result: its message, one line, already redacted."""
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=str(error["message"]))]
    return types.CallToolResult(content=content, is_error=True)


async def serve_call(g: Globals, ctx: Any, name: str, args: dict[str, Any], *, structured: bool,
                     policy: Policy | None, heartbeat: float, running: Running | None = None) -> types.CallToolResult:
    """Run skill `name` for the request `ctx`; every outcome but a cancellation is a tool result.
    `running`: the call as the tool agentapps_message finds it (its agent's inbox)."""
    # this call is a run of its own (lifecycle/served.py), in the trace its HTTP request names
    run = begin(g, policy, traceparent=_traceparent(ctx))
    client = Client(ctx.session, ctx.request_id)
    if running is not None:
        running.call_off = client.call_off
    meta = ctx.meta or {}
    wants_progress = meta.get("progress_token", meta.get("progressToken")) is not None
    sink = Sink(ctx.session, heartbeat, g.internals) if wants_progress else None
    tokens = (REPORT.set(sink.event if sink is not None else None),
              ASK.set(client.approve if client.can_ask else None), FORWARD.set(client.forward),
              INBOX.set(running.inbox if running is not None else None))
    started = time.perf_counter()
    error: BaseException | None = None
    try:
        result = await invoke(run, name, args, "Cancelled by the MCP client.")
    except asyncio.CancelledError:
        error = InterruptedError_("Cancelled by the MCP client.")
        raise
    except Exception as exc:  # every failure is a tool result; the server keeps serving
        if not isinstance(exc, AgentAppsError):  # a bug in a skill or in us
            log.warning("skill %s failed unexpectedly", name, exc_info=True)
        error = exc
    finally:
        REPORT.reset(tokens[0])
        ASK.reset(tokens[1])
        FORWARD.reset(tokens[2])
        INBOX.reset(tokens[3])
        if sink is not None:
            await sink.close()
        found = None if error is None else record(error, g.internals.redactor, skill=name)
        _record(g, run, name, args, found, started)
    if found is not None:
        return failure(found)
    return success(result, structured, g.internals)


def _record(g: Globals, run: Any, name: str, args: dict[str, Any], error: dict[str, Any] | None,
            started: float) -> None:
    """Add the call to the run log, as `agentapps run` and `agentapps serve` do (never fails it). The
    record is written in the background with the next ones (runlog.batch): the client does not
    wait for it."""
    from agentapps.runlog import enabled, entry_for
    from agentapps.runlog.batch import batcher_for

    if not enabled():
        return
    code = 0 if error is None else int(error["exit_code"])
    try:
        entry = entry_for(skill=name, args=args, internals=run.g.internals, exit_code=code, error=error,
                          started=started)
    except Exception:  # the log must never fail the call
        log.warning("the call of %s was not added to the run log", name, exc_info=True)
        return
    batcher_for(g.internals, g.config.log_dir).add(entry)
