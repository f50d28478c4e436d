"""Pure scanner for `:name[label]{attrs}` text directives in markdown prose (no I/O, no skills)."""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeAlias

_NEWLINE = re.compile(r"\r\n?|\n")  # markdown-it counts lines the same way
_SPECIAL = re.compile(r"[\\`<:]")
# What can open a verbatim block: a code fence, raw HTML, or indented code (four spaces or a tab,
# at a line's start or after a list or quote marker). An HTML comment is no such block once it is
# closed: a block that starts with a closed comment is scanned like prose (see `_units`).
_BLOCKY = re.compile(r"<(?!!--)|\t|```|~~~| {4}")
# A closed comment that opens the text (after at most three spaces) is an HTML block whatever it
# holds: what is inside it (an indented example command, a fence) opens no block of its own. (Not
# so further down, where a list item or quote may end the block first. `-->` is looked for from
# the `--` of `<!--` on, as the scanner does: `<!-->` closes itself.)
_LEADING_COMMENT = re.compile(r"\A {0,3}<!(?=--).*?-->", re.DOTALL)
_NAME = re.compile(r"[a-z][a-z0-9-]*")
_TICKS = re.compile(r"`+")
_BRACKET = re.compile(r"\\.|[\[\]]", re.DOTALL)
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")  # a backslash before ASCII punctuation
_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_WS = re.compile(r"\s*")
_KEY = re.compile(r"[A-Za-z_:][A-Za-z0-9_.:-]*")
_EQ = re.compile(r"[ \t]*=[ \t]*")
# Possessive quantifiers keep every attempt linear in what it reads.
_VALUE = re.compile(r""""((?:[^"\\]|\\.)*+)"|'((?:[^'\\]|\\.)*+)'|([^\s"'=<>`{}]++)""", re.DOTALL)


@dataclass(frozen=True)
class Directive:
    """One `:name[label]{attrs}` directive as written in the source."""

    name: str
    label: str
    attrs: Mapping[str, str] = field(hash=False)
    line: int
    raw: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "attrs", MappingProxyType(dict(self.attrs)))


Segment: TypeAlias = str | Directive


def parse(text: str, *, first_line: int = 1) -> list[Segment]:
    """Split `text` into literal text and directives.

    HTML comments outside code are dropped; code (fences, indented code, raw HTML blocks and
    inline code spans) is copied verbatim and never scanned; `\\:` outside code becomes `:`.
    Directive lines count from `first_line` (the line the body starts at in its file).
    """
    return _scan(text, first_line)


def find(text: str, *, first_line: int = 1) -> list[Directive]:
    """Only the directives of `text`, in source order."""
    return [seg for seg in parse(text, first_line=first_line) if isinstance(seg, Directive)]


def _scan(text: str, first_line: int) -> list[Segment]:
    starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]

    def line_at(offset: int) -> int:
        return bisect.bisect_right(starts, offset) - 1 + first_line

    if not _SPECIAL.search(text):
        return [text] if text else []
    if _comments_closed(text) and not _BLOCKY.search(_LEADING_COMMENT.sub("~", text)):
        # Nothing markdown could make a verbatim block (no fence, HTML but closed comments, or
        # indented code): block
        # boundaries then only keep a code span or a directive from spanning two blocks, and one
        # that spans no line break cannot. So the whole text is one unit, with no markdown parse
        # (importing markdown_it took 65-87 ms, -X importtime, 2026-11-27, load 5.6), unless
        # something did span a line break.
        out, crossed = _scan_units(text, [(0, len(text), False)], line_at)
        if not crossed:
            return out
    return _scan_units(text, _units(text, starts), line_at)[0]


def _comments_closed(text: str) -> bool:
    """Every `<!--` has a `-->` after it (an unclosed one makes the rest of the text a raw block)."""
    last = text.rfind("<!--")
    return last < 0 or text.find("-->", last + 2) >= 0


