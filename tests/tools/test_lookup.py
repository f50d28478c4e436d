"""Resolution: refs, the search path, shadowing, duplicates, close names, and refreshed indexes."""

from __future__ import annotations

import json
import os
import time

import pytest

from agentapps.errors import SkillLoadError, SkillNotFoundError
from agentapps.tools.loader import RUN_STARTED
from agentapps.tools.names import ref_kind

CODE = 'frontmatter = {{"name": "{name}", "description": "{desc}"}}\n\ndef run(ctx, args):\n    return "{desc}"\n'


def code_skill(project, relative, name, desc):
    return project.write(relative, CODE.format(name=name, desc=desc))


@pytest.mark.parametrize(
    ("ref", "kind"),
    [
        ("summarize", "name"), ("file-read", "name"), ("a1", "name"), ("Summarize", "path"),
        ("my_skill", "path"), ("./x.skill.md", "path"), ("skills/x", "path"), ("x.skill.py", "path"),
        ("a" * 65, "path"), ("inline://x", "uri"), ("callback://cb-1", "uri"), ("mcp://s/t", "uri"),
        ("C:\\x", "path"),
    ],
)
def test_ref_kinds(ref, kind):
    assert ref_kind(ref) == kind


def test_project_skill_shadows_user_and_bundled(project):
    code_skill(project, "skills/hello.skill.py", "hello", "project")
    code_skill(project, "../home/.agent-apps/skills/hello.skill.py", "hello", "user")
    assert project.invoke("hello") == "project"
    rows = project.cli("which", "hello").stdout.splitlines()
    assert rows[0].startswith(str(project.root / "skills" / "hello.skill.py"))
    assert "(user)" in rows[1] and rows[1].startswith("shadowed: ")
    assert "(bundled)" in rows[2]


def test_user_skill_shadows_bundled(project):
    code_skill(project, "../home/.agent-apps/skills/hello.skill.py", "hello", "user")
    assert project.invoke("hello") == "user"


def test_agentapps_path_comes_first(project, tmp_path, monkeypatch):
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "hello.skill.py").write_text(CODE.format(name="hello", desc="env"))
    code_skill(project, "hello.skill.py", "hello", "project")
    monkeypatch.setenv("AGENTAPPS_PATH", str(extra))
    assert project.invoke("hello") == "env"


def test_dot_agent_apps_skills_come_before_the_rest_of_the_project(project):
    code_skill(project, "skills/x.skill.py", "pick", "tree")
    code_skill(project, ".agent-apps/skills/x.skill.py", "pick", "dot")
    assert project.invoke("pick") == "dot"


@pytest.mark.parametrize("folder", [".git", "node_modules", ".venv", "__pycache__", "dist", "build", ".hidden"])
def test_skipped_folders_are_not_scanned(project, folder):
    code_skill(project, f"{folder}/x.skill.py", "skipme", "x")
    with pytest.raises(SkillNotFoundError):
        project.invoke("skipme")


def test_two_skills_with_one_name_in_one_root_is_an_error_naming_both(project):
    a = code_skill(project, "a/dup.skill.py", "dup", "a")
    b = code_skill(project, "b/dup.skill.py", "dup", "b")
    with pytest.raises(SkillLoadError) as info:
        project.invoke("dup")
    assert str(a) in str(info.value) and str(b) in str(info.value)


def test_unknown_name_suggests_close_names(project):
    code_skill(project, "summarize.skill.py", "summarize", "x")
    with pytest.raises(SkillNotFoundError, match="Did you mean 'summarize'"):
        project.invoke("summarise")


@pytest.mark.parametrize(
    ("relative", "text"),
    [
        pytest.param("skills/mismatch.skill.py", CODE.format(name="other-name", desc="x"), id="code-file"),
        pytest.param("skills/mismatch/SKILL.md", "---\nname: other-name\ndescription: x\n---\nhi\n", id="folder"),
    ],
)
def test_a_file_named_after_the_skill_but_declaring_another_name_is_pointed_out(project, relative, text):
    path = project.write(relative, text)
    with pytest.raises(SkillNotFoundError) as info:
        project.invoke("mismatch")
    assert str(info.value) == (f"Unknown skill 'mismatch'. {path} declares the name 'other-name' in its "
                               "frontmatter: skills are found by that name, not by their file name.")
    for command in (("run", "mismatch"), ("which", "mismatch")):
        result = project.cli(*command)
        assert result.returncode == 2
        assert result.stderr.strip().splitlines() == [f"error: {info.value}"]
    assert "Run 'agentapps list'" in str(pytest.raises(SkillNotFoundError, project.invoke, "nothing-like-it").value)


