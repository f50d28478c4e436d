"""The Python half of one snippet: the poll/deliver protocol with the prelude's bridge.

Everything the isolate says is re-checked here, because the process it runs in is not trusted:
bare skill names, the number of invokes, the size and nesting of every JSON value agent code hands
over (invoke args, the return value, the finish value, `memory`), and the shape of each message.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING, Any

from agentapps.sandbox import bounded
from agentapps.sandbox.engine import IsolateFault
from agentapps.sandbox.results import InvokeFn, SandboxLimits, SnippetResult, error, join_logs

if TYPE_CHECKING:
    from agentapps.sandbox.engine import Engine

BARE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,127}")
NEXT = "$next"  # `target.manager.next()` in middleware mode; the invoke function decides
Call = tuple[int, str, Any]  # an admitted invoke: request id, skill name, args
POLL = ("G", "poll")


class Snippet:
    """The Python half of one snippet: admits invoke requests, runs them, records the outcome."""

    def __init__(self, limits: SandboxLimits, invoke: InvokeFn) -> None:
        self.limits, self.invoke = limits, invoke
        self.tasks: set[asyncio.Task[str]] = set()
        self.done: list[asyncio.Task[str]] = []  # finished tasks whose replies are not sent yet
        self.wakeup: asyncio.Future[None] | None = None
        self.invokes = 0
        self.limit: str | None = None
        self.outcome: dict[str, Any] | None = None

    async def drive(self, engine: Engine, code: str) -> dict[str, Any]:
        """Run until the snippet has settled with no invoke outstanding; return its final state."""
        text = await engine.call(("S", "start", code), POLL)
        while True:
            state = _load(text)
            replies, calls = self._absorb(state)
            more = state.get("more") is True  # requests still queued in the isolate
            if len(calls) == 1 and not (self.tasks or replies or more):
                # one call and nothing else to wait for (sequential awaits): running it here is
                # what a task would do, minus the task and two turns of the event loop
                replies.append(await self._call(*calls[0]))
            else:
                for call in calls:
                    task = asyncio.get_running_loop().create_task(self._call(*call))
                    task.add_done_callback(self._finished)
                    self.tasks.add(task)
                if self.outcome is not None and not (self.tasks or replies or more):
                    # the poll that first sees the end carries the final state (only that poll's)
                    final = state.get("final")
                    break
                if not replies and not more:
                    if not self.tasks:  # nothing outside the isolate can settle what it awaits
                        self.outcome = {"ok": False, "type": "runtime", "message": STUCK}
                        final = None
                        break
                    if not self.done:
                        self.wakeup = asyncio.get_running_loop().create_future()
                        await self.wakeup
                for task in self.done:
                    self.tasks.discard(task)
                    replies.append(task.result())
                self.done.clear()
            if replies:
                text = await engine.call(("S", "deliver", "[" + ",".join(replies) + "]"), POLL)
            else:
                text = await engine.call(POLL)
        if final is None:  # stuck, or a poll that could not tell the end (asks for it as before)
            final = _load(await engine.call(("G", "final")))
        elif not isinstance(final, dict):
            raise IsolateFault("malformed final state")
        return self._checked_final(final)

    def _absorb(self, state: dict[str, Any]) -> tuple[list[str], list[Call]]:
        """Take in one poll: the outcome, limit notes, and new invoke requests (refusals to send
        back, and the calls admitted)."""
        if self.limit is None and isinstance(state.get("limit"), str):
            self.limit = state["limit"][:1000]
        outcome = state.get("outcome")
        if outcome is not None and self.outcome is None:
            self.outcome = self._checked_outcome(outcome)
        requests = state.get("requests")
        if not isinstance(requests, list):
            raise IsolateFault("malformed poll")
        replies, calls = [], []
        for request in requests:
            admitted = self._admit(request)
            if isinstance(admitted, str):
                replies.append(admitted)
            else:
                calls.append(admitted)
        return replies, calls

    def _admit(self, request: Any) -> str | Call:
        """Admit one invoke request: the call to make, or the refusal to send back."""
        if not (isinstance(request, dict) and type(request.get("id")) is int
                and isinstance(request.get("name"), str) and isinstance(request.get("args"), str)):
            raise IsolateFault("malformed invoke request")
        rid, name, args_json = request["id"], request["name"], request["args"]
        if not BARE_NAME.fullmatch(name) and name != NEXT:
            return _refusal(rid, f"ctx.manager.invoke: {name[:100]!r} is not a bare skill name "
                            "(lowercase letters, digits and '-'); paths and URIs are refused")
        size, most = len(args_json.encode("utf-8", "surrogatepass")), self.limits.max_arg_bytes
        over = args = None
        if self.invokes >= self.limits.max_invokes:
            over = f"more than {self.limits.max_invokes} ctx.manager.invoke calls in one snippet"
        elif size > most:
            over = f"ctx.manager.invoke args are {size} bytes of JSON, over the {most}-byte limit"
        else:
            try:
                args = bounded.loads(args_json, self.limits.max_depth)
            except bounded.TooDeep as exc:
                over = f"ctx.manager.invoke args are {exc}"
            except ValueError:
                raise IsolateFault("invoke args are not JSON") from None
        if over is not None:
            self.limit = self.limit or over
            return _refusal(rid, over)
        self.invokes += 1
        return rid, name, args

    def _finished(self, task: asyncio.Task[str]) -> None:
        if not task.cancelled():
            self.done.append(task)
        if self.wakeup is not None and not self.wakeup.done():
            self.wakeup.set_result(None)

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

    def _value(self, text: str, what: str) -> tuple[Any, str | None]:
        """Decode a JSON value agent code handed over, or say which limit it breaks."""
        size, most = len(text.encode("utf-8", "surrogatepass")), self.limits.max_value_bytes
        if size > most:
            return None, f"{what} is {size} bytes of JSON, over the {most}-byte limit"
        try:
            return bounded.loads(text, self.limits.max_depth), None
        except bounded.TooDeep as exc:
            return None, f"{what} is {exc}"
        except ValueError:
            raise IsolateFault(f"{what} is not JSON") from None

    def _checked_outcome(self, outcome: Any) -> dict[str, Any]:
        """Validate the settled snippet's outcome and decode its return value."""
        if not isinstance(outcome, dict):
            raise IsolateFault("malformed outcome")
        if outcome.get("ok") is True and isinstance(outcome.get("value"), str):
            value, over = self._value(outcome["value"], "the return value")
            if over is None:
                return {"ok": True, "value": value}
            return {"ok": False, "type": "limit", "message": f"Limit reached: {over}."}
        if (outcome.get("ok") is False and outcome.get("type") in _ERROR_TYPES
                and isinstance(outcome.get("message"), str)):
            message = outcome["message"][:4000]
            if outcome["type"] == "limit":
                message = f"Limit reached: {message}."
            return {"ok": False, "type": outcome["type"], "message": message}
        raise IsolateFault("malformed outcome")

    def _checked_final(self, final: dict[str, Any]) -> dict[str, Any]:
        """Validate the end-of-snippet state: console buffers, finish value, memory snapshot."""
        head, tail, total = final.get("head"), final.get("tail"), final.get("total")
        finish, memory, finished = final.get("finish"), final.get("memory"), final.get("finished")
        if not (isinstance(head, str) and isinstance(tail, str) and type(total) is int
                and isinstance(finish, str) and isinstance(finished, bool)
                and (memory is None or memory is False or isinstance(memory, str))):
            raise IsolateFault("malformed final state")
        finish_value = None
        if finished:
            finish_value, over = self._value(finish, "the ctx.manager.finish value")
            if over is not None:
                finished, self.limit = False, self.limit or over
        refused = None  # why `memory` cannot be the snapshot (None: it can, or is not JSON)
        if memory is False:
            refused = f"`memory` is over {self.limits.max_value_bytes} characters of JSON"
        elif isinstance(memory, str):
            memory = bounded.wellformed(memory)  # it is kept as text: the snapshot
            refused = self._value(memory, "`memory`")[1]
        return {
            "logs": join_logs(head, tail, total, self.limits.max_output_chars),
            "finished": finished,
            "finish_value": finish_value,
            "memory": memory if isinstance(memory, str) and refused is None else None,
            "memory_refused": refused,
        }

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
_ERROR_TYPES = {"syntax", "runtime", "invoke", "limit"}


def _load(text: object) -> dict[str, Any]:
    try:
        data = json.loads(bounded.wellformed(text)) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise IsolateFault("the bridge did not answer with a JSON object")
    return data


def _refusal(rid: int, message: str) -> str:
    return json.dumps({"id": rid, "ok": False, "message": message})
