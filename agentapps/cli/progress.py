"""Agent progress on stderr: a spinner, streamed model text and one line per tool call.

On a terminal (and without NO_COLOR) it uses a rich spinner (rich is imported only then);
otherwise it writes plain lines fit for CI logs. Either way what the model, a skill or a server wrote
is escaped (`core.terminal.escape`) before it is shown: only the colours and the spinner are ours. The CLI installs it as
`globals.internals.reporter` unless `-q`; the agent calls it with each trace entry under its
event name (`agent-message`, `tool-error`, ... see agentapps/agent/trace.py).
"""

from __future__ import annotations

from typing import Any, TextIO

from agentapps.cli.render import color_enabled, styled
from agentapps.core.terminal import escape

MAX_CODE_PREVIEW = 70


def _first_line(code: Any) -> str:
    lines = [line.strip() for line in str(code or "").splitlines() if line.strip()]
    text = lines[0] if lines else ""
    more = " …" if len(lines) > 1 or len(text) > MAX_CODE_PREVIEW else ""
    return text[:MAX_CODE_PREVIEW] + more


def _code(data: dict[str, Any]) -> str:
    args = data.get("args")
    return _first_line(args.get("code") if isinstance(args, dict) else None)


class Progress:
    """A reporter: `progress(type, data)` for each agent event; `close()` when the run ends."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.fancy = color_enabled(stream)
        self._status: Any = None
        self._spinner: Any = None
        if hasattr(stream, "before_write"):  # a run's stderr: whatever else writes there is shown
            stream.before_write = self._stop
        self._midline = False  # streamed text not yet ended with a newline
        self._streamed = False  # this turn's text was shown as deltas

    def __call__(self, type_: str, data: dict[str, Any]) -> None:
        handler = getattr(self, "_on_" + type_.replace("-", "_"), None)
        if handler is not None:
            handler(data, "  " * int(data.get("depth") or 0))

    # -- events -------------------------------------------------------------------------------

    def _on_agent_start(self, data: dict[str, Any], pad: str) -> None:
        self._line(f"{pad}agent: {data.get('skill')} · {data.get('model')} ({data.get('provider')})",
                   "2")

    def _on_turn_start(self, data: dict[str, Any], pad: str) -> None:
        self._streamed = False
        self._spin(f"{pad}turn {data.get('turnNumber')} · waiting for the model")

    def _on_agent_message(self, data: dict[str, Any], pad: str) -> None:
        text = str(data.get("text") or "")
        if not text or (self._streamed and not data.get("delta")):
            return
        self._stop()
        if data.get("delta"):
            self._streamed = True
            self._write(text, "3")
            self._midline = not text.endswith("\n")
        else:
            self._write(text if text.endswith("\n") else text + "\n", "3")
            self._midline = False

    def _on_agent_retry(self, data: dict[str, Any], pad: str) -> None:
        self._line(f"{pad}retrying (attempt {data.get('attempt')}, after {data.get('delay')} s): "
                   f"{data.get('error')}", "33")
        self._streamed = False

    def _on_tool_call(self, data: dict[str, Any], pad: str) -> None:
        self._spin(f"{pad}running {data.get('tool')}: {_code(data)}")

    def _on_tool_result(self, data: dict[str, Any], pad: str) -> None:
        ok = data.get("status") != "error"
        mark = ("✓" if ok else "✗") if self.fancy else ("ok" if ok else "error")
        ms = data.get("ms")
        took = f"{ms:.0f} ms" if isinstance(ms, (int, float)) else "?"
        denied = f"denied: {data['denied']}  " if data.get("denied") else ""
        self._line(f"{pad}{mark} {data.get('tool')} {took}  {denied}{_code(data)}",
                   "32" if ok else "31")

    _on_tool_error = _on_tool_result

    def _on_turn_end(self, data: dict[str, Any], pad: str) -> None:
        self._stop()

    def _on_agent_error(self, data: dict[str, Any], pad: str) -> None:
        if data.get("willRetry"):  # a final error is printed once, by the CLI
            self._line(f"{pad}model error, retrying in {data.get('delay')} s (attempt "
                       f"{data.get('attempt')}): {data.get('error')}", "33")

    def _on_agent_complete(self, data: dict[str, Any], pad: str) -> None:
        usage = data.get("usage") or {}
        read, wrote = usage.get("cacheReadInputTokens", 0), usage.get("cacheWriteInputTokens", 0)
        cache = f", {read} cache read / {wrote} cache write" if read or wrote else ""
        cost = data.get("cost")
        dollars = f", ${cost:.4f}" if isinstance(cost, (int, float)) and any(usage.values()) else ""
        self._line(f"{pad}agent: {data.get('stopReason')} after {data.get('turns')} turn(s), "
                   f"{data.get('steps')} step(s), {usage.get('inputTokens', 0)} in / "
                   f"{usage.get('outputTokens', 0)} out tokens{cache}{dollars}", "2")

    def _on_agent_context_edit(self, data: dict[str, Any], pad: str) -> None:
        what = (f"cleared {data.get('cleared')} old tool result(s)" if data.get("action") == "clear"
                else f"summarized {data.get('turns')} old turn(s)")
        self._line(f"{pad}context: {what} (about {data.get('before')} -> {data.get('after')} tokens)", "2")

    def _on_agent_fallback(self, data: dict[str, Any], pad: str) -> None:
        self._line(f"{pad}fallback: {data.get('from')} -> {data.get('to')} ({data.get('reason')})", "33")

    def _on_mcp_start(self, data: dict[str, Any], pad: str) -> None:
        why = "to list its tools (cached afterwards)" if data.get("purpose") == "list" else (
            "again" if data.get("restart") else "")
        self._line(f"{pad}mcp: starting server '{data.get('server')}' {why}".rstrip(), "2")

    def _on_mcp_reconnect(self, data: dict[str, Any], pad: str) -> None:
        self._line(f"{pad}mcp: server '{data.get('server')}' no longer knew its session (did it restart?); "
                   f"'{data.get('tool')}' was sent again on a new one", "33")

    # -- output -------------------------------------------------------------------------------

    def _write(self, text: str, style: str) -> None:
        text = escape(text)
        if self.fancy:
            styled(self.stream).write(f"\x1b[{style}m{text}\x1b[0m")
        else:
            self.stream.write(text)
        self.stream.flush()

    def _line(self, text: str, style: str) -> None:
        self._stop()
        if self._midline:
            self.stream.write("\n")
            self._midline = False
        self._write(text + "\n", style)

    def _spin(self, text: str) -> None:
        if not self.fancy:
            return
        if self._midline:
            self.stream.write("\n")
            self._midline = False
        from rich.text import Text

        shown = Text(escape(text))  # a Text: model code is not read as rich markup (no [link=...])
        if self._status is None:
            from rich.console import Console
            from rich.live import Live
            from rich.spinner import Spinner

            # Not rich's Status: its Live would take over sys.stderr and hold a question written
            # there (an approval) until a newline, and replay a skill's print with its escape
            # sequences. Here any other write to stderr stops the spinner first (`before_write`).
            self._spinner = Spinner("dots", text=shown, style="status.spinner")
            self._status = Live(self._spinner, console=Console(file=styled(self.stream)),
                                refresh_per_second=12.5, transient=True, redirect_stdout=False,
                                redirect_stderr=False)
            self._status.start()
        else:
            self._spinner.update(text=shown)

    def _stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def close(self) -> None:
        self._stop()
        if self._midline:
            self.stream.write("\n")
            self._midline = False
        self.stream.flush()
