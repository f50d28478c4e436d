"""Waiting on a condition instead of sleeping a fixed time: `wait_for(lambda: path.exists())`
returns as soon as it holds (a loaded machine only makes it later, never wrong) and fails the test
with `what` when it does not hold within `timeout` seconds."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(condition: Callable[[], object], timeout: float = 20.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.02)