def _scan_units(text: str, units: list[tuple[int, int, bool]], line_at: Callable[[int], int]) -> tuple[list[Segment], bool]:
    """The segments of `text` cut into `units`, and whether a code span or directive in them spans
    a line break."""
    out: list[Segment] = []
    buf: list[str] = []  # literal text not yet flushed to `out`
    crossed = False
    for begin, end, verbatim in units:
        if verbatim or not _SPECIAL.search(text, begin, end):
            buf.append(text[begin:end])
        else:
            prose = _Prose(text[begin:end], begin, line_at)
            prose.scan(buf, out)
            crossed = crossed or prose.crossed
    _flush(buf, out)
    return out, crossed


def _flush(buf: list[str], out: list[Segment]) -> None:
    if joined := "".join(buf):
        out.append(joined)
    buf.clear()


@functools.lru_cache(maxsize=1)
def _block_parser() -> Any:
    """One block-level parser per process, built on first use (markdown_it is imported only then)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").disable(["inline", "text_join"])


def _units(text: str, starts: list[int]) -> list[tuple[int, int, bool]]:
    """Cut `text` into (begin, end, verbatim) spans along markdown block boundaries.

    Each paragraph or heading is its own prose unit so that code spans and labels cannot reach
    into the next block, as in CommonMark; code and raw HTML blocks are verbatim units.
    """

    blocks: list[tuple[int, int, bool]] = []
    for tok in _block_parser().parse(text):
        if tok.map is None:
            continue
        if tok.type in ("fence", "code_block"):
            blocks.append((tok.map[0], tok.map[1], True))
        elif tok.type == "html_block":
            # A block that starts with a closed comment is scanned, so the comment gets dropped.
            body = tok.content.lstrip()
            blocks.append((tok.map[0], tok.map[1], not (body.startswith("<!--") and "-->" in body)))
        elif tok.type == "inline":
            blocks.append((tok.map[0], tok.map[1], False))

    def offset(line: int) -> int:
        return starts[line] if line < len(starts) else len(text)

    units: list[tuple[int, int, bool]] = []
    line = 0
    for first, last, verbatim in sorted(blocks):
        first = max(first, line)
        if first > line:
            units.append((offset(line), offset(first), False))
        if last > first:
            units.append((offset(first), offset(last), verbatim))
        line = max(line, last)
    if offset(line) < len(text):
        units.append((offset(line), len(text), False))
    return units


class _Prose:
    """Scans one prose unit; every lookahead is cached so the whole pass stays linear."""

    def __init__(
        self, text: str, base: int, line_at: Callable[[int], int]
    ) -> None:
        self.text = text
        self.base = base
        self.line_at = line_at
        self._closers: dict[int, int] | None = None  # "[" offset -> matching "]" offset
        self._ticks: dict[int, list[int]] | None = None  # run length -> run starts
        self._comment_end = (len(text) + 1, -1)  # (searched from, first "-->" found)
        self._dead: set[int] = set()  # attribute positions already known to lead nowhere
        self.crossed = False  # a code span, directive or inline comment found spans a line break

    def scan(self, buf: list[str], out: list[Segment]) -> None:
        text, i = self.text, 0
        while (m := _SPECIAL.search(text, i)) is not None:
            j = m.start()
            buf.append(text[i:j])
            char = text[j]
            if char == "\\":
                escaped = text[j + 1 : j + 2]
                if escaped and escaped in _PUNCT:
                    buf.append(":" if escaped == ":" else text[j : j + 2])
                    i = j + 2
                else:
                    buf.append("\\")
                    i = j + 1
            elif char == "`":
                i = self._code_span(j, buf)
            elif char == "<":
                i = self._comment(j, buf)
            elif (found := self._directive(j)) is not None:
                _flush(buf, out)
                out.append(found)
                self.crossed = self.crossed or "\n" in found.raw or "\r" in found.raw
                i = j + len(found.raw)
            else:
                buf.append(":")
                i = j + 1
        buf.append(text[i:])

    def _code_span(self, j: int, buf: list[str]) -> int:
        if self._ticks is None:
            self._ticks = {}
            for run in _TICKS.finditer(self.text):
                self._ticks.setdefault(run.end() - run.start(), []).append(run.start())
        opener_end = _skip(_TICKS, self.text, j)
        width = opener_end - j
        candidates = self._ticks.get(width, [])
        k = bisect.bisect_left(candidates, opener_end)
        end = candidates[k] + width if k < len(candidates) else opener_end  # unclosed: literal
        span = self.text[j:end]
        self.crossed = self.crossed or "\n" in span or "\r" in span
        buf.append(span)
        return end

    def _comment(self, j: int, buf: list[str]) -> int:
        if not self.text.startswith("<!--", j):
            buf.append("<")
            return j + 1
        searched_from, close = self._comment_end
        if searched_from > j + 2 or (close != -1 and close < j + 2):
            close = self.text.find("-->", j + 2)  # from j + 2 so `<!-->` and `<!--->` close
            self._comment_end = (j + 2, close)
        if close == -1:
            buf.append("<")
            return j + 1
        if not self.crossed and ("\n" in self.text[j:close] or "\r" in self.text[j:close]):
            # only a comment opening the text (an HTML block) may span lines whatever they hold;
            # elsewhere a blank line or the end of a list item may end it first: the block parse decides
            self.crossed = self.base != 0 or j > 3 or bool(self.text[:j].strip(" "))
        return close + 3

    def _directive(self, j: int) -> Directive | None:
        text = self.text
        if j > 0 and (text[j - 1].isalnum() or text[j - 1] in ":_\\"):
            return None  # `http://`, `10:30`, `a:b`, `:smile:`
        name = _NAME.match(text, j + 1)
        if name is None or not text.startswith("[", name.end()):
            return None
        opener = name.end()
        closer = self._bracket_closers().get(opener)
        if closer is None:
            return None
        end, attrs = closer + 1, dict[str, str]()
        if text.startswith("{", end):
            parsed = self._attrs(end)
            if parsed is None:
                return None
            attrs, end = parsed
        label = _ESCAPED.sub(r"\1", text[opener + 1 : closer])
        return Directive(name.group(), label, attrs, self.line_at(self.base + j), text[j:end])

    def _bracket_closers(self) -> dict[int, int]:
        if self._closers is None:
            self._closers, stack = {}, []
            for m in _BRACKET.finditer(self.text):
                if m.group() == "[":
                    stack.append(m.start())
                elif m.group() == "]" and stack:
                    self._closers[stack.pop()] = m.start()
        return self._closers

    def _attrs(self, brace: int) -> tuple[dict[str, str], int] | None:
        text, attrs, visited = self.text, dict[str, str](), list[int]()
        pos = _skip(_WS, text, brace + 1)
        while pos not in self._dead:
            visited.append(pos)
            if text.startswith("}", pos):
                return attrs, pos + 1
            key = _KEY.match(text, pos)
            if key is None:
                break
            pos, value = key.end(), ""
            if (eq := _EQ.match(text, pos)) is not None:
                if (quoted := _VALUE.match(text, eq.end())) is None:
                    break
                value = quoted[quoted.lastindex or 0]  # the one alternative that matched
                if quoted.lastindex != 3:  # a quoted value: unescape it
                    value = _ESCAPED.sub(r"\1", value)
                pos = quoted.end()
            attrs[key.group()] = value
            after = _skip(_WS, text, pos)
            if after == pos and not text.startswith("}", pos):
                break
            pos = after
        self._dead.update(visited)  # any later `{` reaching these positions fails the same way
        return None


def _skip(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where a run of `pattern` starting at `pos` ends (`pos` itself when there is none)."""
    m = pattern.match(text, pos)
    return pos if m is None else m.end()
