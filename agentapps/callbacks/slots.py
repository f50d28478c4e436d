"""Callback refs in a run's internals (see `agentapps.core.slots`): the process's, shared by every
run a server serves (a ref made in one request is answered by another)."""

from __future__ import annotations

from typing import Any

from agentapps.core.slots import Slot

CALLBACKS: Slot[dict[str, Any]] = Slot("callbacks", dict)  # reply queues by ref name (both backends)
