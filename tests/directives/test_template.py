"""`metadata.template: jinja2`: sandboxed, strict, args only, rendered before directives, output literal."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentapps.directives.template import render
from agentapps.errors import ConfigError, DeniedError, LimitError

INJECTION = pytest.mark.attack("template injections")  # counted in the attack suite (tests/support/attacks.py)

ECHO_AGENT = '''
frontmatter = {"name": "agent", "metadata": {"params": {"type": "object"}}}

def run(ctx, args):
    return args["prompt"]
'''

# Until default.skill.md switches `directives` on for every skill, each test skill does.
HEADER = """---
name: t
metadata:
  directives: true
  template: jinja2
  params: {type: object}
---
"""
BODY_LINE = HEADER.count("\n") + 1


@pytest.fixture
def echo(project):
    project.write("agent.skill.py", ECHO_AGENT)
    return project


def run_template(project, body, args=None, header=HEADER):
    (project.root / "t.skill.md").write_text(header + body, encoding="utf-8")
    return project.invoke("t", args or {})


@pytest.mark.parametrize(
    ("body", "args", "expected"),
    [
        pytest.param("Hi {{ args.name }}!", {"name": "Ada"}, "Hi Ada!", id="variable"),
        pytest.param("{% for t in args.tags %}- {{ t | upper }}\n{% endfor %}", {"tags": ["a", "b"]},
                     "- A\n- B\n", id="loop-and-filter"),
        pytest.param("{% if args.loud %}LOUD{% else %}quiet{% endif %}", {"loud": False}, "quiet", id="condition"),
        pytest.param("{{ args.n + 1 }} {{ args.obj }}", {"n": 1, "obj": {"k": [1]}}, '2 {"k": [1]}',
                     id="non-strings-as-json"),
        pytest.param("{% if args.x is defined %}{{ args.x }}{% else %}none{% endif %}", {}, "none",
                     id="guarded-optional-arg"),
        pytest.param("{{ args.q }}", {"q": ":arg[secret] <!-- x -->"}, ":arg[secret] <!-- x -->",
                     id="template-output-is-never-expanded", marks=INJECTION),
        pytest.param("{{ args.fence }}\n:arg[name]", {"fence": "```", "name": "Ada"}, "```\nAda",
                     id="arg-cannot-open-a-code-block", marks=INJECTION),
        pytest.param("{% if args.greet %}Hello :arg[name]{% endif %}", {"greet": True, "name": "Ada"},
                     "Hello Ada", id="directives-written-in-the-template-expand"),
        pytest.param("{# a template comment #}kept\n", {}, "kept\n", id="template-comment-dropped"),
        pytest.param("{{ args.s | length }}", {"s": "x" * 10}, "10", id="filters-are-available"),
        pytest.param('{% for i in args["items"] %}{{ i }};{% endfor %}', {"items": ["a", "b"]}, "a;b;",
                     id="key-named-like-a-dict-method-by-item"),
        pytest.param("{% for i in args.items %}{{ i }};{% endfor %}{{ args.get }}", {"items": ["a"], "get": 1},
                     "a;1", id="key-named-like-a-dict-method-by-attribute"),
        pytest.param("{% if args.items is defined %}yes{% else %}no{% endif %}", {}, "no",
                     id="missing-key-named-like-a-dict-method-is-undefined"),
    ],
)
def test_template_renders_with_args_before_directives(echo, body, args, expected):
    assert run_template(echo, body, args) == expected


@pytest.mark.parametrize(
    ("body", "error", "line", "match"),
    [
        pytest.param("one\ntwo\n{{ args.nope }}\n", ConfigError, 3, "has no attribute 'nope'", id="undefined-arg"),
        pytest.param("{{ name }}", ConfigError, 1, "'name' is undefined", id="only-args-in-scope", marks=INJECTION),
        pytest.param("a\n{{ range(3) | list }}", ConfigError, 2, "'range' is undefined", id="no-range", marks=INJECTION),
        pytest.param("{{ lipsum() }}", ConfigError, 1, "'lipsum' is undefined", id="no-lipsum", marks=INJECTION),
        pytest.param("a\n{% if %}", ConfigError, 2, "syntax error", id="syntax-error"),
        pytest.param("a\n{% include 'x' %}", ConfigError, 2, "use the :inline", id="no-include", marks=INJECTION),
        pytest.param("x\n{{ args.__class__ }}", DeniedError, 2, "sandbox forbids", id="dunder-attribute", marks=INJECTION),
        pytest.param("{{ args.s.__class__.__mro__ }}", DeniedError, 1, "sandbox forbids", id="mro-escape", marks=INJECTION),
        pytest.param("{{ 'a' * 100000000 }}", DeniedError, 1, "longer than", id="huge-repeat", marks=INJECTION),
        pytest.param("{{ 9 ** 99999 }}", DeniedError, 1, "exponent", id="huge-power", marks=INJECTION),
        pytest.param("a\n{{ args.s + 1 }}", ConfigError, 2, r"failed: TypeError: can only concatenate str",
                     id="type-error-in-an-expression"),
        pytest.param("a\nb\n{{ 1 / 0 }}", ConfigError, 3, "failed: ZeroDivisionError", id="division-by-zero"),
        pytest.param("{{ args.s | int(1, 2, 3, 4) }}", ConfigError, 1, "failed: TypeError", id="bad-filter-call"),
    ],
)
def test_template_errors_name_file_and_line(echo, body, error, line, match):
    with pytest.raises(error, match=match) as info:
        run_template(echo, body, {"s": "x"})
    assert info.value.file == str(echo.root / "t.skill.md")
    assert info.value.line == BODY_LINE + line - 1
    assert str(info.value).startswith(f"{echo.root / 't.skill.md'}:{BODY_LINE + line - 1}: ")


def test_unknown_template_engine_is_a_config_error(echo):
    with pytest.raises(ConfigError, match="the only template engine is jinja2"):
        run_template(echo, "x", header=HEADER.replace("jinja2", "mustache"))


def test_without_template_jinja_syntax_is_plain_text(echo):
    assert run_template(echo, "{{ args.x }}", header=HEADER.replace("  template: jinja2\n", "")) == "{{ args.x }}"


@INJECTION
def test_output_over_the_limit_is_refused():
    with pytest.raises(LimitError, match="renders more than"):
        render("{% for i in args.n %}{{ args.s }}{% endfor %}", {"n": list(range(300)), "s": "x" * 5000},
               skill="t", file=None, first_line=1)


def test_rendered_values_are_held_by_placeholders_until_restored():
    rendered = render("a {{ args.x }} b", {"x": ":arg[y]"}, skill="t", file=None, first_line=1)
    assert ":arg[y]" not in rendered.text
    assert rendered.restore(rendered.text) == "a :arg[y] b"
    assert rendered.restore(f"[{rendered.text}]") == "[a :arg[y] b]"


@INJECTION
def test_an_argument_cannot_forge_a_placeholder():
    first = render("{{ args.x }}", {"x": "one"}, skill="t", file=None, first_line=1)
    forged = render("{{ args.x }}|{{ args.y }}", {"x": first.text, "y": "two"}, skill="t", file=None, first_line=1)
    assert forged.restore(forged.text) == f"{first.text}|two"


def test_error_messages_come_from_the_cli_as_one_line(echo):
    (echo.root / "t.skill.md").write_text(HEADER + "Hello {{ args.who }}\n")
    result = echo.cli("run", "t")
    assert result.returncode == 2
    expected = (
        f"error: {echo.root / 't.skill.md'}:{BODY_LINE}: Template of skill 't' failed: 'dict object' has no "
        "attribute 'who'. Only `args` is in scope; pass the missing argument or guard it with "
        "{% if args.x is defined %}."
    )
    assert result.stderr.strip().splitlines() == [expected]


@pytest.mark.parametrize("lookup", ['args["items"]', "args.items", "args.keys", 'args["values"]', "args.get"])
def test_a_missing_key_named_like_a_dict_method_is_an_undefined_variable(echo, lookup):
    (echo.root / "t.skill.md").write_text(HEADER + f"Notes:\n{{% for i in {lookup} %}}- {{{{ i }}}}\n{{% endfor %}}\n")
    result = echo.cli("run", "--dry-run", "t")
    assert result.returncode == 2, result.stderr
    name = lookup.split('"')[1] if '"' in lookup else lookup.split(".")[1]
    expected = (
        f"error: {echo.root / 't.skill.md'}:{BODY_LINE + 1}: Template of skill 't' failed: 'dict object' has no "
        f"attribute '{name}'. Only `args` is in scope; pass the missing argument or guard it with "
        "{% if args.x is defined %}."
    )
    assert result.stderr.strip().splitlines() == [expected]


@pytest.mark.parametrize("body", ["{{ args.__class__ }}", "{% for x in args.y %}", "{{ args.x | nofilter }}"])
def test_error_messages_end_with_a_single_full_stop(echo, body):
    (echo.root / "t.skill.md").write_text(HEADER + body + "\n")
    result = echo.cli("run", "--dry-run", "t")
    assert result.returncode in (2, 3)
    [line] = result.stderr.splitlines()
    assert line.endswith(".") and not line.endswith(".."), line


def test_the_guides_release_notes_example_renders_its_items(echo):
    (echo.root / "t.skill.md").write_text(HEADER + 'Notes:\n{% for item in args["items"] %}- {{ item }}\n{% endfor %}')
    result = echo.cli("run", "t", "--arg-json", '{"items": ["fast", "small"]}')
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Notes:\n- fast\n- small\n"


def test_jinja2_is_imported_only_when_a_skill_uses_a_template(echo):
    (echo.root / "t.skill.md").write_text(HEADER.replace("  template: jinja2\n", "") + "plain :arg[x]\n")
    code = (
        "import sys, json\nfrom agentapps.cli import main\n"
        "try:\n    main(['run', 't', '--x', '1'])\nexcept SystemExit:\n    pass\n"
        "print(json.dumps('jinja2' in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=echo.root, env=echo.env(),
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.stdout.splitlines() == ["plain 1", "false"], result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) is False
