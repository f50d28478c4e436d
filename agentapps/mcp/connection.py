"""One live session with one MCP server, on the running loop: started on first use, listed at
once, closed when the run ends (or when it crashed or hung, so the next call may start a new one)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from agentapps.errors import AgentAppsError, ArgsError, ConfigError, LimitError, SkillError
from agentapps.mcp import config, elicit
from agentapps.mcp.slots import MCP_EARLY
from agentapps.mcp.spawn import spawn
from agentapps.mcp.stdio import ProcessInfo, kill_group, stdio_transport
from agentapps.secrets import redact

if TYPE_CHECKING:
    from mcp import Client
    from mcp.shared.dispatcher import ProgressFnT
    from mcp_types import CallToolResult, RequestParamsMeta

    from agentapps.context.context import Globals
    from agentapps.mcp.config import ServerSpec

CLOSE_SECONDS = 3.0  # stdin closed, SIGTERM, SIGKILL: about 1 s; the rest is for a slow HTTP goodbye
PAGES = 100  # tools/list pages followed at most: a paginator that never ends cannot hang a run


class LostSession(SkillError):
    """An HTTP server answered a call with 404 for our session id: it no longer knows the session
    (it restarted, or ended it), and it did not run the call, so the call may be sent again."""


def leaf(exc: BaseException) -> BaseException:
    """The first real error inside the task-group exception groups the SDK raises."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def list_tools(client: Client) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


