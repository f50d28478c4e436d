"""The metadata cascade: levels, authority, $inherit with C3, $merge strategies, $private, interpolation."""

from __future__ import annotations

import pytest

from agentapps.cascade.c3 import linearize
from agentapps.cascade.interpolate import interpolate
from agentapps.cascade.merge import combine
from agentapps.errors import ConfigError

ECHO_META = "def run(ctx, args):\n    return {k: v for k, v in ctx.meta.items() if not k.startswith('$') and k not in SKIP}\n"
SKIP = "SKIP = {'validate-args', 'validate-returns', 'execute', 'agent-execute', 'validate-allowed-tools', 'directives'}\n"


def echo(project, relative, name, meta, extra=""):
    project.write(relative, f"frontmatter = {{'name': '{name}', {extra}'metadata': {meta!r}}}\n{SKIP}\n{ECHO_META}")


def test_skill_own_metadata_beats_authority_which_beats_default(project):
    project.write("app.skill.md", "---\nname: app\nmetadata:\n  role: main\n  model: {id: m1, region: r1}\n  color: blue\n---\n")
    echo(project, "skills/s.skill.py", "s", {"model": {"region": "r2"}})
    meta = project.invoke("s")
    assert meta["model"] == {"id": "m1", "region": "r2"}  # default declares model: deep
    assert meta["color"] == "blue"


def test_authority_never_passes_interface_keys(project):
    project.write("app.skill.md", """
        ---
        name: app
        metadata:
          role: main
          tags: [main-only]
          visibility: hidden
          params: {type: object, properties: {x: {type: string}}}
          shared: yes
        ---
        """)
    echo(project, "s.skill.py", "s", {})
    meta = project.invoke("s")
    assert meta == {"shared": True}


def test_authority_does_not_apply_to_bundled_skills(project):
    project.write("app.skill.md", "---\nname: app\nmetadata:\n  role: main\n  validate-args: false\n---\n")
    result = project.cli("run", "hello", "--bogus", "x")
    assert result.returncode == 2  # bundled hello still validates its args


def test_inherit_passes_config_and_interface_but_not_role_tags_visibility(project):
    echo(project, "base.skill.py", "base", {"tone": "dry", "role": "middleware", "tags": ["t"],
                                           "visibility": "hidden", "params": {"type": "object"}})
    echo(project, "s.skill.py", "s", {"$inherit": "base"})
    meta = project.invoke("s")
    assert meta == {"tone": "dry", "params": {"type": "object"}}


def test_inherit_list_uses_c3_order(project):
    echo(project, "a.skill.py", "a", {"who": "a", "$inherit": "root"})
    echo(project, "b.skill.py", "b", {"who": "b", "only-b": 1, "$inherit": "root"})
    echo(project, "root.skill.py", "root", {"who": "root", "only-root": 1})
    echo(project, "s.skill.py", "s", {"$inherit": ["a", "b"]})
    meta = project.invoke("s")
    assert meta == {"who": "a", "only-b": 1, "only-root": 1}


def test_inherit_false_skips_the_cascade_including_default(project):
    project.write("app.skill.md", "---\nname: app\nmetadata:\n  role: main\n  color: blue\n---\n")
    project.write("s.skill.py", "frontmatter = {'name': 's', 'metadata': {'$inherit': False}}\n\n"
                  "def run(ctx, args):\n    return sorted(ctx.meta)\n")
    # no authority and no default metadata (so no validation either), but the skill still runs
    assert project.invoke("s") == []
    assert project.cli("run", "s", "--anything", "goes").returncode == 2  # the CLI still needs params to parse flags


def test_private_keys_do_not_cascade(project):
    echo(project, "base.skill.py", "base", {"secret": 1, "public": 2, "$private": ["secret"]})
    echo(project, "s.skill.py", "s", {"$inherit": "base"})
    assert project.invoke("s") == {"public": 2}


def test_inherit_cycle_and_missing_parent_are_clear_errors(project):
    echo(project, "a.skill.py", "a", {"$inherit": "b"})
    echo(project, "b.skill.py", "b", {"$inherit": "a"})
    with pytest.raises(ConfigError, match="cycle: a -> b -> a"):
        project.invoke("a")
    echo(project, "c.skill.py", "c", {"$inherit": "nope"})
    with pytest.raises(ConfigError, match="inherits from 'nope', which does not exist"):
        project.invoke("c")


