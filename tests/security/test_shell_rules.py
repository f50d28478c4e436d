"""Shell trust rules and grants match the commands a line runs, not how it is spelled (issue 22).

Every spelling below runs `git push` (or smuggles something past a grant). A trust rule on
`git push*` must ask for each; a grant must refuse each smuggled command; what cannot be reduced
to plain words must ask under any rule and be refused by any grant. Plain commands stay admitted.
Counted in the attack suite as `shell rule spellings` (tests/support/attacks.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentapps.errors import DeniedError
from agentapps.tools.policy import Candidate, Policy, Rule

REPO = Path(__file__).resolve().parents[2]
SPELLINGS = pytest.mark.attack("shell rule spellings")  # counted in the attack suite (tests/support/attacks.py)
OUTSIDE = "/tmp/agentapps-elsewhere/x"  # a path outside every test project

# (class, shell arguments) that all run `git push`
GIT_PUSH: list[tuple[str, dict[str, Any]]] = [
    ("lists", {"command": "git push; true"}),
    ("lists", {"command": "true && git push"}),
    ("lists", {"command": "false || git push"}),
    ("lists", {"command": "git status | git push"}),
    ("lists", {"command": "echo hi\ngit push"}),
    ("lists", {"command": "git push &"}),
    ("lists", {"command": "(git push)"}),
    ("lists", {"command": "{ git push; }"}),
    ("lists", {"command": "if true; then git push; fi"}),
    ("lists", {"command": "while git push; do break; done"}),
    ("lists", {"command": "! git push"}),
    ("lists", {"command": "git push # comment"}),
    ("wrappers", {"command": "command git push"}),
    ("wrappers", {"command": "env git push"}),
    ("wrappers", {"command": "env -i -u HOME git push"}),
    ("wrappers", {"command": "exec git push"}),
    ("wrappers", {"command": "nice -n 5 git push"}),
    ("wrappers", {"command": "nice -5 git push"}),
    ("wrappers", {"command": "nohup git push"}),
    ("wrappers", {"command": "timeout -s KILL 5 git push"}),
    ("wrappers", {"command": "sudo -u root git push"}),
    ("wrappers", {"command": "setsid -f git push"}),
    ("wrappers", {"command": "builtin command git push"}),
    ("wrappers", {"command": "nice nohup timeout 5 env -- git push"}),
    ("wrappers", {"command": "command -p git push"}),
    ("wrappers", {"command": "time -p git push"}),
    # (issue 22's attack suite: wrapper spellings the earlier rounds did not try)
    ("wrappers", {"command": "stdbuf -o0 git push"}),
    ("wrappers", {"command": "nice --adjustment=5 git push"}),
    ("wrappers", {"command": "timeout -k 1 5 git push"}),
    ("wrappers", {"command": "exec -a name git push"}),
    ("wrappers", {"command": "sudo -E git push"}),
    ("wrappers", {"command": "setsid --wait git push"}),
    ("wrappers", {"command": "builtin exec git push"}),
    ("argv", {"argv": ["stdbuf", "-oL", "git", "push"]}),
    ("programs", {"command": "/usr/bin/git push"}),
    ("programs", {"command": "/usr/bin/../bin/git push"}),
    ("programs", {"command": "//usr//bin//git push"}),
    ("programs", {"command": "/usr/bin/env git push"}),
    ("programs", {"command": "/usr/bin/nohup /usr/bin/git push"}),
    ("quoting", {"command": "'git' push"}),
    ("quoting", {"command": "\"git\" \"push\""}),
    ("quoting", {"command": "g\\it pu\\sh"}),
    ("quoting", {"command": "git pu''sh"}),
    ("quoting", {"command": "git  \t push"}),
    ("git options", {"command": "git -C . push"}),
    ("git options", {"command": "git --no-pager push"}),
    ("git options", {"command": "git -c color.ui=never push"}),
    ("git options", {"command": "git --git-dir=.git --work-tree=. push"}),
    ("git options", {"command": "git --git-dir .git push"}),
    ("git options", {"command": "git -p --no-optional-locks push"}),
    ("git options", {"command": "git --literal-pathspecs -P push"}),
    ("shells", {"command": "sh -c 'git push'"}),
    ("shells", {"command": "bash -c \"git push\""}),
    ("shells", {"command": "sh -ec 'git status && git push'"}),
    ("shells", {"command": "bash -c \"sh -c 'git push'\""}),
    ("shells", {"command": "/bin/sh -o errexit -c 'git push' name"}),
    ("shells", {"command": "sh -c -e 'git push'"}),
    ("shells", {"command": "bash --norc -c 'git push'"}),
    ("lists", {"command": "git \\\npush"}),
    ("argv", {"argv": ["/usr/bin/env", "git", "push"]}),
    ("argv", {"argv": ["env", "-i", "git", "push"]}),
    ("argv", {"argv": ["sh", "-c", "git push"]}),
    ("argv", {"argv": ["git", "-C", ".", "push"]}),
    ("argv", {"argv": ["command", "/usr/bin/git", "push"]}),
    ("argv", {"argv": ["nohup", "sh", "-c", "true; git push"]}),
]

# (class, shell arguments) that cannot be reduced to plain words: they ask under ANY rule
UNREDUCED: list[tuple[str, dict[str, Any]]] = [
    ("unreduced", {"command": "eval 'git push'"}),
    ("unreduced", {"command": "$X push"}),
    ("unreduced", {"command": "X=git; $X push"}),
    ("unreduced", {"command": "${GIT:-git} push"}),
    ("unreduced", {"command": "sh -c \"$VAR\""}),
    ("unreduced", {"command": "git $(echo push)"}),
    ("unreduced", {"command": "git `echo push`"}),
    ("unreduced", {"command": "cat <(git push)"}),
    ("unreduced", {"command": "git $'push'"}),
    ("unreduced", {"command": "git -c 'alias.x=!git push' x"}),
    ("unreduced", {"command": "git -c alias.x=push x"}),
    ("unreduced", {"command": "git --config-env=alias.x=CMD x"}),
    ("unreduced", {"command": "git -c core.sshCommand=evil fetch"}),
    ("unreduced", {"command": "git --exec-path=./bin push"}),
    ("unreduced", {"command": f"git diff --output={OUTSIDE}"}),
    ("unreduced", {"command": f"git format-patch -o {OUTSIDE} HEAD"}),
    ("unreduced", {"command": f"git -C {OUTSIDE} status"}),
    ("unreduced", {"command": f"echo hi > {OUTSIDE}"}),
    ("unreduced", {"command": f"git status | tee {OUTSIDE}"}),
    ("unreduced", {"command": "source ./push.sh"}),
    ("unreduced", {"command": ". ./push.sh"}),
    ("unreduced", {"command": "sh ./push.sh"}),
    ("unreduced", {"command": "echo git push | sh"}),
    ("unreduced", {"command": "alias g=git"}),
    ("unreduced", {"command": "g() { git push; }; g"}),
    ("unreduced", {"command": "for c in push; do git $c; done"}),
    ("unreduced", {"command": "GIT_DIR=.git git status"}),
    ("unreduced", {"command": "env GIT_CONFIG_PARAMETERS=x git status"}),
    ("unreduced", {"command": "echo push | xargs git"}),
    ("unreduced", {"command": "find . -exec git push ;"}),
    ("unreduced", {"command": "git pu*"}),
    ("unreduced", {"command": "git status\rgit push"}),
    ("unreduced", {"command": "git push \""}),
    ("unreduced", {"command": "git pu\\\nsh"}),
    ("unreduced", {"command": "coproc git push"}),
    ("unreduced", {"command": "git config alias.x '!git push'"}),
    ("unreduced", {"command": "git submodule foreach 'git push'"}),
    ("unreduced", {"command": "git rebase --exec 'git push' HEAD~1"}),
    ("unreduced", {"command": "git fetch --upload-pack='git push' origin"}),
    ("unreduced", {"command": "time -o /tmp/t git status"}),
    ("unreduced", {"command": "cat <<EOF\n$(git push)\nEOF"}),
    ("unreduced", {"command": "cat <<-EOF\n\t$(git push)\n\tEOF"}),  # the grammar misses this `$(`
    ("unreduced", {"command": "sh <<'EOF'\ngit push\nEOF"}),
    ("unreduced", {"command": "env -S 'git push'"}),
    ("unreduced", {"command": "sudo -s git push"}),
    ("unreduced", {"argv": ["sh", "-c", "git $0", "push"]}),
    ("unreduced", {"argv": ["git", "-c", "alias.x=!touch P", "x"]}),
]

# plain commands: no `git push*` rule asks, and grants for them admit them
PLAIN: list[tuple[dict[str, Any], str]] = [
    ({"command": "git status"}, "git ran with: status\n"),
    ({"command": "git log --oneline"}, "git ran with: log --oneline\n"),
    ({"command": "npm test"}, "npm ran with: test\n"),
    ({"command": "git status | head -5"}, "git ran with: status\n"),
    ({"command": "git status && npm test"}, "git ran with: status\nnpm ran with: test\n"),
    ({"command": "git -C . status 2>&1"}, "git ran with: -C . status\n"),
    ({"command": "git diff --output=out.patch"}, "git ran with: diff --output=out.patch\n"),
    ({"command": "echo git push"}, "git push\n"),
    ({"argv": ["git", "status"]}, "git ran with: status\n"),
]
GRANT = "Bash(git:*) Bash(npm test) Bash(head:*) Bash(echo:*)"


def _shell_module() -> Any:
    spec = importlib.util.spec_from_file_location("shell_skill", REPO / "skills/builtins/shell.skill.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SHELL = _shell_module()


def view_of(args: dict[str, Any], root: Path) -> dict[str, Any]:
    """What trust rules and grants see of a shell call: the bundled shell skill's own policy view."""
    config = SimpleNamespace(project=root, cwd=root)
    view: dict[str, Any] = SHELL.policy_view(SimpleNamespace(globals=SimpleNamespace(config=config)), args)
    return view


