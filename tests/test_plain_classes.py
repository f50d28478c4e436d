"""The kernel's plain classes (dataclasses once: importing dataclasses costs every cold start)
keep what the dataclasses gave: the constructor, the repr, and the copies made of them."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from agentapps.cascade.resolve import Cascaded
from agentapps.cli.run_options import RunnerOption, RunOptions
from agentapps.context.context import Config, Globals, Signal
from agentapps.lifecycle.served import ServedRun
from agentapps.runstate import Internals
from agentapps.tools.index import Broken, RootIndex
from agentapps.tools.lookup import Lookup
from agentapps.tools.policy import Candidate, Decision, Policy, Rule
from agentapps.types import ChainPlan, Event, PathEntry, ToolDef

PLAIN = (ToolDef, PathEntry, Event, ChainPlan, Candidate, Decision, Rule, Policy, Config, Internals, Globals, Broken,
         RootIndex, RunnerOption, RunOptions, Lookup, Cascaded, ServedRun)


@pytest.mark.parametrize("cls", PLAIN, ids=lambda c: c.__name__)
def test_fields_are_the_constructors_parameters_in_order(cls):
    assert cls.FIELDS == tuple(inspect.signature(cls).parameters)
    assert cls.__dict__.get("__doc__")  # its own


def test_the_repr_shows_every_field_in_order():
    tool = ToolDef("a", "code", {"name": "a"}, Path("/p/a.skill.py"))
    assert repr(tool) == ("ToolDef(name='a', kind='code', frontmatter={'name': 'a'}, path=PosixPath('/p/a.skill.py'), "
                          "body='', body_line=1, fn=None, uri=None, root=None, root_kind=None, mtime_ns=0, loop=True)")
    assert repr(Decision(False, "no")) == "Decision(allowed=False, reason='no')"


def test_a_repr_that_reaches_itself_shows_dots():
    plan = ChainPlan(["a"])
    plan.steps.append(plan)  # type: ignore[arg-type]
    assert repr(plan) == ("ChainPlan(entries=['a'], static=False, steps=[...], loop=False, resolved_at=-1.0, "
                          "ordered=['a'], served=None)")


def test_defaults_made_per_instance_are_never_shared():
    first, second = RunOptions(), RunOptions()
    assert first.approve == [] and first.approve is not second.approve
    assert Internals().children is not Internals().children
    assert ChainPlan().steps is not ChainPlan().steps


def test_with_frontmatter_copies_every_other_field():
    tool = ToolDef("a", "code", {"name": "a"}, Path("/p"), "body", 3, print, "file:///p", Path("/"), "user", 7, False)
    copy = tool.with_frontmatter({"name": "b"})
    assert copy.frontmatter == {"name": "b"} and tool.frontmatter == {"name": "a"}
    assert all(getattr(copy, f) is getattr(tool, f) for f in ToolDef.FIELDS if f != "frontmatter")


def test_served_globals_share_all_but_the_signal_and_internals(tmp_path):
    server = Globals(Config(tmp_path, None, tmp_path), Lookup([]))
    signal = Signal()
    mine = server.served(signal)
    assert mine.signal is signal and mine.internals is not server.internals
    assert all(getattr(mine, f) is getattr(server, f) for f in Globals.FIELDS if f not in ("signal", "internals"))


def test_a_runs_own_internals_start_as_a_new_internals_does():
    server = Internals(dry_run=True, remote_caller=True, reporter=print)
    mine, fresh = server.served(), Internals()
    assert (mine.dry_run, mine.remote_caller) == (fresh.dry_run, fresh.remote_caller) == (False, False)
    assert mine.reporter is print  # the process's fields are the server's own objects
    assert all(getattr(mine, f) is getattr(server, f) for f in ("redactor", "children", "cleanups", "loan"))
