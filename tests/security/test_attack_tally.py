"""The attack suite's tally (tests/support/attacks.py) counts what ran and says plainly what fell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = '''
import pytest
from tests.support.attacks import attack

@pytest.mark.attack("SSRF spellings")
@pytest.mark.parametrize("n", [1, 2])
def test_held(n):
    assert n

@pytest.mark.attack("SSRF spellings")
def test_fell():
    assert False, "the attack got through"

@pytest.mark.attack("template injections")
@pytest.mark.xfail(strict=True, reason="a finding")
def test_finding():
    assert False

@pytest.mark.attack("template injections")
def test_skipped_inside():
    pytest.skip("no server")

@pytest.mark.attack("template injections")
@pytest.mark.skipif(True, reason="no bwrap")
def test_skipped_before():
    pass

@pytest.mark.attack
def test_blocks():
    with attack("worker poison entries"):
        pass
    with pytest.raises(AssertionError), attack("worker poison entries", "shape x"):
        assert False

def test_not_an_attack():
    pass
'''


@pytest.mark.parametrize("workers", [[], ["-p", "xdist.plugin", "-n", "2"]], ids=["one-process", "xdist-workers"])
def test_the_summary_has_one_line_per_class_that_ran_and_names_what_was_not_held(tmp_path: Path, workers: list[str]) -> None:
    # on pytest-xdist workers (as the README's test command runs), the controller prints their sum;
    # no other plugin is loaded (they cost seconds to import and play no part)
    (tmp_path / "test_suite.py").write_text(SUITE)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.support.attacks", "-p", "no:cacheprovider",
                             "-o", "xfail_strict=true", *workers, str(tmp_path / "test_suite.py")],
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
                            capture_output=True, text=True, timeout=60, check=False)
    lines = [line for line in result.stdout.splitlines() if line.startswith("attack suite:")]
    assert lines == [
        "attack suite: SSRF spellings: 3 tried, 2 held",
        "attack suite: template injections: 1 tried, 0 held",
        "attack suite: worker poison entries: 2 tried, 1 held",
        "attack suite: SSRF spellings: 1 NOT HELD: test_suite.py::test_fell",
        "attack suite: template injections: 1 NOT HELD: test_suite.py::test_finding",
        "attack suite: worker poison entries: 1 NOT HELD: shape x",
    ], result.stdout
