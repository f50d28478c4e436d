"""`check FOLDER` covers the projects nested in it, each under its own main skill, and says so."""

from __future__ import annotations

import json
from pathlib import Path

from agentapps.check.run import check

REPO = Path(__file__).resolve().parents[2]
GOOD = "---\nname: {name}\ndescription: A skill.\n---\nDo it.\n"
BROKEN = "---\nname: broken\ndescription: x: y\n---\nBody.\n"
MAIN = "---\nname: {name}\ndescription: The project.\nmetadata:\n  role: main\n---\nThe project.\n"


def _nested(root: Path, folder: str, files: dict[str, str]) -> None:
    (root / folder / ".agent-apps").mkdir(parents=True)
    for name, text in files.items():
        (root / folder / name).write_text(text, encoding="utf-8")


def test_a_broken_skill_in_a_nested_project_is_found_at_its_path(project):
    _nested(project.root, "examples/one", {"one.skill.md": GOOD.format(name="one")})
    _nested(project.root, "examples/two", {"broken.skill.md": BROKEN})
    result = project.cli("check", "examples")
    assert result.returncode == 2, result.stdout
    assert "examples/two/broken.skill.md:3: error: Invalid YAML" in result.stdout
    assert "examples/one: nested project (no main skill): checked 1 skill" in result.stdout
    assert result.stdout.rstrip().endswith("checked 2 skills (0 here, 2 in 2 nested projects): 1 error, 0 warnings")


def test_each_nested_project_is_checked_under_its_own_main_skill(project):
    _nested(project.root, "apps/shop", {"shop.skill.md": MAIN.format(name="shop"),
                                        "pay.skill.md": GOOD.format(name="pay")})
    _nested(project.root, "apps/shop/plugins/extra", {"extra.skill.md": GOOD.format(name="extra")})
    report = check(project.root, [Path("apps")])
    assert [(n.path, n.skills, n.main) for n in report.nested] == [
        ("apps/shop", 2, "shop"), ("apps/shop/plugins/extra", 1, None)]
    assert report.skills == 3 and report.errors == 0


def test_the_project_itself_is_checked_with_its_nested_projects(project):
    project.write("top.skill.md", GOOD.format(name="top"))
    _nested(project.root, "sub", {"inner.skill.md": BROKEN})
    report = check(project.root)
    assert report.skills == 2 and [f.path for f in report.findings] == ["sub/inner.skill.md"]


def test_a_path_holding_no_skill_says_so_and_fails_strict(project):
    (project.root / "empty").mkdir()
    (project.root / "empty" / "notes.md").write_text("not a skill\n", encoding="utf-8")
    loose = project.cli("check", "empty")
    assert loose.returncode == 0
    assert loose.stdout == ("empty: warning: 'empty' holds no skill files (nothing was checked there).\n"
                            "checked 0 skills: 0 errors, 1 warning\n")
    strict = project.cli("check", "--strict", "--json", "empty")
    assert strict.returncode == 2
    assert json.loads(strict.stdout)["findings"][0]["code"] == "no-skills"


def test_the_repositorys_examples_are_all_checked():
    """CI runs `check --strict skills examples .agent-apps/skills`: the examples must count."""
    report = check(REPO, [Path("examples")], strict=True)
    projects = sorted(p.parent for p in (REPO / "examples").glob("*/.agent-apps"))
    assert len(report.nested) == len(projects) > 0
    assert all(n.skills > 0 for n in report.nested)
    assert report.errors == 0, [f.text() for f in report.findings]
