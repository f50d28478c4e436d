"""validate-allowed-tools in the pipeline: callers' allowed-tools bound every nested call."""

from __future__ import annotations

import json

import pytest

from agentapps.errors import DeniedError

CALLER = '''
frontmatter = {{"name": "{name}", "allowed-tools": {tools!r}, "metadata": {{"params": {{"type": "object"}}}}}}

async def run(ctx, args):
    return await ctx.manager.invoke(args["call"], args.get("with", {{}}))
'''
LEAF = 'frontmatter = {{"name": "{name}", "metadata": {{{meta}}}}}\n\ndef run(ctx, args):\n    return "{name} ran"\n'


def caller(project, name, tools):
    project.write(f"{name}.skill.py", CALLER.format(name=name, tools=tools))


def leaf(project, name, meta=""):
    project.write(f"{name}.skill.py", LEAF.format(name=name, meta=meta))


def test_allowed_call_runs_and_denied_call_raises_naming_caller_callee_and_rule(project):
    caller(project, "reader", "file-*")
    leaf(project, "file-read")
    leaf(project, "shell-ish")
    assert project.invoke("reader", {"call": "file-read"}) == "file-read ran"
    with pytest.raises(DeniedError) as info:
        project.invoke("reader", {"call": "shell-ish"})
    message = str(info.value)
    assert "'reader'" in message and "'shell-ish'" in message and "file-*" in message
    assert info.value.exit_code == 3


def test_a_helper_acts_under_its_own_allowed_tools_like_a_function_under_its_body(project):
    caller(project, "outer", "middle")
    caller(project, "middle", "target")
    leaf(project, "target")
    leaf(project, "elsewhere")
    assert project.invoke("outer", {"call": "middle", "with": {"call": "target"}}) == "target ran"
    # the helper's own grant still binds it, and the outer grant binds the outer skill's own calls
    with pytest.raises(DeniedError, match="Skill 'middle' may not call 'elsewhere'"):
        project.invoke("outer", {"call": "middle", "with": {"call": "elsewhere"}})
    with pytest.raises(DeniedError, match="Skill 'outer' may not call 'target'"):
        project.invoke("outer", {"call": "target"})


def test_wrapping_the_readmes_word_count_needs_only_the_wrapped_skill(project):
    project.write("word-count.skill.py", """
        frontmatter = {"name": "word-count", "metadata": {"params": {"type": "object",
                       "properties": {"path": {"type": "string"}}, "required": ["path"]}}}

        async def run(ctx, args):
            text = await ctx.manager.invoke("file-read", {"path": args["path"]})
            return {"words": len(text.split())}
        """)
    project.write("wc-wrap.skill.py", """
        frontmatter = {"name": "wc-wrap", "allowed-tools": "word-count"}

        async def run(ctx, args):
            return await ctx.manager.invoke("word-count", {"path": "notes.txt"})
        """)
    project.write("notes.txt", "three small words\n")
    result = project.cli("run", "wc-wrap")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"words": 3}


def test_argument_constraints_in_specifiers(project):
    caller(project, "picky", "mode(level={low,mid})")
    project.write("mode.skill.py", 'frontmatter = {"name": "mode", "metadata": {"params": {"type": "object"}}}\n\n'
                  'def run(ctx, args):\n    return args["level"]\n')
    assert project.invoke("picky", {"call": "mode", "with": {"level": "mid"}}) == "mid"
    with pytest.raises(DeniedError):
        project.invoke("picky", {"call": "mode", "with": {"level": "high"}})


def test_hidden_skills_need_explicit_naming(project):
    caller(project, "star", "*")
    caller(project, "named", "secret")
    leaf(project, "secret", meta='"visibility": "hidden"')
    with pytest.raises(DeniedError, match="hidden"):
        project.invoke("star", {"call": "secret"})
    assert project.invoke("named", {"call": "secret"}) == "secret ran"


def test_absent_allowed_tools_admits_everything_but_the_caller_itself(project):
    project.write("free.skill.py", 'frontmatter = {"name": "free", "metadata": {"params": {"type": "object"}}}\n\n'
                  'async def run(ctx, args):\n    return await ctx.manager.invoke(args["call"], {})\n')
    leaf(project, "other")
    assert project.invoke("free", {"call": "other"}) == "other ran"
    with pytest.raises(DeniedError, match="itself"):
        project.invoke("free", {"call": "free"})


def test_untrusted_contexts_may_only_name_bare_skills(project):
    leaf(project, "plain")
    project.write("agentish.skill.py", '''
        frontmatter = {"name": "agentish", "metadata": {"params": {"type": "object"}}}

        async def run(ctx, args):
            return await ctx.manager.invoke(args["call"], {}, untrusted=True)
        ''')
    assert project.invoke("agentish", {"call": "plain"}) == "plain ran"
    for ref in ("./plain.skill.py", "file:///etc/passwd", "inline://x", "Plain"):
        with pytest.raises(DeniedError, match="bare name"):
            project.invoke("agentish", {"call": ref})


def test_restrict_narrows_what_the_callee_may_call(project):
    from agentapps.tools.policy import Policy

    caller(project, "mid", "*")
    leaf(project, "a")
    leaf(project, "b")
    project.write("driver.skill.py", '''
        from agentapps.tools.policy import Policy
        frontmatter = {"name": "driver", "metadata": {"params": {"type": "object"}}}

        async def run(ctx, args):
            only_a = Policy.parse("a", "driver")
            return await ctx.manager.invoke("mid", {"call": args["call"]}, restrict=[only_a])
        ''')
    assert Policy.parse("a", "x")
    assert project.invoke("driver", {"call": "a"}) == "a ran"
    with pytest.raises(DeniedError):
        project.invoke("driver", {"call": "b"})


def test_allowed_tools_check_cannot_be_switched_off_by_the_callee(project):
    caller(project, "boss", "ok-*")
    leaf(project, "sneaky", meta='"validate-allowed-tools": False, "$inherit": False')
    with pytest.raises(DeniedError):
        project.invoke("boss", {"call": "sneaky"})


def test_middleware_calls_are_exempt(project):
    project.write("mw/stamp.skill.py", '''
        frontmatter = {"name": "stamp", "metadata": {"role": "middleware", "after": ["$pre-execute"], "before": ["$execute"]}}

        async def run(ctx, args):
            ctx.target.locals.stamp = await ctx.manager.invoke("helper", {})
        ''')
    leaf(project, "helper")
    project.write("locked.skill.py", '''
        frontmatter = {"name": "locked", "allowed-tools": "nothing-at-all", "metadata": {"stamp": True}}

        def run(ctx, args):
            return ctx.locals.stamp
        ''')
    assert project.invoke("locked") == "helper ran"


def test_denial_through_the_cli_exits_3_with_one_line(project):
    caller(project, "reader", "file-read")
    leaf(project, "net")
    result = project.cli("run", "reader", "--call", "net")
    assert result.returncode == 3
    assert result.stderr.count("\n") == 1 and "may not call 'net'" in result.stderr
