"""Any argv ends in a result or a one-line error with exit 2: never a traceback (hypothesis)."""

from __future__ import annotations

import io
import os
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentapps.cli.run import run_command

TOKENS = st.sampled_from(
    ["hello", "typed", "--name", "--times", "--json", "--dry-run", "--args-file", "-", "--arg", "--arg-json",
     "k=v", "{", '{"name": 1}', "[]", "--", "-v", "--no-loud", "--loud", "./x.skill.md", "file:///etc/passwd",
     "inline://x", "Bad_Name", "--help", "x" * 70, "\x00", "🙂", "--times=3", "--times=-1", "--opts", "{bad"]
) | st.text(max_size=12)


@pytest.fixture
def fuzz_project(project):
    project.write("typed.skill.py", '''
        frontmatter = {"name": "typed", "metadata": {"params": {"type": "object", "properties": {
            "name": {"type": "string"}, "times": {"type": "integer", "minimum": 0}, "loud": {"type": "boolean"},
            "opts": {"type": "object"}}, "required": ["name"], "additionalProperties": False}}}

        def run(ctx, args):
            return args
        ''')
    return project


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=st.lists(TOKENS, max_size=6))
def test_any_argv_gives_a_result_or_a_one_line_error(fuzz_project, argv, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = run_command(list(argv))
    errors = err.getvalue()
    assert "Traceback" not in errors
    assert code in (0, 1, 2, 3), (argv, code, errors)
    if code == 0:
        assert not errors.strip() or not errors.startswith("error:")
    else:
        lines = [line for line in errors.splitlines() if line.startswith("error:")]
        assert len(lines) == 1, (argv, errors)
        assert code in (2, 3) or "internal error" not in lines[0]
