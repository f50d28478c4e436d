"""Agent events on a topic carry the seed's names; a failing or denied tool call is a `tool-error`."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from agentapps.events.bus import bus_for

SEED_NAMES = {"agent-start", "turn-start", "turn-end", "tool-call", "tool-result", "tool-error",
              "agent-message", "agent-error", "agent-complete"}


def _events(project: Any, turns: list[dict[str, Any]], **config: Any) -> list[Any]:
    """Run an agent with `events: progress` playing `turns`; the events the topic received."""
    project.write("t.json", json.dumps({"turns": turns}))
    project.write("direct.skill.py", f'''
        frontmatter = {{"name": "direct", "allowed-tools": "agent"}}

        async def run(ctx, args):
            return await ctx.manager.invoke("agent", {{
                "prompt": "Do it.", "userMessage": "go", "events": "progress",
                "config": {json.dumps({"agent": "agent-scripted", "script": "t.json", **config})}}})
        ''')
    root = project.boot()
    bus = bus_for(root.globals)
    bus.subscribe("progress")
    with contextlib.suppress(Exception):  # a failed run still emitted its events
        project.invoke("direct", root=root)
    return list(bus.topics["progress"].queues["default"].take(None, True))


def test_a_run_emits_the_seed_event_names_in_order(project):
    events = _events(project, [{"text": "Working.", "code": "return 1"}, {"text": "Done."}])
    kinds = [e.type for e in events]
    assert kinds == ["agent-start", "turn-start", "agent-message", "tool-call", "tool-result",
                     "turn-end", "turn-start", "agent-message", "turn-end", "agent-complete"]
    assert set(kinds) <= SEED_NAMES
    message = events[2]
    assert message.data["text"] == "Working." and message.data["type"] == "message"  # the trace entry


def test_a_failing_tool_call_emits_tool_error(project):
    events = _events(project, [{"code": "throw new Error('boom')"}, {"text": "Gave up."}])
    failed = [e for e in events if e.type == "tool-error"]
    assert len(failed) == 1 and "tool-result" not in [e.type for e in events]
    assert failed[0].data["status"] == "error" and "boom" in failed[0].data["result"]["text"]


def test_a_denied_tool_call_emits_tool_error(project):
    project.write("no.skill.py", '''
        frontmatter = {"name": "no", "metadata": {"params": {"type": "object"}}}

        async def run(ctx, args):
            return {"deny": "not today"}
        ''')
    events = _events(project, [{"code": "return 1"}, {"text": "Fine."}], guard="no")
    failed = [e for e in events if e.type == "tool-error"]
    assert len(failed) == 1 and failed[0].data["denied"] == "not today"


def test_a_model_error_emits_agent_error(project):
    events = _events(project, [{"error": "the model fell over"}])
    kinds = [e.type for e in events]
    assert "agent-error" in kinds and kinds[-1] == "agent-complete"
