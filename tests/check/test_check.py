"""`agentapps check`: a table of broken projects (one defect each) and the command's contract."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agentapps.check.run import check

REPO = Path(__file__).resolve().parents[2]

MD = "---\nname: {name}\n{extra}---\n{body}"


def md(name: str, extra: str = "", body: str = "Body.\n") -> str:
    return MD.format(name=name, extra=extra, body=body)


HELLO_SHADOW = 'frontmatter = {"name": "hello"}\n\n\ndef run(ctx, args):\n    return "hi"\n'
BAD_RETURNS = '''frontmatter = {
    "name": "counter",
    "metadata": {
        "returns": {"type": "object", "required": "count"},
    },
}


def run(ctx, args):
    return {"count": 1}
'''
SUMMARIZE = md("summarize", "description: Summarize.\n")
HUGE = "---\nname: huge\ndescription: >\n" + "  words words words words words words\n" * 2000 + "---\nBody.\n"

# (files, [(path, line, severity, code, message substring), ...]): each project has one defect.
BROKEN = [
    pytest.param({"a.skill.md": "---\nname: a\ndescription: x: y\n---\n"},
                 [("a.skill.md", 3, "error", "load-error", "Invalid YAML in frontmatter: mapping values")],
                 id="bad-yaml"),
    pytest.param({"a.skill.md": "---\nname: a\ndescription: &d hi\nmetadata:\n  note: *d\n---\n"},
                 [("a.skill.md", 5, "error", "load-error", "YAML aliases (*name) are not allowed")],
                 id="yaml-alias"),
    pytest.param({"a.skill.md": "---\nname: a\ndescription: one\ndescription: two\n---\n"},
                 [("a.skill.md", 4, "error", "load-error", "Duplicate key 'description'")],
                 id="duplicate-key"),
    pytest.param({"bad.skill.md": md("Bad_Name")},
                 [("bad.skill.md", 2, "error", "load-error", "Invalid skill name 'Bad_Name'")],
                 id="bad-name"),
    pytest.param({"huge.skill.md": HUGE},
                 [("huge.skill.md", 1, "error", "load-error", "Frontmatter is larger than 64 KiB")],
                 id="oversized-frontmatter"),
    pytest.param({"c.skill.py": 'frontmatter = {"name": "c"}\n\ndef run(ctx, args)\n    pass\n'},
                 [("c.skill.py", 3, "error", "load-error", "Python syntax error")],
                 id="python-syntax-error"),
    pytest.param({"c.skill.py": 'x = 1\nfrontmatter = dict(name="c")\n\ndef run(ctx, args):\n    pass\n'},
                 [("c.skill.py", 2, "error", "load-error", "`frontmatter` must be a literal dict")],
                 id="python-frontmatter-not-literal"),
    pytest.param({"c.skill.py": 'frontmatter = {"name": "c"}\n'},
                 [("c.skill.py", 1, "error", "load-error", "needs a module-level function `run(ctx, args)`")],
                 id="python-without-run"),
    pytest.param({"twin.skill.md": md("twin"), "sub/twin.skill.md": md("twin")},
                 [("twin.skill.md", 2, "error", "duplicate-name",
                   "Two skills are named 'twin' in the same folder tree: sub/twin.skill.md and twin.skill.md")],
                 id="duplicate-name"),
    pytest.param({"mismatch.skill.py": 'frontmatter = {"name": "other-name"}\n\ndef run(ctx, args):\n    pass\n'},
                 [("mismatch.skill.py", 1, "warning", "name-differs-from-file",
                   ("Skill 'other-name' differs from its file name 'mismatch': it is found as 'other-name', "
                    "and 'agentapps run mismatch' will not find it."))],
                 id="name-differs-from-file"),
    pytest.param({"main.skill.md": md("my-project", "metadata: {role: main}\n"),
                  "other.skill.md": md("renamed")},  # a main skill may be named for its project
                 [("other.skill.md", 2, "warning", "name-differs-from-file", "its file name 'other'")],
                 id="name-differs-not-for-the-main-skill"),
    pytest.param({"mw.skill.md": md("mw", "metadata: {role: middleware, applies-if: result}\n")},
                 [("mw.skill.md", 3, "error", "bad-applies-if", "has `applies-if: 'result'`; it takes 'params' or")],
                 id="bad-applies-if"),
    pytest.param({"pdf/SKILL.md": md("pdf-tools")},
                 [("pdf/SKILL.md", 2, "warning", "name-differs-from-file", "differs from its folder 'pdf'")],
                 id="name-differs-from-folder"),
    pytest.param({"a.skill.md": md("a", "params:\n  type: object\n")},
                 [("a.skill.md", 3, "warning", "unknown-key",
                   "Unknown top-level key 'params' in the frontmatter: move it under `metadata`")],
                 id="unknown-key"),
    pytest.param({"c.skill.py": 'frontmatter = {\n    "name": "c",\n    "params": {},\n}\n\ndef run(ctx, args):\n'
                               "    pass\n"},
                 [("c.skill.py", 3, "warning", "unknown-key", "Unknown top-level key 'params'")],
                 id="unknown-key-in-code"),
    pytest.param({"a.skill.md": md("a", "descripton: Misspelt.\n")},
                 [("a.skill.md", 3, "warning", "unknown-key", "did you mean 'description'?")],
                 id="misspelt-key"),
    pytest.param({"a.skill.md": md("a", "metadata:\n  params:\n    type: object\n    properties:\n"
                                        "      n:\n        type: strin\n")},
                 [("a.skill.md", 8, "error", "invalid-schema",
                   "Skill 'a' has an invalid params schema: 'strin' is not valid")],
                 id="invalid-params-schema"),
    pytest.param({"counter.skill.py": BAD_RETURNS},
                 [("counter.skill.py", 4, "error", "invalid-schema",
                   "invalid returns schema: 'count' is not of type 'array'")],
                 id="invalid-returns-schema-in-code"),
    pytest.param({"a.skill.md": md("a", "metadata:\n  params:\n    type: object\n    properties:\n"
                                        "      s:\n        type: string\n        pattern: '(?=a)a+$'\n")},
                 [("a.skill.md", 9, "error", "unsafe-pattern",
                   "params schema has a 'pattern' that cannot be matched in linear time")],
                 id="lookahead-pattern"),
    pytest.param({"a.skill.md": md("a", body="Intro.\n\nInclude :inlin[notes.txt] here.\n")},
                 [("a.skill.md", 6, "error", "unknown-directive",
                   ("Unknown directive ':inlin[...]' in skill 'a': no skill named 'inlin' serves it. "
                    "Did you mean ':inline'?"))],
                 id="unknown-directive"),
    pytest.param({"a.skill.md": md("a", body="Say :hello[x].\n")},
                 [("a.skill.md", 4, "error", "not-a-directive",
                   "Skill 'hello' cannot serve the directive ':hello[...]' in skill 'a'")],
                 id="skill-that-is-not-a-directive"),
    pytest.param({"a.skill.md": md("a", "allowed-tools: 'file-{read'\n")},
                 [("a.skill.md", 3, "error", "malformed-pattern",
                   "Skill 'a' allowed-tools: Malformed pattern 'file-{read': missing '}'")],
                 id="malformed-allowed-tools"),
    pytest.param({"a.skill.md": md("a", "allowed-tools: file-read fiel-*\n")},
                 [("a.skill.md", 3, "warning", "unmatched-pattern",
                   "allowed-tools pattern 'fiel-*' selects nothing")],
                 id="unmatched-glob"),
    pytest.param({"a.skill.md": md("a", "allowed-tools: [file-red]\n")},
                 [("a.skill.md", 3, "warning", "unmatched-pattern", "Did you mean 'file-read'")],
                 id="unmatched-name-suggests"),
    pytest.param({"a.skill.md": md("a", "allowed-tools: '#nosuch-tag'\n")},
                 [("a.skill.md", 3, "warning", "unmatched-pattern", "no skill carries the tag 'nosuch-tag'")],
                 id="unmatched-tag"),
    pytest.param({"a.skill.md": md("a", "metadata:\n  $inherit: sumarize\n"), "summarize.skill.md": SUMMARIZE},
                 [("a.skill.md", 4, "error", "inherit-missing",
                   "Skill 'a' inherits from 'sumarize', which does not exist. Did you mean 'summarize'")],
                 id="inherit-missing-parent"),
    pytest.param({"a.skill.md": md("a", "metadata:\n  $inherit: [b]\n"),
                  "b.skill.md": md("b", "metadata:\n  $inherit: a\n")},
                 [("a.skill.md", 4, "error", "inherit-cycle", "$inherit cycle: a -> b -> a"),
                  ("b.skill.md", 4, "error", "inherit-cycle", "$inherit cycle: b -> a -> b")],
                 id="inherit-cycle"),
    pytest.param({"a.skill.md": md("a", "metadata:\n  env: [HOME]\n", "Home :env[HOME], token :env[TOKEN].\n")},
                 [("a.skill.md", 6, "error", "undeclared-env",
                   "Skill 'a' reads :env[TOKEN] but does not declare 'TOKEN'")],
                 id="undeclared-env"),
    pytest.param({"a.skill.md": md("a", "metadata:\n  template: jinja2\n", "One.\nTwo.\n{% endif %}\n")},
                 [("a.skill.md", 8, "error", "template-error",
                   "Template of skill 'a' has a syntax error: Encountered unknown tag 'endif'")],
                 id="template-syntax"),
    pytest.param({"a.skill.md": md("a", "metadata:\n  template: mustache\n")},
                 [("a.skill.md", 4, "error", "template-error",
                   "sets `template: mustache`; the only template engine is jinja2")],
                 id="template-engine"),
    pytest.param({"hello.skill.py": HELLO_SHADOW},
                 [("hello.skill.py", 1, "warning", "shadows-bundled", "Skill 'hello' shadows bundled skill 'hello' (")],
                 id="shadows-bundled"),
    pytest.param({"returns.skill.md": md("returns", "")},
                 [("returns.skill.md", 2, "warning", "metadata-key-name",
                   "Skill 'returns' is named like the metadata key 'returns'; the key does not activate it")],
                 id="named-like-a-metadata-key"),
    pytest.param({"a.skill.md": md("a", "metadata:\n  trust: {rules: 'file-{write'}\n")},
                 [("a.skill.md", 4, "error", "malformed-pattern", "Skill 'a' trust rules: Malformed pattern")],
                 id="malformed-trust-rule"),
    pytest.param({"a.skill.md": md("a", "metadata:\n  trust: {rules: '#nosuch'}\n")},
                 [("a.skill.md", 4, "warning", "unmatched-pattern", "trust rule '#nosuch' never fires")],
                 id="trust-rule-that-never-fires"),
    pytest.param({"a.skill.md": md("a", "metadata:\n  params:\n    type: object\n    properties:\n"
                                        "      n: {type: integer, minimun: 1}\n")},
                 [("a.skill.md", 7, "warning", "unknown-keyword",
                   "has 'minimun', which is not a JSON Schema keyword (at /properties/n/minimun)")],
                 id="unknown-schema-keyword"),
]


def write_all(project, files: dict[str, str]) -> None:
    for relative, text in files.items():
        (project.root / relative).parent.mkdir(parents=True, exist_ok=True)
        (project.root / relative).write_text(text, encoding="utf-8")


@pytest.mark.parametrize(("files", "expected"), BROKEN)
def test_each_broken_project_has_exactly_its_finding(project, files, expected):
    write_all(project, files)
    found = sorted(check(project.root).findings, key=lambda f: (f.path, f.line))
    assert [(f.path, f.line, f.severity, f.code) for f in found] == [e[:4] for e in expected]
    for finding, (*_, text) in zip(found, expected, strict=True):
        assert text in finding.message


@pytest.mark.parametrize("case", ["bad-yaml", "duplicate-name", "unknown-directive", "shadows-bundled"])
def test_broken_projects_through_the_cli(project, case):
    files, expected = next(p.values for p in BROKEN if p.id == case)
    write_all(project, files)
    result = project.cli("check")
    path, line, severity, _, text = expected[0]
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"{path}:{line}: {severity}: ") and text in first
    assert result.returncode == (2 if severity == "error" else 0)


def test_clean_project_exits_0_with_the_summary(project):
    project.write("summarize.skill.md", """
        ---
        name: summarize
        description: Summarize a file.
        allowed-tools: [file-read, "#directive"]
        metadata:
          env: [EDITOR]
          params: {type: object, properties: {path: {type: string}}, required: [path]}
        ---
        Summarize :arg[path] (editor :env[EDITOR]); `:not-a-directive[x]` is code.
        """)
    project.write("tools/count.skill.py", 'frontmatter = {"name": "count"}\n\ndef run(ctx, args):\n    return 1\n')
    result = project.cli("check")
    assert (result.returncode, result.stdout, result.stderr) == (0, "checked 2 skills: 0 errors, 0 warnings\n", "")


def test_no_false_positives_for_cascaded_env_switched_off_directives_and_agent_skills_keys(project):
    project.write("base.skill.md", md("base", "metadata:\n  env: [TOKEN]\n"))
    project.write("child.skill.md", md("child", "metadata:\n  $inherit: base\n", "Use :env[TOKEN].\n"))
    project.write("plain.skill.md", md("plain", "metadata:\n  directives: false\n", "Keep :nosuch[x] as text.\n"))
    project.write("pdf/SKILL.md", md("pdf", "description: PDFs.\nlicense: MIT\ncompatibility: any\n"))
    project.write("tpl.skill.md", md("tpl", "metadata:\n  template: jinja2\n", "{% if args.x %}x{% endif %}\n"))
    assert check(project.root).findings == []


def test_strict_turns_a_warning_into_exit_2(project):
    project.write("a.skill.md", md("a", "tags: [x]\n"))
    relaxed, strict = project.cli("check"), project.cli("check", "--strict")
    assert relaxed.returncode == 0 and "a.skill.md:3: warning: Unknown top-level key 'tags'" in relaxed.stdout
    assert strict.returncode == 2 and "a.skill.md:3: error: Unknown top-level key 'tags'" in strict.stdout
    assert strict.stdout.endswith("checked 1 skill: 1 error, 0 warnings\n")


def test_json_output_shape(project):
    project.write("a.skill.md", md("a", "allowed-tools: fiel-*\n", "Read :nosuch[x].\n"))
    result = project.cli("check", "--json")
    assert result.returncode == 2
    data = json.loads(result.stdout)
    assert data["summary"] == {"skills": 1, "errors": 1, "warnings": 1, "ok": False}
    assert [(f["line"], f["severity"], f["code"]) for f in data["findings"]] == [
        (3, "warning", "unmatched-pattern"), (5, "error", "unknown-directive")]
    assert set(data["findings"][0]) == {"path", "line", "severity", "code", "message"}


def test_findings_are_sorted_by_path_then_line(project):
    project.write("b.skill.md", md("b", "zz: 1\nyy: 2\n"))
    project.write("a.skill.md", md("a", "allowed-tools: nothing-here\n"))
    lines = project.cli("check").stdout.splitlines()
    assert [line.split(": ")[0] for line in lines[:-1]] == ["a.skill.md:3", "b.skill.md:3", "b.skill.md:4"]
    assert lines[-1] == "checked 2 skills: 0 errors, 3 warnings"


def test_the_bundled_skills_pass_strict(project):
    result = project.cli("check", "--strict", str(REPO / "skills"))
    assert result.returncode == 0, result.stdout
    assert result.stdout.endswith(" 0 errors, 0 warnings\n")


def test_check_never_imports_project_python(project):
    marker = project.root / "imported.txt"
    project.write("side.skill.py", f'''
        open({str(marker)!r}, "w").write("imported")
        frontmatter = {{"name": "side", "metadata": {{"params": {{"type": "object", "properties": {{}}}}}}}}

        def run(ctx, args):
            return "ran"
        ''')
    assert project.cli("check").returncode == 0
    assert not marker.exists()
    assert project.cli("run", "side").stdout == "ran\n" and marker.exists()  # the marker does work


def test_paths_are_checked_like_a_project_root_or_as_single_files(project, tmp_path):
    outside = tmp_path / "elsewhere"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "x.skill.md").write_text(md("x", "bogus: 1\n"))
    project.write("local.skill.md", md("local", "bogus: 1\n"))
    folder = project.cli("check", str(outside))
    assert folder.stdout.splitlines()[0].startswith(f"{outside}/deep/x.skill.md:3: warning:")
    assert folder.stdout.endswith("checked 1 skill: 0 errors, 1 warning\n")
    single = project.cli("check", "local.skill.md")
    assert single.stdout.startswith("local.skill.md:3: warning:")
    missing = project.cli("check", "nope")
    assert (missing.returncode, missing.stderr) == (2, "error: No such file or folder: 'nope'.\n")


def test_overlapping_paths_report_a_finding_once(project):
    project.write("sub/a.skill.md", md("a", "bogus: 1\n"))
    result = project.cli("check", ".", "sub", "sub/a.skill.md")
    assert result.stdout == ("sub/a.skill.md:3: warning: Unknown top-level key 'bogus' in the frontmatter: "
                             "move it under `metadata`.\nchecked 1 skill: 0 errors, 1 warning\n")


def test_default_scope_is_the_project_not_user_or_bundled_skills(project):
    user = project.home / ".agent-apps" / "skills"
    user.mkdir(parents=True)
    (user / "broken.skill.md").write_text("---\nname: [\n---\n")
    project.write("ok.skill.md", md("ok"))
    project.write(".agent-apps/skills/local.skill.md", md("local", "bogus: 1\n"))
    report = check(project.root)
    assert report.skills == 2
    assert [(f.path, f.code) for f in report.findings] == [(".agent-apps/skills/local.skill.md", "unknown-key")]


@pytest.mark.slow
def test_a_thousand_skills_check_in_a_few_seconds(project):
    for i in range(1000):
        if i % 4:
            project.write(f"g{i % 25}/s{i}.skill.md", md(
                f"s{i}", f"description: Skill {i}.\nallowed-tools: file-read s{i - i % 4} file-*\nmetadata:\n"
                "  env: [HOME]\n  params: {type: object, properties: {topic: {type: string}}}\n",
                "Write about :arg[topic] for :env[HOME].\n\n```\n:code[x]\n```\n"))
        else:
            project.write(f"g{i % 25}/s{i}.skill.py", f'frontmatter = {{"name": "s{i}"}}\n\ndef run(ctx, args):\n'
                                                     "    return 1\n")
    started = time.perf_counter()
    result = project.cli("check", AGENTAPPS_CACHE_DIR="off")
    elapsed = time.perf_counter() - started
    assert result.stdout == "checked 1000 skills: 0 errors, 0 warnings\n"
    assert elapsed < 10, f"check took {elapsed:.1f}s"


def test_an_identical_copy_of_a_bundled_skill_is_not_reported_as_shadowing(project):
    from agentapps.boot import bundled_skills_dir

    original = (bundled_skills_dir() / "builtins" / "hello.skill.py").read_text()
    project.write("vendored/hello.skill.py", original)
    same = project.cli("check", "--strict", "--json")
    assert same.returncode == 0, same.stdout
    project.write("vendored/hello.skill.py", original + "\n# changed\n")
    changed = json.loads(project.cli("check", "--json").stdout)
    assert [f["code"] for f in changed["findings"]] == ["shadows-bundled"]


def test_a_user_folder_skill_that_replaces_a_bundled_one_is_reported_at_the_users_file(project):
    # the user's ~/.agents/skills reaches every project: a `file-read` there silently replaced the
    # bundled file-read for every agent until check said so
    folder = project.home / ".agents" / "skills" / "file-read"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: file-read\ndescription: My own reader.\n---\nRead it.\n")
    (project.home / ".agents" / "skills" / "mine").mkdir()
    (project.home / ".agents" / "skills" / "mine" / "SKILL.md").write_text("---\nname: mine\n---\nMine.\n")
    project.write("ok.skill.md", md("ok"))
    report = check(project.root)
    assert report.skills == 1  # the user's skills are not the project's
    (finding,) = report.findings
    assert (finding.code, finding.severity, finding.line) == ("user-shadows-bundled", "warning", 1)
    assert finding.path.endswith(".agents/skills/file-read/SKILL.md") and "in every project" in finding.message
    assert check(project.root, [Path("ok.skill.md")]).findings == []  # checking named files: only them


def test_an_installed_package_skill_that_replaces_a_bundled_one_is_reported_at_its_file(project, tmp_path):
    # a package (third-party code) shipping `shell` replaces the bundled shell for every skill of
    # the project that names it; `add` and `run` say nothing, so check must
    from tests.support.gitrepos import commit

    repo = tmp_path / "repo"
    commit(repo, {"skills/shell/SKILL.md": "---\nname: shell\ndescription: Not the real shell.\n---\nPretend.\n",
                  "skills/stamp/SKILL.md": "---\nname: stamp\ndescription: Stamp.\n---\nStamp.\n"})
    assert project.cli("add", str(repo), "--name", "team").returncode == 0
    project.write("ok.skill.md", md("ok"))
    report = check(project.root)
    (finding,) = report.findings
    assert (finding.code, finding.severity, finding.line) == ("package-shadows-bundled", "warning", 1)
    assert finding.path.endswith(".agent-apps/packages/team/shell/SKILL.md")
    assert "package 'team' shadows bundled skill 'shell'" in finding.message


def test_a_limit_written_under_metadata_instead_of_model_is_reported(project):
    # `metadata: {maxSteps: 3}` was silently ignored: the agent ran 30 steps and check said nothing
    project.write("par.skill.md", "---\nname: par\ndescription: P.\nmetadata:\n  maxSteps: 3\n"
                                  "  model: {maxTurns: 5}\n  tags: [x]\n---\nDo it.\n")
    (finding,) = check(project.root).findings
    assert (finding.code, finding.severity, finding.line) == ("misplaced-model-key", "warning", 5)
    assert "`metadata.maxSteps`" in finding.message and "under `model`" in finding.message
