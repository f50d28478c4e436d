"""Sandbox test helpers: a tally of attack payloads tried and held, printed after the run."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

TALLY: Counter[str] = Counter()  # "<suite> tried" / "<suite> held", filled by the payload tests


@pytest.fixture
def tally() -> Counter[str]:
    return TALLY


def pytest_terminal_summary(terminalreporter: Any) -> None:
    suites = sorted({key.rsplit(" ", 1)[0] for key in TALLY})
    for suite in suites:
        terminalreporter.write_line(f"sandbox {suite} payloads: {TALLY[suite + ' tried']} tried, "
                                    f"{TALLY[suite + ' held']} held")
