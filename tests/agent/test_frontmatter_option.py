"""`$frontmatter`: agent code switches on a middleware skill with params for one call; it may only
activate (never replace or switch off), within its params and the caller's allowed-tools."""

from __future__ import annotations

import json

import pytest

from agentapps.errors import ArgsError, DeniedError

STAMP = '''
frontmatter = {"name": "stamp", "description": "Adds a label to the result.", "metadata": {
    "role": "middleware", "after": ["$pre-execute"], "before": ["$execute"],
    "params": {"type": "object", "properties": {"label": {"type": "string", "maxLength": 20,
                                                          "description": "The label to add."}},
               "additionalProperties": False}}}

async def run(ctx, args):
    await ctx.manager.next()
    ctx.target.locals.result = {**ctx.target.locals.result, "stamp": ctx.target.meta["stamp"]["label"]}
'''


@pytest.fixture
def stamped(agentic):
    agentic.project.write("stamp.skill.py", STAMP)
    agentic.project.write("plain.skill.py", 'frontmatter = {"name": "plain", "metadata": {"role": "middleware"}}\n\n'
                          'async def run(ctx, args):\n    return None\n')
    agentic.code("greet", "{'hi': 1}", params={"type": "object"})
    agentic.code("owned", "{'hi': 2}", params={"type": "object"}, meta={"stamp": {"label": "own"}})
    return agentic


def _outcome(agentic, call: str, allowed: str = "greet owned stamp file-read") -> str:
    """What agent code got from `call` (its result as JSON, or the error message)."""
    code = f"try {{ ctx.manager.finish(JSON.stringify(await {call})); }} catch (e) {{ ctx.manager.finish(e.message); }}"
    agentic.skill("caller", [{"code": code}], allowed=allowed)
    result = agentic.run("caller")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_agent_code_activates_a_middleware_for_one_call(stamped):
    call = "ctx.manager.invoke('greet', {$frontmatter: {stamp: {label: 'checked'}}})"
    assert json.loads(_outcome(stamped, call)) == {"hi": 1, "stamp": "checked"}
    assert json.loads(_outcome(stamped, "ctx.manager.invoke('greet', {})")) == {"hi": 1}  # one call only


@pytest.mark.parametrize(("frontmatter", "message"), [
    ("{stamp: {label: 'x'.repeat(30)}}", "stamp"),  # not valid for its params
    ("{stamp: {colour: 'red'}}", "stamp"),
    ("{'validate-args': {}}", "never replaced"),  # a standard middleware: in every chain already
    ("{plain: {}}", "only activate middleware skills that declare params"),
    ("{'file-read': {path: 'x'}}", "only activate middleware skills that declare params"),
    ("{nope: {}}", "no such skill"),
    ("{'$inherit': 'x'}", "never replaced"),
    ("[1]", "must be an object"),
])
def test_what_may_not_be_activated(stamped, frontmatter, message):
    outcome = _outcome(stamped, f"ctx.manager.invoke('greet', {{$frontmatter: {frontmatter}}})")
    assert message in outcome and "hi" not in outcome


def test_a_key_already_in_the_metadata_is_never_replaced(stamped):
    outcome = _outcome(stamped, "ctx.manager.invoke('owned', {$frontmatter: {stamp: {label: 'mine'}}})")
    assert "already part of the metadata of 'owned'" in outcome


def test_the_callers_allowed_tools_must_admit_the_middleware(stamped):
    call = "ctx.manager.invoke('greet', {$frontmatter: {stamp: {label: 'x'}}})"
    assert "may not call 'stamp'" in _outcome(stamped, call, allowed="greet")
    limited = "greet stamp(label=ok*)"
    assert "does not match" in _outcome(stamped, call, allowed=limited)
    ok = "ctx.manager.invoke('greet', {$frontmatter: {stamp: {label: 'ok-1'}}})"
    assert json.loads(_outcome(stamped, ok, allowed=limited))["stamp"] == "ok-1"


def test_agent_code_still_may_not_pass_other_options(stamped):
    outcome = _outcome(stamped, "ctx.manager.invoke('greet', {$context: {nonlocals: {agent: {}}}})")
    assert "may not pass invoke options" in outcome


def test_code_skills_may_use_it_too(stamped):
    stamped.code("direct", "return await ctx.manager.invoke('greet', {'$frontmatter': {'stamp': {'label': 'code'}}})",
                 meta={})
    assert stamped.project.invoke("direct") == {"hi": 1, "stamp": "code"}
    stamped.code("bad", "return await ctx.manager.invoke('greet', {'$frontmatter': {'stamp': {'label': 1}}})")
    with pytest.raises(ArgsError):
        stamped.project.invoke("bad")
    stamped.code("static", "return await ctx.manager.invoke('validate-args', {'$frontmatter': {'stamp': {'label': 'x'}}})")
    with pytest.raises(Exception):  # noqa: B017 - a pipeline middleware is refused either way
        stamped.project.invoke("static")


def test_the_system_prompt_documents_how_to_switch_middleware_on(stamped):
    stamped.skill("caller", [], allowed="greet stamp")
    result = stamped.run("--json", "--dry-run", "caller")
    system = json.loads(result.stdout)["result"]["system"]
    assert "# Middleware you can switch on" in system and "## stamp" in system
    assert "$frontmatter: { \"stamp\": { ... } }" in system
    assert "- `label` (string): The label to add." in system
    stamped.skill("caller", [], allowed="greet")  # not admitted: not documented
    result = stamped.run("--json", "--dry-run", "caller")
    assert "## stamp" not in json.loads(result.stdout)["result"]["system"]


def test_denied_is_denied(stamped):
    stamped.code("sneaky", "return await ctx.manager.invoke('owned', {'$frontmatter': {'stamp': {'label': 'x'}}})")
    with pytest.raises(DeniedError):
        stamped.project.invoke("sneaky")
