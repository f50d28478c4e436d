"""The pure parts of `agentapps serve`: cron times, the event mapping, per-run state of a served run."""

from __future__ import annotations

import calendar
import json
import re

import pytest

from agentapps.callbacks.slots import CALLBACKS
from agentapps.core.cron import Cron
from agentapps.errors import ConfigError
from agentapps.mcp.slots import MCP_HUB
from agentapps.runlog.slots import AGENT_TOTALS, SESSION_KEY
from agentapps.serve.events import stream_event


def utc(text: str) -> float:
    return float(calendar.timegm(__import__("time").strptime(text, "%Y-%m-%d %H:%M:%S")))


@pytest.mark.parametrize(("cron", "after", "expected"), [
    ("* * * * *", "2026-01-01 10:00:00", "2026-01-01 10:01:00"),
    ("0 9 * * mon-fri", "2026-01-02 09:00:00", "2026-01-05 09:00:00"),  # Friday 9:00 passed: Monday
    ("*/15 * * * *", "2026-01-01 10:07:30", "2026-01-01 10:15:00"),
    ("30 2 1 * *", "2026-01-31 00:00:00", "2026-02-01 02:30:00"),
    ("0 0 29 feb *", "2026-03-01 00:00:00", "2028-02-29 00:00:00"),
    ("0 0 13 * fri", "2026-02-01 00:00:00", "2026-02-06 00:00:00"),  # day or weekday (Vixie cron)
    ("0 0 * * 7", "2026-01-01 00:00:00", "2026-01-04 00:00:00"),  # 7 is Sunday too
    ("0 12 * jun,dec *", "2026-07-01 00:00:00", "2026-12-01 12:00:00"),
    ("*/2 * * * * *", "2026-01-01 10:00:00", "2026-01-01 10:00:02"),  # six fields: seconds first
    ("5-10/5 0 * * * *", "2026-01-01 10:00:06", "2026-01-01 10:00:10"),
    # crontab(5): a day field starting with `*` is unrestricted, so `*/2` with a weekday means both
    ("0 0 */2 * mon", "2026-01-01 00:00:00", "2026-01-05 00:00:00"),  # Monday the 5th, not Friday the 3rd
    ("0 0 2-30/2 * mon", "2026-01-01 00:00:00", "2026-01-02 00:00:00"),  # both restricted: either
    ("0 9-9/3 * * *", "2026-01-01 10:00:00", "2026-01-02 09:00:00"),  # a one-value range stays one value
    ("0 0 L * *", "2026-02-01 00:00:00", "2026-02-28 00:00:00"),  # the last day of the month
    ("0 0 * * mon#2", "2026-01-01 00:00:00", "2026-01-12 00:00:00"),  # the second Monday
    ("0 0 29 2 */7", "2026-01-01 00:00:00", "2032-02-29 00:00:00"),  # a Sunday 29 February, six years on
])
def test_cron_finds_the_next_time_in_utc(cron, after, expected):
    assert Cron.parse(cron).next_after(utc(after)) == utc(expected)


@pytest.mark.parametrize("cron", ["", "* * * *", "60 * * * *", "* 24 * * *", "*/0 * * * *", "5-1 * * * *",
                                  "* * * * funday", "* * 0 * *", "a b c d e", "1,,2 * * * *",
                                  "0 0 30 2 *", "* * * * * * *"])
def test_a_bad_cron_names_the_skill(cron):
    with pytest.raises(ConfigError, match="Skill 'tick' has an invalid `schedule`"):
        Cron.parse(cron, skill="tick")


def test_a_bad_cron_says_which_field():
    with pytest.raises(ConfigError, match=r"'0 0 30 2 \*' \(bad day-of-month\)"):
        Cron.parse("0 0 30 2 *", skill="tick")
    with pytest.raises(ConfigError, match=r"\(wrong number of fields\)"):
        Cron.parse("* * * *", skill="tick")


def test_a_cron_that_never_matches_has_no_next_time():
    # the first day of the month is never its fifth Monday: the search ends (at 50 years), quickly
    assert Cron.parse("0 0 */31 * mon#5").next_after(utc("2026-01-01 00:00:00")) is None


def test_the_next_time_is_a_whole_second_strictly_after():
    assert Cron.parse("* * * * * *").next_after(utc("2026-01-01 10:00:00") + 0.5) == utc("2026-01-01 10:00:01")
    assert Cron.parse("0 * * * *").next_after(utc("2026-01-01 10:00:00")) == utc("2026-01-01 11:00:00")


@pytest.mark.parametrize(("entry", "expected"), [
    ({"type": "message", "text": "Hi"}, "agent-message"),
    ({"type": "agent-message", "text": "Hi"}, "agent-message"),  # the trace's coming names map the same
    ({"type": "message", "text": "H", "delta": True}, "text-delta"),
    ({"type": "tool-result", "status": "error"}, "tool-error"),
    ({"type": "tool-result", "status": "success"}, "tool-result"),
    ({"type": "error", "error": "x"}, "agent-error"),
    ({"type": "reasoning", "text": "hmm"}, None),
    ({"type": "context-edit"}, None),
])
def test_trace_entries_map_to_the_seed_event_names(entry, expected):
    found = stream_event(entry["type"], entry)
    assert (found[0] if found else None) == expected


