"""Run-log tests drive agent skills the way the agent tests do."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.agent.conftest import Agentic


@pytest.fixture
def agentic(project: Any) -> Iterator[Agentic]:
    yield Agentic(project)
