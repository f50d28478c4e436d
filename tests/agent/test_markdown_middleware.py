"""Markdown middleware: an agent serving a middleware skill runs the rest of the pipeline with
`target.manager.next()` (once), and decides the result: the wrapped one, or finish(value)."""

from __future__ import annotations

import json

import pytest

WRAPPED = '''
from pathlib import Path

frontmatter = {"name": "greet", "metadata": {"audit": {"level": 1}, "params": {"type": "object", "properties": {"name": {"type": "string"}}}}}

def run(ctx, args):
    marker = Path("ran.txt")
    marker.write_text(marker.read_text() + "x" if marker.exists() else "x")
    if args.get("name") == "boom":
        raise RuntimeError("the wrapped skill failed")
    return {"greeting": "hello " + args.get("name", "you")}
'''


@pytest.fixture
def audit(agentic):
    """`audit`: a markdown middleware (activated by `audit:` in greet's metadata) whose turns each test sets."""
    agentic.project.write("greet.skill.py", WRAPPED)

    def play(*turns, params=True):
        agentic.skill("audit", list(turns), meta={"role": "middleware"},
                      params={"type": "object"} if params else None)
        return agentic.run("--json", "greet", "--name", "Ada")

    play.agentic = agentic
    return play


def _ran(agentic) -> int:
    marker = agentic.project.root / "ran.txt"
    return len(marker.read_text()) if marker.exists() else 0


def test_next_runs_the_wrapped_skill_and_its_result_stands(audit):
    result = audit({"code": "const r = await target.manager.next(); return r"}, {"text": "Checked it."})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["result"] == {"greeting": "hello Ada"}
    assert _ran(audit.agentic) == 1
    seen = audit.agentic.tool_results()[0]
    assert seen["result"] == {"greeting": "hello Ada"}  # the agent saw the wrapped result


def test_finish_after_next_replaces_the_result(audit):
    code = "const r = await target.manager.next(); ctx.manager.finish({...r, audited: memory.target.skill})"
    result = audit({"code": code})
    assert json.loads(result.stdout)["result"] == {"greeting": "hello Ada", "audited": "greet"}
    assert _ran(audit.agentic) == 1


def test_without_next_the_answer_replaces_the_wrapped_skill(audit):
    result = audit({"text": "Refused: not today."})
    assert json.loads(result.stdout)["result"] == "Refused: not today."
    assert _ran(audit.agentic) == 0


def test_next_runs_once(audit):
    code = ("await target.manager.next();"
            "try { await target.manager.next(); return 'twice'; } catch (e) { return e.message; }")
    result = audit({"code": code}, {"text": "done"})
    assert result.returncode == 0, result.stderr
    assert "already called" in audit.agentic.tool_results()[0]["result"]
    assert _ran(audit.agentic) == 1


def test_a_failure_of_the_wrapped_skill_can_be_caught_and_replaced(audit):
    audit.agentic.skill("audit", [{"code": (
        "try { await target.manager.next(); } catch (e) { ctx.manager.finish({recovered: e.message}); }")}],
        meta={"role": "middleware"}, params={"type": "object"})
    result = audit.agentic.run("--json", "greet", "--name", "boom")
    assert result.returncode == 0, result.stderr
    assert "the wrapped skill failed" in json.loads(result.stdout)["result"]["recovered"]


def test_the_prompt_explains_middleware_mode(audit):
    audit.agentic.skill("audit", [], meta={"role": "middleware"}, params={"type": "object"})
    result = audit.agentic.run("--json", "--dry-run", "greet", "--name", "Ada")
    assert result.returncode == 0, result.stderr
    system = json.loads(result.stdout)["result"]["system"]  # the middleware's agent answered first
    assert "You are running as middleware around a call of the skill `greet`" in system
    assert "`await target.manager.next()` runs that call" in system


def test_outside_middleware_mode_there_is_no_target(agentic):
    code = ("const t = typeof target;"
            "try { await ctx.manager.invoke('$next', null); } catch (e) { return [t, e.message]; }")
    agentic.skill("plain", [{"code": code}, {"text": "done"}])
    assert agentic.run("plain").returncode == 0
    kind, message = agentic.tool_results()[0]["result"]
    assert kind == "undefined" and "only when the agent serves a middleware skill" in message
