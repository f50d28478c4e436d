"""What serve and mcp-server offer of a project's main skill: nothing while it holds only
configuration (`agentapps init`'s placeholder prompt, no params), itself once it has a real task."""

from __future__ import annotations

from agentapps.boot import bootstrap
from agentapps.mcp.exposed import Exposure
from agentapps.scaffold import init_project


def offers(root) -> set[str]:
    exposure = Exposure(bootstrap(root).globals.lookup, None)
    exposure.refresh()
    return set(exposure.offers)


def test_a_fresh_init_offers_its_skills_but_not_the_placeholder_main_skill(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = tmp_path / "shop"
    root.mkdir()
    init_project(root)
    assert offers(root) == {"greet"}


def test_a_main_skill_with_a_real_prompt_is_offered(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = tmp_path / "shop"
    root.mkdir()
    init_project(root)
    main = root / "shop.skill.md"
    main.write_text(main.read_text().replace("Describe what this project's agent should do when run without "
                                             "naming a skill.", "Triage the open issues."))
    assert offers(root) == {"greet", "shop"}