class Connection:
    """A server's session; `on_tools` hears every tool list it reports (at start, on list_changed)."""

    def __init__(self, spec: ServerSpec, g: Globals, on_tools: Callable[[list[dict[str, Any]]], None]) -> None:
        self.spec = spec
        self.g = g
        self.on_tools = on_tools
        self.info = ProcessInfo()
        self.client: Client | None = None
        self.error: BaseException | None = None
        self.ended: str | None = None  # why it is no longer usable, when it crashed or hung
        self.ready = asyncio.Event()
        self.stopping = asyncio.Event()
        self.done = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.forwarders: list[elicit.Forward | None] = []  # of the calls in flight, newest last
        self.lost = False  # the latest answer to a request that named our session was a 404
        self._relists: set[asyncio.Task[None]] = set()

    @property
    def alive(self) -> bool:
        return self.client is not None and not self.done.is_set() and not self.info.closed.is_set()

    def _transport(self) -> Any:
        spec, internals = self.spec, self.g.internals
        if spec.url:
            from agentapps.mcp.remote import http_transport

            return http_transport(spec.name, spec.url, config.http_headers(spec, internals), self._lost)
        children: set[int] = internals.children
        early = internals.get(MCP_EARLY).pop(spec.prefix, None)

        async def start() -> asyncio.subprocess.Process:
            return early if early is not None and early.returncode is None else await spawn(spec, self.g)

        return stdio_transport(start, self.info, children)

    async def _own(self) -> None:
        """The task that holds the session open (the SDK wants one task to enter and leave it)."""
        import mcp_types as types
        from mcp import Client

        try:
            async with Client(self._transport(), mode="legacy", cache=None, elicitation_callback=self._elicit,
                              message_handler=self._on_message,
                              client_info=types.Implementation(name="agentapps", version="0.1")) as client:
                self.client = client
                self.on_tools(await list_tools(client))
                self.ready.set()
                ends = [asyncio.ensure_future(self.stopping.wait()), asyncio.ensure_future(self.info.closed.wait())]
                try:
                    await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for end in ends:
                        end.cancel()
        except BaseException as exc:  # noqa: BLE001 - reported by start() or call(); this task must end quietly
            self.error = leaf(exc)
        finally:
            self.client = None
            for task in self._relists:
                task.cancel()
            self.done.set()

    async def start(self) -> None:
        # a fresh context: the session's tasks must not carry the first caller's context variables
        self.task = asyncio.get_running_loop().create_task(self._own(), context=contextvars.Context())
        waits = [asyncio.ensure_future(self.ready.wait()), asyncio.ensure_future(self.done.wait())]
        try:
            await asyncio.wait(waits, timeout=self.spec.start_timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        if self.ready.is_set():
            return
        timed_out = not self.done.is_set()
        await self.close()
        if timed_out:
            raise LimitError(f"MCP server '{self.spec.name}' did not start within {self.spec.start_timeout:g} s "
                             f"({self.spec.shown}); if it is just slow, raise metadata.mcp.{self.spec.name}."
                             "startTimeout.", skill=self.spec.declared_by)
        raise self._start_error()

    def _start_error(self) -> AgentAppsError:
        exc, name = self.error, self.spec.name
        if isinstance(exc, AgentAppsError):
            return exc
        if isinstance(exc, FileNotFoundError):
            from agentapps.mcp.config import line_of

            # the machine lacks what the configuration names: a configuration problem (exit 2), as a
            # missing variable is, not a failure of the skill
            return ConfigError(f"MCP server '{name}' could not start: command '{self.spec.command}' was not found.",
                               skill=self.spec.declared_by, file=self.spec.file,
                               line=line_of(self.spec.file, name, "command"))
        if self.info.pid is not None and (self.info.closed.is_set() or self.info.returncode is not None):
            return SkillError(f"MCP server '{name}' exited while starting{self._how_it_ended()}.",
                              skill=self.spec.declared_by)
        return SkillError(f"MCP server '{name}' could not start ({self.spec.shown}): {type(exc).__name__}: {exc}",
                          skill=self.spec.declared_by)

    def why_gone(self) -> str:
        """Why a connection found dead before a call is no longer usable (the hub's record of it):
        what stopped it, or, for a server that exited between calls, its exit code and last words."""
        if self.ended:
            return self.ended
        if self.info.pid is not None and self.info.closed.is_set():
            return f"exited{self._how_it_ended()}"
        return "stopped"

    def _how_it_ended(self) -> str:
        code = self.info.returncode
        said = redact(self.info.last_words(), self.g.internals)  # a server may print what it was given
        return (f" (exit code {code})" if code is not None else "") + (f"; its last words: {said}" if said else "")

    async def call(self, tool: str, args: dict[str, Any], forward: elicit.Forward | None,
                   progress: ProgressFnT | None = None, traceparent: str | None = None) -> CallToolResult:
        """Call `tool`; `traceparent` (the calling span's, traces on) goes in the request's `_meta`
        (MCP SEP-414), so a server that traces joins the run's trace over any transport."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, INVALID_PARAMS, INVALID_REQUEST, REQUEST_TIMEOUT

        client, name, skill = self.client, self.spec.name, self.spec.prefix + "-" + tool
        if client is None:
            raise SkillError(f"MCP server '{name}' is not running.", skill=skill)
        self.forwarders.append(forward)
        try:
            # the session's call, not Client.call_tool: the handshake protocol never asks for the
            # multi-round-trip input that wrapper drives, so we skip its per-call machinery
            result = await client.session.call_tool(tool, args, read_timeout_seconds=self.spec.timeout,
                                                    progress_callback=progress,
                                                    meta=_meta(traceparent))
            if self._relists:  # the call changed the tool list: the next call should see the new one
                await asyncio.wait(set(self._relists), timeout=self.spec.timeout)
            return result
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                self.ended = f"did not answer '{tool}' within {self.spec.timeout:g} s"
                await self.close()  # a hung server is stopped; the next call may start a fresh one
                raise LimitError(f"MCP server '{name}' did not answer '{tool}' within {self.spec.timeout:g} s and "
                                 f"was stopped (metadata.mcp.{name}.timeout).", skill=skill) from None
            if exc.code == INVALID_REQUEST and self.lost:
                self.ended = "no longer knew its session (did it restart?)"
                await self.close()
                raise LostSession(f"MCP server '{name}' {self.ended}, so '{tool}' was not run.", skill=skill) from None
            if exc.code == CONNECTION_CLOSED and self.spec.url:
                raise await self._dropped(tool, skill, exc.message) from None
            if exc.code == CONNECTION_CLOSED or self.info.closed.is_set():
                raise await self._crashed(tool, skill) from None
            if exc.code == INVALID_PARAMS:
                raise ArgsError(f"MCP server '{name}' refused the arguments of '{tool}': {exc.message}",
                                skill=skill) from None
            raise SkillError(f"MCP server '{name}' failed on '{tool}': {exc.message}", skill=skill) from None
        except RuntimeError as exc:  # the SDK checks structured content against the output schema
            raise SkillError(f"MCP server '{name}' answered '{tool}' wrongly: {exc}", skill=skill) from None
        except (OSError, EOFError) as exc:
            raise await self._crashed(tool, skill) from exc
        finally:
            self.forwarders.remove(forward)

    async def _crashed(self, tool: str, skill: str) -> AgentAppsError:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.done.wait(), 2.0)  # to learn its exit code
        why = self.info.problem
        if why:
            self.ended = why
            await self.close()
            return SkillError(f"MCP server '{self.spec.name}' {why} during '{tool}' and was stopped.", skill=skill)
        self.ended = f"exited during '{tool}'{self._how_it_ended()}"
        return SkillError(f"MCP server '{self.spec.name}' {self.ended}.", skill=skill)

    async def _dropped(self, tool: str, skill: str, said: str) -> AgentAppsError:
        """An HTTP server broke off a call (it went away, or sent more than we read): its session is
        closed, so the next call opens a new one (once per run, as a stdio server is restarted)."""
        said = redact(" ".join(str(said).split())[:300], self.g.internals)
        self.ended = f"broke off '{tool}' ({said})"
        await self.close()
        return SkillError(f"MCP server '{self.spec.name}' {self.ended}; its session was closed.", skill=skill)

    def _lost(self, lost: bool) -> None:
        self.lost = lost  # what the latest answer to a request naming our session said

    async def close(self) -> None:
        """Stop the session and its server (bounded: a server that ignores us is killed)."""
        self.stopping.set()
        task = self.task
        if task is None or task.done():
            return
        if not self.ready.is_set():
            task.cancel()  # still starting: nothing waits for `stopping` yet
        done, _ = await asyncio.wait({task}, timeout=CLOSE_SECONDS)
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=1.0)
        if self.info.pid is not None and not task.done():
            kill_group(self.info.pid)

    async def _elicit(self, context: Any, params: Any) -> Any:
        import mcp_types as types

        forward = self.forwarders[-1] if self.forwarders else None
        if not isinstance(params, types.ElicitRequestFormParams):
            return types.ElicitResult(action="decline")  # URL mode: there is no browser to send the user to
        action, content = await elicit.ask(self.spec.name, params.message, params.requested_schema, forward)
        return types.ElicitResult(action=action, content=content)

    async def _on_message(self, message: Any) -> None:
        import mcp_types as types

        if isinstance(message, types.ToolListChangedNotification) and self.client is not None:
            task = asyncio.ensure_future(self._relist(self.client))
            self._relists.add(task)
            task.add_done_callback(self._relists.discard)

    async def _relist(self, client: Client) -> None:
        with contextlib.suppress(Exception):
            self.on_tools(await list_tools(client))


def _meta(traceparent: str | None) -> RequestParamsMeta | None:
    """A request's `_meta` with the caller's W3C trace context (MCP SEP-414), or None."""
    if not traceparent:
        return None
    # an extra item, which the TypedDict allows (PEP 728 extra_items) and mypy does not know yet
    return cast("RequestParamsMeta", {"traceparent": traceparent})