def test_a_served_run_has_its_own_totals_and_shares_the_rest(project):
    from agentapps.lifecycle.served import begin

    g = project.boot().globals
    first, second = begin(g), begin(g)
    first.g.internals.set(AGENT_TOTALS, {"turns": 3})
    first.g.internals.set(SESSION_KEY, "k1")
    first.g.internals.dry_run = True
    assert second.g.internals.get(AGENT_TOTALS) is None and second.g.internals.get(SESSION_KEY) is None
    assert g.internals.get(AGENT_TOTALS) is None and not second.g.internals.dry_run and not g.internals.dry_run
    first.g.internals.get(CALLBACKS)["cb"] = 1  # shared subsystems are the server's
    first.g.internals.set(MCP_HUB, hub := object())  # type: ignore[arg-type]
    assert g.internals.get(CALLBACKS) == {"cb": 1} and second.g.internals.get(MCP_HUB) is hub
    assert first.g.internals.redactor is g.internals.redactor
    first.g.signal.abort("stop")
    assert not second.g.signal.aborted and not g.signal.aborted


def test_the_openapi_document_is_valid_openapi_3_1():
    from openapi_spec_validator import validate
    from openapi_spec_validator.validation.exceptions import OpenAPIValidationError
    from referencing.exceptions import Unresolvable

    from agentapps.serve.openapi import document

    validate(document())  # the OpenAPI 3.1 schema, and every $ref resolves
    # the check would catch a slip: a path parameter not required, a reference to nothing
    broken = document()
    broken["paths"]["/threads/{thread}"]["get"]["parameters"][0]["required"] = False
    with pytest.raises(OpenAPIValidationError):
        validate(broken)
    dangling = document()
    dangling["paths"]["/invocations"]["post"]["responses"]["200"]["content"]["application/json"]["schema"] = {
        "$ref": "#/components/schemas/Nowhere"}
    with pytest.raises(Unresolvable):
        validate(dangling)


def test_the_openapi_document_lists_every_route_of_the_app_and_declares_its_path_parameters():
    from types import SimpleNamespace

    from starlette.routing import Route

    from agentapps.serve.app import build
    from agentapps.serve.openapi import document
    from agentapps.serve.state import Options

    app = build(SimpleNamespace(options=Options())).app  # the Starlette app behind the Guard
    served = {(r.path, m.lower()) for r in app.routes if isinstance(r, Route) for m in (r.methods or ()) if m != "HEAD"}
    paths = document()["paths"]
    documented = {(path, method) for path, ops in paths.items() for method in ops}
    assert documented == served and {("/", "get"), ("/openapi.json", "get")} <= documented
    for path, ops in paths.items():
        named = set(re.findall(r"{(\w+)}", path))
        for op in ops.values():
            assert {p["name"] for p in op.get("parameters", []) if p["in"] == "path"} == named, path


def test_an_event_is_one_frame_whatever_its_text_holds():
    from agentapps.serve.routes import sse

    text = "line\nbreak\r\nreturn\rsep\u2028para\u2029end: data: x"
    frame = sse("text-delta", {"text": text}).decode("ascii")  # non-ASCII is escaped too
    # the SSE spec ends a line at \r\n, \r or \n: the frame is exactly two fields and a blank line
    assert re.split(r"\r\n|\r|\n", frame) == ["event: text-delta", frame.splitlines()[1], "", ""]
    assert json.loads(frame.splitlines()[1].removeprefix("data: ")) == {"text": text}


SLEEPER = """
import asyncio, pathlib
frontmatter = {"name": "sleeper", "metadata": {"params": {"type": "object"}}}

async def run(ctx, args):
    pathlib.Path("started").write_text("yes")
    await asyncio.sleep(30)
"""


def test_a_request_run_cancelled_by_the_shutdown_is_recorded_and_the_cancellation_goes_on(project):
    # /invocations runs its skill in the request's own task: the server stopping cancels that task,
    # and the run still ends with the shutdown's error and its run-log record before it unwinds
    import asyncio
    import sqlite3

    from agentapps.core.cleanup import run_cleanups
    from agentapps.lifecycle.server import offered
    from agentapps.serve.coord import Local
    from agentapps.serve.runs import LiveRun
    from agentapps.serve.state import Options, Server

    project.write("sleeper.skill.py", SLEEPER)
    g, exposure = offered("serve", project.root, None, [], detach_stdin=False)
    server = Server(g, exposure, Local(), Options())
    run = LiveRun.__new__(LiveRun)

    async def scenario() -> bool:
        nonlocal run
        run = LiveRun(server, "sleeper", {}, owner="local")
        task = asyncio.ensure_future(run.run_here("The server is shutting down."))
        try:
            while not (project.root / "started").exists():
                await asyncio.sleep(0.01)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                return True
            return False
        finally:
            await run_cleanups(g.internals)  # the run log's pending records

    assert asyncio.run(scenario())
    assert run.outcome["ok"] is False and run.outcome["error"]["message"] == "The server is shutting down."
    assert run.outcome["error"]["exit_code"] == 130
    conn = sqlite3.connect(g.config.log_dir / "runs" / "runs.db")
    try:
        assert conn.execute("SELECT skill, exit_code, error FROM runs").fetchall() == [
            ("sleeper", 130, "The server is shutting down.")]
    finally:
        conn.close()
