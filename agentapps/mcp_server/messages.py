"""Steering and follow-ups over `agentapps mcp-server`: the tool `agentapps_message`.

The protocol has no client notification that could carry a message to a running call (the SDK
accepts only the fixed set the specification names), so a client sends one as a call of this tool,
naming the running `tools/call` it is for by that request's JSON-RPC id or by the progress token it
sent with it. The message goes to that call's `Inbox` (agent/steering.py), as `POST /steer` and
`POST /follow-up` of `agentapps serve` do. Only the MCP session that started a call may message it.

The tool is offered only beside an agent skill (skill names are lower-case letters, digits and `-`,
so its `_` keeps it apart from every skill); everything wrong is an `isError` result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from agentapps.agent.steering import KINDS, MAX_MESSAGE, Inbox, checked_message
from agentapps.errors import UsageError

NAME = "agentapps_message"
KEYS = ("requestId", "progressToken")
CALL_ID = {"type": ["string", "integer"]}
SHAPE: dict[str, Any] = {
    "name": NAME,
    "description": (
        "Send a message to a running agent skill call of this session. Name the call by the JSON-RPC id "
        "of its tools/call request (requestId) or by the progress token you sent with it (progressToken). "
        "kind 'steer': the agent's running tool calls stop and its next model step reads the message; "
        "kind 'follow-up': the message becomes the agent's next user turn when it would otherwise finish."),
    "inputSchema": {
        "type": "object",
        "properties": {
            "requestId": {**CALL_ID, "description": "The JSON-RPC id of the running tools/call."},
            "progressToken": {**CALL_ID, "description": "The progress token the running tools/call sent."},
            "kind": {"type": "string", "enum": list(KINDS)},
            "message": {"type": "string", "minLength": 1, "maxLength": MAX_MESSAGE},
        },
        "required": ["kind", "message"],
        "additionalProperties": False,
    },
}


def peer(session: Any) -> Any:
    """The connection a request came on: one per MCP session (HTTP), the one stream (stdio)."""
    return getattr(session, "_connection", session)


@dataclass
class Running:
    """One tools/call in progress, as a message may name it."""

    owner: Any  # the connection that started it
    skill: str
    runs_agent: bool
    ids: dict[str, str]  # "requestId" / "progressToken" -> its value as text
    inbox: Inbox = field(default_factory=Inbox)
    call_off: Callable[[], None] | None = None  # withdraws the approval questions it put to the client


def _key(value: Any) -> str | None:
    """A call id as text (7 and "7" are one id, as the SDK treats them); None if it is no id."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    return str(value)


class Calls:
    """The calls running on every connection, and the messages sent to them."""

    def __init__(self) -> None:
        self.running: list[Running] = []

    def start(self, ctx: Any, skill: str, runs_agent: bool) -> Running:
        meta = ctx.meta or {}
        found = {"requestId": _key(ctx.request_id),
                 "progressToken": _key(meta.get("progress_token", meta.get("progressToken")))}
        call = Running(peer(ctx.session), skill, runs_agent, {k: v for k, v in found.items() if v is not None})
        self.running.append(call)
        return call

    def end(self, call: Running) -> None:
        self.running = [c for c in self.running if c is not call]

    def _target(self, ctx: Any, args: dict[str, Any]) -> tuple[Running, str]:
        named = [k for k in KEYS if k in args]
        if len(named) != 1:
            raise UsageError("Name the call by exactly one of 'requestId' and 'progressToken'.")
        key, value = named[0], _key(args[named[0]])
        if value is None:
            raise UsageError(f"'{key}' must be a string or an integer.")
        said = f"{key} {json.dumps(args[key])[:80]}"
        matches = [c for c in self.running if c.ids.get(key) == value]
        mine = [c for c in matches if c.owner is peer(ctx.session)]
        if len(mine) == 1:
            return mine[0], said
        if mine:
            raise UsageError(f"More than one running call of this session has {said}; name it by the other id.")
        if matches:
            raise UsageError(f"The call with {said} belongs to another MCP session: only the session that "
                             "started a call may message it.")
        raise UsageError(f"No running call of this session has {said}: it has finished, or never started.")

    def message(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        """Deliver a message; every refusal is an error result saying why."""
        try:
            unknown = sorted(set(args) - {*KEYS, "kind", "message"})
            if unknown:
                raise UsageError(f"{NAME} takes requestId or progressToken, kind and message, not: "
                                 f"{', '.join(unknown)}.")
            text = checked_message(args.get("kind"), args.get("message"))
            call, said = self._target(ctx, args)
            untaken = call.inbox.untaken(call.runs_agent)
            if untaken is not None:
                raise UsageError(f"The call with {said} (skill '{call.skill}') cannot take the message: {untaken}.")
        except UsageError as exc:
            return types.CallToolResult(content=[types.TextContent(type="text", text=exc.message)], is_error=True)
        if args["kind"] == "steer":  # the stopped snippet's questions are called off, as serve does
            if call.call_off is not None:
                call.call_off()
            call.inbox.steer(text)
        else:
            call.inbox.follow_up(text)
        done = {"ok": True, "queued": args["kind"], "skill": call.skill}
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(done))])
