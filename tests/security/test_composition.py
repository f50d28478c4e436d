"""Permissions compose like function calls (property tests through the real pipeline).

A call succeeds exactly when its immediate caller's allowed-tools admits it: what callers further
up allowed or denied does not matter. And a sub-agent that agent code starts never gets more than
the starting agent's grant.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentapps.tools.policy import Candidate, Policy

NAMES = ["ant", "bee", "cat", "dog"]
PATTERNS = [None, "*", "ant", "bee cat", "{cat,dog}", "[ab]*", "*($deny) ant", "dog(mode=on)", "#pets",
            "cat($deny) *"]
TAGS = {"cat": ["pets"], "dog": ["pets"]}

SKILL = '''
frontmatter = {{"name": "{name}", {allowed}"metadata": {{"tags": {tags}, "params": {{"type": "object"}}}}}}

async def run(ctx, args):
    out = []
    for step in args.get("calls", []):
        try:
            out.append(await ctx.manager.invoke(step["to"], {{"calls": step.get("calls", []), **step.get("with", {{}})}}))
        except Exception as exc:
            out.append("denied" if getattr(exc, "exit_code", 0) == 3 else repr(exc))
    return {{"me": "{name}", "out": out}}
'''

calls = st.recursive(
    st.fixed_dictionaries({"to": st.sampled_from(NAMES)},
                          optional={"with": st.sampled_from([{"mode": "on"}, {"mode": "off"}])}),
    lambda inner: st.fixed_dictionaries({"to": st.sampled_from(NAMES), "calls": st.lists(inner, max_size=3)}),
    max_leaves=6,
)


def expected(caller: str, grants: dict[str, str | None], step: dict[str, Any]) -> Any:
    callee = step["to"]
    args = {"calls": step.get("calls", []), **step.get("with", {})}
    decision = Policy.parse(grants[caller], caller).decide(Candidate(callee, tuple(TAGS.get(callee, ()))), args)
    if not decision.allowed:
        return "denied"
    return {"me": callee, "out": [expected(callee, grants, s) for s in step.get("calls", [])]}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(grants=st.fixed_dictionaries({n: st.sampled_from(PATTERNS) for n in NAMES}),
       top=st.sampled_from(NAMES), plan=st.lists(calls, max_size=3))
def test_a_call_succeeds_exactly_when_its_immediate_caller_admits_it(project, grants, top, plan):
    from agentapps.boot import bootstrap
    from agentapps.context.manager import invoke_root

    playground = Path(tempfile.mkdtemp(dir=project.root))  # a fresh project per example
    (playground / ".agent-apps").mkdir()
    for name in NAMES:
        allowed = "" if grants[name] is None else f'"allowed-tools": {grants[name]!r}, '
        (playground / f"{name}.skill.py").write_text(
            SKILL.format(name=name, allowed=allowed, tags=json.dumps(TAGS.get(name, []))))
    root = bootstrap(playground)
    got = asyncio.run(invoke_root(root, top, {"calls": plan}))
    assert got == {"me": top, "out": [expected(top, grants, step) for step in plan]}
