"""The attack suite's tally: how many attacks of each class were tried and held, printed after the run.

An attack is counted in one of two ways:

- a whole test: `@pytest.mark.attack("SSRF spellings")` (or `pytestmark`). Each test item that runs
  its body is one attack tried; it is held when the body finishes without an exception. A test
  skipped before or inside its body was not tried. A strict xfail whose attack succeeds is tried
  and not held, and the summary says so.
- a block inside a test: `with attack("SSRF spellings"): ...`, for a test that tries several. Mark
  such a test `@pytest.mark.attack` with no class, so that `pytest -m attack` selects it without
  counting it a second time.

After the run, one line per class that ran: `attack suite: <class>: N tried, N held`, in the order
of CLASSES, and a plain `NOT HELD` line naming what fell when a class has any. With pytest-xdist,
each worker hands its tally to the controller when it finishes, and the controller prints the sum.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CLASSES = ("sandbox escapes", "resource bombs", "SSRF spellings", "template injections",
           "worker poison entries", "shell rule spellings", "shell and child containment")
TRIED: Counter[str] = Counter()
HELD: Counter[str] = Counter()
FELL: dict[str, list[str]] = {}


def _known(kind: str) -> str:
    if kind not in CLASSES:
        raise ValueError(f"unknown attack class {kind!r}; use one of {', '.join(CLASSES)}")
    return kind


@contextmanager
def attack(kind: str, what: str = "") -> Iterator[None]:
    """One attack of class `kind`: tried on entry, held when the block ends without an exception."""
    TRIED[_known(kind)] += 1
    try:
        yield
    except pytest.skip.Exception:
        TRIED[kind] -= 1  # skipped: never tried
        raise
    except BaseException:
        FELL.setdefault(kind, []).append(what or "(a block)")
        raise
    HELD[kind] += 1


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "attack(kind): the test is one attack of this class in the attack "
                                       "suite (tests/support/attacks.py)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    yield
    marker = item.get_closest_marker("attack")
    if marker is None or not marker.args or call.when != "call":
        return
    kind = _known(str(marker.args[0]))
    if call.excinfo is not None and call.excinfo.errisinstance(pytest.skip.Exception):
        return
    TRIED[kind] += 1
    if call.excinfo is None:
        HELD[kind] += 1
    else:
        FELL.setdefault(kind, []).append(item.nodeid)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On a pytest-xdist worker: hand this worker's tally to the controller, which prints the sum."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["attacks"] = {"tried": dict(TRIED), "held": dict(HELD), "fell": FELL}


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: a worker finished
def pytest_testnodedown(node: Any, error: Any) -> None:
    tally = getattr(node, "workeroutput", {}).get("attacks")
    if tally is None:
        return
    TRIED.update(tally["tried"])
    HELD.update(tally["held"])
    for kind, fell in tally["fell"].items():
        FELL.setdefault(kind, []).extend(fell)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    ran = [kind for kind in CLASSES if TRIED[kind]]
    for kind in ran:
        terminalreporter.write_line(f"attack suite: {kind}: {TRIED[kind]} tried, {HELD[kind]} held")
    for kind in ran:
        if HELD[kind] < TRIED[kind]:
            fell = TRIED[kind] - HELD[kind]
            terminalreporter.write_line(f"attack suite: {kind}: {fell} NOT HELD: {', '.join(FELL.get(kind, []))}",
                                        red=True, bold=True)
