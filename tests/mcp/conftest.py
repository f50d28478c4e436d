"""Fixtures for the MCP tests: a pid file the fake server writes, and the canary secret it is given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.mcpkit import SECRET


@pytest.fixture
def pidfile(project: Any) -> Path:
    return project.root / "pids.txt"


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TEST_SECRET", SECRET)