def fires(rule: str, args: dict[str, Any], root: Path) -> bool:
    return Rule.parse(rule).fires(view_of(args, root))


@pytest.fixture
def fakes(project: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`git` and `npm` on PATH that print their arguments, so a test sees what really ran."""
    bin_dir = project.root / "bin"
    bin_dir.mkdir()
    for name in ("git", "npm"):
        (bin_dir / name).write_text(f'#!/bin/sh\necho "{name} ran with: $*"\n')
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return project


CALLER = """
frontmatter = {{"name": "caller", "allowed-tools": {allowed!r},
               "metadata": {{"params": {{"type": "object"}}, "trust": {{"rules": {rules!r}}}}}}}

async def run(ctx, args):
    return await ctx.manager.invoke("shell", args)
"""


def caller(project: Any, allowed: str = "shell", rules: str = "") -> None:
    project.write("caller.skill.py", CALLER.format(allowed=allowed, rules=rules))


def _ids(cases: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [f"{kind}:{json.dumps(args)[:60]}" for kind, args in cases]


@pytest.mark.parametrize(("kind", "args"), GIT_PUSH + UNREDUCED, ids=_ids(GIT_PUSH + UNREDUCED))
@SPELLINGS
def test_a_trust_rule_on_git_push_fires_on_every_spelling(project: Any, kind: str, args: dict[str, Any]) -> None:
    assert fires("shell(command=git push*)", args, project.root)


# Wrappers the view did not unwrap at first (findings of the attack suite): each runs `git push`, and
# a trust rule on `git push*` did not ask. A grant refuses them too (git push is not granted).
UNKNOWN_WRAPPERS = ["ionice -c3 git push", "chrt -o 0 git push", "taskset 1 git push", "flock /tmp/l git push",
                    "doas git push"]


@SPELLINGS
@pytest.mark.parametrize("line", UNKNOWN_WRAPPERS)
def test_a_trust_rule_on_git_push_fires_through_wrappers_the_view_does_not_know(project: Any, line: str) -> None:
    assert fires("shell(command=git push*)", {"command": line}, project.root)


@pytest.mark.parametrize("line", UNKNOWN_WRAPPERS)
def test_a_grant_for_git_status_refuses_git_push_through_those_wrappers(project: Any, line: str) -> None:
    policy = Policy.parse("Bash(git status)", "caller")
    decision = policy.decide(Candidate("shell", hidden=True, action=("command", "input")),
                             view_of({"command": line}, project.root))
    assert not decision.allowed


@pytest.mark.parametrize(("kind", "args"), UNREDUCED, ids=_ids(UNREDUCED))
@SPELLINGS
def test_what_cannot_be_reduced_fires_every_rule_and_is_admitted_by_no_grant(
    project: Any, kind: str, args: dict[str, Any]
) -> None:
    view = view_of(args, project.root)
    assert view["unreduced"]
    assert fires("shell(command=npm publish*)", args, project.root)
    assert fires("shell(command=rm *, $deny)", args, project.root)
    policy = Policy.parse(f"{GRANT} shell(command=*)", "caller")
    decision = policy.decide(Candidate("shell", hidden=True, action=("command", "input")), view)
    assert not decision.allowed
    assert "cannot be reduced to plain commands" in decision.reason and "\n" not in decision.reason


@pytest.mark.parametrize(("args", "stdout"), PLAIN)
def test_plain_commands_fire_no_rule_that_does_not_name_them(project: Any, args: dict[str, Any], stdout: str) -> None:
    view = view_of(args, project.root)
    assert "unreduced" not in view
    assert not fires("shell(command=git push*)", args, project.root)
    assert not fires("shell(command=rm *, $deny)", args, project.root)


# single commands after reduction: the pipeline asks for them through today's trust rule matching
PIPELINE_ASKS = [args for kind, args in GIT_PUSH if kind in ("wrappers", "programs", "quoting", "argv")][:8]


@pytest.mark.parametrize("args", PIPELINE_ASKS + [{"command": "sh -c 'git push'"}, {"command": "git -C . push"}])
@SPELLINGS
def test_the_pipeline_asks_before_a_respelled_git_push(fakes: Any, args: dict[str, Any]) -> None:
    caller(fakes, rules="shell(command=git push*)")
    with pytest.raises(DeniedError, match="needs approval"):
        fakes.invoke("caller", args)


@pytest.mark.parametrize("args", [{"command": "git push; true"}, {"command": "eval 'git push'"}])
def test_the_pipeline_asks_before_a_git_push_among_other_commands(fakes: Any, args: dict[str, Any]) -> None:
    caller(fakes, rules="shell(command=git push*)")
    with pytest.raises(DeniedError, match="needs approval"):
        fakes.invoke("caller", args)


@pytest.mark.parametrize(("args", "stdout"), PLAIN)
def test_plain_commands_run_under_a_git_push_rule_and_a_grant_for_them(
    fakes: Any, args: dict[str, Any], stdout: str
) -> None:
    caller(fakes, allowed=GRANT, rules="shell(command=git push*)")
    assert fakes.invoke("caller", args)["stdout"] == stdout


# (shell arguments, the reason's words) that `Bash(git:*)` and friends must refuse
SMUGGLED: list[tuple[dict[str, Any], str]] = [
    ({"command": "git -c 'alias.x=!touch P' x"}, "defines a git alias"),
    ({"command": "git -c alias.x='!touch P' x"}, "defines a git alias"),
    ({"command": "git -c core.pager='touch P' log"}, "may run commands"),
    ({"command": "git --config-env=core.pager=PAGER log"}, "may run commands"),
    ({"command": f"git diff --output={OUTSIDE}"}, "writes to a file outside the project"),
    ({"command": f"git diff --output {OUTSIDE}"}, "writes to a file outside the project"),
    ({"command": "git diff --output=../P"}, "writes to a file outside the project"),
    ({"command": f"git log --output-directory={OUTSIDE}"}, "writes to a file outside the project"),
    ({"command": f"git --git-dir={OUTSIDE} status"}, "points git outside the project"),
    ({"command": "git --exec-path=. status"}, "changes where git finds its commands"),
    ({"command": "git config alias.x '!touch P'"}, "changes what later git commands run"),
    ({"command": "git config --unset core.hooksPath"}, "changes what later git commands run"),
    ({"command": "git rebase -x 'touch P' HEAD~1"}, "runs a command given on the line"),
    ({"command": "git bisect run sh -c 'touch P'"}, "runs a command given on the line"),
    ({"command": "git pu\\\nsh"}, "backslash-newline"),
    ({"command": "git status; touch P"}, "command 2 of 2"),
    ({"command": "git status && touch P"}, "command 2 of 2"),
    ({"command": "git status | sh"}, "reads from its input"),
    ({"command": "git status > P"}, "command 2 of 2"),
    ({"command": "git $(touch P)"}, "command substitution"),
    ({"command": "sh -c 'git status; touch P'"}, "command 2 of 2"),
    ({"command": "env X=1 git status"}, "sets environment variables"),
    ({"command": "LD_PRELOAD=./x.so git status"}, "sets environment variables"),
    ({"command": "eval git status"}, "eval runs text as a command"),
    ({"command": "./git status"}, "does not match"),
    ({"argv": ["git", "-c", "alias.x=!touch P", "x"]}, "defines a git alias"),
    ({"argv": ["/usr/bin/env", "sh", "-c", "touch P"]}, "does not match"),
    ({"argv": ["sh", "-c", "git status; touch P"]}, "command 2 of 2"),
]


@pytest.mark.parametrize(("args", "why"), SMUGGLED)
@SPELLINGS
def test_a_grant_refuses_what_rides_along_with_a_granted_command(
    fakes: Any, args: dict[str, Any], why: str
) -> None:
    caller(fakes, allowed="Bash(git:*) Bash(git status)")
    with pytest.raises(DeniedError) as caught:
        fakes.invoke("caller", args)
    assert why in caught.value.message and "\n" not in caught.value.message
    assert not (fakes.root / "P").exists()


@pytest.mark.parametrize(("kind", "args"), GIT_PUSH, ids=_ids(GIT_PUSH))
@SPELLINGS
def test_a_grant_without_git_push_refuses_every_spelling_of_it(
    project: Any, kind: str, args: dict[str, Any]
) -> None:
    policy = Policy.parse("shell(command={git status,git log *,true,false,echo *,break})", "caller")
    decision = policy.decide(Candidate("shell", hidden=True, action=("command", "input")), view_of(args, project.root))
    assert not decision.allowed, decision.reason


def test_the_approval_question_shows_the_commands_the_rule_saw(fakes: Any) -> None:
    from agentapps.trust import ASK

    asked: list[str] = []

    def answer(question: str, timeout: float) -> str:
        asked.append(question)
        return "deny"

    caller(fakes, rules="shell(command=git push*)")
    token = ASK.set(answer)
    try:
        with pytest.raises(DeniedError, match="not approved"):
            fakes.invoke("caller", {"argv": ["/usr/bin/env", "-i", "git", "-C", ".", "push"]})
    finally:
        ASK.reset(token)
    shown = asked[0].split("which resolves to:", 1)[1]
    assert '"command": [\n' in shown and '"git push"' in shown and "env" not in shown


def test_the_view_says_why_a_line_cannot_be_reduced(project: Any) -> None:
    view = view_of({"command": "nohup git -c 'alias.x=!git push' x"}, project.root)
    assert list(view["command"]) == ["git x"]
    assert view["unreduced"] == "'git -c alias.x' defines a git alias, which can run any command"
    assert json.loads(json.dumps(view))["command"] == ["git x"]  # what the approval question prints


def test_parsing_a_command_line_is_the_only_thing_that_loads_the_grammar(project: Any) -> None:
    import subprocess
    import sys

    code = ("import sys, agentapps, agentapps.tools.policy, agentapps.tools.shellview\n"
            "print('tree_sitter' in sys.modules)\n"
            "from agentapps.io import command_view\n"
            "command_view('git status; true', None, '.')\n"
            "print('tree_sitter' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                            cwd=project.root, env=project.env(), timeout=60)
    assert result.stdout.split() == ["False", "True"]


RECORDER = "#!/bin/sh\nprintf '%s\\n' \"$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' \"$@\")\" >> calls.jsonl\n"
PIECES = ["rec", " ", " ", "a", "b", "'", '"', "\\", "$", "`", ";", "|", "&", "\n", "\t", "#", "*", "~", "{", "}",
          ",", "(", ")", "=", "-", "\\\n", "'x y'", '"p q"', "\\ ", "$(", "<", ">", "&&", "!", "\r",
          "env rec ", "command rec ", "nohup rec ", "sh -c 'rec ", "sh -c \"rec ", "exec rec ", "/usr/bin/env rec "]


def test_a_view_without_problems_names_exactly_the_commands_sh_runs(project: Any) -> None:
    """Differential: random lines run by the real /bin/sh with a recorder as the only program;
    whenever the view found no problem, every call the recorder saw is one of the view's commands."""
    import random
    import shlex
    import subprocess

    bin_dir = project.root / "bin"
    bin_dir.mkdir()
    (bin_dir / "rec").write_text(RECORDER)
    (bin_dir / "rec").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(project.home)}
    rng = random.Random(int(os.environ.get("SHELL_RULES_SEED", "22")))
    compared = 0
    for _ in range(int(os.environ.get("SHELL_RULES_LINES", "400"))):
        line = "rec " + "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 8)))
        if line.endswith("\\"):
            continue  # effective_command (agentapps/process/command.py) fails on it before any view
        view = view_of({"command": line}, project.root)
        commands = list(view["command"])
        if "unreduced" in view or not commands or not all(shlex.split(c)[0] == "rec" for c in commands):
            continue
        calls = project.root / "calls.jsonl"
        calls.unlink(missing_ok=True)
        subprocess.run(["/bin/sh", "-c", line], cwd=project.root, env=env, capture_output=True, timeout=10,
                       check=False)
        ran = [shlex.join(["rec", *json.loads(x)]) for x in calls.read_text().splitlines()] if calls.exists() else []
        assert not Counter(ran) - Counter(commands), line  # `||`, `&&` and syntax errors may run fewer
        compared += 1
    assert compared > 50
