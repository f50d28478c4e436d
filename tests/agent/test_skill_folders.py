"""Public-style skill folders (NAME/SKILL.md with references/, scripts/, templates/) run as they are:
foreign tool names map, the agent is told about its files and reads them, scripts run through shell."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentapps.errors import DeniedError, UsageError

# Modelled on the public Anthropic skills layout: frontmatter with name and description only
# (plus Claude Code's comma-separated allowed-tools), instructions that point at bundled files.
PDF_SKILL = """---
name: pdf-forms
description: Fill PDF forms. Use when the user asks to fill in a form.
allowed-tools: Read, Grep, Bash(python3:*)
license: Proprietary. LICENSE.txt has complete terms
---

# PDF form filling

1. Read `references/forms.md` for the field names.
2. Run `scripts/fill.py FIELD=VALUE` to fill the form.
3. Start from `templates/form.txt`.
"""
# Modelled on the GitHub (awesome-copilot) layout: a list of tools and a metadata block.
REVIEW_SKILL = """---
name: review-notes
description: 'Review the notes in docs/ against the checklist in this skill.'
allowed-tools: [Read, Glob]
metadata:
  author: someone
  version: "1.0"
---
Check each note in docs/ against `checklist.md`.
"""


def _write_folder(base: Path) -> Path:
    folder = base / "pdf-forms"
    (folder / "references").mkdir(parents=True)
    (folder / "scripts").mkdir()
    (folder / "templates").mkdir()
    (folder / "SKILL.md").write_text(PDF_SKILL)
    (folder / "references" / "forms.md").write_text("Fields: name, date\n")
    (folder / "scripts" / "fill.py").write_text(
        "import sys\nprint('filled ' + ' '.join(sys.argv[1:]))\n")
    (folder / "templates" / "form.txt").write_text("NAME: ____\n")
    return folder


def _script(project, turns):
    path = project.root / "turns.json"
    path.write_text(json.dumps({"turns": turns}))
    return str(path)


@pytest.fixture(params=["project", "user"])
def pdf(request, project):
    """The pdf-forms folder in the project's skills/ or in the user's ~/.agent-apps/skills/."""
    base = project.root / "skills" if request.param == "project" else project.home / ".agent-apps" / "skills"
    return project, _write_folder(base)


def test_the_agent_reads_its_folder_and_runs_its_script(pdf):
    project, folder = pdf
    code = (f"const forms = await ctx.manager.invoke('skill-file', {{path: 'references/forms.md'}});"
            f"const run = await ctx.manager.invoke('shell', {{argv: ['python3', '{folder}/scripts/fill.py', 'name=Ada']}});"
            "ctx.manager.finish({forms, out: run.stdout, files: await ctx.manager.invoke('skill-file', {})});")
    script = _script(project, [{"code": code}])
    result = project.cli("run", "--json", "--replay", script, "pdf-forms")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)["result"]
    assert out["forms"] == "Fields: name, date\n" and out["out"] == "filled name=Ada\n"
    assert out["files"] == ["references/forms.md", "scripts/fill.py", "templates/form.txt"]


def test_the_system_prompt_lists_the_files_and_the_folder(pdf):
    project, folder = pdf
    result = project.cli("run", "--json", "--dry-run", "pdf-forms")
    system = json.loads(result.stdout)["result"]["system"]
    assert f"This skill's folder `{folder}` holds these files" in system
    assert "- `references/forms.md`" in system and "- `scripts/fill.py`" in system
    assert "## file-read" in system and "## file-search" in system and "## shell" in system
    assert "only allowed as `shell(command={python3,python3 *})`" in system
    assert "## skill-file" not in system  # shown with the files instead


@pytest.mark.parametrize(("code", "error"), [
    ("await ctx.manager.invoke('skill-file', {path: '../../../etc/passwd'})", "Refused path"),
    ("await ctx.manager.invoke('skill-file', {path: 'escape/secret.txt'})", "Refused path"),
    ("await ctx.manager.invoke('skill-file', {path: 'missing.md'})", "no such file"),
    ("await ctx.manager.invoke('shell', {command: 'cat /etc/hostname'})", "may not call 'shell'"),
    ("await ctx.manager.invoke('shell', {command: 'python3 -c 1; id'})", "may not call 'shell'"),
    ("await ctx.manager.invoke('file-write', {path: 'x.txt', content: 'x'})", "may not call 'file-write'"),
])
def test_the_folder_is_read_only_and_the_grant_is_kept(pdf, tmp_path, code, error):
    project, folder = pdf
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("top secret\n")
    os.symlink(outside, folder / "escape")
    script = _script(project, [{"code": f"try {{ {code}; ctx.manager.finish('ran'); }} "
                                        "catch (e) { ctx.manager.finish(e.message); }"}])
    result = project.cli("run", "--replay", script, "pdf-forms")
    assert result.returncode == 0, result.stderr
    assert error in result.stdout and "top secret" not in result.stdout + result.stderr
    assert not (project.root / "x.txt").exists()


def test_skill_file_serves_only_folder_skills(project):
    project.write("flat.skill.py", '''
        frontmatter = {"name": "flat", "allowed-tools": "skill-file"}

        async def run(ctx, args):
            return await ctx.manager.invoke("skill-file", {})
        ''')
    with pytest.raises(UsageError, match="'flat' is not one"):
        project.invoke("flat")
    with pytest.raises(UsageError, match="called directly"):
        project.invoke("skill-file")


def test_a_github_style_skill_loads_and_maps_its_tools(project):
    (project.root / "skills" / "review-notes").mkdir(parents=True)
    (project.root / "skills" / "review-notes" / "SKILL.md").write_text(REVIEW_SKILL)
    (project.root / "skills" / "review-notes" / "checklist.md").write_text("- has a title\n")
    project.write("docs/a.md", "# A\n")
    code = ("const list = await ctx.manager.invoke('file-list', {glob: 'docs/*'});"
            "const check = await ctx.manager.invoke('skill-file', {path: 'checklist.md'});"
            "ctx.manager.finish({list, check});")
    result = project.cli("run", "--json", "--replay", _script(project, [{"code": code}]), "review-notes")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["result"] == {"list": ["docs/a.md"], "check": "- has a title\n"}
    assert project.cli("check").returncode == 0


def test_file_read_cannot_reach_a_user_root_skill_folder(project):
    folder = _write_folder(project.home / ".agent-apps" / "skills")
    code = f"await ctx.manager.invoke('file-read', {{path: '{folder}/references/forms.md'}})"
    script = _script(project, [{"code": f"try {{ {code}; ctx.manager.finish('read'); }} "
                                        "catch (e) { ctx.manager.finish(e.message); }"}])
    result = project.cli("run", "--replay", script, "pdf-forms")
    assert result.returncode == 0 and "outside the project" in result.stdout


def test_denied_calls_are_refused_in_process(project):
    folder = _write_folder(project.root / "skills")
    project.write("caller.skill.py", '''
        frontmatter = {"name": "caller", "allowed-tools": "Read"}

        async def run(ctx, args):
            return await ctx.manager.invoke("shell", {"command": "id"})
        ''')
    with pytest.raises(DeniedError):
        project.invoke("caller")
    assert (folder / "SKILL.md").exists()


def test_an_unrestricted_grant_beside_a_constrained_one_is_shown_unrestricted(project):
    project.write("both.skill.md", "---\nname: both\nallowed-tools: Read, Bash(python3:*), Bash(*)\n---\nDo it.\n")
    system = json.loads(project.cli("run", "--json", "--dry-run", "both").stdout)["result"]["system"]
    assert "## shell" in system and "only allowed as `shell(" not in system
    project.write("one.skill.md", "---\nname: one\nallowed-tools: Read, Bash(python3:*)\n---\nDo it.\n")
    system = json.loads(project.cli("run", "--json", "--dry-run", "one").stdout)["result"]["system"]
    assert "only allowed as `shell(command={python3,python3 *})`" in system


def test_every_constrained_grant_of_a_skill_is_shown_as_an_alternative(project):
    """`Bash(git:*)` beside `Bash(python3:*)` admits both; the prompt must not show only the first."""
    project.write("two.skill.md", "---\nname: two\nallowed-tools: Read, Bash(git:*), Bash(python3:*)\n---\nDo it.\n")
    system = json.loads(project.cli("run", "--json", "--dry-run", "two").stdout)["result"]["system"]
    assert ("- only allowed as `shell(command={git,git *})` or `shell(command={python3,python3 *})`\n"
            in system)
    assert system.count("only allowed as") == 1
