"""The examples gallery and the repository's own maintenance skills, run through the real CLI.

Each example is copied to a temporary folder (its own project, as in the repository) and every
command is run there with bash, exactly as examples/README.md shows it: `run_documented` fails
when the command is not in the README word for word. `agentapps` and `python3` on PATH are shims
for the interpreter running the tests, and no AWS or AGENTAPPS_ variable leaks in.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
README = (EXAMPLES / "README.md").read_text(encoding="utf-8")
FOLDERS = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir() and p.name != "ci")
RUNTIME = shutil.ignore_patterns("sessions", "state", "runs", "cache", "trust.json", "trust.log",
                                 "__pycache__", "requests.jsonl")

Done = subprocess.CompletedProcess[str]
GATE = """python3 -c '
import json, sys
run = json.load(sys.stdin)
blockers = [f for f in (run["result"] or {}).get("findings", []) if f["severity"] == "blocker"]
for f in blockers: print("%(file)s:%(line)s: blocker: %(message)s" % f)
sys.exit(run["error"]["exit_code"] if not run["ok"] else 1 if blockers else 0)'"""


@dataclass
class Example:
    """One example folder copied to a temporary project, and a shell to run commands in it."""

    root: Path
    env: dict[str, str]

    def sh(self, command: str, *, timeout: float = 60, **env: str) -> Done:
        return subprocess.run(["bash", "-c", command], cwd=self.root, env={**self.env, **env},
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def run_documented(self, command: str, **env: str) -> Done:
        assert command in README, f"examples/README.md does not show this command:\n{command}"
        return self.sh(command, **env)

    def main_skill(self, model: dict[str, Any]) -> None:
        """Add a main skill: its `model` config cascades to the example's skills (the authority)."""
        (self.root / "main.skill.md").write_text(
            f"---\nname: main\nmetadata:\n  role: main\n  model: {json.dumps(model)}\n---\nMain.\n")

    def requests(self) -> list[dict[str, Any]]:
        """What the scripted model received per turn (the `requests` log of agent-scripted)."""
        lines = (self.root / "requests.jsonl").read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines]


def _shim(folder: Path, name: str, argv: str) -> None:
    path = folder / name
    path.write_text(f'#!/bin/sh\nexec {argv} "$@"\n')
    path.chmod(0o755)


@pytest.fixture
def example(tmp_path: Path) -> Iterator[Callable[[str], Example]]:
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    bin_dir.mkdir()
    home.mkdir()
    python = shlex.quote(sys.executable)
    _shim(bin_dir, "agentapps", f"{python} -m agentapps")
    _shim(bin_dir, "python3", python)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AGENTAPPS_", "AWS_", "OPENAI_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", HOME=str(home), NO_COLOR="1",
               PYTHONDONTWRITEBYTECODE="1", LC_ALL="C.UTF-8")
    env.pop("SOURCE_DATE_EPOCH", None)

    def make(name: str) -> Example:
        root = tmp_path / f"copy-{len(list(tmp_path.glob('copy-*')))}" / name
        shutil.copytree(EXAMPLES / name, root, ignore=RUNTIME)
        return Example(root, env)

    yield make


# -- the gallery as a whole ------------------------------------------------------------------------


def test_there_are_at_least_eight_examples_each_its_own_project_with_a_readme_section():
    assert len(FOLDERS) >= 8
    for name in FOLDERS:
        folder = EXAMPLES / name
        assert (folder / ".agent-apps" / ".gitignore").is_file(), name
        assert f"\n## {name}\n" in README and f"cd examples/{name}\n" in README, name
        assert list(folder.glob("*.skill.*")), name
        assert list(folder.glob("*.turns.json")) or (folder / "recorded-chat.json").is_file(), name
    assert "\n## ci\n" in README and (EXAMPLES / "ci" / "github-actions.yml").is_file()


