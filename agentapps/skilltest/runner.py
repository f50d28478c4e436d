"""Running test cases through the real pipeline, in this process and in parallel: each case gets a
bootstrap of its own (its skill's project), its recorded model turns as `--replay` (or, recording,
as `--record`), its timeout, and is then judged (`skilltest.expect`).

Cases run as tasks on one event loop, at most `jobs` at once. Nobody answers a trust rule's
question during a test (the call is denied), and no run is appended to the run log.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.errors import AgentAppsError, ConfigError, LimitError, UsageError
from agentapps.skilltest import expect
from agentapps.skilltest.collect import Suite
from agentapps.tools.names import name_from_file
from agentapps.tools.testfile import Case, prompt_hash

if TYPE_CHECKING:
    from agentapps.context.context import Context, Globals
    from agentapps.types import ToolDef


@dataclass
class CaseResult:
    """How one case went."""

    skill: str
    case: str
    tests_file: str
    line: int
    passed: bool
    reason: str | None = None
    diff: str | None = None
    duration_ms: float = 0.0
    recorded: str | None = None  # the script written (--record)

    def to_dict(self) -> dict[str, Any]:
        return {"skill": self.skill, "case": self.case, "file": self.tests_file, "line": self.line,
                "status": "passed" if self.passed else "failed", "reason": self.reason, "diff": self.diff,
                "duration_ms": self.duration_ms, "recorded": self.recorded}


async def run_suites(suites: Sequence[Suite], *, jobs: int = 4, record: bool = False,
                     model: str | None = None) -> list[CaseResult]:
    """Every case of `suites`, in their order. With `record`, every markdown skill must have a
    model to record from (else UsageError before anything runs)."""
    if record:
        _refuse_without_model(suites, model)
    await _check_predicates(suites)
    gate = asyncio.Semaphore(max(1, jobs))
    # recording, the first case of a script records it and the others that play it replay it after
    recorders: dict[Path | None, tuple[Case, asyncio.Event]] = {}
    for case in (c for s in suites for c in s.cases):
        recorders.setdefault(case.script, (case, asyncio.Event()))

    async def one(suite: Suite, case: Case) -> CaseResult:
        first, done = recorders[case.script]
        records = record and first is case
        if record and not records:
            await done.wait()
        try:
            async with gate:
                return await run_case(suite, case, record=records, model=model)
        finally:
            if records:
                done.set()

    tasks = [asyncio.ensure_future(one(s, c)) for s in suites for c in s.cases]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:
            task.cancel()


async def _check_predicates(suites: Sequence[Suite]) -> None:
    """Every `expect.predicate` names a skill its suite's project finds: else a ConfigError at the
    case, before any case runs."""
    from agentapps.boot import bootstrap
    from agentapps.errors import SkillNotFoundError
    from agentapps.skilltest.collect import shown_path

    for suite in suites:
        wanted = [c for c in suite.cases if c.predicate is not None]
        if not wanted:
            continue
        g = bootstrap(suite.skill_file.parent).globals
        try:
            for case in wanted:
                assert case.predicate is not None
                try:
                    g.lookup.resolve(case.predicate)
                except SkillNotFoundError:
                    raise ConfigError(f"Case '{case.name}' has `expect.predicate: {case.predicate}`, a skill "
                                      "this project does not have.",  # str() adds file:line
                                      file=str(shown_path(Path(case.file))), line=case.line) from None
        finally:
            await _finish(g)


async def run_case(suite: Suite, case: Case, *, record: bool = False, model: str | None = None) -> CaseResult:
    from agentapps.trust import ASK

    ASK.set(None)  # nobody answers a trust question in a test: the guarded call is denied
    started = time.perf_counter()
    name = name_from_file(suite.skill_file.name, suite.skill_file.parent.name)
    out = CaseResult(name, case.name, str(case.file), case.line, False)
    try:
        root, tool = _prepare(suite, case, record, model)
    except Exception as exc:  # noqa: BLE001 - one case that cannot start must not stop the others
        from agentapps.lifecycle import failure

        out.reason = f"the skill cannot be run: {failure.record(exc)['message']}"
        return out
    g = root.globals
    out.skill = tool.name
    try:
        out.reason, out.diff = await _judged(root, tool, case)
        out.passed = out.reason is None
        if record:
            out.recorded = _recorded(g, case)
    finally:
        await _finish(g)
        out.duration_ms = round((time.perf_counter() - started) * 1000, 1)
    return out


def _prepare(suite: Suite, case: Case, record: bool, model: str | None) -> tuple[Context, ToolDef]:
    from agentapps.boot import bootstrap
    from agentapps.lifecycle.served import register_secrets
    from agentapps.lifecycle.target import resolve

    root = bootstrap(suite.skill_file.parent)
    g = root.globals
    register_secrets(g)
    if suite.stand_in is not None:  # the candidate answers to the skill's name, in this case only
        from agentapps.tools.loader import load_file

        tool = load_file(suite.stand_in, root=suite.stand_in.parent, root_kind="compiled")
        g.lookup.register(tool)
    else:
        tool = resolve(g, str(suite.skill_file))
    script = str(case.script)
    if model:
        g.config.overrides["model"] = model
    if record:
        from agentapps.agent.script import recorder_for

        g.config.overrides["record"] = script
        recorder = recorder_for(g, script)
        if recorder is not None:
            recorder.info = {"promptHash": prompt_hash(tool)}
    else:
        # always: an agent the case did not record for fails on the missing script, never calls a model
        g.config.overrides["replay"] = script
    return root, tool


async def _judged(root: Context, tool: ToolDef, case: Case) -> tuple[str | None, str | None]:
    """(why the case failed, a diff of the result) or (None, None)."""
    from agentapps.context.manager import invoke_root
    from agentapps.lifecycle import failure
    from agentapps.lifecycle.results import json_result

    g = root.globals
    error: BaseException | None = None
    record: dict[str, Any] | None = None
    result: Any = None
    args = dict(case.args)
    try:
        if case.stdin is not None:
            args["input"] = _read_stdin(case.stdin)
        raw = await _limited(invoke_root(root, tool, args), g, case.timeout)
        result, _ = json_result(raw, tool.name)
        result = g.internals.redactor.redact_data(result)
    except Exception as exc:  # noqa: BLE001 - any failure is an outcome the case may expect
        error, record = exc, failure.record(exc, g.internals.redactor, skill=tool.name)
        missing = _missing_script(exc, case)
        if missing is not None:
            return missing, None
    problem = expect.exit_problem(case, error, record)
    if problem is not None or error is not None:
        return problem, None
    found = expect.result_problem(case, result)
    if found is not None:
        return found
    problem = expect.schema_problem(case, result, g.cache_for("schema"), tool.name)
    if problem is None and case.predicate is not None:
        problem = await _predicate(root, case, result, args)
    return problem, None


async def _predicate(root: Context, case: Case, result: Any, args: dict[str, Any]) -> str | None:
    from agentapps.context.manager import invoke_root

    assert case.predicate is not None
    try:
        verdict = await invoke_root(root, case.predicate, {"result": result, "args": args})
    except AgentAppsError as exc:
        return f"predicate '{case.predicate}' could not judge the result: {exc}"
    return expect.predicate_verdict(verdict, case.predicate)


def _read_stdin(path: Path) -> str:
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read the case's stdin file: {exc}.", file=path) from None


def _missing_script(exc: BaseException, case: Case) -> str | None:
    """A case whose skill ran an agent with no recorded turns to play: say how to record them."""
    if isinstance(exc, ConfigError) and case.script is not None and exc.file == str(case.script) \
            and not case.script.exists():
        shown = case.script.relative_to(case.file.parent) if case.script.is_relative_to(case.file.parent) \
            else case.script
        return (f"no recorded model turns at {shown} (beside the tests file): record them with "
                "'agentapps test --record' (needs a model), or write them by hand")
    return None


def _recorded(g: Globals, case: Case) -> str | None:
    from agentapps.agent.script import Recorder
    from agentapps.agent.slots import AGENT_RECORDER

    recorder = g.internals.get(AGENT_RECORDER)
    if not isinstance(recorder, Recorder) or not any(t is not None for t in recorder.turns):
        return None
    return None if recorder.failed is not None else str(case.script)


async def _limited(coro: Any, g: Globals, timeout: float) -> Any:
    try:
        return await asyncio.wait_for(coro, timeout)
    except TimeoutError:
        message = f"The case took longer than its timeout of {timeout:g} s and was stopped."
        g.signal.abort(message)
        raise LimitError(message) from None


async def _finish(g: Globals) -> None:
    """As a run ends: the registered cleanups, then any child process group still running is killed."""
    from agentapps.core.cleanup import run_cleanups
    from agentapps.telemetry.ending import aclose

    await run_cleanups(g.internals)
    await aclose(g.internals)  # the case's spans (traces on only)
    for pgid in list(g.internals.children):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _refuse_without_model(suites: Sequence[Suite], model: str | None) -> None:
    """--record asks a live model: refuse, before anything runs, a skill that names none."""
    if model or os.environ.get("AGENTAPPS_MODEL"):
        return
    from agentapps.boot import bootstrap
    from agentapps.context.plan import cascaded
    from agentapps.lifecycle.target import resolve

    for suite in suites:
        g = bootstrap(suite.skill_file.parent).globals
        tool = resolve(g, str(suite.skill_file))
        if tool.kind != "markdown" and not any(c.script is not None and c.script.exists() for c in suite.cases):
            continue  # a code skill that never recorded turns runs no agent to record
        settings = cascaded(tool, g).meta.get("model")
        if isinstance(settings, dict) and any(settings.get(k) for k in ("id", "provider", "agent")):
            continue
        raise UsageError(f"--record needs a model to record from, and skill '{tool.name}' ({suite.skill_file}) "
                         "names none: set model.id or model.provider in its metadata (or its main skill's), "
                         "set AGENTAPPS_MODEL, or pass --model ID.")

