"""The run log on a full disk (a real 64 KiB tmpfs, tests/support/full_disk.py): the run still
prints its result and exits 0, the warning says "no space" and names the log, and `runs list`
still reads what was logged before (or says nothing was)."""

from __future__ import annotations

import json

from tests.support.full_disk import full_disk

HELLO = 'frontmatter = {"name": "hello"}\n\ndef run(ctx, args):\n    return "hello"\n'


def _warned_no_space(stderr: str) -> None:
    (line,) = stderr.splitlines()
    assert line.startswith("warning: the run was not added to the run log: The run log ")
    assert "runs.db was not written: no space left on device" in line


def test_a_run_on_a_full_disk_is_printed_and_earlier_runs_are_still_listed(project):
    project.write("hello.skill.py", HELLO)
    for _ in range(2):
        assert project.cli("run", "hello").returncode == 0
    with full_disk(project.root / ".agent-apps"):
        result = project.cli("run", "hello")
        assert (result.returncode, result.stdout) == (0, "hello\n")
        _warned_no_space(result.stderr)
        listed = project.cli("runs", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [r["skill"] for r in json.loads(listed.stdout)["runs"]] == ["hello", "hello"]
        shown = project.cli("runs", "show", "1")
        assert shown.returncode == 0 and "hello" in shown.stdout, shown.stderr
        assert project.cli("runs", "stats").returncode == 0


def test_a_log_the_full_disk_left_without_room_for_its_schema_reads_as_empty(project):
    project.write("hello.skill.py", HELLO)
    with full_disk(project.root / ".agent-apps"):
        result = project.cli("run", "hello")
        assert (result.returncode, result.stdout) == (0, "hello\n")
        _warned_no_space(result.stderr)
        listed = project.cli("runs", "list")
        assert (listed.returncode, listed.stdout, listed.stderr) == (0, "", "No runs logged yet.\n")