def test_skill_names_are_unique_across_examples_and_never_shadow_a_bundled_skill(example):
    seen: dict[str, str] = {}
    listed = json.loads(example("summarize").sh("agentapps list --all --json").stdout)["skills"]
    bundled = {s["name"] for s in listed if s["source"] == "bundled"}
    for name in FOLDERS:
        listed = example(name).sh("agentapps list --all --json")
        assert listed.returncode == 0, listed.stderr
        mine = [s["name"] for s in json.loads(listed.stdout)["skills"] if s["source"] != "bundled"]
        assert mine, name
        for skill in mine:
            assert skill not in seen and skill not in bundled, (skill, name, seen.get(skill))
            seen[skill] = name


# -- summarize -------------------------------------------------------------------------------------

SUMMARIZE = "agentapps run --replay summarize.turns.json summarize --path incident-report.md"


def test_summarize_returns_a_title_and_bullets(example):
    ex = example("summarize")
    result = ex.run_documented(SUMMARIZE)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["title"] == "Checkout outage on 2024-05-14 (51 minutes, HTTP 502s)"
    assert len(summary["bullets"]) == 4 and all(b.endswith(".") for b in summary["bullets"])
    assert "ok invoke" in result.stderr  # the recorded code really read the file
    markdown = ex.run_documented(
        SUMMARIZE.replace(" run ", " run -q ") + " | python3 -c 'import json, sys; "
        "s = json.load(sys.stdin); print(s[\"title\"]); "
        "print(\"\\n\".join(\"- \" + b for b in s[\"bullets\"]))'")
    assert markdown.returncode == 0 and markdown.stderr == ""
    lines = markdown.stdout.splitlines()
    assert lines[0] == summary["title"] and lines[1:] == ["- " + b for b in summary["bullets"]]


def test_a_recorded_example_rerecords_to_a_script_that_replays_the_same_result(example):
    ex = example("summarize")
    again = SUMMARIZE.replace("--replay summarize.turns.json", "--record again.json "
                              "--replay summarize.turns.json")
    first = ex.sh(again)
    assert first.returncode == 0, first.stderr
    script = json.loads((ex.root / "again.json").read_text())
    original = json.loads((ex.root / "summarize.turns.json").read_text())
    assert [t["code"] for t in script["turns"]] == [t["code"] for t in original["turns"]]
    replayed = ex.sh(SUMMARIZE.replace("summarize.turns.json", "again.json"))
    assert replayed.returncode == 0 and replayed.stdout == first.stdout


def test_summarize_refuses_a_misspelt_flag_and_a_file_outside_the_project(example):
    ex = example("summarize")
    typo = ex.sh(SUMMARIZE + " --bulets 3")
    assert typo.returncode == 2 and "Did you mean --bullets?" in typo.stderr
    outside = ex.sh(SUMMARIZE.replace("incident-report.md", "../../etc/passwd"))
    # the model's read is refused (an error it sees); the recorded answer still matches `returns`
    assert outside.returncode == 0 and "error invoke" in outside.stderr


# -- review-diff -----------------------------------------------------------------------------------

REVIEW = "agentapps run --replay review-diff.turns.json review-diff < change.diff"
REVIEW_JSON = "agentapps run -q --replay review-diff.turns.json --json review-diff < change.diff"
CLEAN_JSON = "agentapps run -q --replay docs-only.turns.json --json review-diff < docs-only.diff"


def test_review_diff_reads_stdin_and_returns_findings_with_severities(example):
    ex = example("review-diff")
    result = ex.run_documented(REVIEW)
    assert result.returncode == 0, result.stderr
    findings = json.loads(result.stdout)["findings"]
    assert [(f["file"], f["line"], f["severity"]) for f in findings] == [
        ("app/orders.py", 14, "blocker"), ("app/notify.py", 13, "major"),
        ("app/notify.py", 15, "minor"), ("app/notify.py", 12, "nit")]
    diff = (ex.root / "change.diff").read_text()
    refund = diff.split("def notify_refunded")[1]
    assert "+    query = f\"SELECT" in diff and "timeout" not in refund


