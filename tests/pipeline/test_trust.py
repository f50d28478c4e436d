"""trust: approval on a terminal (pseudo-terminal), denial without one, --approve, remembered 'always'."""

from __future__ import annotations

import json

import pytest

from tests.support.terminal import Terminal

CALLER = '''
frontmatter = {"name": "writer", "allowed-tools": "file-write", "metadata": {
    "trust": {"rules": "file-write shell"}, "params": {"type": "object"}}}

async def run(ctx, args):
    return await ctx.manager.invoke("file-write", {"path": "out.txt", "content": "written"})
'''


def test_without_a_terminal_a_trusted_call_is_denied_with_exit_3(project):
    project.write("writer.skill.py", CALLER)
    result = project.cli("run", "writer")
    assert result.returncode == 3
    assert "needs approval (trust rule 'file-write')" in result.stderr and "--approve" in result.stderr
    assert not (project.root / "out.txt").exists()
    log = (project.root / ".agent-apps" / "trust.log").read_text()
    assert '"decision": "denied (no terminal)"' in log


def test_approve_pattern_allows_the_call(project):
    project.write("writer.skill.py", CALLER)
    result = project.cli("run", "writer", AGENTAPPS_APPROVE="file-*")
    assert result.returncode == 0, result.stderr
    assert (project.root / "out.txt").read_text() == "written"


def test_calls_not_matching_rules_need_no_approval(project):
    project.write("reader.skill.py", CALLER.replace('"name": "writer"', '"name": "reader"')
                  .replace('"rules": "file-write shell"', '"rules": "shell"'))
    assert project.cli("run", "reader").returncode == 0


def _run_in_pty(project, answer: str | None, timeout_env: str = "10"):
    """`agentapps run writer` on a terminal, typing `answer` to the approval question."""
    term = Terminal(project, "run", "writer", AGENTAPPS_TRUST_TIMEOUT=timeout_env)
    code = term.finish(answers=[] if answer is None else [("Allow?", answer + "\n")], timeout=30)
    return code, term.output


def test_terminal_user_allows_once(project):
    project.write("writer.skill.py", CALLER)
    code, out = _run_in_pty(project, "y")
    assert code == 0, out
    assert "wants to call 'file-write'" in out
    assert (project.root / "out.txt").read_text() == "written"
    assert not (project.root / ".agent-apps" / "trust.json").exists()


def test_terminal_user_allows_always_and_it_is_remembered(project):
    project.write("writer.skill.py", CALLER)
    code, out = _run_in_pty(project, "a")
    assert code == 0, out
    assert not (project.root / ".agent-apps" / "trust.json").exists()  # never in the checkout
    stored = json.loads(next((project.home / ".local/state/agentapps/approvals").glob("*.json")).read_text())
    assert [(r["caller"], r["callee"], r["rule"]) for r in stored["always"]] == [("writer", "file-write", "file-write")]
    (project.root / "out.txt").unlink()
    code, out = _run_in_pty(project, None, timeout_env="5")  # a later terminal run: not asked again
    assert code == 0 and "Allow?" not in out and (project.root / "out.txt").exists()
    assert project.cli("run", "writer").returncode == 3  # without a terminal only --approve counts


def test_terminal_user_denies_and_timeout_denies(project):
    project.write("writer.skill.py", CALLER)
    code, out = _run_in_pty(project, "n")
    assert code == 3 and "was not approved" in out
    code, out = _run_in_pty(project, None, timeout_env="0.5")
    assert code == 3 and "no answer: denied" in out
    assert not (project.root / "out.txt").exists()


def test_trust_cannot_be_switched_off_by_the_callee(project):
    project.write("writer.skill.py", CALLER.replace("file-write", "sneaky").replace('"path": "out.txt", "content": "written"', ""))
    project.write("sneaky.skill.py", 'frontmatter = {"name": "sneaky", "metadata": {"trust": False, "$inherit": False}}\n\n'
                  'def run(ctx, args):\n    return "ran"\n')
    assert project.cli("run", "writer").returncode == 3


def test_locked_middleware_run_statically(project):
    for name in ("trust", "validate-allowed-tools", "validate-args", "execute"):
        described = json.loads(project.cli("describe", name, "--json").stdout)
        assert described["static"] is True, name


