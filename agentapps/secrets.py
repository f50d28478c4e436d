"""The process's redactor: values of the variables skills declare in `metadata.env`, and their encodings.

One `Redactor` lives on `Globals.internals.redactor`. Every writer goes through it: the CLI's
stdout/stderr (and so its logging and tracebacks), the JSON written to files (state, sessions,
recordings) and the agent trace. A value is registered when a skill declaring it is prepared; the
CLI also registers, right after bootstrap, what every skill on the search path declares.

Besides the value itself it redacts the forms the value takes when it is embedded in other text:
JSON string escapes (ASCII and not), Python `repr` escapes, URL-encoding (`quote`, `quote_plus`)
and base64 (standard and URL-safe, at any of the three byte alignments: the characters that depend
only on the value are redacted, so a few edge characters of an embedded value may remain). Values
shorter than `MIN_SECRET` characters are never redacted: they would blank out ordinary words.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Protocol

MIN_SECRET = 4  # shorter values would redact ordinary words
MIN_BASE64_CORE = 8  # a shorter run of base64 characters would match unrelated text
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def _base64_cores(raw: bytes) -> set[str]:
    """The base64 characters fixed by `raw` alone, wherever it sits in a longer encoded byte string."""
    import base64

    cores: set[str] = set()
    for shift in range(3):  # the value may start at any offset modulo 3 of the encoded bytes
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii").rstrip("=")
        first = -(-8 * shift // 6)  # the first character whose 6 bits all come from `raw`
        last = 8 * (shift + len(raw)) // 6  # one past the last such character
        core = encoded[first:last]
        if len(core) >= MIN_BASE64_CORE:
            cores.add(core)
            cores.add(core.replace("+", "-").replace("/", "_"))
    return cores


def forms_of(value: str) -> set[str]:
    """The value and the encoded forms it takes inside JSON, repr, URLs and base64."""
    from urllib.parse import quote, quote_plus

    # `shown`: the value as printed where a lone surrogate cannot be written (U+FFFD for each)
    shown = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    forms = {value, shown, json.dumps(value)[1:-1], json.dumps(shown, ensure_ascii=False)[1:-1], repr(value)[1:-1],
             json.dumps(value, ensure_ascii=False)[1:-1]}
    try:
        # the bytes the value stands for: an environment value that is not UTF-8 holds its odd
        # bytes as lone surrogates (surrogateescape), and those bytes are what a URL or base64 shows
        raw = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate no bytes stand for: not in bytes we write anyway
        raw = None
    if raw is not None:
        forms |= {quote(raw, safe=""), quote(raw), quote_plus(raw), *_base64_cores(raw)}
    return {f for f in forms if len(f) >= MIN_SECRET}


class Redactor:
    """Replaces every registered value (in each of its forms) by `[redacted:NAME]`."""

    def __init__(self) -> None:
        self._forms: dict[str, str] = {}  # form -> replacement text
        self._order: list[str] = []  # longest first, so a longer form wins over its own prefix
        self._longest = 0

    def __bool__(self) -> bool:
        return bool(self._forms)

    def register(self, name: str, value: str) -> None:
        if len(value) < MIN_SECRET:
            return
        token = f"[redacted:{name}]" if _NAME.fullmatch(name) else "[redacted]"
        added = False
        for form in forms_of(value):
            if form not in self._forms:
                self._forms[form] = token
                added = True
        if added:
            self._order = sorted(self._forms, key=len, reverse=True)
            self._longest = len(self._order[0])

    def register_declared(self, names: Any) -> None:
        """Register the current values of `metadata.env` names (a list, or one name as a string)."""
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, list):
            return
        for name in names:
            if isinstance(name, str) and name:
                value = os.environ.get(name)
                if value:
                    self.register(name, value)

    def redact(self, text: str) -> str:
        for form in self._order:
            if form in text:
                text = text.replace(form, self._forms[form])
        return text

    def redact_data(self, value: Any) -> Any:
        """A copy of JSON-like data with every string (keys too) redacted; a number whose digits hold
        a value becomes the redacted text. Other objects are returned as they are."""
        if not self._forms:
            return value
        return self._data(value)

    def _data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):  # loops, not comprehensions: one frame per level of nesting
            out = {}
            for key, item in value.items():
                out[self.redact(key) if isinstance(key, str) else key] = self._data(item)
            return out
        if isinstance(value, (list, tuple)):
            items = []
            for item in value:
                items.append(self._data(item))
            return items
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                text = repr(value)
            except ValueError:  # an int too long to print: it is refused where it would be written
                return value
            redacted = self.redact(text)
            return value if redacted == text else redacted
        return value

    def held_back(self, text: str) -> int:
        """How many characters at the end of `text` could be the start of a value still to come
        (a stream keeps them until the next write, so a value split across writes is still caught)."""
        if not self._order:
            return 0
        tail = text[-(self._longest - 1):] if self._longest > 1 else ""
        hold = 0
        for form in self._order:
            start = tail.find(form[0])
            while start != -1 and len(tail) - start > hold:
                if len(tail) - start < len(form) and form.startswith(tail[start:]):
                    hold = len(tail) - start
                    break
                start = tail.find(form[0], start + 1)
        return hold


class Redacting(Protocol):
    """What holds a run's redactor: a run's internals (`agentapps.runstate.Internals`)."""

    @property
    def redactor(self) -> Redactor: ...


def register_declared(internals: Redacting, names: Any) -> None:
    """Remember the current values of declared variables so nothing we write can show them."""
    internals.redactor.register_declared(names)


def redact(text: str, internals: Redacting | None) -> str:
    return internals.redactor.redact(text) if internals is not None else text


def refuse_secret_name(internals: Redacting, what: str, name: str) -> str:
    """A name that becomes a file name or a store key (a state key, a session key) is written as it
    is, so it must not hold a declared secret's value: refuse it rather than leak it."""
    from agentapps.errors import DeniedError

    if internals.redactor.redact(name) != name:
        raise DeniedError(f"{what} would contain the value of a declared secret ({internals.redactor.redact(name)[:80]}); "
                          "it is written as it is, so choose another.")
    return name
