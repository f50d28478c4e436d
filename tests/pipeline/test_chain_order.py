"""The standard chains, pinned: what runs, in which order, for code and markdown skills."""

from __future__ import annotations

import json
import time

CODE = ["validate-allowed-tools", "validate-args", "trust", "validate-returns", "execute"]
MARKDOWN = ["validate-allowed-tools", "directives", "validate-args", "trust", "validate-returns", "agent-execute"]


def chain(project, name):
    result = project.cli("describe", name, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["chain"]


def test_code_skill_chain(project):
    project.write("c.skill.py", 'frontmatter = {"name": "c", "metadata": {"returns": {"type": "integer"}}}\n\n'
                  'def run(ctx, args):\n    return 1\n')
    assert chain(project, "c") == CODE


def test_markdown_skill_chain_with_a_session(project):
    project.write("m.skill.md", "---\nname: m\nmetadata:\n  session: args.sid\n  returns: {type: string}\n---\nHi\n")
    expected = MARKDOWN[:-1] + ["session", "agent-execute"]
    assert chain(project, "m") == expected


def test_validate_returns_serves_only_skills_that_declare_returns(project):
    """It declares `applies-if: returns`: a skill without a `returns` schema (own or inherited)
    has nothing for it to check, so it is not in that skill's chain."""
    project.write("plain.skill.py", 'frontmatter = {"name": "plain"}\n\ndef run(ctx, args):\n    return 1\n')
    project.write("base.skill.md", "---\nname: base\nmetadata:\n  returns: {type: integer}\n---\nBase.\n")
    project.write("heir.skill.py", 'frontmatter = {"name": "heir", "metadata": {"$inherit": "base"}}\n\n'
                  'def run(ctx, args):\n    return "not an integer"\n')
    assert chain(project, "plain") == [n for n in CODE if n != "validate-returns"]
    assert chain(project, "heir") == CODE
    failed = project.cli("run", "heir")
    assert failed.returncode != 0 and "Invalid result for skill 'heir'" in failed.stderr


def test_a_shadowing_validate_returns_without_applies_if_serves_every_skill(project):
    project.write("validate-returns.skill.py", '''
        frontmatter = {"name": "validate-returns", "metadata": {"role": "middleware"}}

        def run(ctx, args):
            ctx.target.locals.checked = True
        ''')
    project.write("plain.skill.py", 'frontmatter = {"name": "plain"}\n\ndef run(ctx, args):\n    return 1\n')
    assert "validate-returns" in chain(project, "plain")


def test_a_shadowing_validate_returns_added_while_a_process_runs_joins_the_chains_it_now_serves(project):
    """Shadowing stays live in a long-lived process (serve, worker, the REPL): a project
    validate-returns without applies-if, written while the process runs, serves a skill without
    `returns` from its next call on, as it does in a new process (and as it did before applies-if)."""
    project.write("plain.skill.py", 'frontmatter = {"name": "plain"}\n\ndef run(ctx, args):\n    return "plain"\n')
    root = project.boot()
    root.globals.lookup.check_interval = 0.0
    assert project.invoke("plain", {}, root) == "plain"
    time.sleep(0.05)  # the folder's mtime moves on
    project.write("validate-returns.skill.py", '''
        frontmatter = {"name": "validate-returns", "metadata": {"role": "middleware"}}

        def run(ctx, args):
            return "shadowed"
        ''')
    assert project.invoke("plain", {}, project.boot()) == "shadowed"  # a new process
    assert project.invoke("plain", {}, root) == "shadowed"  # the running one


def test_applies_if_takes_params_or_returns(project):
    project.write("mw/picky.skill.py", '''
        frontmatter = {"name": "picky", "metadata": {"role": "middleware", "applies-if": "result"}}

        def run(ctx, args):
            return None
        ''')
    project.write("c.skill.py", 'frontmatter = {"name": "c", "metadata": {"picky": True}}\n\n'
                  "def run(ctx, args):\n    return 1\n")
    result = project.cli("run", "c")
    assert result.returncode == 2
    assert "Middleware 'picky' has `applies-if: 'result'`; it takes 'params' or 'returns'" in result.stderr
    assert "picky.skill.py" in result.stderr


def test_applies_to_keeps_a_middleware_to_the_kinds_it_serves(project):
    project.write("mw/md-only.skill.py", '''
        frontmatter = {"name": "md-only", "metadata": {"role": "middleware", "applies-to": "markdown"}}

        async def run(ctx, args):
            ctx.target.locals.seen = True
        ''')
    project.write("c.skill.py", 'frontmatter = {"name": "c", "metadata": {"md-only": True}}\n\n'
                  "def run(ctx, args):\n    return 1\n")
    project.write("m.skill.md", "---\nname: m\nmetadata:\n  md-only: true\n---\nHi\n")
    assert "md-only" not in chain(project, "c")
    assert "md-only" in chain(project, "m")


def test_pipeline_middleware_cannot_be_run_by_itself(project):
    for name in ("execute", "validate-args", "trust", "directives", "session", "agent-execute", "default"):
        result = project.cli("run", name)
        assert result.returncode == 2, (name, result.stderr)
        assert f"'{name}' is pipeline middleware" in result.stderr


def test_only_role_middleware_skills_are_activated_by_a_metadata_key(project):
    # a project skill that happens to be named like a metadata key must not join every chain
    project.write("returns.skill.py", 'frontmatter = {"name": "returns"}\n\n'
                  "def run(ctx, args):\n    return 'hijacked'\n")
    project.write("tags.skill.md", "---\nname: tags\n---\nSay hijacked.\n")
    project.write("c.skill.py", 'frontmatter = {"name": "c", "metadata": {"tags": ["x"], '
                  '"returns": {"type": "integer"}}}\n\ndef run(ctx, args):\n    return 1\n')
    assert "returns" not in chain(project, "c") and "tags" not in chain(project, "c")
    assert project.invoke("c") == 1
