"""The Python half of one snippet: the poll/deliver protocol with the prelude's bridge."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from agentapps.sandbox.engine import Engine, IsolateFault
from agentapps.sandbox.results import InvokeFn, SandboxLimits, SnippetResult, error, join_logs

BARE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,127}")


def js_string(text: str) -> str:
    """A JavaScript string literal for `text` (ASCII-only JSON is valid JS)."""
    return json.dumps(text)


class Snippet:
    """The Python half of one snippet: admits invoke requests, runs them, records the outcome."""

    def __init__(self, limits: SandboxLimits, invoke: InvokeFn, bridge: str) -> None:
        self.limits, self.invoke, self.bridge = limits, invoke, bridge
        self.tasks: set[asyncio.Task[str]] = set()
        self.invokes = 0
        self.limit: str | None = None
        self.outcome: dict[str, Any] | None = None

    async def drive(self, engine: Engine, code: str) -> dict[str, Any]:
        """Run until the snippet has settled with no invoke outstanding; return its final state."""
        b = self.bridge
        text = await engine.eval(f"{b}.start({js_string(code)})", f"{b}.poll()")
        while True:
            state = _load(text)
            replies = self._absorb(state)
            if self.outcome is not None and not self.tasks and not replies:
                # the poll that first sees the end carries the final state (only that poll's)
                final = state.get("final")
                break
            if not replies:
                if not self.tasks:  # nothing outside the isolate can settle what it awaits
                    self.outcome = {"ok": False, "type": "runtime", "message": STUCK}
                    final = None
                    break
                await asyncio.wait(self.tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in [task for task in self.tasks if task.done()]:
                self.tasks.discard(task)
                replies.append(task.result())
            batch = "[" + ",".join(replies) + "]"
            text = await engine.eval(f"{b}.deliver({js_string(batch)})", f"{b}.poll()")
        if final is None:  # stuck, or a poll that could not tell the end (asks for it as before)
            final = _load(await engine.eval(f"{b}.final()"))
        elif not isinstance(final, dict):
            raise IsolateFault("malformed final state")
        return _checked_final(final, self.limits)

    def _absorb(self, state: dict[str, Any]) -> list[str]:
        """Take in one poll: the outcome, limit notes and new invoke requests."""
        if self.limit is None and isinstance(state.get("limit"), str):
            self.limit = state["limit"]
        outcome = state.get("outcome")
        if outcome is not None and self.outcome is None:
            self.outcome = _checked_outcome(outcome)
        requests = state.get("requests")
        if not isinstance(requests, list):
            raise IsolateFault("malformed poll")
        return [reply for reply in map(self._admit, requests) if reply is not None]

    def _admit(self, request: Any) -> str | None:
        """Start one invoke as a task on the caller's loop, or return the refusal to send back."""
        if not (isinstance(request, dict) and type(request.get("id")) is int
                and isinstance(request.get("name"), str) and isinstance(request.get("args"), str)):
            raise IsolateFault("malformed invoke request")
        rid, name, args_json = request["id"], request["name"], request["args"]
        if not BARE_NAME.fullmatch(name):
            return _refusal(rid, f"ctx.manager.invoke: {name[:100]!r} is not a bare skill name "
                            "(lowercase letters, digits and '-'); paths and URIs are refused")
        size, most = len(args_json.encode("utf-8")), self.limits.max_arg_bytes
        over = None
        if self.invokes >= self.limits.max_invokes:
            over = f"more than {self.limits.max_invokes} ctx.manager.invoke calls in one snippet"
        elif size > most:
            over = f"ctx.manager.invoke args are {size} bytes of JSON, over the {most}-byte limit"
        if over is not None:
            self.limit = self.limit or over
            return _refusal(rid, over)
        try:
            args = json.loads(args_json)
        except ValueError:
            raise IsolateFault("invoke args are not JSON") from None
        self.invokes += 1
        self.tasks.add(asyncio.get_running_loop().create_task(self._call(rid, name, args)))
        return None

    async def _call(self, rid: int, name: str, args: Any) -> str:
        try:
            value = await self.invoke(name, args)
        except Exception as exc:  # noqa: BLE001 - every failure becomes an Error the agent can catch
            return _refusal(rid, str(exc) or type(exc).__name__)
        try:
            text = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            return _refusal(rid, f"the result of {name!r} is not JSON ({exc})")
        return f'{{"id":{rid},"ok":true,"value":{text}}}'

    def cancel_invokes(self) -> None:
        for task in self.tasks:
            task.cancel()

    def result(self, failure: dict[str, str] | None, final: dict[str, Any] | None = None
               ) -> SnippetResult:
        final = final or {"logs": "", "finished": False, "finish_value": None}
        outcome = self.outcome or {"ok": False, "type": "runtime", "message": STUCK}
        if failure is None and self.limit is not None:
            failure = error("limit", f"Limit reached: {self.limit}.")
        if failure is None and not outcome["ok"]:
            failure = error(outcome["type"], outcome["message"])
        value = outcome["value"] if failure is None else None
        return SnippetResult(ok=failure is None, value=value, logs=final["logs"],
                             finished=final["finished"], finish_value=final["finish_value"],
                             error=failure, invokes=self.invokes)


STUCK = ("The snippet awaits a promise that can never settle: only ctx.manager.invoke results "
         "arrive from outside the sandbox, and there are no timers.")
_ERROR_TYPES = {"syntax", "runtime", "invoke"}


def _load(text: object) -> dict[str, Any]:
    try:
        data = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise IsolateFault("the bridge did not answer with a JSON object")
    return data


def _checked_outcome(outcome: Any) -> dict[str, Any]:
    """Validate the settled snippet's outcome and decode its return value."""
    if isinstance(outcome, dict) and outcome.get("ok") is True and isinstance(outcome.get("value"), str):
        try:
            return {"ok": True, "value": json.loads(outcome["value"])}
        except ValueError:
            pass
    elif (isinstance(outcome, dict) and outcome.get("ok") is False
          and outcome.get("type") in _ERROR_TYPES and isinstance(outcome.get("message"), str)):
        return {"ok": False, "type": outcome["type"], "message": outcome["message"]}
    raise IsolateFault("malformed outcome")


def _checked_final(final: dict[str, Any], limits: SandboxLimits) -> dict[str, Any]:
    """Validate the end-of-snippet state: console buffers, finish value, memory snapshot."""
    head, tail, total = final.get("head"), final.get("tail"), final.get("total")
    finish, memory = final.get("finish"), final.get("memory")
    if not (isinstance(head, str) and isinstance(tail, str) and type(total) is int
            and isinstance(finish, str) and isinstance(final.get("finished"), bool)):
        raise IsolateFault("malformed final state")
    try:
        finish_value = json.loads(finish)
        if isinstance(memory, str):
            json.loads(memory)
    except ValueError:
        raise IsolateFault("malformed final state") from None
    return {
        "logs": join_logs(head, tail, total, limits.max_output_chars),
        "finished": final["finished"],
        "finish_value": finish_value if final["finished"] else None,
        "memory": memory if isinstance(memory, str) else None,  # None: not JSON, keep the last
    }


def _refusal(rid: int, message: str) -> str:
    return json.dumps({"id": rid, "ok": False, "message": message})
