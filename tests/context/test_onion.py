"""The onion: order pinned by a recorder, and the rules of next(), return values and exceptions."""

from __future__ import annotations

import pytest

from agentapps.errors import ArgsError, ChainError, LimitError, SkillError

RECORDER = '''
frontmatter = {{"name": "{name}", "metadata": {{"role": "middleware", "after": {after}, "before": {before}}}}}

async def run(ctx, args):
    trace = ctx.globals.cache_for("test").setdefault("trace", [])
    trace.append("{name}>")
    {body}
    trace.append("{name}<")
'''


def middleware(project, name, *, after, before, body="await ctx.manager.next()"):
    project.write(
        f"mw/{name}.skill.py",
        RECORDER.format(name=name, after=after, before=before, body=body),
    )


def leaf(project, keys, body='ctx.globals.cache_for("test").setdefault("trace", []).append("execute"); return "done"'):
    meta = ", ".join(f'"{k}": True' for k in keys)
    project.write(
        "s.skill.py",
        f'frontmatter = {{"name": "s", "metadata": {{{meta}}}}}\n\n'
        f"def run(ctx, args):\n    {body}\n",
    )


def run_and_trace(project):
    root = project.boot()
    try:
        result = project.invoke("s", {}, root)
    finally:
        trace = root.globals.cache_for("test").get("trace", [])
    return result, trace


def test_onion_runs_middleware_in_order_around_execute(project):
    middleware(project, "a", after='["$pre-execute"]', before='["b"]')
    middleware(project, "b", after='["a"]', before='["$execute"]')
    leaf(project, ["b", "a"])
    result, trace = run_and_trace(project)
    assert result == "done"
    assert trace == ["a>", "b>", "execute", "b<", "a<"]


def test_middleware_returning_a_value_sets_result_and_stops_the_chain(project):
    middleware(project, "a", after='["$pre-execute"]', before='["$execute"]', body='return "short-circuit"')
    leaf(project, ["a"])
    result, trace = run_and_trace(project)
    assert result == "short-circuit"
    assert trace == ["a>"]


def test_middleware_returning_none_without_next_lets_the_chain_continue(project):
    middleware(project, "a", after='["$pre-execute"]', before='["$execute"]', body="pass")
    leaf(project, ["a"])
    result, trace = run_and_trace(project)
    assert result == "done"
    assert trace == ["a>", "a<", "execute"]


def test_exception_unwinds_through_every_middleware_finally(project):
    middleware(
        project, "a", after='["$pre-execute"]', before='["$execute"]',
        body='try:\n        await ctx.manager.next()\n    finally:\n        trace.append("a-finally")',
    )
    leaf(project, ["a"], body='raise RuntimeError("boom")')
    root = project.boot()
    with pytest.raises(SkillError, match="Skill 's' failed: RuntimeError: boom"):
        project.invoke("s", {}, root)
    assert root.globals.cache_for("test")["trace"] == ["a>", "a-finally"]


def test_calling_next_twice_is_an_error(project):
    middleware(
        project, "a", after='["$pre-execute"]', before='["$execute"]',
        body="await ctx.manager.next()\n    await ctx.manager.next()",
    )
    leaf(project, ["a"])
    with pytest.raises(ChainError, match="called next\\(\\) twice"):
        project.invoke("s", {})


@pytest.mark.parametrize("body", [
    "ctx.manager.next()",  # started, never awaited
    "import asyncio\n    asyncio.get_running_loop().create_task(ctx.manager.next())",  # left running
])
def test_returning_before_next_has_finished_is_an_error(project, body):
    middleware(project, "a", after='["$pre-execute"]', before='["$execute"]', body=body)
    leaf(project, ["a"])
    root = project.boot()
    with pytest.raises(ChainError, match="Middleware 'a' returned before its next\\(\\) finished"):
        project.invoke("s", {}, root)
    assert "execute" not in root.globals.cache_for("test").get("trace", [])[:2]  # never ran before a< returned


def test_next_outside_a_chain_is_an_error(project):
    project.write("s.skill.py", 'frontmatter = {"name": "s"}\n\n'
                  "async def run(ctx, args):\n    await ctx.manager.next()\n")
    with pytest.raises(ChainError, match="called next\\(\\) but is not running as middleware"):
        project.invoke("s", {})


def test_metadata_key_set_to_false_switches_a_middleware_off(project):
    middleware(project, "a", after='["$pre-execute"]', before='["$execute"]')
    project.write("s.skill.py", 'frontmatter = {"name": "s", "metadata": {"a": False}}\n\n'
                  'def run(ctx, args):\n    ctx.globals.cache_for("test").setdefault("trace", []).append("execute")\n')
    _, trace = run_and_trace(project)
    assert trace == ["execute"]


def test_middleware_acts_on_the_target_context(project):
    project.write("mw/tagger.skill.py", '''
        frontmatter = {"name": "tagger", "metadata": {"role": "middleware", "after": ["$pre-execute"], "before": ["$execute"]}}

        async def run(ctx, args):
            ctx.target.locals.tagged = ctx.target.tool.name
        ''')
    project.write("s.skill.py", 'frontmatter = {"name": "s", "metadata": {"tagger": True}}\n\n'
                  "def run(ctx, args):\n    return ctx.locals.tagged\n")
    assert project.invoke("s") == "s"


def test_nested_invoke_depth_is_limited(project, monkeypatch):
    monkeypatch.setenv("AGENTAPPS_MAX_DEPTH", "5")
    project.write("loop.skill.py", '''
        frontmatter = {"name": "loop", "allowed-tools": "loop"}

        async def run(ctx, args):
            return await ctx.manager.invoke("loop", {})
        ''')
    with pytest.raises(LimitError, match="deeper than 5 skill calls"):
        project.invoke("loop")


