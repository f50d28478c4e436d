"""The skills the served project holds in these tests."""

from __future__ import annotations

import json
from typing import Any

SECRET = "s3rv3-canary-5ecret-value"
GREET = """
frontmatter = {"name": "greet", "description": "Greet someone.", "metadata": {
    "params": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}

def run(ctx, args):
    return {"greeting": f"Hello, {args['name']}!"}
"""
SLOW = """
import asyncio

frontmatter = {"name": "slow", "description": "Sleeps.", "metadata": {
    "params": {"type": "object", "properties": {"seconds": {"type": "number"}}}}}

async def run(ctx, args):
    await asyncio.sleep(args.get("seconds", 10))
    return "slept"
"""
BOOM = """
frontmatter = {"name": "boom", "description": "Always fails.", "metadata": {"params": {"type": "object"}}}

def run(ctx, args):
    raise RuntimeError("the gears\\nare stuck")
"""
LEAKY = """
import os

frontmatter = {"name": "leaky", "description": "Returns a declared secret.",
               "metadata": {"params": {"type": "object"}, "env": ["SERVE_TEST_SECRET"]}}

def run(ctx, args):
    return {"secret": os.environ["SERVE_TEST_SECRET"]}
"""
CHATTY = """
frontmatter = {"name": "chatty", "description": "Remembers what it heard.", "metadata": {
    "params": {"type": "object", "properties": {"text": {"type": "string"}, "sessionId": {"type": "string"}},
               "required": ["text"], "additionalProperties": False},
    "session": "args.sessionId"}}

def run(ctx, args):
    return {"heard": args["text"], "before": len(ctx.locals.get("session") or [])}
"""
HOOKED = """
import json, os

frontmatter = {"name": "hooked", "description": "Handles a signed webhook.", "metadata": {
    "params": {"type": "object", "properties": {"input": {}}, "required": ["input"]},
    "env": ["SERVE_HOOK_SECRET"], "webhook": {"secret": "SERVE_HOOK_SECRET"}}}

def run(ctx, args):
    with open(os.environ["SERVE_HOOK_LOG"], "a") as out:
        out.write(json.dumps(args["input"]) + "\\n")
    return "handled"
"""
STORY_TURNS = [{"text": "Looking.", "code": ["return 6 * 7"], "delay": 0.05}, {"text": "Found it.", "delay": 0.05}]
RISKY_TURNS = [{"text": "Greeting Bob.", "code": ["return await ctx.manager.invoke('greet', {name: 'Bob'})"]},
               {"text": "Done."}]
# asks twice, so a repeated first decision meets a stream that is still open (not a race with its end)
TWICE_TURNS = [{"text": "Greeting two.", "code": [("await ctx.manager.invoke('greet', {name: 'Bob'});"
                                                  " return await ctx.manager.invoke('greet', {name: 'Ann'})")]},
               {"text": "Done."}]


def agent_skill(project: Any, name: str, turns: list[dict[str, Any]], meta: dict[str, Any] | None = None,
                allowed: str | None = None) -> None:
    project.write(f"{name}.turns.json", json.dumps({"turns": turns}))
    metadata = {"model": {"agent": "agent-scripted", "script": f"{name}.turns.json", "snippetTimeout": 5},
                "params": {"type": "object"}, **(meta or {})}
    head = f"allowed-tools: {allowed}\n" if allowed else ""
    project.write(f"{name}.skill.md", f"---\nname: {name}\ndescription: A scripted agent.\n{head}"
                                      f"metadata: {json.dumps(metadata)}\n---\nDo the task.\n")


def write_all(project: Any) -> None:
    for name, source in (("greet", GREET), ("slow", SLOW), ("boom", BOOM), ("leaky", LEAKY), ("chatty", CHATTY),
                         ("hooked", HOOKED)):
        project.write(f"{name}.skill.py", source)
    agent_skill(project, "story", STORY_TURNS)
    agent_skill(project, "risky", RISKY_TURNS, {"trust": "greet"}, allowed="greet")
    agent_skill(project, "twice", TWICE_TURNS, {"trust": "greet"}, allowed="greet")