def test_the_ci_gate_fails_on_a_blocker_and_passes_a_clean_diff(example):
    ex = example("review-diff")
    blocked = ex.run_documented(f"{REVIEW_JSON} | {GATE}")
    assert blocked.returncode == 1, blocked.stderr
    assert blocked.stdout.startswith("app/orders.py:14: blocker: SQL injection:")
    assert len(blocked.stdout.splitlines()) == 1
    clean = ex.run_documented(f"{CLEAN_JSON} | {GATE}")
    assert clean.returncode == 0 and clean.stdout == "", clean.stderr


def test_the_ci_gate_exits_with_the_code_of_agentapps_when_the_run_fails(example):
    ex = example("review-diff")
    failed = ex.sh(f"{REVIEW_JSON.replace('review-diff.turns', 'missing.turns')} | {GATE}")
    assert failed.returncode == 2 and "Cannot read the script" in failed.stderr
    empty = ex.sh(f"{REVIEW_JSON.replace('change.diff', '/dev/null')} | {GATE}")
    assert empty.returncode == 2 and "input" in empty.stderr  # no diff: a required param is missing


# -- the CI recipe ---------------------------------------------------------------------------------


def _steps() -> dict[str, dict[str, Any]]:
    workflow = yaml.safe_load((EXAMPLES / "ci" / "github-actions.yml").read_text())
    return {step.get("name", step.get("uses")): step
            for job in workflow["jobs"].values() for step in job["steps"]}


def test_the_github_actions_gate_fails_on_a_blocker_in_the_reviews_result_file(example):
    """The recipe's gate, on the --json object the action writes (tests/examples/test_action.py runs
    the action itself)."""
    ex = example("review-diff")
    gate_step = _steps()["Fail on blockers"]
    ex.sh(f"{REVIEW_JSON} > review.json")
    gate = ex.sh(gate_step["run"], REVIEW="review.json")
    assert gate.returncode == 1 and "app/orders.py:14: blocker:" in gate.stdout
    assert GATE in gate_step["run"]  # the same gate as the README's
    ex.sh(f"{CLEAN_JSON} > clean.json")
    assert ex.sh(gate_step["run"], REVIEW="clean.json").returncode == 0


# -- changelog -------------------------------------------------------------------------------------


def test_changelog_writes_an_entry_for_users_from_git_log(example):
    ex = example("changelog")
    result = ex.run_documented("agentapps run --replay changelog.turns.json changelog "
                               "--version 1.5.0 --date 2024-06-14 < git-log.txt")
    assert result.returncode == 0, result.stderr
    entry = result.stdout
    assert entry.startswith("## [1.5.0] - 2024-06-14\n")
    headings = re.findall(r"^### (\w+)", entry, re.MULTILINE)
    assert headings == ["Breaking", "Added", "Fixed", "Performance"]
    log = (ex.root / "git-log.txt").read_text().splitlines()
    commits = dict(line.split(" ", 1) for line in log)
    cited = re.findall(r"\b([0-9a-f]{7})\b", entry)
    assert cited and set(cited) <= set(commits)
    internal = ("test", "ci", "refactor", "chore")
    left_out = {h for h, subject in commits.items() if subject.startswith(internal)}
    assert left_out and not left_out & set(cited)


def test_changelog_refuses_a_version_that_is_not_semver(example):
    result = example("changelog").sh(
        "agentapps run --replay changelog.turns.json changelog --version next < git-log.txt")
    assert result.returncode == 2 and "version" in result.stderr


# -- triage ----------------------------------------------------------------------------------------


