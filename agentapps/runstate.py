"""A run's internals: the kernel's own fields and every subsystem's state (`agentapps.core.slots`).

Below every package that keeps state for a run (the run log, traces, the metadata cascade), so they
read it with its own type. `agentapps.context.context` re-exports `Internals` for the layers above."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agentapps.core.shown import fields_repr
from agentapps.core.slots import SlotValues
from agentapps.secrets import Redactor

if TYPE_CHECKING:
    from agentapps.core.loan import Loan

Reporter = Callable[[str, dict[str, Any]], None]  # the progress display: `reporter(event, fields)`


class Internals(SlotValues):
    """A run's internals: the kernel's own fields, and every subsystem's state in the slots the
    subsystems declare (`internals.get(SLOT)`, see `agentapps.core.slots`). `served()` gives one
    run a server serves its own per-run fields and slots, sharing the rest with the server."""

    FIELDS = ("dry_run", "remote_caller", "redactor", "reporter", "children", "cleanups", "loan")
    __slots__ = FIELDS
    # per run:
    dry_run: bool  # --dry-run: the skill the user named shows what would run
    # the top-level call comes from someone else (a server's client, a queued event), not from the
    # user at this terminal: the project's trust rules apply to it too
    remote_caller: bool
    # the process's (a served run holds the server's objects: set these before serving, then
    # change them in place):
    redactor: Redactor  # every byte written goes through it
    reporter: Reporter | None  # the CLI's progress display (None with -q or in-process)
    children: set[int]  # process groups to kill when the run stops
    cleanups: list[Callable[[], Awaitable[None]]]  # awaited at run end
    loan: Loan | None  # the event loop lent to calls that wait, when the run is driven without one

    def __init__(self, dry_run: bool = False, remote_caller: bool = False, redactor: Redactor | None = None,
                 reporter: Reporter | None = None, children: set[int] | None = None,
                 cleanups: list[Callable[[], Awaitable[None]]] | None = None, loan: Loan | None = None) -> None:
        SlotValues.__init__(self)
        self.dry_run, self.remote_caller = dry_run, remote_caller
        self.redactor = Redactor() if redactor is None else redactor
        self.reporter = reporter
        self.children = set() if children is None else children
        self.cleanups = [] if cleanups is None else cleanups
        self.loan = loan

    def served(self) -> Internals:
        """The internals of one run this server serves: per-run fields and slots start afresh, the
        process's fields and every shared slot are the server's own objects."""
        mine = Internals(redactor=self.redactor, reporter=self.reporter, children=self.children,
                         cleanups=self.cleanups, loan=self.loan)
        mine._shared = self._shared
        return mine

    def __repr__(self) -> str:
        shown = fields_repr(self, self.FIELDS)
        return f"{shown[:-1]}, slots={self.slot_values()!r})"
