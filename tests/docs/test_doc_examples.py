"""The guide's examples and quoted messages are what agentapps really does (each checked by running it)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def block_after(text: str, marker: str) -> str:
    """The fenced block that follows `<!-- test: MARKER -->`."""
    found = re.search(rf"<!-- test: {re.escape(marker)} -->\n```[a-z]*\n(.*?)```", text, re.DOTALL)
    assert found, f"no block marked {marker!r}"
    return found.group(1)


def fenced(text: str, after: str, lang: str) -> str:
    """The first ```LANG block after the heading or sentence `after`."""
    found = re.search(rf"{re.escape(after)}.*?```{lang}\n(.*?)```", text, re.DOTALL)
    assert found, f"no {lang} block after {after!r}"
    return found.group(1)


# -- check.md -----------------------------------------------------------------------------------

def emitted_check_codes() -> dict[str, str]:
    """code -> severity, for every finding agentapps/check/ can produce."""
    codes: dict[str, str] = {}
    for source in sorted((REPO / "agentapps" / "check").glob("*.py")):
        text = source.read_text()
        for severity, code in re.findall(r'"(error|warning)",\s*"([a-z]+(?:-[a-z]+)+)"', text):
            codes[code] = severity
        for first, second, severity in re.findall(
                r'code = "([a-z-]+)" if .*? else "([a-z-]+)"\n\s*return site\.at\([^,]+, "(error|warning)", code',
                text):
            codes[first] = codes[second] = severity
        named = re.search(r'^CODE = "([a-z]+(?:-[a-z]+)+)"$', text, re.MULTILINE)  # one code per module
        for severity in re.findall(r'"(error|warning)", CODE\b', text) if named else ():
            codes[named.group(1)] = severity
    return codes


def documented_check_codes() -> dict[str, str]:
    table = (DOCS / "check.md").read_text()
    return dict(re.findall(r"^\| `([a-z-]+)` \| (error|warning) \|", table, re.MULTILINE))


def test_the_check_table_has_one_row_per_emitted_code_with_its_severity():
    emitted = emitted_check_codes()
    assert len(emitted) >= 19  # the scan itself works
    assert documented_check_codes() == emitted


def test_the_check_example_prints_what_the_page_shows(project):
    page = (DOCS / "check.md").read_text()
    project.cli("init")
    project.write("skills/summarize.skill.md", block_after(page, "check-example-skill"))
    shown = block_after(page, "check-example-output").splitlines()
    assert shown[0] == "$ agentapps check"
    result = project.cli("check")
    assert result.returncode == 2
    assert result.stdout.splitlines() == shown[1:]


def test_nested_quantifiers_pass_check_and_lookahead_does_not(project):
    """check.md: `unsafe-pattern` is about what RE2 refuses, not about nested quantifiers."""
    project.cli("init")
    project.write("skills/p.skill.md", """
        ---
        name: p
        description: Patterns.
        metadata:
          params: { type: object, properties: { a: { type: string, pattern: "(a+)+$" } } }
        ---
        Hi.
        """)
    assert project.cli("check", "--strict").returncode == 0
    project.write("skills/p.skill.md", (project.root / "skills/p.skill.md").read_text().replace("(a+)+$", "(?=a)a"))
    result = project.cli("check", "--json")
    assert [f["code"] for f in json.loads(result.stdout)["findings"]] == ["unsafe-pattern"]


# -- agents.md: record and replay ---------------------------------------------------------------

def readme_summarize() -> str:
    return fenced((REPO / "README.md").read_text(), "## A skill in one minute", "markdown")


def test_the_replay_script_runs_the_readme_summarize_skill(project):
    project.write("skills/summarize.skill.md", readme_summarize())
    project.write("notes.md", "# Notes\n\nShip the release on Friday.\n")
    project.write("run.json", block_after((DOCS / "agents.md").read_text(), "replay-script"))
    result = project.cli("run", "--replay", "run.json", "summarize", "--path", "notes.md")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"bullets": ["First point.", "Second point.", "Third point."]}


# -- troubleshooting.md: every quoted message is the one agentapps prints -------------------------

READER = '''
frontmatter = {"name": "reader", "description": "Calls net.", "allowed-tools": "file-read"}

async def run(ctx, args):
    return await ctx.manager.invoke("net", {})
'''
NET = 'frontmatter = {"name": "net", "description": "Net."}\n\ndef run(ctx, args):\n    return 1\n'
WRITER = '''
frontmatter = {"name": "writer", "description": "Writes.", "allowed-tools": "file-write",
               "metadata": {"trust": "file-write"}}

async def run(ctx, args):
    return await ctx.manager.invoke("file-write", {"path": "o.txt", "content": "x"})
'''
SLOW = '''
---
name: slow
description: A pattern RE2 refuses.
metadata:
  params: { type: object, properties: { a: { type: string, pattern: "(?=a)a" } } }
---
Hi.
'''
NAN = 'frontmatter = {"name": "r", "description": "NaN."}\n\ndef run(ctx, args):\n    return {"n": float("nan")}\n'
SLEEPY = '''
import asyncio

frontmatter = {"name": "sleepy", "description": "Sleeps."}

async def run(ctx, args):
    await asyncio.sleep(30)
'''
CAS = '''
frontmatter = {"name": "cas", "description": "Loses a race.", "allowed-tools": "state-set"}

async def run(ctx, args):
    await ctx.manager.invoke("state-set", {"key": "counter", "value": 6, "expect": 5})
'''
SPENDER = "---\nname: spender\ndescription: Spends.\nmetadata:\n  model: { maxCost: 0.1 }\n---\nDo it.\n"
SPEND = {"turns": [{"text": "a", "code": "return 1", "usage": {"inputTokens": 10000, "outputTokens": 500}},
                   {"text": "b", "code": "return 2", "usage": {"inputTokens": 10000, "outputTokens": 500}},
                   {"text": "c"}]}
FAIL = 'frontmatter = {"name": "fail", "description": "Fails."}\n\ndef run(ctx, args):\n    raise ValueError("nope")\n'
TEXT_ENDING = {"turns": [{"text": "Reading it.", "code": "return 1"}, {"text": "Three bullets: ..."}]}
NO_AWS = {"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/nonexistent",
          "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}

# (files to write, command, extra environment, exit code)
SCENARIOS = [
    ({}, ["run", "helo"], {}, 2),
    ({"bad.skill.md": "---\nname: bad\ndescription: x: y\n---\nHi.\n"}, ["run", "bad"], {}, 2),
    ({}, ["run", "hello", "--nmae", "Ada"], {}, 2),
    ({}, ["run", "hello", "--name", "Ada", "extra"], {}, 2),
    ({}, ["run", "greet"], {}, 2),
    ({"ask.skill.md": "---\nname: ask\n---\nAsk :ar[x].\n"}, ["run", "ask"], {}, 2),
    ({"skills/reader.skill.py": READER, "skills/net.skill.py": NET}, ["run", "reader"], {}, 3),
    ({}, ["run", "file-read", "--path", "../x"], {}, 3),
    ({"skills/writer.skill.py": WRITER}, ["run", "writer"], {}, 3),
    ({"skills/chat.skill.md": "---\nname: chat\ndescription: Chats.\n---\nHi.\n"}, ["run", "--model", "x", "chat"],
     {**NO_AWS, "AWS_REGION": "us-east-1"}, 2),
    ({}, ["run", "chat"], NO_AWS, 2),
    ({"skills/sleepy.skill.py": SLEEPY}, ["run", "--timeout", "0.1", "sleepy"], {}, 4),
    ({"skills/slow.skill.md": SLOW}, ["run", "slow", "--a", "a"], {}, 2),
    ({"skills/r.skill.py": NAN}, ["run", "r"], {}, 1),
    ({}, ["run", "--args-file", "/dev/zero", "hello"], {}, 2),
    ({"a.json": b'{"name": "a\xff"}'}, ["run", "--args-file", "a.json", "hello"], {}, 2),
    ({"skills/spender.skill.md": SPENDER, "sp.json": json.dumps(SPEND)}, ["run", "--replay", "sp.json", "spender"],
     {}, 4),
    ({"skills/cas.skill.py": CAS}, ["run", "cas"], {}, 1),
    ({"fail.skill.py": FAIL}, ["run", "fail"], {}, 1),
    ({}, ["run", "greet", "--nmae", "Ada"], {}, 2),
    ({"skills/summarize.skill.md": readme_summarize(), "notes.md": "# Notes\n", "run.json": json.dumps(TEXT_ENDING)},
     ["run", "--replay", "run.json", "summarize", "--path", "notes.md"], {}, 1),
    ({"skills/summarize.tests.yaml": "cases:\n  - name: summarizes\n    args: {path: notes.md}\n"
      "    script: summarize.turns.json\n    expect:\n      schema: {type: object}\n"
      "  - name: refuses a bad flag\n    expected: {exit: ArgsError}\n"}, ["test", "summarize"], {}, 2),
    ({".agent-apps/compiled/summarize.skill.py": 'frontmatter = {"name": "summarize"}\n\ndef run(ctx, args):\n'
      "    return 1\n"}, ["compile", "summarize"], {}, 2),
]


ROOT = "/@ROOT@"  # the project folder, written /tmp/ts or /path in the guide
# Quoted in the guide but not reproduced here: a full disk, a 79-turn run, and a changed hub
# package (that one needs a git repository: tests/hub/test_add.py checks its message).
UNREPRODUCED = ("error: Session 's1' was not saved: No space left on device",
                "error: The conversation of the agent for 'triage' needs about 100,362 tokens",
                "error: …/.agent-apps/packages/team: Package 'team' was changed after it was installed")


def quoted_errors() -> list[tuple[str, str]]:
    """(page, quote) for every `error: ...` the guide quotes inline or as a line of a block."""
    found = []
    for page in [REPO / "README.md", REPO / "examples" / "README.md", *sorted(DOCS.glob("*.md"))]:
        text = page.read_text()
        quotes = re.findall(r"`(error: [^`\n]*)`", text) + re.findall(r"^(error: .*)$", text, re.MULTILINE)
        found += [(page.name, quote) for quote in quotes]
    return found


def said(quote: str, line: str) -> bool:
    """Whether `line` is what `quote` quotes, `...` or `…` standing for any text."""
    at = 0
    for piece in re.split(r"\.\.\.|…", quote.replace("/tmp/ts", ROOT).replace("/path", ROOT)):
        at = line.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return True


def test_every_quoted_message_is_what_agentapps_prints_with_the_exit_code_given(project):
    page = " ".join((DOCS / "troubleshooting.md").read_text().split())
    project.cli("init")
    printed = []
    for files, command, env, code in SCENARIOS:
        for name, content in files.items():
            path = project.root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content if isinstance(content, bytes) else content.lstrip("\n").encode())
        result = project.cli(*command, real_process="--timeout" in command, **env)  # its deadline ends the process
        assert result.returncode == code, (command, result.stderr)
        line = [x for x in result.stderr.splitlines() if x.startswith("error: ")][-1]
        printed.append(line.replace(str(project.root), ROOT))
        if "fail" in command or "summarize" in command or "--nmae" in command and "greet" in command:
            continue  # quoted on other pages only
        quoted = f"**`{printed[-1].replace(ROOT, '/tmp/ts')}`**"
        assert quoted in page, f"not quoted in troubleshooting.md: {line}"
        after = page[page.index(quoted):]
        assert re.search(r"\(exit (\d+)\)", after).group(1) == str(code), line  # type: ignore[union-attr]
    quotes = quoted_errors()
    assert len(quotes) > len(SCENARIOS)
    for where, quote in quotes:
        if not quote.startswith(UNREPRODUCED):
            assert any(said(quote, line) for line in printed), f"{where} quotes a message agentapps does not print: {quote}"


# -- compatibility.md: how foreign tool names map -------------------------------------------------

# token -> what compatibility.md says it becomes (None: nothing)
BASH_RULE = {"Bash": ["shell"], "Bash(*)": ["shell"], "Bash()": ["shell"], "Bash(git:*)": ["shell(command={git,git *})"],
             "Bash(npm run *)": ["shell(command=npm run *)"], "Bash(*test)": None, "Bash(* --help)": None,
             "Bash(git status; id)": None, "Bash(ls $HOME)": None, "Read(~/.ssh/*)": None, "Read(/etc/*)": None,
             "Read(../x)": None, "WebSearch": None, "TodoWrite": None}


def test_foreign_names_map_as_compatibility_says(project):
    page = (DOCS / "compatibility.md").read_text()
    assert "1. SPEC empty or exactly `*`: unrestricted `shell`" in page
    for token in BASH_RULE:
        assert f"`{token}`" in page, token
    project.write("tools/SKILL.md", f"""
        ---
        name: tools
        description: Foreign names.
        allowed-tools: {' '.join(BASH_RULE)}
        ---
        Hi.
        """)
    result = project.cli("describe", "tools", "--json")
    mapped = {m["name"]: m["mapsTo"] or None for m in json.loads(result.stdout)["foreignTools"]}
    assert mapped == BASH_RULE


FOLDER_SKILL = """
---
name: pdf-tool
description: Fill PDF forms.
allowed-tools: Read
---
Read references/forms.md first.
"""
READS_ITS_FOLDER = {"turns": [{"text": "Reading.", "code": [
    "return await ctx.manager.invoke('skill-file', {path: 'references/forms.md'})",
    "return await ctx.manager.invoke('file-list', {glob: '*'})"]}, {"text": "Done."}]}


def test_a_folder_skill_agent_may_call_skill_file_though_describe_shows_allowed_tools_as_written(project):
    page = " ".join((DOCS / "compatibility.md").read_text().split())
    assert "`agentapps describe` and `agentapps check` do not show `skill-file`" in page
    project.write("pdf-tool/SKILL.md", FOLDER_SKILL)
    project.write("pdf-tool/references/forms.md", "# Forms\n")
    project.write("run.json", json.dumps(READS_ITS_FOLDER))
    described = json.loads(project.cli("describe", "pdf-tool", "--json").stdout)
    assert described["allowed_tools"] == "Read"
    assert "skill-file" not in project.cli("check", "--json").stdout
    ran = project.cli("run", "--replay", "run.json", "pdf-tool")
    assert ran.returncode == 0, ran.stderr
    outcome = {line.split()[0]: line for line in ran.stderr.splitlines() if " invoke " in line}
    assert "skill-file" in outcome["ok"] and "file-list" in outcome["error"]  # only skill-file is added
    assert 'invoke("skill-file", {path: "references/forms.md"})' in project.cli("run", "--dry-run", "pdf-tool").stdout
    assert project.cli("run", "skill-file").returncode == 2


# -- prompts.md: what a dry run runs ------------------------------------------------------------

AUDIT = '''
import sys

frontmatter = {"name": "audit", "description": "Middleware that records the calls it wraps.",
               "allowed-tools": "state-set",
               "metadata": {"role": "middleware", "after": ["$pre-execute", "validate-args"], "before": ["$execute"]}}

async def run(ctx, args):
    await ctx.manager.invoke("state-set", {"key": "audited", "value": ctx.target.tool.name, "store": "file"})
    sys.stderr.write("audit: ran\\n")
    await ctx.manager.next()
'''
AUDITED = '''
frontmatter = {"name": "w", "description": "Writes a file.", "metadata": {"audit": True,
               "params": {"type": "object", "properties": {"n": {"type": "integer"}}}}}

def run(ctx, args):
    open("ran.txt", "w").write("ran")
    return args["n"]
'''


def test_a_dry_run_runs_the_middleware_for_real_but_not_the_skill(project):
    page = " ".join((DOCS / "prompts.md").read_text().split())
    assert "The `custom-directive-and-middleware` example's dry run still prints `timing: standup ok in N ms`." in page
    shutil.copytree(REPO / "examples" / "custom-directive-and-middleware", project.root / "standup",
                    ignore=shutil.ignore_patterns("sessions", "state", "runs", "cache", "__pycache__"))
    standup = project.cli("run", "--dry-run", "standup", cwd=project.root / "standup")
    assert standup.returncode == 0, standup.stderr
    assert re.search(r"^timing: standup ok in \d+ ms$", standup.stderr, re.MULTILINE)
    assert "Today is " in standup.stdout  # the :today[] directive skill ran

    project.write("skills/audit.skill.py", AUDIT)
    project.write("skills/w.skill.py", AUDITED)
    dry = project.cli("run", "--dry-run", "w", "--n", "3")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["chain"] == ["validate-allowed-tools", "validate-args", "audit", "trust",
                                               "execute"]  # no `returns`: no validate-returns
    assert "audit: ran" in dry.stderr  # the middleware ran, and so did the skill it called:
    assert project.cli("run", "state-get", "--key", "audited", "--store", "file").stdout == "w\n"
    assert not (project.root / "ran.txt").exists()
    assert project.cli("run", "--dry-run", "w", "--n", "x").returncode == 2
    logged = json.loads(project.cli("runs", "list", "--json").stdout)["runs"]
    assert [run["skill"] for run in logged] == ["state-get"]  # dry runs are not logged


def test_env_of_an_unset_or_empty_declared_variable_is_its_default_or_nothing(project):
    page = " ".join((DOCS / "prompts.md").read_text().split())
    assert "A declared variable that is unset **or empty** gives `default`, and with no `default` the empty string" in page
    project.write("envs.skill.md", """
        ---
        name: envs
        description: Reads variables.
        metadata:
          env: [DOC_UNSET, DOC_SET]
        ---
        A=[:env[DOC_UNSET]] B=[:env[DOC_UNSET]{default=d}] C=[:env[DOC_SET]] D=[:env[DOC_SET]{default=d}]
        """)
    empty = project.cli("run", "--dry-run", "envs", DOC_SET="")
    assert empty.returncode == 0, empty.stderr
    assert "A=[] B=[d] C=[] D=[d]" in empty.stdout
    shown = project.cli("run", "--dry-run", "envs", DOC_SET="value-v").stdout  # printed, so redacted
    assert "A=[] B=[d] C=[[redacted:DOC_SET]] D=[[redacted:DOC_SET]]" in shown


# -- running.md: the main skill's params ------------------------------------------------------------

MAIN = """
---
name: main
description: The project's main skill.
metadata:
  role: main
  params: { type: object, properties: { question: { type: string } }, required: [question] }
---
Answer :arg[question]
"""


def test_the_main_skill_takes_its_params_as_running_md_shows(project):
    project.write("main.skill.md", MAIN)
    lines = block_after((DOCS / "running.md").read_text(), "main-skill-args").splitlines()
    assert len(lines) == 4
    for line in lines:
        command, _, comment = line.partition("#")
        words = shlex.split(command)
        assert words[:2] == ["agentapps", "run"]
        result = project.cli("run", "--dry-run", *words[2:])  # the prompt, without calling a model
        if "exit 2" in comment:
            assert result.returncode == 2
            assert "error: Unknown runner option '--question'" in result.stderr
        else:
            assert result.returncode == 0, (line, result.stderr)
            assert "Answer What changed?" in result.stdout


# -- mcp.md: what the server advertises, and sends, per transport ----------------------------------

def _list_changed(project: Any, target: Any, name: str) -> tuple[bool, bool]:
    """(the server's advertised tools.listChanged, whether a skill added after listing was notified)."""
    import asyncio

    import mcp_types as types
    from mcp import Client

    async def session() -> tuple[bool, bool]:
        notified = asyncio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                notified.set()

        async with Client(target, message_handler=on_message) as client:
            advertised = bool(client.server_capabilities.tools.list_changed)
            await client.list_tools()
            project.write(f"{name}.skill.py", f'frontmatter = {{"name": "{name}", "description": "New."}}\n\n'
                                              "def run(ctx, args):\n    return 1\n")
            try:
                await asyncio.wait_for(notified.wait(), 8)
            except TimeoutError:
                return advertised, False
            return advertised, True

    return asyncio.run(session())


@pytest.mark.slow
def test_mcp_page_says_what_each_transport_advertises_and_sends(project):
    pytest.importorskip("mcp")
    from mcp import StdioServerParameters

    page = " ".join((DOCS / "mcp.md").read_text().split())
    stdio = StdioServerParameters(command=sys.executable, args=["-m", "agentapps", "mcp-server"],
                                  cwd=str(project.root), env=project.env())
    assert _list_changed(project, stdio, "fresh") == (True, True)
    assert "Both transports advertise `capabilities.tools.listChanged: true`." in page
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "agentapps", "mcp-server", "--transport", "http", "--port",
                               str(port)], cwd=project.root, env=project.env(), stdin=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP server did not come up"
                time.sleep(0.05)
        advertised, notified = _list_changed(project, f"http://127.0.0.1:{port}/mcp", "fresher")
    finally:
        server.terminate()
        server.communicate(timeout=10)
    assert (advertised, notified) == (True, True)