def test_interpolation_against_the_context(project):
    echo(project, "s.skill.py", "s", {"params": {"type": "object"}, "greeting": "hi ${args.name}",
                                      "raw": "${args.n}", "esc": "\\${args.name}"})
    meta = project.invoke("s", {"name": "Ada", "n": 3})
    assert meta["greeting"] == "hi Ada" and meta["raw"] == 3 and meta["esc"] == "${args.name}"


MERGES = [
    ("replace", [1, 2], [3], [3]),
    ("prepend", ["a", "b"], ["c"], ["c", "a", "b"]),
    ("append", ["a", "b"], ["c"], ["a", "b", "c"]),
    ("prepend", "a", "b", ["b", "a"]),
    ("shallow", {"a": {"x": 1}, "b": 1}, {"a": {"y": 2}}, {"a": {"y": 2}, "b": 1}),
    ("deep", {"a": {"x": 1}, "b": 1}, {"a": {"y": 2}}, {"a": {"x": 1, "y": 2}, "b": 1}),
    ("deep", {"a": 1}, 5, 5),
]


@pytest.mark.parametrize(("strategy", "lower", "higher", "expected"), MERGES)
def test_merge_strategies(strategy, lower, higher, expected):
    assert combine(lower, higher, strategy) == expected


def test_unknown_merge_strategy_is_an_error():
    with pytest.raises(ConfigError, match="Unknown \\$merge strategy"):
        combine(1, 2, "zip")


C3_CASES = [
    ({"s": ["a"], "a": []}, ["s", "a"]),
    ({"s": ["a", "b"], "a": ["o"], "b": ["o"], "o": []}, ["s", "a", "b", "o"]),
    ({"s": ["a", "b"], "a": ["x", "y"], "b": ["y", "x"], "x": [], "y": []}, ConfigError),
    ({"s": ["a"], "a": ["s"]}, ConfigError),
]


@pytest.mark.parametrize(("graph", "expected"), C3_CASES)
def test_c3_linearisation(graph, expected):
    if expected is ConfigError:
        with pytest.raises(ConfigError):
            linearize("s", graph.__getitem__)
    else:
        assert linearize("s", graph.__getitem__) == expected


def test_interpolate_escapes_and_missing_values():
    scope = {"args": {"a": "x", "n": 2}}
    assert interpolate({"k": ["${args.a}-${args.n}", "\\${args.a}", "${args.none}", "${args.none}!"]}, scope) == {
        "k": ["x-2", "${args.a}", None, "!"]
    }


def test_params_and_returns_are_inherited_through_inherit(project):
    project.write("base.skill.py", '''
        frontmatter = {"name": "base", "metadata": {
            "params": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                       "additionalProperties": False},
            "returns": {"type": "integer"}}}

        def run(ctx, args):
            return 0
        ''')
    project.write("child.skill.py", '''
        frontmatter = {"name": "child", "metadata": {"$inherit": "base"}}

        def run(ctx, args):
            return "not an integer" if args["n"] < 0 else args["n"] * 2
        ''')
    assert project.cli("run", "child", "--n", "21").stdout == "42\n"  # coerced by the inherited schema
    missing = project.cli("run", "child")
    assert missing.returncode == 2 and "'n' is required" in missing.stderr
    bad_result = project.cli("run", "child", "--n", "-1")
    assert bad_result.returncode == 1 and "Invalid result for skill 'child'" in bad_result.stderr
    assert "--n INTEGER" in project.cli("run", "child", "--help").stdout


def test_inherit_authority_names_the_main_skill_as_the_parent(project):
    import pytest

    from agentapps.errors import ConfigError

    project.write("proj.skill.md", "---\nname: proj\nmetadata:\n  role: main\n  tags: [main-only]\n"
                  "  params: {type: object, properties: {who: {type: string}}}\n  greeting: hi\n---\nMain.\n")
    project.write("child.skill.py", 'frontmatter = {"name": "child", "metadata": {"$inherit": "$authority"}}\n\n'
                  'def run(ctx, args):\n    return [args, ctx.meta.get("greeting"), list(ctx.tool.tags)]\n')
    # params come from the main skill (an $inherit parent passes its interface), tags do not
    assert project.invoke("child", {"who": "Ada"}) == [{"who": "Ada"}, "hi", []]
    project.root.joinpath("proj.skill.md").unlink()
    project.write(".agent-apps/keep", "")
    with pytest.raises(ConfigError, match=r"inherits from \$authority, but this project has no main skill"):
        project.invoke("child", {})
