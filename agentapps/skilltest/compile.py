"""`compile_skills`: what the `skill-compile` skill does. Each markdown skill named becomes a code
skill in the project's `.agent-apps/compiled/` (first on the search path, so it shadows its
source), written by an agent and kept only when the source's test cases pass against it.

Per skill: skip when the compiled file's `@generated source-hash:` marker matches the source's
bytes; otherwise up to three attempts, each an `agent` call (the source's model settings, so
`--model`/`--replay` and `model.provider` select it as for any run) whose code is checked, written
to a temporary folder, and run against the source's cases in place of the source (`skill-test`'s
runner). Failures go back to the agent. Only a passing candidate is written, atomically, through
the trust gate for skill code (asked before the first attempt, since the candidates run while
tested); the temporary folder always goes. A compiled file without the
marker was written by hand and is never replaced.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.errors import UsageError
from agentapps.skilltest import candidate as cand
from agentapps.skilltest.collect import Suite
from agentapps.skilltest.compile_prompt import CODE_RETURNS, attempt_message, compile_prompt
from agentapps.tools.compiled import marker_of, source_hash
from agentapps.tools.testfile import Case, load_cases, tests_file_for

if TYPE_CHECKING:
    from agentapps.context.context import Context, Globals
    from agentapps.types import ToolDef

ATTEMPTS = 3
MAX_FEEDBACK = 2000  # characters of one failure's diff shown to the agent


@dataclass
class Plan:
    """One skill to compile, checked before any compile starts."""

    tool: ToolDef
    source: Path
    tests_file: Path
    cases: tuple[Case, ...]
    target: Path
    digest: str
    shown_source: str  # project-relative, as `compiled-from` and the report show it
    shown_target: str


async def compile_skills(ctx: Context, refs: Sequence[str]) -> dict[str, Any]:
    """Compile the markdown skills `refs` name; {results: [{name, status ("compiled", "skipped",
    "failed"), source, file, attempts, reasons}], text}. Bad input (an unknown or code skill, no
    tests, a hand-written file in the way) is a UsageError before anything is compiled."""
    if not refs:
        raise UsageError("Name at least one markdown skill to compile (--ref NAME).")
    g = ctx.globals
    plans = [_plan(g, ref) for ref in dict.fromkeys(refs)]
    results = [await _compile(ctx, plan) for plan in plans]
    return {"results": results, "text": "\n".join(_line(r) for r in results)}


def _project(g: Globals) -> Path:
    return Path(g.config.project or g.config.cwd)


def _plan(g: Globals, ref: str) -> Plan:
    from agentapps.boot import COMPILED_DIR
    from agentapps.tools.index import Broken
    from agentapps.tools.names import ref_kind

    project = _project(g)
    compiled = project / COMPILED_DIR
    if ref_kind(ref) == "name":  # the source: the first definition outside the compiled folder
        found = [t for t in g.lookup.candidates(ref, force_check=True)
                 if t.path is None or t.path.parent != compiled]
        if not found:
            raise g.lookup.not_found(ref)
        if isinstance(found[0], Broken):
            raise found[0].error
        tool = found[0]
    elif ref_kind(ref) == "path":
        tool = g.lookup.resolve(ref)
    else:
        raise UsageError(f"Cannot compile '{ref}': name a markdown skill or its file.")
    if tool.kind != "markdown" or tool.path is None:
        raise UsageError(f"Skill '{tool.name}' is not a markdown skill ({tool.path or tool.uri}); only "
                         "markdown skills compile.", skill=tool.name)
    tests = tests_file_for(tool.path)
    if not tests.is_file():
        raise UsageError(f"Skill '{tool.name}' has no tests: write {tests.name} beside {tool.path}; a compile "
                         "is kept only when the skill's cases pass (docs/toolchain.md).", skill=tool.name)
    target = compiled / f"{tool.name}.skill.py"
    if target.exists() and marker_of(target) is None:
        raise UsageError(f"This file has no '@generated source-hash:' marker, so it was written by hand: a "
                         f"compile of '{tool.name}' never overwrites it (move it away to compile).",
                         skill=tool.name, file=target)
    return Plan(tool, tool.path, tests, tuple(load_cases(tests)), target, source_hash(tool.path),
                _shown(tool.path, project), _shown(target, project))


def _shown(path: Path, project: Path) -> str:
    return path.relative_to(project).as_posix() if path.is_relative_to(project) else str(path)


async def _compile(ctx: Context, plan: Plan) -> dict[str, Any]:
    out: dict[str, Any] = {"name": plan.tool.name, "source": plan.shown_source, "file": plan.shown_target,
                           "attempts": 0, "reasons": []}
    if marker_of(plan.target) == plan.digest:
        return {**out, "status": "skipped"}
    # before any model-written code runs (the candidates run while tested) or is written
    await _approved(ctx, plan)
    os.makedirs(plan.target.parent, mode=0o700, exist_ok=True)
    _clean_scratch(plan.target.parent)
    scratch = Path(tempfile.mkdtemp(prefix=".compile-", dir=plan.target.parent))  # dot-folder: never indexed
    frontmatter = cand.compiled_frontmatter(plan.tool.frontmatter, plan.shown_source)
    try:
        code: str | None = None
        failures: list[str] = []
        for attempt in range(1, ATTEMPTS + 1):
            out["attempts"] = attempt
            code = await _ask(ctx, plan, attempt, code, failures)
            problem = cand.code_problem(code)
            text = cand.assemble(code, frontmatter, plan.digest)
            failures = [problem] if problem else await _tested(plan, scratch / str(attempt), text)
            if not failures:
                await _write(ctx, plan, text)
                return {**out, "status": "compiled"}
            out["reasons"].append(f"attempt {attempt}: " + "; ".join(f.splitlines()[0] for f in failures))
        return {**out, "status": "failed"}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def _ask(ctx: Context, plan: Plan, attempt: int, previous: str | None, failures: list[str]) -> str:
    """One attempt: the agent's code (the source's model settings select the provider)."""
    from agentapps.agent.config import model_settings
    from agentapps.context.plan import cascaded

    tool = plan.tool
    config = model_settings(cascaded(tool, ctx.globals).meta.get("model"), tool.name)
    tests = plan.tests_file.read_text("utf-8", errors="replace")[:20_000]
    answer = await ctx.manager.invoke("agent", {
        "prompt": compile_prompt(tool.name, tool.frontmatter, tool.body, tests),
        "config": config, "returns": CODE_RETURNS, "allowedTools": "skill-describe",
        "userMessage": attempt_message(attempt, ATTEMPTS, previous, failures),
        "skillName": "skill-compile", "name": f"compile {tool.name}"})
    return str(answer["code"]) if isinstance(answer, dict) else str(answer)


async def _tested(plan: Plan, folder: Path, text: str) -> list[str]:
    """The source's cases run against the candidate (registered under the skill's name, so it
    shadows the source); each failure as `case: reason` with its diff."""
    from agentapps.skilltest.runner import run_suites

    folder.mkdir(mode=0o700)
    path = folder / plan.target.name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    results = await run_suites([Suite(plan.source, plan.tests_file, plan.cases, stand_in=path)])
    return [f"{r.case}: {r.reason}" + (f"\n{r.diff[:MAX_FEEDBACK]}" if r.diff else "")
            for r in results if not r.passed]


async def _approved(ctx: Context, plan: Plan) -> None:
    """The trust gate for skill code: a compile started from the command line is the user's own
    action; one started by another skill must be approved (`--approve skill-compile`, a yes on
    the terminal), else DeniedError before any candidate exists."""
    from agentapps.files.guard import approve_code_write

    await approve_code_write(ctx, plan.shown_target, {"compiledFrom": plan.shown_source})


def _clean_scratch(folder: Path, older_than: float = 3600.0) -> None:
    """Temporary folders a killed compile left (never a live one's: only those an hour old)."""
    import time

    for entry in folder.glob(".compile-*"):
        try:
            if entry.is_dir() and time.time() - entry.stat().st_mtime > older_than:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            continue


async def _write(ctx: Context, plan: Plan, text: str) -> None:
    """The compiled file, atomically (approved before the first attempt)."""
    from agentapps.core.atomic import write_atomic
    from agentapps.errors import StoreWriteError

    try:
        write_atomic(plan.target, text.encode("utf-8"), mode=0o600)
    except OSError as exc:
        raise StoreWriteError(f"Cannot write the compiled skill: {exc.strerror or exc}.", file=plan.target) from None


def _line(result: dict[str, Any]) -> str:
    name, file, source = result["name"], result["file"], result["source"]
    if result["status"] == "skipped":
        return f"skipped {name}: {file} is up to date with {source}"
    if result["status"] == "compiled":
        return f"compiled {name}: {source} -> {file} (attempt {result['attempts']} of {ATTEMPTS})"
    reasons = "".join(f"\n  {r}" for r in result["reasons"])
    return f"failed {name}: no candidate passed the tests of {source} in {result['attempts']} attempts{reasons}"