def test_triage_labels_come_from_the_enum(example):
    ex = example("triage")
    result = ex.run_documented("agentapps run --replay triage.turns.json triage < issue.md")
    assert result.returncode == 0, result.stderr
    triage = json.loads(result.stdout)
    assert (triage["labels"], triage["component"], triage["priority"]) == (
        ["bug", "regression"], "export", "p1")
    labels = ex.run_documented(
        "agentapps run -q --replay triage.turns.json triage < issue.md | python3 -c "
        "'import json, sys; print(\",\".join(json.load(sys.stdin)[\"labels\"]))'")
    assert labels.returncode == 0 and labels.stdout == "bug,regression\n"


def test_triage_with_a_label_outside_the_enum_fails_after_the_reminders(example):
    ex = example("triage")
    finish = ("ctx.manager.finish({labels: ['%s'], component: 'export', priority: 'p1', "
              "summary: 'Export is broken.'})")
    turns = [{"code": finish % label} for label in ("urgent", "critical", "crash", "p0")]
    (ex.root / "bad.turns.json").write_text(json.dumps({"turns": turns}))
    result = ex.sh("agentapps run --replay bad.turns.json triage < issue.md")
    assert result.returncode == 1
    assert "did not return a value matching `returns` after 3 reminders" in result.stderr


# -- chat ------------------------------------------------------------------------------------------

FIRST = ("agentapps run --replay chat-1.turns.json chat --session-id incident-42 --message "
         "\"Checkout pods are in CrashLoopBackOff since the 14:00 deploy. Where do I start?\"")
SECOND = ("agentapps run --replay chat-2.turns.json chat --session-id incident-42 --message "
          "\"The logs say: FATAL: sorry, too many clients already. What now?\"")
PEEK = ("agentapps run --dry-run chat --session-id incident-42 --message "
        "\"Should we raise max_connections?\"")


def test_chat_remembers_the_session_and_the_second_turn_sees_the_first(example):
    ex = example("chat")
    ex.main_skill({"requests": str(ex.root / "requests.jsonl")})  # log what the model receives
    first = ex.run_documented(FIRST)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("Start with why the containers exit:")
    stored = json.loads((ex.root / ".agent-apps/sessions/incident-42.json").read_text())
    (entry,) = stored["entries"]
    assert entry["args"]["message"].startswith("Checkout pods are in CrashLoopBackOff")
    assert "Session history" not in ex.requests()[0]["system"]  # a new session has none
    second = ex.run_documented(SECOND)
    assert second.returncode == 0, second.stderr
    assert "rollout undo deploy/checkout" in second.stdout
    system = ex.requests()[-1]["system"]
    history, new = system.split("## The new message")
    assert "CrashLoopBackOff since the 14:00 deploy" in history  # the first question ...
    assert "Paste the log lines here" in history  # ... and the first answer
    assert "too many clients already" in new and "too many clients" not in history


def test_chat_sessions_show_and_the_dry_run_prompt_hold_both_turns(example):
    ex = example("chat")
    assert ex.run_documented(FIRST).returncode == 0
    peek = ex.run_documented(PEEK)
    assert peek.returncode == 0, peek.stderr
    assert "### 1. chat at" in peek.stdout and "### 2." not in peek.stdout
    assert ex.run_documented(SECOND).returncode == 0
    shown = ex.run_documented("agentapps sessions show incident-42")
    entries = json.loads(shown.stdout)["entries"]
    assert [e["status"] for e in entries] == ["ok", "ok"]
    assert "FATAL: sorry, too many clients already" in entries[1]["args"]["message"]
    assert "### 2. chat at" in ex.run_documented(PEEK).stdout
    other = ex.sh("agentapps run --dry-run chat --session-id other --message hi")
    assert "Session history" not in other.stdout  # sessions are keyed by --session-id


# -- orchestrate -----------------------------------------------------------------------------------

