"""`agentapps compile` and the `skill-compile` skill: a markdown skill becomes a code skill in
`.agent-apps/compiled/` that shadows it, written by an agent (played here by agent-scripted) and
kept only when the source's test cases pass against it; up-to-date files are skipped, changed
sources recompile, failures leave nothing behind, hand-written files are never replaced, and the
write is code the trust gate guards."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COMPILED = Path(".agent-apps/compiled/summarize.skill.py")
TITLE = "Checkout outage on 2024-05-14 (51 minutes, HTTP 502s)"

# wrong: fails the case that expects the recorded summary (the other two cases pass)
WRONG = 'async def run(ctx, args):\n    return {"title": "A report", "bullets": ["It happened."]}\n'
# right: a thin wrapper handing the prompt to the agent (the cases replay the source's recording)
RIGHT = '''PROMPT = "Read the file with the file-read skill; return a short title and bullet points."
RETURNS = {"type": "object", "properties": {"title": {"type": "string"},
           "bullets": {"type": "array", "items": {"type": "string"}}}, "required": ["title", "bullets"]}


async def run(ctx, args):
    return await ctx.manager.invoke("agent", {"prompt": PROMPT, "args": args, "returns": RETURNS,
                                              "allowedTools": "file-read"})
'''
BROKEN = "async def run(ctx, args)\n    return 1\n"
GREEDY = 'frontmatter = {"name": "summarize", "allowed-tools": "*"}\n\n\ndef run(ctx, args):\n    return {}\n'


def summarize(project) -> Path:
    """The bundled example skill, with its test cases and recording, in the project."""
    for name in ("summarize.skill.md", "summarize.tests.yaml", "summarize.turns.json", "incident-report.md"):
        shutil.copy(REPO / "examples" / "summarize" / name, project.root / name)
    return project.root / "summarize.skill.md"


def turns(project, *codes: str, name: str = "compile.turns.json") -> str:
    """The compiling agent's model turns: one attempt's answer per code."""
    script = [{"text": f"Attempt {i}.", "code": f"ctx.manager.finish({{code: {json.dumps(code)}}})"}
              for i, code in enumerate(codes, 1)]
    project.write(name, json.dumps({"turns": script}))
    return name


def compile_json(project, *argv: str):
    done = project.cli("compile", "--json", *argv)
    assert done.returncode in (0, 1), done.stderr
    return done, json.loads(done.stdout)


def leftovers(project) -> list[str]:
    folder = project.root / COMPILED.parent
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def compile_requests(project) -> list[dict]:
    """What the compiling agent's model was sent, one entry per turn (the main skill's
    `model.requests` log reaches it through the source skill's model settings)."""
    lines = (project.root / "requests.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["skill"] == "skill-compile"]


def test_a_wrong_first_attempt_is_fed_back_and_the_second_compiles_and_shadows_the_source(project):
    source = summarize(project)
    project.write("main.skill.md", "---\nname: main\nmetadata:\n  role: main\n"
                                   "  model: {requests: requests.jsonl}\n---\nThe project.\n")
    done, report = compile_json(project, "summarize", "--replay", turns(project, WRONG, RIGHT))
    assert done.returncode == 0
    [result] = report["results"]
    assert result["status"] == "compiled" and result["attempts"] == 2
    assert result["file"] == str(COMPILED) and result["source"] == "summarize.skill.md"
    assert "summarizes the incident report" in result["reasons"][0]  # the case the first attempt failed
    assert report["text"].startswith("compiled summarize: summarize.skill.md -> .agent-apps/compiled/")
    text = (project.root / COMPILED).read_text()
    assert text.splitlines()[0] == "# @generated source-hash: " + hashlib.sha256(source.read_bytes()).hexdigest()
    assert "return await ctx.manager.invoke(\"agent\"" in text
    assert leftovers(project) == ["summarize.skill.py"]  # the attempts' temporary files are gone
    first, second = compile_requests(project)
    assert "Read the file :arg[path] with the `file-read` skill" in first["system"]  # the source prompt
    assert "name: refuses a misspelt flag" in first["system"]  # and its test cases
    assert first["input"] == ["Write the code skill for this markdown skill (attempt 1 of 3)."]
    [feedback] = second["input"]
    assert feedback.startswith("Attempt 2 of 3. Your previous code failed:\n- summarizes the incident report: "
                               "the result differs from the expected one")
    assert WRONG.strip() in feedback  # the code that failed

    which = project.cli("which", "summarize")
    first, second = which.stdout.splitlines()
    assert first == f"{project.root / COMPILED}  (compiled, compiled from summarize.skill.md)"
    assert second == f"shadowed: {source}  (project)"
    described = json.loads(project.cli("describe", "--json", "summarize").stdout)
    assert described["kind"] == "code" and described["metadata"]["compiled-from"] == "summarize.skill.md"

    ran = project.cli("run", "--replay", "summarize.turns.json", "summarize", "--path", "incident-report.md")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["title"] == TITLE
    tested = project.cli("test", "summarize")  # by name: the compiled skill, against its source's cases
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "3 cases of 1 skill: 3 passed, 0 failed" in tested.stdout


def test_an_up_to_date_compile_is_skipped_and_a_changed_source_compiles_again(project):
    source = summarize(project)
    assert project.cli("compile", "summarize", "--replay", turns(project, RIGHT)).returncode == 0
    compiled = project.root / COMPILED
    before = compiled.stat().st_mtime_ns, compiled.read_bytes()

    done, report = compile_json(project, "summarize", "--replay", turns(project, name="none.turns.json"))
    assert done.returncode == 0  # no model turn was needed: an empty script would have failed the agent
    assert report["results"][0]["status"] == "skipped" and report["results"][0]["attempts"] == 0
    assert report["text"] == ("skipped summarize: .agent-apps/compiled/summarize.skill.py is up to date "
                              "with summarize.skill.md")
    assert (compiled.stat().st_mtime_ns, compiled.read_bytes()) == before

    source.write_text(source.read_text() + "- Keep each bullet to one line.\n")
    # the spec's form: the skill itself, `--ref` repeated into an array
    ran = project.cli("run", "--replay", turns(project, RIGHT, name="again.turns.json"), "skill-compile",
                      "--ref", "summarize")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["results"][0]["status"] == "compiled"
    assert compiled.read_text().splitlines()[0].endswith(hashlib.sha256(source.read_bytes()).hexdigest())


def test_three_failed_attempts_leave_nothing_behind_and_exit_1(project):
    source = summarize(project)
    done, report = compile_json(project, "summarize", "--replay", turns(project, WRONG, BROKEN, GREEDY))
    assert done.returncode == 1
    [result] = report["results"]
    assert result["status"] == "failed" and result["attempts"] == 3
    first, second, third = result["reasons"]
    assert first.startswith("attempt 1: summarizes the incident report: the result differs")
    assert second.startswith("attempt 2: Python syntax error at line 1")
    assert third.startswith("attempt 3: do not define `frontmatter`")
    assert report["text"].startswith("failed summarize: no candidate passed the tests of summarize.skill.md "
                                     "in 3 attempts")
    assert leftovers(project) == []
    assert project.cli("which", "summarize").stdout == f"{source}  (project)\n"


def test_a_hand_written_file_in_the_way_is_refused_and_kept(project):
    summarize(project)
    mine = project.write(str(COMPILED), 'frontmatter = {"name": "summarize"}\n\ndef run(ctx, args):\n    return 1\n')
    done = project.cli("compile", "summarize", "--replay", turns(project, RIGHT))
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line == (f"error: {project.root / COMPILED}: This file has no '@generated source-hash:' marker, so it "
                    "was written by hand: a compile of 'summarize' never overwrites it (move it away to compile).")
    assert mine.read_text().startswith('frontmatter = {"name": "summarize"}')


def test_bad_input_exits_2_before_any_model_call(project):
    summarize(project)
    project.write("plain.skill.md", "---\nname: plain\ndescription: No tests.\n---\nSay hi.\n")
    project.write("code.skill.py", 'frontmatter = {"name": "code"}\n\ndef run(ctx, args):\n    return 1\n')
    empty = turns(project)
    for name, expected in (("plain", "has no tests"), ("code", "not a markdown skill"),
                           ("summarise", "Unknown skill 'summarise'")):
        done = project.cli("compile", "summarize", name, "--replay", empty)
        assert done.returncode == 2, (name, done.stderr)
        assert expected in done.stderr
    assert leftovers(project) == []  # summarize, named first, was not compiled either


def test_a_compile_started_by_another_skill_must_be_approved_to_write_code(project):
    summarize(project)
    project.write("rebuild.skill.py", '''
frontmatter = {"name": "rebuild", "allowed-tools": "skill-compile", "metadata": {"params": {"type": "object"}}}


async def run(ctx, args):
    return await ctx.manager.invoke("skill-compile", {"ref": ["summarize"]})
''')
    # denied before the first attempt: no model is asked (the script it would play is empty)
    done = project.cli("run", "--replay", turns(project, name="none.turns.json"), "rebuild", CI="1")
    assert done.returncode == 3, done.stderr
    assert "writing skill code: .agent-apps/compiled/summarize.skill.py" in done.stderr
    assert leftovers(project) == []
    approved = project.cli("run", "--replay", turns(project, RIGHT), "--approve", "skill-compile", "rebuild", CI="1")
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout)["results"][0]["status"] == "compiled"


def test_check_warns_while_a_compiled_skill_shadows_a_changed_or_missing_source(project):
    source = summarize(project)
    assert project.cli("compile", "summarize", "--replay", turns(project, RIGHT)).returncode == 0
    assert "stale-compiled" not in project.cli("check").stdout
    source.write_text(source.read_text() + "- Keep each bullet to one line.\n")
    changed = project.cli("check").stdout
    assert (f"{COMPILED}:1: warning: Compiled skill 'summarize' still shadows its source, but summarize.skill.md "
            "changed since it was compiled; compile again with 'agentapps compile summarize'") in changed
    source.unlink()
    gone = project.cli("check").stdout
    assert "but its source summarize.skill.md no longer exists" in gone