def test_path_refs_bypass_the_search_path(project):
    code_skill(project, "tools/hello.skill.py", "hello", "by-path")
    assert project.invoke("./tools/hello.skill.py") == "by-path"
    assert project.invoke("hello") == "by-path"  # also found by name
    assert project.invoke(str(project.root / "tools" / "hello.skill.py")) == "by-path"


def test_broken_skill_does_not_stop_others_and_errors_when_invoked(project):
    project.write("broken.skill.md", "---\nname: broken\ndescription: [\n---\n")
    code_skill(project, "fine.skill.py", "fine", "ok")
    assert project.invoke("fine") == "ok"
    with pytest.raises(SkillLoadError, match="broken.skill.md:3"):
        project.invoke("broken")
    listed = project.cli("list")
    assert listed.returncode == 0
    assert "fine" in listed.stdout
    assert "warning:" in listed.stderr and "broken.skill.md:3" in listed.stderr


def test_index_refreshes_when_files_are_added_changed_or_removed(project):
    root = project.boot()
    lookup = root.globals.lookup
    RUN_STARTED.set(None)  # about the index only: runs refuse files written after they start
    with pytest.raises(SkillNotFoundError):
        lookup.find("late")
    path = code_skill(project, "late.skill.py", "late", "v1")
    assert lookup.find("late").description == "v1"  # a miss re-reads before giving up
    time.sleep(0.01)
    path.write_text(CODE.format(name="late", desc="version-2"))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    assert lookup.find("late").description == "version-2"
    path.unlink()
    with pytest.raises(SkillNotFoundError):
        lookup.find("late")


def test_listing_never_runs_project_python(project):
    marker = project.root / "ran"
    project.write("side.skill.py", f'open({str(marker)!r}, "w")\nfrontmatter = {{"name": "side"}}\n\ndef run(ctx, args):\n    pass\n')
    assert project.cli("list").returncode == 0
    assert project.cli("describe", "side").returncode == 0
    assert project.cli("which", "side").returncode == 0
    assert not marker.exists()


def test_folder_without_a_project_marker_is_scanned_shallowly(tmp_path, monkeypatch):
    from agentapps.boot import bootstrap

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "w" / "a" / "b").mkdir(parents=True)
    (tmp_path / "w" / "top.skill.py").write_text(CODE.format(name="top", desc="t"))
    (tmp_path / "w" / "a" / "one.skill.py").write_text(CODE.format(name="one", desc="o"))
    (tmp_path / "w" / "a" / "b" / "deep.skill.py").write_text(CODE.format(name="deep", desc="d"))
    lookup = bootstrap(tmp_path / "w").globals.lookup
    assert lookup.find("top") and lookup.find("one")
    with pytest.raises(SkillNotFoundError):
        lookup.find("deep")


def test_main_skill_marks_the_project_root_from_a_subfolder(project):
    project.write("app.skill.md", "---\nname: app\nmetadata:\n  role: main\n---\nMain.\n")
    code_skill(project, "deep/er/thing.skill.py", "thing", "found")
    sub = project.root / "deep" / "er"
    result = project.cli("run", "thing", cwd=sub)
    assert result.stdout == "found\n"


def test_a_nested_project_is_not_part_of_the_outer_one(project):
    code_skill(project, "skills/outer.skill.py", "outer", "outer")
    code_skill(project, "myproj/skills/inner.skill.py", "inner", "inner")
    assert project.cli("which", "inner").returncode == 0  # a plain subfolder is scanned
    (project.root / "myproj" / ".agent-apps").mkdir()  # now it is a project of its own
    listed = project.cli("list", "--json")
    names = {s["name"] for s in json.loads(listed.stdout)["skills"]}
    assert "outer" in names and "inner" not in names
    assert project.cli("which", "inner").returncode != 0
    inside = project.cli("run", "inner", cwd=project.root / "myproj")  # run there, it is its own project
    assert (inside.returncode, inside.stdout) == (0, "inner\n")


def test_a_folder_marked_as_the_bundled_skills_is_never_scanned_as_project_skills(project):
    # a source checkout with a non-editable install: its skills/ is the bundled set, not the project's
    code_skill(project, "skills/hello.skill.py", "hello", "checkout copy")
    project.write("skills/.agentapps-bundled", "marker\n")
    rows = project.cli("which", "hello").stdout.splitlines()
    assert "(bundled)" in rows[0] and str(project.root) not in rows[0]
    assert project.cli("run", "hello", "--name", "Ada").stdout == "Hello, Ada!\n"
