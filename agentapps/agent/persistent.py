"""Persistent mode between turns: the agent waits for the user's next message through
`gateway-receive`, and a turn the user interrupts (the REPL's Ctrl-C) ends at once.

When the model answers without a tool call, the hook asks `gateway-receive` (a skill: a project
may shadow it) for the next message and continues with it; end of input stops the run cleanly
with the last answer (stop reason `input_ended`). Blank lines are skipped. With no gateway in the
process (a server), the agent continues with "Continue with the task." as before.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from agentapps.agent.code import cancellable
from agentapps.gateway import Gateway, NoGatewayError

if TYPE_CHECKING:
    from agentapps.agent.state import AgentRun
    from agentapps.context.context import Context

INTERRUPTED = ("Interrupted by the user (Ctrl-C): this snippet was stopped; `memory` is as it was "
               "after the last snippet that completed.")
NOTE = "(The user interrupted your previous turn.)\n"


async def await_input(ctx: Context, run: AgentRun, directive: dict[str, Any],
                      interrupted: bool) -> dict[str, Any]:
    """The turn-end directive once the user's next message is in (or input has ended)."""
    while True:
        try:
            got = await ctx.manager.invoke("gateway-receive", {})
        except NoGatewayError:
            return {k: v for k, v in directive.items() if k != "input"}
        text = got.get("text") if isinstance(got, dict) else None
        if not isinstance(text, str):  # input ended: a clean stop with the last answer
            run.stop_reason = "input_ended"
            return {"stop": True, "result": run.buffer.text}
        if text.strip():
            return {"continue": True, "message": (NOTE if interrupted else "") + text}


async def interruptible(gateway: Gateway, snippet: Coroutine[Any, Any, dict[str, Any]],
                        limit: int) -> dict[str, Any]:
    """Run one snippet so that the gateway's interrupt stops it (the model is told so)."""
    return await cancellable(snippet, gateway.watch, INTERRUPTED, limit)
