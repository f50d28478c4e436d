"""Installed packages are code: an agent cannot write them, nor the lock file, nor install them
without the trust gate's yes."""

from __future__ import annotations

import json

from tests.support.gitrepos import skills_repo


def caller(allowed: str, call: str, args: dict) -> str:
    return (f'frontmatter = {{"name": "caller", "allowed-tools": "{allowed}"}}\n\n\n'
            f"async def run(ctx, args):\n    return await ctx.manager.invoke({call!r}, {args!r})\n")


def test_a_skill_cannot_install_a_package_without_approval(project, tmp_path):
    skills_repo(tmp_path / "r")
    project.write("caller.skill.py", caller("hub-add-source", "hub-add-source", {"source": str(tmp_path / "r")}))
    done = project.cli("run", "caller")
    assert done.returncode == 3, done.stderr
    assert "writing skill code: .agent-apps/packages" in done.stderr
    assert not (project.root / ".agent-apps/packages").exists() and not (project.root / "agentapps-lock.json").exists()


def test_a_skill_installs_a_package_when_the_user_approves(project, tmp_path):
    skills_repo(tmp_path / "r")
    project.write("caller.skill.py", caller("hub-add-source", "hub-add-source", {"source": str(tmp_path / "r")}))
    done = project.cli("run", "--approve", "hub-add-source", "--json", "caller")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["results"][0]["name"] == "r"


def test_file_write_cannot_touch_an_installed_package(project, tmp_path):
    skills_repo(tmp_path / "r")
    project.cli("add", str(tmp_path / "r"), "--name", "team")
    project.write("caller.skill.py", caller("file-write", "file-write",
                                            {"path": ".agent-apps/packages/team/stamp/stamp.skill.py", "content": "x"}))
    done = project.cli("run", "caller")
    assert done.returncode == 3 and "inside protected folder .agent-apps/" in done.stderr


def test_writing_the_lock_file_is_writing_code(project):
    project.write("caller.skill.py", caller("file-write", "file-write", {"path": "agentapps-lock.json", "content": "{}"}))
    done = project.cli("run", "caller")
    assert done.returncode == 3 and "writing skill code: agentapps-lock.json" in done.stderr
    assert not (project.root / "agentapps-lock.json").exists()


def test_the_hub_skills_are_hidden_from_agents(project):
    listed = json.loads(project.cli("run", "--json", "skill-list").stdout)["result"]
    assert not [row for row in listed if row["name"].startswith("hub-")]
