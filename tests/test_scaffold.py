"""`agentapps init`: creates what is missing, never overwrites, and says plainly what it skipped."""

from __future__ import annotations

GREET_ELSEWHERE = '''
frontmatter = {"name": "greet", "description": "The project's own greet."}

def run(ctx, args):
    return "the project's own greet"
'''

NOT_MAIN = """---
name: proj
description: A skill named after the project, but not its main skill.
---
Say hi.
"""


def rows(result):
    return [line.split(None, 1) for line in result.stdout.splitlines() if not line.startswith("Next:")]


def test_init_creates_a_main_skill_the_example_and_the_gitignore(project):
    result = project.cli("init")
    assert result.returncode == 0, result.stderr
    assert rows(result) == [
        ["created", str(project.root / "proj.skill.md")],
        ["created", str(project.root / ".agent-apps" / ".gitignore")],
        ["created", str(project.root / "skills" / "greet.skill.py")],
    ]


def test_init_skips_the_example_when_the_project_has_a_greet_skill(project):
    mine = project.write("tools/greet.skill.py", GREET_ELSEWHERE)
    result = project.cli("init")
    assert result.returncode == 0, result.stderr
    example = project.root / "skills" / "greet.skill.py"
    assert [str(example) + f" (the project already has a skill named 'greet': {mine})"] in [
        row[1:] for row in rows(result) if row[0] == "skipped"]
    assert not example.exists()
    ran = project.cli("run", "greet")
    assert (ran.returncode, ran.stdout) == (0, "the project's own greet\n"), ran.stderr


def test_init_skips_the_example_when_project_skills_has_a_greet_skill(project):
    project.write(".agent-apps/skills/greet.skill.py", GREET_ELSEWHERE)
    result = project.cli("init")
    assert result.returncode == 0, result.stderr
    assert not (project.root / "skills" / "greet.skill.py").exists()
    assert project.cli("run", "greet").stdout == "the project's own greet\n"


def test_init_reports_a_project_named_file_that_is_not_a_main_skill(project):
    path = project.write("proj.skill.md", NOT_MAIN)
    result = project.cli("init")
    assert result.returncode == 0, result.stderr
    assert rows(result)[0] == ["skipped", f"{path} (exists, not a main skill; no main skill created)"]
    assert "kept" not in result.stdout
    assert path.read_text() == NOT_MAIN
    assert sorted(p.name for p in project.root.glob("*.skill.md")) == ["proj.skill.md"]


def test_init_keeps_an_existing_main_skill_whatever_its_name(project):
    path = project.write("app.skill.md", "---\nname: app\nmetadata: {role: main}\n---\nRun the app.\n")
    result = project.cli("init")
    assert rows(result)[0] == ["kept", str(path)]
    assert not (project.root / "proj.skill.md").exists()


def test_init_creates_a_missing_folder(project):
    result = project.cli("init", "sub/dir")
    assert result.returncode == 0, result.stderr
    made = project.root / "sub" / "dir"
    assert (made / "dir.skill.md").is_file() and (made / "skills" / "greet.skill.py").is_file()
    assert project.cli("run", "greet", "--name", "Ada", cwd=made).stdout == "Hello, Ada!\n"


def test_init_refuses_a_path_that_is_a_file(project):
    project.write("notes.txt", "x")
    result = project.cli("init", "notes.txt")
    assert result.returncode == 2
    assert result.stderr == f"error: Cannot initialise {project.root / 'notes.txt'}: it is a file, not a folder.\n"


def test_init_gitignore_keeps_runtime_data_and_approvals_out_of_commits(project):
    assert project.cli("init").returncode == 0
    ignored = (project.root / ".agent-apps" / ".gitignore").read_text().split()
    assert {"sessions/", "state/", "runs/", "checkpoints/", "cache/", "trust.json", "trust.log"} <= set(ignored)