REPORT = """\
# Ranked TODO and FIXME comments: 5 in 3 files

## High

- src/shop/checkout.py:11 FIXME: the discount is applied to shipping too, so free-shipping orders can go negative
  Customers can be charged a wrong, even negative, total when a discount covers shipping.
- src/shop/export.py:7 TODO: open the file with encoding="utf-8"; accented customer names crash the export
  The accounting export crashes for every shop with an accented customer name.

## Medium

- src/shop/checkout.py:17 TODO: retry once when the payment provider times out (it does ~20 times a day)
  About 20 failed payments a day could succeed with a single retry on timeout.
- src/shop/search.py:5 TODO: lower-case the address so that the search is case-insensitive
  Support cannot find orders when the address was typed with capitals.

## Low

- src/shop/search.py:9 TODO(marco): delete this old endpoint once the mobile app stops calling it (after 2024-07)
  Dead-code cleanup with a date attached; nothing breaks meanwhile.
"""


def test_orchestrate_ranks_the_todos_with_a_sub_agent(example):
    ex = example("orchestrate")
    plain = "agentapps run --replay todo-report.turns.json todo-report"
    for command in (plain, plain + " --glob 'src/shop/*.py'"):
        result = ex.run_documented(command)
        assert result.returncode == 0, result.stderr
        assert result.stdout == REPORT
        assert "agent: todo-report" in result.stderr
        assert "finished after 2 turn(s)" in result.stderr


def test_the_sub_agent_may_only_read_files(example):
    ex = example("orchestrate")
    ex.main_skill({"requests": str(ex.root / "requests.jsonl")})
    script = json.loads((ex.root / "todo-report.turns.json").read_text())
    script["turns"].insert(0, {"code": "return await ctx.manager.invoke('file-list', {})"})
    (ex.root / "probe.turns.json").write_text(json.dumps(script))
    result = ex.sh("agentapps run --replay probe.turns.json todo-report")
    assert result.returncode == 0 and result.stdout == REPORT, result.stderr
    refused = json.loads(ex.requests()[1]["input"][0]["text"])
    assert refused["ok"] is False and "may not call 'file-list'" in refused["error"]
    reads = json.loads(ex.requests()[2]["input"][0]["text"])
    assert reads["ok"] is True and "payments.charge" in reads["result"]["charge"]
    # the skill's own allowed-tools pins the sub-agent's: code asking for more is denied (exit 3)
    skill = ex.root / "todo-report.skill.py"
    wider = skill.read_text().replace('"allowedTools": "file-read",',
                                      '"allowedTools": "file-read file-list",')
    assert wider != skill.read_text()
    skill.write_text(wider)
    widened = ex.sh("agentapps run --replay todo-report.turns.json todo-report")
    assert widened.returncode == 3 and "agent(allowedTools=file-read)" in widened.stderr


# -- custom directive and middleware --------------------------------------------------------------

MONDAY = "1718614800"  # 2024-06-17 09:00 UTC


def test_standup_uses_today_and_is_timed(example):
    ex = example("custom-directive-and-middleware")
    result = ex.run_documented("agentapps run --replay standup.turns.json standup")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("**Yesterday** (Friday 14 June)\n")
    assert "**Blockers**" in result.stdout and "timing" not in result.stdout
    assert re.search(r"^timing: standup ok in \d+ ms$", result.stderr, re.MULTILINE)
    prompt = ex.run_documented(f"SOURCE_DATE_EPOCH={MONDAY} agentapps run --dry-run standup")
    assert prompt.returncode == 0, prompt.stderr
    assert ("Today is Monday 17 June 2024; the previous working day was Friday 14 June."
            in prompt.stdout)
    described = ex.run_documented("agentapps describe standup")
    (chain,) = [line for line in described.stdout.splitlines() if "chain:" in line]
    assert "validate-args -> timing ->" in chain
    assert chain.index("timing") < chain.index("agent-execute")


@pytest.mark.parametrize(("epoch", "expected"), [
    ("1718787600", "Wednesday 19 June 2024; the previous working day was Tuesday 18 June."),
    ("1718355600", "Friday 14 June 2024; the previous working day was Thursday 13 June."),
    ("1718442000", "Saturday 15 June 2024; the previous working day was Friday 14 June."),
])
def test_today_counts_working_days(example, epoch, expected):
    ex = example("custom-directive-and-middleware")
    prompt = ex.sh("agentapps run --dry-run standup", SOURCE_DATE_EPOCH=epoch)
    assert f"Today is {expected}" in prompt.stdout


