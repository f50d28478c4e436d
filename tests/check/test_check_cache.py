"""`check` keeps each skill's findings beside the index and reuses them only while nothing they were
made from changed: the skill's file, the skills it reads (`$inherit` parents, directive and
middleware skills), which skill wins each name, and the project's main skill."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agentapps.boot import user_skills_dir
from agentapps.check.findings import Report
from agentapps.check.run import check

SERVER = ("---\nname: helper\ndescription: Serves :helper[].\nmetadata:\n  params:\n    type: object\n"
          "    properties:\n      label: {type: string}\n      attrs: {type: object}\n      skill: {type: string}\n"
          "---\nHelp with {{label}}.\n")
NOT_A_SERVER = "---\nname: helper\ndescription: Takes no label.\n---\nHelp.\n"
USES_HELPER = "---\nname: t\ndescription: Uses a directive.\n---\nSee :helper[this].\n"


def age(*roots: Path) -> None:
    """Every file under `roots` written in the last minute made an hour old (a just-written file's
    findings are never kept); older files keep their times."""
    now = time.time()
    for root in roots:
        for folder, _, files in os.walk(root):
            for name in files:
                if os.stat(Path(folder, name)).st_mtime > now - 60:
                    os.utime(Path(folder, name), (now - 3600, now - 3600))


def rows(report: Report) -> list[tuple[str, int, str]]:
    return [(f.path, f.line, f.code) for f in report.sorted()]


def test_a_second_check_of_unchanged_skills_reuses_every_finding(project):
    project.write("a.skill.md", "---\nname: a\ndescription: A.\nmetadata:\n  $inherit: nobody\n---\nA.\n")
    project.write("b.skill.md", "---\nname: b\ndescription: B.\nmetadata:\n  params: {type: objekt}\n---\nB.\n")
    project.write("c.skill.py", 'frontmatter = {"name": "c"}\n\n\ndef run(ctx, args):\n    return 1\n')
    age(project.root)
    first, second = check(project.root), check(project.root)
    assert first.reused == 0 and second.reused == 3
    assert rows(second) == rows(first) and [f.message for f in second.sorted()] == [
        f.message for f in first.sorted()]
    assert {code for _, _, code in rows(first)} == {"inherit-missing", "invalid-schema"}


def test_an_edited_skill_is_checked_again_and_only_it(project):
    project.write("a.skill.md", "---\nname: a\ndescription: A.\n---\nA.\n")
    project.write("b.skill.md", "---\nname: b\ndescription: B.\n---\nB.\n")
    age(project.root)
    assert check(project.root).findings == []
    project.write("a.skill.md", "---\nname: a\ndescription: A.\nmetadata:\n  $inherit: nobody\n---\nA.\n")
    age(project.root)
    report = check(project.root)
    assert report.reused == 1 and rows(report) == [("a.skill.md", 5, "inherit-missing")]


def test_a_change_to_a_parent_s_metadata_checks_its_children_again(project):
    project.write("base.skill.md", "---\nname: base\ndescription: Base.\nmetadata:\n  directives: false\n---\nB.\n")
    project.write("t.skill.md", "---\nname: t\ndescription: T.\nmetadata:\n  $inherit: base\n---\n:nosuch[x]\n")
    age(project.root)
    assert check(project.root).findings == []
    assert check(project.root).reused == 2
    project.write("base.skill.md", "---\nname: base\ndescription: Base.\nmetadata:\n  directives: true\n---\nB.\n")
    age(project.root)
    report = check(project.root)
    assert report.reused == 0 and rows(report) == [("t.skill.md", 7, "unknown-directive")]


def test_a_grandparent_reached_through_a_parent_s_interface_is_a_dependency_too(project):
    """A directive skill's params may come from its `$inherit` parent: editing that parent must
    check the skill using the directive again."""
    project.write("iface.skill.md", SERVER.replace("name: helper", "name: iface"))
    project.write("helper.skill.md", "---\nname: helper\ndescription: H.\nmetadata:\n  $inherit: iface\n---\nH.\n")
    project.write("t.skill.md", USES_HELPER)
    age(project.root)
    assert check(project.root).findings == []
    project.write("iface.skill.md", NOT_A_SERVER.replace("name: helper", "name: iface"))
    age(project.root)
    assert ("t.skill.md", 5, "not-a-directive") in rows(check(project.root))


def test_a_skill_that_comes_to_shadow_a_dependency_checks_its_dependants_again(project):
    user = user_skills_dir()
    user.mkdir(parents=True, exist_ok=True)
    (user / "helper.skill.md").write_text(SERVER, encoding="utf-8")
    project.write("t.skill.md", USES_HELPER)
    age(project.root, user)
    assert check(project.root).findings == []
    project.write("helper.skill.md", NOT_A_SERVER)  # the project's own now wins the name
    age(project.root)
    assert rows(check(project.root)) == [("t.skill.md", 5, "not-a-directive")]


def test_a_change_to_a_middleware_s_params_checks_the_skills_configuring_it(project):
    mw = ("---\nname: mw\ndescription: M.\nmetadata:\n  role: middleware\n  params:\n    type: object\n"
          "    properties:\n      level: {{type: {kind}}}\n---\nM.\n")
    project.write("mw.skill.md", mw.format(kind="integer"))
    for name in ("s1", "s2"):  # the middleware's params are looked up once per check
        project.write(f"{name}.skill.md", f"---\nname: {name}\ndescription: S.\nmetadata:\n  mw: {{level: high}}\n---\nS.\n")
    age(project.root)
    assert {code for _, _, code in rows(check(project.root))} == {"invalid-setting"}
    project.write("mw.skill.md", mw.format(kind="string"))
    age(project.root)
    assert check(project.root).findings == []


def test_a_change_to_the_main_skill_checks_every_skill_again(project):
    main = "---\nname: proj\ndescription: Main.\nmetadata:\n  role: main\n{meta}---\nMain.\n"
    project.write("proj.skill.md", main.format(meta=""))
    project.write("a.skill.md", "---\nname: a\ndescription: A.\n---\nA.\n")
    age(project.root)
    assert check(project.root).findings == []
    project.write("proj.skill.md", main.format(meta="  model:\n    maxTurns: 0\n"))
    age(project.root)
    report = check(project.root)
    assert report.reused == 0 and any(f.code == "invalid-setting" for f in report.findings)


def test_findings_of_a_file_written_just_now_are_not_kept(project):
    project.write("a.skill.md", "---\nname: a\ndescription: A.\n---\nA.\n")
    check(project.root)
    assert check(project.root).reused == 0  # a same-size edit within the clock tick could follow


@pytest.mark.parametrize("setting", ["off"])
def test_with_caching_off_nothing_is_kept(project, monkeypatch, setting):
    monkeypatch.setenv("AGENTAPPS_CACHE_DIR", setting)
    project.write("a.skill.md", "---\nname: a\ndescription: A.\n---\nA.\n")
    age(project.root)
    check(project.root)
    assert check(project.root).reused == 0


def test_a_skills_tests_file_is_judged_again_though_its_findings_are_kept(project):
    # the cache watches the skill's own file, not its tests file: a tests file broken after a
    # check must still be reported while the skill's other findings are reused
    project.write("a.skill.md", "---\nname: a\ndescription: A.\n---\nA.\n")
    project.write("a.tests.yaml", "cases:\n  - name: one\n    expect: {result: 1}\n")
    age(project.root)
    assert check(project.root).findings == []
    project.write("a.tests.yaml", "cases:\n  - name: one\n    expected: {result: 1}\n")
    report = check(project.root)
    assert report.reused == 1 and [(f.path, f.code) for f in report.findings] == [("a.tests.yaml", "bad-tests")]


def test_a_check_runs_no_cyclic_collection_which_a_large_project_would_otherwise_pay(project, monkeypatch):
    # the collector is paused around a check (agentapps/core/gcpause.py): its thousands of
    # definitions and findings hold no cycle, yet each collection walks all of them
    import gc
    from contextlib import nullcontext

    from agentapps.check import run

    for i in range(1500):
        project.write(f"g{i % 10}/s{i}.skill.md", f"---\nname: s{i}\ndescription: Skill {i}.\n"
                      "metadata:\n  params: {type: object, properties: {text: {type: string}}}\n---\nBody :arg[text]\n")
    passes: list[int] = []

    def counted(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    gc.callbacks.append(counted)
    try:
        assert check(project.root).skills >= 1500
        paused = len(passes)
        monkeypatch.setattr(run, "collector_paused", nullcontext)
        assert check(project.root).skills >= 1500
        running = len(passes) - paused
    finally:
        gc.callbacks.remove(counted)
    assert gc.isenabled()  # given back as it was
    # (at most the one pass the first allocation after the pause runs)
    assert paused <= 1 and running >= 5, (paused, running)
