"""The directive scanner: what is a directive, what stays literal, what is code, what is dropped."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from agentapps.directives.scanner import Directive, find, parse


def expand(text: str, render: Any) -> str:
    """Each directive replaced by `render(d)`, the rest as written (what the directives skill does)."""
    return "".join(render(seg) if isinstance(seg, Directive) else seg for seg in parse(text))


def show(d: Directive) -> str:
    return f"<{d.name}|{d.label}|{sorted(d.attrs.items())}>"


X = "<arg|x|[]>"
Y = "<arg|y|[]>"

# (markdown body, expected expand() output, expected line of each directive)
CASES = [
    # --- where a directive may start
    pytest.param("plain text", "plain text", [], id="text-without-directives-is-unchanged"),
    pytest.param("", "", [], id="empty-text"),
    pytest.param(":arg[x] tail", f"{X} tail", [1], id="directive-at-start-of-text"),
    pytest.param("head :arg[x]", f"head {X}", [1], id="directive-at-end-of-text"),
    pytest.param("(:arg[x]), :arg[y].", f"({X}), {Y}.", [1, 1], id="directive-after-punctuation"),
    pytest.param(":arg[x]:arg[y]", f"{X}{Y}", [1, 1], id="adjacent-directives"),
    pytest.param(":arg[x] and :arg[y]", f"{X} and {Y}", [1, 1], id="two-directives-on-one-line"),
    pytest.param("a\n\nb :arg[x]\nc :arg[y]", f"a\n\nb {X}\nc {Y}", [3, 4], id="lines-are-1-based"),
    # --- what is not a directive
    pytest.param("see http://example.com/a", "see http://example.com/a", [], id="url-stays"),
    pytest.param("http://h/p:q[r]", "http://h/p:q[r]", [], id="colon-after-letter-in-url-stays"),
    pytest.param(
        "at 10:30 or 10:am[x]", "at 10:30 or 10:am[x]", [], id="time-and-digit-colon-stay"
    ),
    pytest.param("a:b[c] _:b[c] ::b[c]", "a:b[c] _:b[c] ::b[c]", [], id="colon-after-word-char"),
    pytest.param("hi :smile: :wave:", "hi :smile: :wave:", [], id="emoji-shortcodes-stay"),
    pytest.param(":Arg[x] :aRg[x]", ":Arg[x] :aRg[x]", [], id="uppercase-names-do-not-match"),
    pytest.param(":1x[y] :-x[y]", ":1x[y] :-x[y]", [], id="name-must-start-with-a-letter"),
    pytest.param(":arg tail :arg{k=v}", ":arg tail :arg{k=v}", [], id="label-is-required"),
    pytest.param(":arg [x]", ":arg [x]", [], id="label-must-follow-the-name-directly"),
    pytest.param(":arg[x tail", ":arg[x tail", [], id="unclosed-label-is-literal"),
    pytest.param(":arg[x]{k=v tail", ":arg[x]{k=v tail", [], id="unclosed-attrs-is-literal"),
    pytest.param(":arg[x]{=v} :arg[x]{k=}", ":arg[x]{=v} :arg[x]{k=}", [], id="malformed-attrs"),
    pytest.param(':arg[x]{k="v"w}', ':arg[x]{k="v"w}', [], id="attrs-need-separating-space"),
    # --- escapes
    pytest.param(r"\:arg[x]", ":arg[x]", [], id="escaped-colon-becomes-literal-colon"),
    pytest.param(r"\\:arg[x]", r"\\:arg[x]", [], id="colon-after-backslash-stays-as-written"),
    pytest.param(r"a \* :arg[x]", rf"a \* {X}", [1], id="other-escapes-are-kept-verbatim"),
    # --- labels
    pytest.param(":session-history[]", "<session-history||[]>", [1], id="empty-label"),
    pytest.param(":x[a [b] c]", "<x|a [b] c|[]>", [1], id="nested-brackets-in-label"),
    pytest.param(r":x[a \] b \[c]", "<x|a ] b [c|[]>", [1], id="escapes-in-label-are-unescaped"),
    pytest.param(":x[two\nlines]", "<x|two\nlines|[]>", [1], id="label-may-span-lines"),
    pytest.param(":x[a\n\nb]", ":x[a\n\nb]", [], id="label-cannot-cross-a-blank-line"),
    # --- attributes
    pytest.param(
        ':arg[x]{default="a = b" k=v}',
        "<arg|x|[('default', 'a = b'), ('k', 'v')]>",
        [1],
        id="double-quoted-value-with-spaces-and-equals",
    ),
    pytest.param(
        ":arg[x]{q='two words' r=''}",
        "<arg|x|[('q', 'two words'), ('r', '')]>",
        [1],
        id="single-quoted-values",
    ),
    pytest.param(
        r':arg[x]{q="say \"hi\" \\o/"}',
        """<arg|x|[('q', 'say "hi" \\\\o/')]>""",
        [1],
        id="backslash-escapes-inside-quotes",
    ),
    pytest.param(
        ":arg[dir]{default=/tmp required}",
        "<arg|dir|[('default', '/tmp'), ('required', '')]>",
        [1],
        id="unquoted-value-and-bare-key",
    ),
    pytest.param(
        ":arg[x]{ a = 1\n  b=2 }",
        "<arg|x|[('a', '1'), ('b', '2')]>",
        [1],
        id="whitespace-and-newlines-around-attrs",
    ),
    pytest.param(":arg[x] {k=v}", f"{X} {{k=v}}", [1], id="attrs-must-follow-the-label-directly"),
    # --- code is verbatim
    pytest.param(
        "```python\n:arg[x]\n```\n:arg[y]",
        f"```python\n:arg[x]\n```\n{Y}",
        [4],
        id="backtick-fence-with-info-string",
    ),
    pytest.param("~~~\n:arg[x]\n~~~\n:arg[y]", f"~~~\n:arg[x]\n~~~\n{Y}", [4], id="tilde-fence"),
    pytest.param(
        "text\n```\n:arg[x]\n\n:arg[y]\n",
        "text\n```\n:arg[x]\n\n:arg[y]\n",
        [],
        id="unclosed-fence-runs-to-end-of-document",
    ),
    pytest.param(
        "para\n\n    :arg[x]\n\n:arg[y]",
        f"para\n\n    :arg[x]\n\n{Y}",
        [5],
        id="indented-code-block",
    ),
    pytest.param(
        "- item\n\n  ```\n  :arg[x]\n  ```\n> ```\n> :arg[x]\n> ```",
        "- item\n\n  ```\n  :arg[x]\n  ```\n> ```\n> :arg[x]\n> ```",
        [],
        id="fences-inside-list-and-blockquote",
    ),
    pytest.param("`:arg[x]` :arg[y]", f"`:arg[x]` {Y}", [1], id="single-backtick-code-span"),
    pytest.param(
        "``a ` :arg[x]`` :arg[y]",
        f"``a ` :arg[x]`` {Y}",
        [1],
        id="single-backtick-inside-double-backtick-span",
    ),
    pytest.param("`:arg[x]", f"`{X}", [1], id="unclosed-backtick-run-is-literal"),
    pytest.param("``:arg[x]` end", f"``{X}` end", [1], id="runs-of-different-length-do-not-pair"),
    pytest.param(r"\`:arg[x]`", rf"\`{X}`", [1], id="escaped-backtick-opens-no-span"),
    pytest.param("`a\n:arg[x]`", "`a\n:arg[x]`", [], id="code-span-may-span-lines"),
    pytest.param("`a\n\n:arg[x]`", f"`a\n\n{X}`", [3], id="code-span-cannot-cross-a-blank-line"),
    pytest.param(
        "<div>\n:arg[x]\n</div>\n\n:arg[y]",
        f"<div>\n:arg[x]\n</div>\n\n{Y}",
        [5],
        id="raw-html-block",
    ),
    # --- comments are dropped outside code
    pytest.param("a <!-- note --> b", "a  b", [], id="inline-comment-is-dropped"),
    pytest.param("a <!-- x\ny --> :arg[y]", f"a  {Y}", [2], id="multi-line-comment-in-paragraph"),
    pytest.param(
        "<!-- hidden :arg[x] -->\nt :arg[y]",
        f"\nt {Y}",
        [2],
        id="comment-containing-a-directive-is-dropped-entirely",
    ),
    pytest.param(
        "<!--\n:arg[x]\n\n```\n:arg[x]\n```\n-->\n:arg[y]",
        f"\n{Y}",
        [8],
        id="comment-block-spanning-blank-lines-and-fences",
    ),
    pytest.param("<!---->x<!-->y", "xy", [], id="empty-comments"),
    pytest.param(
        "```\n<!-- keep -->\n```", "```\n<!-- keep -->\n```", [], id="comment-in-fence-is-kept"
    ),
    pytest.param("`<!-- keep -->`", "`<!-- keep -->`", [], id="comment-in-code-span-is-kept"),
    pytest.param(r"\<!-- keep -->", r"\<!-- keep -->", [], id="escaped-comment-is-kept"),
    pytest.param("a <!-- b :arg[x]", f"a <!-- b {X}", [1], id="unclosed-comment-is-literal"),
    pytest.param(
        "a <!-- x\n\n:arg[y] -->",
        f"a <!-- x\n\n{Y} -->",
        [3],
        id="inline-comment-cannot-cross-a-blank-line",
    ),
    # --- markdown containers
    pytest.param(
        "- one :arg[x]\n- :arg[y]{n=1}\n  1. deep :arg[x]",
        f"- one {X}\n- <arg|y|[('n', '1')]>\n  1. deep {X}",
        [1, 2, 3],
        id="directives-in-lists",
    ),
    pytest.param("> q :arg[x]\n> > :arg[y]", f"> q {X}\n> > {Y}", [1, 2], id="in-blockquotes"),
    pytest.param("# Title :arg[x]\nSub\n===", f"# Title {X}\nSub\n===", [1], id="in-headings"),
    pytest.param("**:arg[x]** *:arg[y]*", f"**{X}** *{Y}*", [1, 1], id="inside-emphasis"),
    # --- text around
    pytest.param(
        'héllo :arg[ünï]{k="ça va"} — 日本:arg[y]',
        "héllo <arg|ünï|[('k', 'ça va')]> — 日本:arg[y]",
        [1],
        id="unicode-around-and-inside-and-cjk-letter-before-colon-refuses",
    ),
    pytest.param("é:arg[x]", "é:arg[x]", [], id="non-ascii-letter-before-colon-refuses"),
    pytest.param(
        "a\r\n```\r\n:arg[x]\r\n```\r\n:arg[y]\r\n",
        f"a\r\n```\r\n:arg[x]\r\n```\r\n{Y}\r\n",
        [5],
        id="crlf-line-endings",
    ),
]


@pytest.mark.parametrize(("text", "expanded", "lines"), CASES)
def test_expand_table(text: str, expanded: str, lines: list[int]) -> None:
    assert expand(text, show) == expanded
    assert [d.line for d in find(text)] == lines


def test_parse_splits_text_and_directives_with_exact_raw_source() -> None:
    assert parse("a :x[l]{k=v  j} b\n") == [
        "a ",
        Directive("x", "l", {"k": "v", "j": ""}, 1, ":x[l]{k=v  j}"),
        " b\n",
    ]


def test_parse_of_directive_only_text_has_no_empty_strings() -> None:
    assert parse(":x[]") == [Directive("x", "", {}, 1, ":x[]")]
    assert parse("") == []


def test_first_line_shifts_reported_lines_for_the_frontmatter() -> None:
    body = "intro\n\n```\n:no[x]\n```\n:arg[x]"
    assert [d.line for d in find(body, first_line=5)] == [10]


def test_last_duplicate_attribute_wins() -> None:
    assert dict(find(":x[]{k=1 k=2}")[0].attrs) == {"k": "2"}


def test_rendered_text_is_never_scanned_again() -> None:
    injected = ":arg[secret] <!-- c --> \\: `x`"
    calls: list[str] = []

    def render(d: Directive) -> str:
        calls.append(d.label)
        return injected

    assert expand("say :arg[x] then :arg[y]", render) == f"say {injected} then {injected}"
    assert calls == ["x", "y"]


def test_directives_are_immutable_and_hashable() -> None:
    d = find(":x[l]{k=v}")[0]
    with pytest.raises(TypeError):
        d.attrs["k"] = "w"  # type: ignore[index]
    assert d in {d}


def test_comments_outside_code_are_dropped_and_every_other_byte_is_kept() -> None:
    text = "a \\:x[y] <!-- c --> `<!-- k -->`\r\n```\n<!-- k -->\n```\n<!-- gone\n-->\nz :x[y]"
    # in a code span and a fence a comment is code; outside, inline or across lines, it goes
    assert expand(text, show) == "a :x[y]  `<!-- k -->`\r\n```\n<!-- k -->\n```\n\nz <x|y|[]>"


PATHOLOGICAL = {
    "unclosed-labels": ":a[" * 30_000,
    "deep-balanced-labels": ":a[" * 15_000 + "]" * 15_000,
    "unclosed-backtick-runs-of-growing-length": " ".join("`" * k for k in range(1, 450)),
    "unclosed-comments": "<!-- " * 20_000,
    "attrs-that-fail-at-the-end": ":a[]{a b=:a[]{a b=" * 6_000,
    "quoted-attrs-that-never-close": ":a[]{k=\":a[]{k='" * 6_000,
    "one-paragraph-of-short-lines": "x :a[y]\n" * 12_000,
}


@pytest.mark.parametrize("text", list(PATHOLOGICAL.values()), ids=list(PATHOLOGICAL))
def test_pathological_100_kib_inputs_complete(text: str) -> None:
    assert isinstance(parse(text), list)


def test_a_100_kib_skill_body_parses() -> None:
    block = (
        "# Step :arg[n]\n\nSummarize :arg[text]{required} in :arg[words]{default=100} words.\n"
        "<!-- note -->\n\n```bash\necho :not[this]\n```\n\n- keep `:code[x]` and (:tone[x]{a='b c'})\n\n"
    )
    body = block * (100 * 1024 // len(block) + 1)
    assert len(body) >= 100 * 1024
    found = find(body)
    assert len(found) == 4 * body.count("# Step")
    assert not any(d.name in ("not", "code") for d in found)


def test_importing_the_scanner_does_not_import_markdown_it() -> None:
    code = "import sys, agentapps.directives.scanner; print('markdown_it' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


from hypothesis import example, given, settings
from hypothesis import strategies as st

PIECES = [":arg[x]", ":a[", "]", "[", "{k=v}", "{", "}", "\n", "\n\n", "# ", "- ", "> ", "   ", "\\:", ":",
          "text", " ", "=", "\"", "'", ":tone[a b]{q='1 2'}", "***", "1. ", "---\n", "\r\n", "|", "`", "``", "`x`",
          "` :arg[x] `", "<!--", "-->", "<!-- c -->", "<!-- :arg[x] -->", "<!-->", "    ", "```", "\n   <!-- "]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
@example(":arg[x\n\ny]")  # a label across two paragraphs is no directive
@example(":a[x\n# y]")
@example("a :b[x\n- y]")
@example(":a[x]{k=1\n\nz=2}")
@example(":a[x\ny] in one paragraph")
@example("`a\n\n:arg[x] b`")  # a code span across two paragraphs is none
@example("- `a\n- :arg[x]`")
@example("<!-- note -->\nRead :arg[x]{k=1} now.\n")  # a comment block before the prompt
@example("<!-- a\n:arg[x] -->\n:arg[y]")
@example("<!-- unclosed\n\n:arg[x]")  # an unclosed comment makes the rest raw HTML
@example("a\n<!-- c --> :arg[x]\n`b\n<!-- -->`")
@example("<!-- Run offline:\n     agentapps run x -->\nRead :arg[path].\n")  # a leading comment hides its indent
@example("- a\n  <!-- x\n\n:arg[y] -->")  # a list item ends the comment's HTML block first
@example("- \n   <!-- \n-->\n")
@example("<!-->\n    <!-->")  # `<!-->` closes itself: the indented line after it is code
def test_text_without_code_or_html_but_comments_parses_the_same_without_the_markdown_parser(text: str) -> None:
    from agentapps.directives import scanner

    if not scanner._comments_closed(text) or scanner._BLOCKY.search(scanner._LEADING_COMMENT.sub("~", text)):
        return  # the block parse is taken anyway

    starts = [0, *(m.end() for m in scanner._NEWLINE.finditer(text))]

    def line_at(offset: int) -> int:
        return scanner.bisect.bisect_right(starts, offset) - 1 + 1

    with_blocks = scanner._scan_units(text, scanner._units(text, starts), line_at)[0]
    assert parse(text) == with_blocks


def test_a_prompt_without_code_or_html_is_scanned_without_importing_markdown_it() -> None:
    code = ("import sys; from agentapps.directives.scanner import find\n"
            "found = find('<!-- Run it:\\n     agentapps run t -->\\n# Task\\n\\nSummarise :arg[path]{required}.\\n\\n"
            "- in :arg[words] words\\n')\n"
            "print(len(found), 'markdown_it' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "2 False"