MAIN = "---\nname: proj\nmetadata:\n  role: main\n  trust: {rules: 'file-write'}\n---\nThe project.\n"


@pytest.mark.parametrize("own_trust", [
    '"trust": False', '"trust": {"rules": ""}', '"$inherit": False', '"trust": {"rules": "shell"}'])
def test_project_wide_rules_bind_every_skill_and_cannot_be_switched_off(project, own_trust):
    project.write("agentapps.skill.md", MAIN)
    project.write("writer.skill.py", f'''
frontmatter = {{"name": "writer", "allowed-tools": "file-write", "metadata": {{{own_trust}}}}}

async def run(ctx, args):
    return await ctx.manager.invoke("file-write", {{"path": "out.txt", "content": "x"}})
''')
    result = project.cli("run", "writer")
    assert result.returncode == 3, result.stderr
    assert "Call from 'writer' to 'file-write' needs approval (trust rule 'file-write')" in result.stderr
    assert not (project.root / "out.txt").exists()


ECHO = '''
frontmatter = {"name": "echo", "metadata": {"tags": ["api"], "params": {"type": "object"}}}

def run(ctx, args):
    return args
'''


@pytest.mark.parametrize(("rules", "args", "asks"), [
    ("#api", {}, True),
    ("#other", {}, False),
    ("echo(level=high)", {"level": "high"}, True),
    ("echo(level=high)", {"level": "low"}, False),
    ("echo(level=h*)", {"level": "higher"}, True),
    ("{echo,other}", {}, True),
])
def test_trust_rules_use_the_allowed_tools_matcher(project, rules, args, asks):
    project.write("echo.skill.py", ECHO)
    project.write("caller.skill.py", f'''
frontmatter = {{"name": "caller", "metadata": {{"trust": {{"rules": {rules!r}}}}}}}

async def run(ctx, args):
    return await ctx.manager.invoke("echo", {args!r})
''')
    result = project.cli("run", "caller")
    assert result.returncode == (3 if asks else 0), result.stderr
    assert ("needs approval" in result.stderr) is asks


def test_approve_takes_the_same_syntax_as_rules(project):
    project.write("echo.skill.py", ECHO)
    project.write("caller.skill.py", '''
frontmatter = {"name": "caller", "metadata": {"trust": {"rules": "echo"}, "params": {"type": "object"}}}

async def run(ctx, args):
    return await ctx.manager.invoke("echo", {"level": args["level"]})
''')
    assert project.cli("run", "--approve", "echo(level=low)", "caller", "--arg-json",
                       '{"level": "low"}').returncode == 0
    assert project.cli("run", "--approve", "echo(level=low)", "caller", "--arg-json",
                       '{"level": "high"}').returncode == 3


def test_the_approval_prompt_shows_every_argument_in_full_and_escapes_terminal_controls(project):
    hidden = "x" * 400 + "; echo PWNED > marker"
    project.write("writer.skill.py", CALLER.replace('"content": "written"',
                                                    f'"content": {hidden!r} + "\\x1b[2K\\u202e"'))
    code, out = _run_in_pty(project, "n")
    assert code == 3
    assert "PWNED > marker" in out  # nothing is cut
    assert "\x1b[2K" not in out and "\u202e" not in out
    assert "\\u001b[2K" in out and "\\u202e" in out


@pytest.mark.parametrize("trust", ['["file-write", "shell"]', '"file-write shell"', '{"rules": ["file-write"]}'])
def test_every_spelling_of_trust_rules_gates_the_call(project, trust):
    project.write("writer.skill.py", CALLER.replace('{"rules": "file-write shell"}', trust))
    result = project.cli("run", "writer")
    assert result.returncode == 3 and "needs approval (trust rule 'file-write')" in result.stderr
    assert not (project.root / "out.txt").exists()


@pytest.mark.parametrize("trust", ["5", "True", '{"rules": 3}'])
def test_a_trust_value_that_is_not_rules_is_refused_not_ignored(project, trust):
    project.write("writer.skill.py", CALLER.replace('{"rules": "file-write shell"}', trust))
    result = project.cli("run", "writer")
    assert result.returncode == 2 and "give rules as text" in result.stderr
    assert not (project.root / "out.txt").exists()
    checked = project.cli("check", "writer.skill.py")
    assert checked.returncode == 2 and "give rules as text" in checked.stdout + checked.stderr
