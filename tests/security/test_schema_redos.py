"""A catastrophic schema `pattern` cannot hang a run: it is refused as a configuration error."""

from __future__ import annotations

import time


def test_nested_quantifier_pattern_is_refused_quickly(project):
    project.write("slow.skill.py", '''
        frontmatter = {"name": "slow", "metadata": {"params": {"type": "object", "properties": {
            "s": {"type": "string", "pattern": "^(a+)+$"}}}}}

        def run(ctx, args):
            return "ran"
        ''')
    started = time.monotonic()
    result = project.cli("run", "slow", "--s", "a" * 40 + "!")
    assert time.monotonic() - started < 10
    assert result.returncode == 2
    assert "can backtrack catastrophically" in result.stderr and result.stdout == ""


def test_safe_patterns_still_validate(project):
    project.write("ok.skill.py", '''
        frontmatter = {"name": "ok", "metadata": {"params": {"type": "object", "properties": {
            "s": {"type": "string", "pattern": "^[a-z]+$"}}}}}

        def run(ctx, args):
            return "ran"
        ''')
    assert project.cli("run", "ok", "--s", "abc").stdout == "ran\n"
    bad = project.cli("run", "ok", "--s", "ABC")
    assert bad.returncode == 2 and "does not match" in bad.stderr
