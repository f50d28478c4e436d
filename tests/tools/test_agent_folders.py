"""The skills folders other agents keep are on the search path (agentapps.tools.skilldirs):
`.agents/skills`, `.claude/skills`, `.github/skills` in the project and in each folder above it up
to the repository root, then `~/.agents/skills` and `~/.claude/skills`; after the project's own
skills and before the bundled ones, each labelled with where it came from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentapps.errors import SkillNotFoundError
from agentapps.tools.catalog import which

FOLDERS = [(".agents/skills", "agents"), (".claude/skills", "claude"), (".github/skills", "github")]


def agent_skill(base: Path, name: str = "pdf", description: str = "Fill PDF forms.") -> Path:
    """An Agent Skill as other agents keep it: NAME/SKILL.md with a name and a description."""
    path = base / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\nFill in the form the user names.\n")
    return path


def found(project: Any, name: str = "pdf", cwd: Path | None = None) -> list[tuple[str, str]]:
    """(source, path) of every definition of `name`, the winner first, as `which` lists them."""
    from agentapps.boot import bootstrap

    lookup = bootstrap(cwd or project.root).globals.lookup
    return [(row["source"], row["path"]) for row in which(lookup, name)]


@pytest.mark.parametrize(("folder", "label"), FOLDERS)
def test_a_project_folder_skill_is_found_under_its_label(project, folder, label):
    path = agent_skill(project.root / folder)
    assert found(project) == [(label, str(path))]


@pytest.mark.parametrize(("folder", "label"), [(".agents/skills", "user-agents"), (".claude/skills", "user-claude")])
def test_a_user_folder_skill_is_found_under_its_label(project, folder, label):
    path = agent_skill(project.home / folder)
    assert found(project) == [(label, str(path))]


def test_the_walk_goes_up_from_the_project_to_the_repository_root_and_no_further(project, tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    sub = repo / "packages" / "app"
    (sub / ".agent-apps").mkdir(parents=True)  # the project: a folder inside the repository
    near = agent_skill(sub / ".claude/skills")
    middle = agent_skill(repo / "packages" / ".agents/skills")
    top = agent_skill(repo / ".github/skills")
    agent_skill(tmp_path / ".claude/skills")  # above the repository root: not the project's
    assert found(project, cwd=sub) == [("claude", str(near)), ("agents", str(middle)), ("github", str(top))]


def test_a_git_file_marks_the_repository_root_too(project, tmp_path):
    repo = tmp_path / "worktree"
    repo.mkdir()
    (repo / ".git").write_text("gitdir: /elsewhere/.git/worktrees/x\n")  # a worktree or submodule
    sub = repo / "app"
    (sub / ".agent-apps").mkdir(parents=True)
    top = agent_skill(repo / ".claude/skills")
    assert found(project, cwd=sub) == [("claude", str(top))]


def test_without_git_only_the_project_folder_is_searched(project, tmp_path):
    agent_skill(tmp_path / ".claude/skills")  # the project's parent, with no .git anywhere
    assert found(project) == []
    own = agent_skill(project.root / ".claude/skills")
    assert found(project) == [("claude", str(own))]


def test_the_home_folder_is_the_users_even_inside_a_repository(project):
    (project.home / ".git").mkdir()  # a dotfiles repository at home
    inner = project.home / "code" / "app"
    (inner / ".agent-apps").mkdir(parents=True)
    path = agent_skill(project.home / ".claude/skills")
    assert found(project, cwd=inner) == [("user-claude", str(path))]


def test_precedence_project_roots_then_folders_walking_up_then_the_users_then_bundled(project, tmp_path):
    (project.root / ".git").mkdir()
    name, rows = "hello", []  # `hello` is also a bundled skill
    rows.append(("project-skills", agent_skill(project.root / ".agent-apps" / "skills", name)))
    rows.append(("project", agent_skill(project.root / "skills", name)))
    for folder, label in FOLDERS:
        rows.append((label, agent_skill(project.root / folder, name)))
    rows.append(("user", agent_skill(project.home / ".agent-apps" / "skills", name)))
    rows.append(("user-agents", agent_skill(project.home / ".agents/skills", name)))
    rows.append(("user-claude", agent_skill(project.home / ".claude/skills", name)))
    listed = found(project, name)
    assert listed[:-1] == [(label, str(path)) for label, path in rows]
    assert listed[-1][0] == "bundled"


def test_which_shows_the_label_of_the_winner_and_of_what_it_shadows(project):
    mine = agent_skill(project.root / ".claude/skills")
    users = agent_skill(project.home / ".claude/skills")
    result = project.cli("which", "pdf")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{mine}  (claude)\nshadowed: {users}  (user-claude)\n"


def test_list_shows_them_with_their_source(project):
    agent_skill(project.root / ".github/skills", "review", "Review a pull request.")
    agent_skill(project.home / ".agents/skills", "notes", "Keep notes.")
    result = project.cli("list", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row["source"] for row in json.loads(result.stdout)["skills"]}
    assert rows["review"] == "github" and rows["notes"] == "user-agents"


def test_check_covers_the_project_folders_up_to_the_repository_root(project, tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    app = repo / "app"
    (app / ".agent-apps").mkdir(parents=True)
    bad = repo / ".github/skills/bad/SKILL.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("---\nname: Bad Name\n---\nx\n")
    agent_skill(app / ".claude/skills")
    result = project.cli("check", cwd=app)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{bad}:2: error: Invalid skill name 'Bad Name'" in result.stdout
    assert "checked 2 skills: 1 error" in result.stdout


def test_a_project_folder_skill_shadowing_a_bundled_one_is_a_check_warning(project):
    agent_skill(project.root / ".claude/skills", "hello")
    result = project.cli("check")
    assert "Skill 'hello' shadows bundled skill 'hello'" in result.stdout, result.stdout


def test_nothing_is_found_while_the_folders_are_absent_and_a_folder_that_appears_is_found(project):
    from agentapps.boot import bootstrap

    lookup = bootstrap(project.root).globals.lookup
    kinds = [root.kind for root in lookup.roots]
    assert kinds[kinds.index("project") + 1:] == ["agents", "claude", "github", "package", "user", "user-agents",
                                                  "user-claude", "bundled"]
    with pytest.raises(SkillNotFoundError, match="Unknown skill 'pdf'"):
        lookup.find("pdf")
    from agentapps.tools.loader import RUN_STARTED

    RUN_STARTED.set(None)  # as a server between requests: the next run may load what was written
    path = agent_skill(project.root / ".claude/skills")  # created while the process runs
    assert lookup.find("pdf").path == path


def test_only_the_skills_folders_are_read_and_one_level_deep(project):
    agent_skill(project.root / ".claude" / "commands")  # another folder of the same tool
    agent_skill(project.root / ".claude/skills/pdf/examples", "nested")  # a skill's own files
    agent_skill(project.root / ".claude/skills")
    assert found(project, "nested") == [] and found(project, "pdf")[0][0] == "claude"


def test_a_project_folder_skill_is_configured_by_the_main_skill(project):
    from agentapps.cascade.resolve import cascade

    project.write("main.skill.md", "---\nname: main\nmetadata: {role: main, model: {id: from-main}}\n---\n")
    agent_skill(project.root / ".claude/skills")
    agent_skill(project.home / ".claude/skills", "theirs")
    g = project.boot().globals
    meta = {name: cascade(g.lookup.find(name), g.lookup, g.config.main_tool, g.config.project).meta
            for name in ("pdf", "theirs")}
    assert meta["pdf"]["model"]["id"] == "from-main"
    assert (meta["theirs"].get("model") or {}).get("id") != "from-main"  # the user's: not the project's