def test_history_frames_record_each_call_and_nonlocals_flow_to_children(project):
    project.write("parent.skill.py", '''
        frontmatter = {"name": "parent"}

        async def run(ctx, args):
            ctx.nonlocals.marker = "from-parent"
            return await ctx.manager.invoke("child", {})
        ''')
    project.write("child.skill.py", '''
        frontmatter = {"name": "child"}

        def run(ctx, args):
            ctx.nonlocals.marker2 = "child-only"
            return {"history": [f.tool for f in ctx.locals.history], "marker": ctx.nonlocals.marker}
        ''')
    result = project.invoke("parent")
    assert result == {"history": ["bootstrap", "parent", "child"], "marker": "from-parent"}


def test_args_are_set_once(project):
    project.write("s.skill.py", '''
        frontmatter = {"name": "s"}

        def run(ctx, args):
            ctx.args = {"x": 1}
        ''')
    with pytest.raises(SkillError, match="AttributeError"):
        project.invoke("s")


def test_sync_and_async_run_functions_both_work(project):
    project.write("a.skill.py", 'frontmatter = {"name": "sync-one"}\n\ndef run(ctx, args):\n    return 1\n')
    project.write("b.skill.py", 'frontmatter = {"name": "async-one"}\n\nasync def run(ctx, args):\n    return 2\n')
    assert project.invoke("sync-one") == 1
    assert project.invoke("async-one") == 2


def test_shadowing_a_standard_middleware_replaces_it(project):
    project.write("validate-args.skill.py", '''
        frontmatter = {"name": "validate-args", "metadata": {"role": "middleware"}}

        def run(ctx, args):
            ctx.target.locals.checked_by = "project"
        ''')
    project.write("s.skill.py", 'frontmatter = {"name": "s"}\n\ndef run(ctx, args):\n    return ctx.locals.checked_by\n')
    assert project.invoke("s") == "project"


SEEDED = '''
frontmatter = {"name": "seeded", "metadata": {"params": {"type": "object", "properties": {"x": {"type": "integer"}},
               "additionalProperties": False}}}

def run(ctx, args):
    return {"args": args, "who": ctx.nonlocals.get("who"), "tag": ctx.nonlocals.get("tag"), "note": ctx.locals.get("note")}
'''


def test_dollar_keys_in_args_are_invoke_options_not_arguments(project):
    project.write("seeded.skill.py", SEEDED)
    project.write("caller.skill.py", '''
frontmatter = {"name": "caller"}

async def run(ctx, args):
    seed = {"$context": {"nonlocals": {"who": "alias", "tag": "from-alias"}, "locals": {"note": "n"}}, "x": 1}
    return await ctx.manager.invoke("seeded", seed, context={"nonlocals": {"who": "explicit"}})
''')
    # a closed schema accepts the call: `$context` is not an argument; explicit options win and
    # the alias fills in what they leave out
    assert project.invoke("caller") == {"args": {"x": 1}, "who": "explicit", "tag": None, "note": "n"}


def test_unknown_invoke_options_are_refused(project):
    project.write("seeded.skill.py", SEEDED)
    project.write("caller.skill.py", 'frontmatter = {"name": "caller"}\n\n'
                  'async def run(ctx, args):\n    return await ctx.manager.invoke("seeded", {"$target": 1})\n')
    with pytest.raises(ArgsError, match=r"Unknown invoke option '\$target'"):
        project.invoke("caller")


def test_a_middlewares_metadata_value_is_its_args(project):
    project.write("mw/label.skill.py", '''
frontmatter = {"name": "label", "metadata": {"role": "middleware", "after": ["$pre-execute"], "before": ["$execute"],
               "params": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
                          "additionalProperties": False}}}

async def run(ctx, args):
    ctx.target.locals.label = args["text"]
''')
    project.write("s.skill.py", 'frontmatter = {"name": "s", "metadata": {"label": {"text": "hi"}}}\n\n'
                  "def run(ctx, args):\n    return ctx.locals.label\n")
    assert project.invoke("s") == "hi"
    project.write("bad.skill.py", 'frontmatter = {"name": "bad", "metadata": {"label": {"txt": "hi"}}}\n\n'
                  "def run(ctx, args):\n    return 1\n")
    with pytest.raises(ArgsError, match="Invalid arguments for skill 'label'"):
        project.invoke("bad")


def test_a_context_made_outside_the_onion_has_metadata_of_its_own(project):
    from agentapps.context.manager import new_context

    root = project.boot()
    first = new_context(root.tool, {}, root, root.globals)
    second = new_context(root.tool, {}, root, root.globals)
    first.meta["written"] = True  # code may write to it: it must not reach any other context
    assert "written" not in second.meta and "written" not in root.meta


def test_the_result_is_in_locals_whether_a_middleware_read_them_before_or_after_next(project):
    # the served call's locals are made when first read: before next() (here, by `a`) or only
    # after the result arrived (by `b`); either way `locals.result` is the leaf's value, and a
    # middleware that rewrites it changes what the caller gets
    body_a = ('ctx.target.locals["seen"] = ctx.target.locals.result\n'
              '    await ctx.manager.next()\n'
              '    trace.append(ctx.target.locals.result)')
    body_b = ('await ctx.manager.next()\n'
              '    trace.append(ctx.target.locals.result)\n'
              '    ctx.target.locals.result = ctx.target.locals.result + "!"')
    middleware(project, "a", after='["$pre-execute"]', before='["b"]', body=body_a)
    middleware(project, "b", after='["a"]', before='["$execute"]', body=body_b)
    leaf(project, ["b", "a"])
    result, trace = run_and_trace(project)
    assert result == "done!"
    assert trace == ["a>", "b>", "execute", "done", "b<", "done!", "a<"]