def test_timing_reports_failures_and_stays_quiet_under_its_threshold(example):
    ex = example("custom-directive-and-middleware")
    (ex.root / "broken.turns.json").write_text('{"turns": [{"error": "the model is down"}]}')
    failed = ex.sh("agentapps run --replay broken.turns.json standup")
    assert failed.returncode != 0 and "the model is down" in failed.stderr
    assert re.search(r"^timing: standup failed in \d+ ms$", failed.stderr, re.MULTILINE)
    skill = ex.root / "standup.skill.md"
    skill.write_text(skill.read_text().replace("  timing: true\n", "  timing: { over: 3600 }\n"))
    quiet = ex.sh("agentapps run --replay standup.turns.json standup")
    assert quiet.returncode == 0 and "timing:" not in quiet.stderr
    bad = ex.root / "bad.skill.md"
    bad.write_text("---\nname: bad\n---\nOn :today[]{offset=soon}.\n")
    refused = ex.sh("agentapps run --dry-run bad")
    assert refused.returncode == 2 and "offset=...} must be a whole number" in refused.stderr


# -- custom provider -------------------------------------------------------------------------------

PROVIDER_RUN = ("OPENAI_BASE_URL=http://127.0.0.1:8765/v1 "
                "agentapps run commit-message < staged.diff")
MESSAGE = "Write the orders CSV export as UTF-8"


