"""Bad input and results JSON cannot say: one clear line and the right exit code, never a traceback.

Every case goes through the real CLI. With --json, stdout is always one valid JSON object.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# result expression -> (exit code, what the error line says, or the printed result)
RESULTS = {
    "a reference cycle": ("x = {'a': []}; x['a'].append(x); return x", 1, "result['a'][0] is the value itself again"),
    "a non-text key": ("return {1: 'one'}", 1, "result is an object with a int key (1)"),
    "a huge integer": ("return 10**5000", 1, "result is an integer of more than 4300 digits"),
    "NaN": ("return {'n': float('nan')}", 1, "result['n'] is nan, which is not a JSON number"),
    "Infinity": ("return [float('inf')]", 1, "result[0] is inf, which is not a JSON number"),
    "bytes": ("return b'raw'", 1, "result is bytes (decode them to text first)"),
    "a set": ("return {'tags': {'a'}}", 1, "result['tags'] is a set (return a list)"),
    "an object": ("return object()", 1, "result is a object object"),
    "deep nesting": ("x = []\nfor _ in range(10_000):\n    x = [x]\nreturn x", 1, "nested deeper than 256 levels"),
    "a tuple": ("return (1, 'two')", 0, [1, "two"]),
    "a lone surrogate": ("return 'half \\ud83d'", 0, "half \ufffd"),
}


@pytest.fixture
def results(project):
    for n, (name, (body, _, _)) in enumerate(RESULTS.items()):
        source = "".join(f"    {line}\n" for line in body.splitlines())
        project.write(f"r{n}.skill.py", f'frontmatter = {{"name": "r{n}"}}\n\ndef run(ctx, args):\n{source}')
    return project


@pytest.mark.parametrize("case", list(RESULTS), ids=list(RESULTS))
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_result_json_cannot_say_is_a_clear_error_or_a_defined_encoding(results, case, as_json):
    n = list(RESULTS).index(case)
    _, code, expected = RESULTS[case]
    result = results.cli("run", *(["--json"] if as_json else []), f"r{n}")
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    if as_json:
        out = json.loads(result.stdout)
        assert out["ok"] is (code == 0)
        if code == 0:
            assert out["result"] == expected
        else:
            assert out["result"] is None and expected in out["error"]["message"]
    elif code == 0:
        assert json.loads(result.stdout) == expected if not isinstance(expected, str) else (
            result.stdout == expected + "\n")
    else:
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"error: Skill 'r{n}' returned a result that is not JSON: ") and expected in line
        assert result.stdout == ""


def test_a_lone_surrogate_from_agent_code_is_printed_as_replacement(project):
    project.write("half.turns.json", json.dumps({"turns": [{"code": "ctx.manager.finish('😀 ok'.slice(0, 1))"}]}))
    project.write("half.skill.md", "---\nname: half\nmetadata:\n  model: {agent: agent-scripted, script: "
                                   "half.turns.json}\n---\nCut an emoji.\n")
    result = project.cli("run", "--json", "half")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["result"] == "\ufffd"  # replaced where it leaves the sandbox
    text = project.cli("run", "half")
    assert text.returncode == 0 and text.stdout == "\ufffd\n"


ECHO = '''
frontmatter = {"name": "echo", "metadata": {"params": {"type": "object", "properties": {"input": {"type": "string"}}}}}

def run(ctx, args):
    return args
'''


def _one_line(result, code: int) -> str:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    (line,) = result.stderr.splitlines()
    return line


def test_args_file_that_is_not_utf8(project):
    project.write("echo.skill.py", ECHO)
    (project.root / "bad.json").write_bytes(b'{"input": "\xff\xfe"}')
    line = _one_line(project.cli("run", "--args-file", "bad.json", "echo"), 2)
    assert line == "error: --args-file bad.json is not UTF-8 text (invalid byte at offset 11)."


def test_args_file_from_dev_zero_is_capped_not_read_forever(project):
    project.write("echo.skill.py", ECHO)
    line = _one_line(project.cli("run", "--args-file", "/dev/zero", "echo", timeout=20), 2)
    assert line == "error: --args-file /dev/zero holds more than 1 MiB; the limit for args is 1 MiB."


def test_args_file_nested_too_deep(project):
    project.write("echo.skill.py", ECHO)
    (project.root / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    line = _one_line(project.cli("run", "--args-file", "deep.json", "echo"), 2)
    assert line == "error: --args-file deep.json is nested too deeply to read."


def test_piped_stdin_that_is_not_utf8_or_too_large(project):
    project.write("echo.skill.py", ECHO)

    def run(stdin):
        return subprocess.run([sys.executable, "-m", "agentapps", "run", "echo"], cwd=project.root,
                              env=project.env(), stdin=stdin, capture_output=True, timeout=60, check=False)

    with open(project.root / "bad.txt", "wb") as out:
        out.write(b"ok \xff")
    with open(project.root / "bad.txt", "rb") as bad:
        result = run(bad)
    assert result.returncode == 2
    assert result.stderr.decode() == "error: stdin is not UTF-8 text (invalid byte at offset 3).\n"
    with open("/dev/zero", "rb") as zero:
        big = run(zero)
    assert big.returncode == 2 and big.stderr.decode() == "error: stdin holds more than 1 MiB; the limit for args is 1 MiB.\n"


@pytest.mark.parametrize("name", ["a" * 300, "A" * 300, "skill-" * 50])
def test_a_300_character_skill_name_is_a_usage_error(project, name):
    line = _one_line(project.cli("run", name), 2)
    assert line.startswith("error: No skill '") and "at most 64 characters" in line


@pytest.mark.parametrize("content", [b"\xff\xfe\x00\x01", b"[" * 100_000], ids=["not utf-8", "deeply nested"])
def test_a_replay_file_that_cannot_be_read_is_a_usage_error(project, content):
    project.write("ask.skill.md", "---\nname: ask\n---\nAsk.\n")
    (project.root / "bad.json").write_bytes(content)
    line = _one_line(project.cli("run", "-q", "--replay", "bad.json", "ask"), 2)
    assert line.startswith("error: ") and "bad.json" in line
    assert "not UTF-8 text" in line or "nested too deeply" in line


DIGITS = "9" * 5000
# frontmatter a YAML parser accepts but Python cannot hold or print -> (text, line of the bad value)
BAD_FRONTMATTER = {
    "a 5,000-digit integer": (f"description: x\nn: {DIGITS}\n", 3),
    "nested in metadata": (f"description: x\nmetadata:\n  a:\n    - 1\n    - b: -{DIGITS}\n", 6),
    "in flow style": (f"description: x\nmetadata: {{a: [{DIGITS}]}}\n", 3),
    "as a key": (f"description: x\nmetadata:\n  ? {DIGITS}\n  : 1\n", 4),
    "in hexadecimal": (f"description: x\nmetadata:\n  n: 0x{'f' * 5000}\n", 4),
    "a hexadecimal key": (f"description: x\nmetadata:\n  ? 0x{'f' * 5000}\n  : 1\n", 4),
    "month 13": ("description: x\nmetadata:\n  when: 2001-13-45\n", 4),
}


@pytest.mark.parametrize("case", list(BAD_FRONTMATTER), ids=list(BAD_FRONTMATTER))
def test_a_frontmatter_value_python_cannot_hold_names_its_file_and_line(project, case):
    text, line = BAD_FRONTMATTER[case]
    path = project.write("bad.skill.md", f"---\n{text}---\nSay hi.\n")
    project.write("other.skill.py", 'frontmatter = {"name": "other"}\n\ndef run(ctx, args):\n    return 1\n')
    bad = project.cli("run", "bad")
    assert bad.returncode == 2, bad.stderr
    (message,) = bad.stderr.splitlines()
    assert message.startswith(f"error: {path}:{line}: ") and "internal error" not in message
    other = project.cli("run", "other")  # one broken skill does not break the others
    assert (other.returncode, other.stdout) == (0, "1\n"), other.stderr


@pytest.mark.parametrize("literal", [f"0x{'f' * 5000}", DIGITS], ids=["hexadecimal", "decimal"])
def test_a_huge_integer_in_a_code_skill_frontmatter_is_a_usage_error(project, literal):
    path = project.write("big.skill.py", f'frontmatter = {{"metadata": {{"n": {literal}}}}}\n\n'
                                         "def run(ctx, args):\n    return 1\n")
    result = project.cli("run", "big")
    assert result.returncode == 2, result.stderr
    (message,) = result.stderr.splitlines()
    assert message.startswith(f"error: {path}:1: ") and "internal error" not in message
