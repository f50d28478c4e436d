"""agentapps.run / agentapps.arun: a run from Python gets what `agentapps run --json` gets."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from typing import Any

import pytest

import agentapps

SECRET = "s3cr3t-Zq9xW7vK"

SKILLS = {
    "stats.skill.py": '''
        frontmatter = {"name": "stats", "metadata": {"params": {"type": "object",
                       "properties": {"words": {"type": "array", "items": {"type": "string"}}},
                       "required": ["words"], "additionalProperties": False}}}

        def run(ctx, args):
            return {"count": len(args["words"]), "longest": max(args["words"], key=len), "ratio": 0.5}
        ''',
    "leaky.skill.py": '''
        import os

        frontmatter = {"name": "leaky", "metadata": {"env": ["EMBED_TOKEN"]}}

        def run(ctx, args):
            return {"said": "the token is " + os.environ["EMBED_TOKEN"], "nested": [os.environ["EMBED_TOKEN"]]}
        ''',
    "broken.skill.py": '''
        import os

        frontmatter = {"name": "broken", "metadata": {"env": ["EMBED_TOKEN"]}}

        def run(ctx, args):
            raise ValueError("cannot use " + os.environ["EMBED_TOKEN"])
        ''',
    "refusing.skill.py": '''
        from agentapps import ConfigError

        frontmatter = {"name": "refusing"}

        def run(ctx, args):
            raise ConfigError("Set `colour` in the main skill's metadata.")
        ''',
    "setbad.skill.py": '''
        frontmatter = {"name": "setbad"}

        def run(ctx, args):
            return {1, 2}
        ''',
    "greet.skill.py": '''
        frontmatter = {"name": "greet"}

        def run(ctx, args):
            return ctx.meta.get("greeting")
        ''',
    "slow.skill.py": '''
        import asyncio

        frontmatter = {"name": "slow"}

        async def run(ctx, args):
            await asyncio.sleep(30)
        ''',
    "main.skill.md": "---\nname: main\nmetadata:\n  role: main\n  greeting: hello\n---\n",
}


@pytest.fixture
def embed(project, monkeypatch):
    for name, text in SKILLS.items():
        project.write(name, text)
    monkeypatch.setenv("EMBED_TOKEN", SECRET)
    return project


def cli_json(project, *args: str) -> tuple[int, dict[str, Any]]:
    done = project.cli("run", "--json", *args, EMBED_TOKEN=SECRET)
    return done.returncode, json.loads(done.stdout)


def logged(project) -> list[tuple[str, int, str | None]]:
    with sqlite3.connect(project.root / ".agent-apps" / "runs" / "runs.db") as db:
        rows = db.execute("SELECT skill, exit_code, error FROM runs ORDER BY id").fetchall()
    db.close()
    return rows


def test_run_returns_what_run_json_prints(embed):
    code, printed = cli_json(embed, "stats", "--arg-json", '{"words": ["a", "abc", "ab"]}')
    assert code == 0
    assert agentapps.run("stats", {"words": ["a", "abc", "ab"]}) == printed["result"]
    assert printed["result"] == {"count": 3, "longest": "abc", "ratio": 0.5}


def test_arun_in_a_running_loop_returns_the_same(embed):
    assert asyncio.run(agentapps.arun("stats", {"words": ["xy"]})) == {"count": 1, "longest": "xy", "ratio": 0.5}


def test_run_finds_the_project_from_cwd(embed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the project: `cwd` says where it is
    assert agentapps.run("greet", cwd=embed.root / ".agent-apps") == "hello"


def test_a_declared_secret_is_redacted_in_the_result(embed):
    result = agentapps.run("leaky")
    assert SECRET not in json.dumps(result)
    assert result == cli_json(embed, "leaky")[1]["result"]


# ref, args, CLI args, the class run() raises (the CLI's record type, or SkillError for a bug)
FAILURES = [
    ("stast", {}, ["stast"], "SkillNotFoundError"),
    ("stats", {"words": "abc"}, ["stats", "--arg-json", '{"words": "abc"}'], "ArgsError"),
    ("stats", {"word": ["a"]}, ["stats", "--arg-json", '{"word": ["a"]}'], "ArgsError"),
    ("refusing", {}, ["refusing"], "ConfigError"),
    ("broken", {}, ["broken"], "SkillError"),
    ("setbad", {}, ["setbad"], "SkillError"),
]


@pytest.mark.parametrize(("ref", "args", "argv", "raised"), FAILURES)
def test_a_failure_raises_what_the_cli_reports(embed, ref, args, argv, raised):
    code, printed = cli_json(embed, *argv)
    error = printed["error"]
    with pytest.raises(agentapps.AgentAppsError) as caught:
        agentapps.run(ref, args)
    assert type(caught.value).__name__ == raised
    assert error["type"] in (raised, "InternalError")
    assert (str(caught.value), caught.value.exit_code) == (error["message"], code)
    assert caught.value.exit_code == error["exit_code"]
    assert SECRET not in str(caught.value)


def test_a_skill_bug_keeps_its_exception_as_the_cause(embed):
    with pytest.raises(agentapps.SkillError) as caught:
        agentapps.run("broken")
    assert str(caught.value) == (f"{embed.root / 'broken.skill.py'}:6: Skill 'broken' failed: ValueError: "
                                 "cannot use [redacted:EMBED_TOKEN]")
    assert isinstance(caught.value.__cause__, ValueError)


def test_every_run_lands_in_the_run_log_as_the_cli_logs_it(embed):
    agentapps.run("stats", {"words": ["a"]})
    with pytest.raises(agentapps.SkillNotFoundError):
        agentapps.run("stast")
    with pytest.raises(agentapps.SkillError):
        agentapps.run("broken")
    embed.cli("run", "broken", EMBED_TOKEN=SECRET)
    rows = logged(embed)
    assert rows[:2] == [("stats", 0, None),
                        ("stast", 2, "Unknown skill 'stast'. Did you mean 'stats'?")]
    assert rows[2] == rows[3]
    assert rows[2][:2] == ("broken", 1) and rows[2][2].endswith("ValueError: cannot use [redacted:EMBED_TOKEN]")


def test_a_dry_run_is_not_logged(embed):
    agentapps.run("stats", {"words": ["a"]}, dry_run=True)
    assert not (embed.root / ".agent-apps" / "runs" / "runs.db").exists()


def test_local_overrides_the_main_skill_as_the_cli_option_does(embed):
    assert agentapps.run("greet", local={"greeting": "hey"}) == "hey"
    assert cli_json(embed, "--local", "greeting=hey", "greet")[1]["result"] == "hey"
    assert agentapps.run("greet", local={"greeting": {"a": [1]}}) == {"a": [1]}


def test_timeout_stops_the_run_with_a_limit_error(embed):
    with pytest.raises(agentapps.LimitError) as caught:
        agentapps.run("slow", timeout=0.2)
    assert caught.value.exit_code == 4
    assert str(caught.value) == "The run took longer than its timeout of 0.2 s and was stopped."
    assert logged(embed)[-1][:2] == ("slow", 4)


def test_a_cancelled_arun_is_logged_as_interrupted(embed):
    async def main() -> None:
        task = asyncio.ensure_future(agentapps.arun("slow"))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert logged(embed)[-1][:2] == ("slow", 130)


def test_run_works_from_a_thread_without_a_loop(embed):
    found: list[Any] = []
    worker = threading.Thread(target=lambda: found.append(agentapps.run("stats", {"words": ["abc"]})))
    worker.start()
    worker.join(30)
    assert found == [{"count": 1, "longest": "abc", "ratio": 0.5}]


def test_run_inside_a_running_loop_points_to_arun(embed):
    async def main() -> None:
        agentapps.run("stats", {"words": ["a"]})

    with pytest.raises(agentapps.UsageError, match=r"await agentapps\.arun"):
        asyncio.run(main())


def test_args_must_be_a_mapping(embed):
    with pytest.raises(agentapps.ArgsError, match="must be a mapping"):
        agentapps.run("stats", ["a"])  # type: ignore[arg-type]