@pytest.fixture
def fake_api(example):
    """The example's fake server on a free loopback port, logging what it receives."""
    ex = example("custom-provider")
    assert "python3 fake-openai-server.py recorded-chat.json --port 8765 &" in README
    argv = [sys.executable, "fake-openai-server.py", "recorded-chat.json", "--port", "0",
            "--log", "requests.jsonl"]
    server = subprocess.Popen(argv, cwd=ex.root, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = re.search(r"127\.0\.0\.1:(\d+)/v1", server.stdout.readline())
        assert port, "the fake server did not say where it listens"
        yield ex, port.group(1)
    finally:
        server.terminate()
        server.wait(timeout=10)
        if server.stdout is not None:
            server.stdout.close()


def test_the_custom_provider_talks_to_an_openai_compatible_api(fake_api):
    ex, port = fake_api
    assert PROVIDER_RUN in README
    result = ex.sh(PROVIDER_RUN.replace("8765", port))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(MESSAGE + "\n\n") and "Hélène" in result.stdout
    assert "agent: commit-message · qwen2.5-coder:7b (openai-chat)" in result.stderr
    sent = (ex.root / "requests.jsonl").read_text().splitlines()
    first, second = [json.loads(line) for line in sent]
    assert first["model"] == "qwen2.5-coder:7b" and first["temperature"] == 0.2
    assert [t["function"]["name"] for t in first["tools"]] == ["invoke"]
    system, user = first["messages"]
    assert "Write a git commit message" in system["content"]
    assert "## file-read" in system["content"]  # the one skill its allowed-tools names
    assert "+++ b/src/shop/export.py" in user["content"]
    tool = json.loads(second["messages"][-1]["content"])
    files = ["src/shop/export.py", "tests/test_export.py"]
    assert tool == {"ok": True, "result": {"files": files, "added": 7, "removed": 2}}


def test_the_custom_provider_reports_usage_in_json(fake_api):
    ex, port = fake_api
    result = ex.sh(PROVIDER_RUN.replace("8765", port).replace(" run ", " run --json "))
    out = json.loads(result.stdout)
    assert out["ok"] is True and out["result"].startswith(MESSAGE)
    assert out["usage"] == {"inputTokens": 3431, "outputTokens": 192, "cacheReadInputTokens": 0,
                            "cacheWriteInputTokens": 0} and out["turns"] == 2


def test_the_custom_provider_says_how_to_fix_an_unreachable_server(example):
    ex = example("custom-provider")
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    result = ex.sh(PROVIDER_RUN.replace("8765", port))
    assert result.returncode == 1
    assert f"Cannot reach http://127.0.0.1:{port}/v1/chat/completions" in result.stderr
    assert "OPENAI_BASE_URL" in result.stderr


# -- the repository's own .agent-apps/ ------------------------------------------------------------

DOCS_COVERAGE = REPO / ".agent-apps" / "skills" / "docs-coverage.skill.py"


def _in_repository(*argv: str) -> Done:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTAPPS_", "AWS_"))}
    return cli.in_process(argv, cwd=REPO, env=env, input=None)  # type: ignore[no-any-return]


def test_the_repository_is_a_project_whose_list_has_no_fixture_or_example_skills():
    listed = _in_repository("list", "--all", "--json")
    assert listed.returncode == 0, listed.stderr
    mine = {s["name"]: s["source"] for s in json.loads(listed.stdout)["skills"]
            if s["source"] != "bundled"}
    assert mine["agentapps"] == "project" and mine["docs-coverage"] == "project-skills"
    examples = {p.name.split(".")[0] for p in EXAMPLES.glob("*/*.skill.*")}
    assert examples and not examples & set(mine)  # examples/ is ignored ...
    assert "my-provider" not in mine  # ... and so is tests/ (tests/agent/fixtures/)
    ignored = (REPO / ".agent-apps" / ".gitignore").read_text().split()
    assert {"sessions/", "state/", "runs/", "cache/", "trust.json", "trust.log"} <= set(ignored)


def test_docs_coverage_reports_on_this_repository():
    """From the repository root, as maintainers run it (not --strict: the docs are still growing)."""
    result = _in_repository("run", "docs-coverage")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert "README.md" in report["docs"] and report["checked"] >= 30
    assert report["documented"] + len(report["missing"]) == report["checked"]


@pytest.fixture
def docs_project(project):
    """A temporary project with the docs-coverage skill and the names of all bundled skills."""
    target = project.root / ".agent-apps" / "skills" / "docs-coverage.skill.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(DOCS_COVERAGE, target)
    listed = project.cli("list", "--all", "--json")
    skills = json.loads(listed.stdout)["skills"]
    names = sorted(s["name"] for s in skills if s["source"] == "bundled")
    assert "hello" in names and "agent" in names and "env" in names
    return project, names


def test_docs_coverage_reports_the_skills_the_docs_do_not_show_as_code(docs_project):
    project, names = docs_project
    shown = [n for n in names if n not in ("hello", "agent", "env", "file-read")]
    project.write("README.md", "# Docs\n\nSkills: " + ", ".join(f"`{n}`" for n in shown) + ".\n\n"
                  "Say hello to the agent: prose does not count.\n\n"
                  "```sh\ncat skills/builtins/file-read.skill.py\n```\n")
    project.write("docs/prompts.md", "Use :env[HOME] in a prompt: `:env[HOME]`.\n")
    result = project.cli("run", "docs-coverage")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["docs"] == ["README.md", "docs/prompts.md"]
    assert [m["name"] for m in report["missing"]] == ["agent", "hello"]
    assert report["missing"][1]["path"].endswith("hello.skill.py")
    strict = project.cli("run", "docs-coverage", "--strict")
    assert strict.returncode == 1
    assert f"2 of {len(names)} bundled skills are not documented" in strict.stderr
    assert "agent, hello" in strict.stderr


def test_docs_coverage_strict_passes_when_every_skill_is_shown(docs_project):
    project, names = docs_project
    project.write("guide.md", "\n".join(f"- `{n}`" for n in names) + "\n")
    result = project.cli("run", "docs-coverage", "--strict", "--docs", "guide.md")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["missing"] == []
