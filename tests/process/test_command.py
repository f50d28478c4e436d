"""The command line `shell` runs for its arguments (agentapps/process/command.py)."""

from __future__ import annotations

import pytest

from agentapps.errors import UsageError
from agentapps.process.command import effective_command


@pytest.mark.parametrize(("command", "line"), [
    ('git  "status"', "git status"),
    ("echo \\", "/bin/sh -c 'echo \\'"),  # a trailing backslash: sh reads it as itself (shlex refused it)
    ("echo 'a\\", "/bin/sh -c 'echo '\"'\"'a\\'"),
    ("ls | head", "/bin/sh -c 'ls | head'"),
])
def test_the_line_sh_runs(command, line):
    assert effective_command(command, None) == line


@pytest.mark.parametrize(("command", "argv"), [(None, None), ("ls", ["ls"]), ("a\x00b", None), (None, [])])
def test_bad_arguments_are_usage_errors(command, argv):
    with pytest.raises(UsageError):
        effective_command(command, argv)
