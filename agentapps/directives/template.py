"""Jinja2 prompt templating (`metadata.template: jinja2`): sandboxed, strict, `args` only, literal output."""

from __future__ import annotations

import json
import re
import secrets
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentapps.errors import AgentAppsError, ConfigError, DeniedError, LimitError

ENGINES = ("jinja2",)
MAX_OUTPUT = 1024 * 1024  # characters of rendered prompt
MAX_REPEAT = 1_000_000  # longest string or list `*` may build
MAX_EXPONENT = 1024
_TEMPLATE_FILE = "<template>"


@dataclass(frozen=True)
class Rendered:
    """A rendered body where every `{{ ... }}` output is held by a placeholder.

    Directives are expanded on `text`; `restore` then puts the values back. So text that came from
    `args` is never scanned for directives, and it cannot change the markdown structure the scanner
    sees (an argument holding a code fence or `<!--` stays inert).
    """

    text: str
    values: tuple[str, ...]
    nonce: str

    def restore(self, text: str) -> str:
        if not self.values:
            return text
        pattern = re.compile("\ue000" + self.nonce + r"(\d+)\ue001")
        return pattern.sub(lambda m: self.values[int(m.group(1))], text)


def as_text(value: Any) -> str:
    """Strings as they are; None as nothing; anything else as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)


def render(body: str, args: dict[str, Any], *, skill: str, file: Path | None, first_line: int) -> Rendered:
    """Render `body` with only `args` (as plain JSON data) in scope."""
    from jinja2 import (
        DictLoader,
        StrictUndefined,
        TemplateError,
        TemplateNotFound,
        TemplateSyntaxError,
    )
    from jinja2.exceptions import SecurityError

    nonce = secrets.token_hex(8)
    values: list[str] = []
    held = [0]  # characters held by placeholders so far

    def hold(value: Any) -> str:
        values.append(as_text(value))
        held[0] += len(values[-1])
        return f"\ue000{nonce}{len(values) - 1}\ue001"

    # An empty loader: {% include %}, {% import %} and {% extends %} find nothing.
    env = environment(undefined=StrictUndefined, finalize=hold, loader=DictLoader({}))
    env.globals.clear()  # no range(), lipsum(), namespace(): nothing executable in scope
    pieces: list[str] = []
    size = 0
    try:
        for piece in env.from_string(body).generate(args=json.loads(json.dumps(args, default=str))):
            size += len(piece)
            if size + held[0] > MAX_OUTPUT:
                raise LimitError(
                    f"Template of skill '{skill}' renders more than {MAX_OUTPUT} characters; "
                    "shorten it or pass less data.", skill=skill, file=file, line=first_line,
                )
            pieces.append(piece)
        return Rendered("".join(pieces), tuple(values), nonce)
    except AgentAppsError:
        raise
    except TemplateSyntaxError as exc:
        error: type[AgentAppsError] = ConfigError
        why, line = f"has a syntax error: {exc.message}", first_line + (exc.lineno or 1) - 1
    except SecurityError as exc:
        error, why, line = DeniedError, f"tried something the sandbox forbids: {exc}", _line(exc, first_line)
    except TemplateNotFound as exc:
        error, line = ConfigError, _line(exc, first_line)
        why = f"loads another template ({exc.name!r}); templates cannot read files: use the :inline[file] directive instead"
    except (TypeError, ValueError, ArithmeticError, LookupError) as exc:  # its own expression: "a" + 1, "{0}".format_map({})
        error, line = ConfigError, _line(exc, first_line)
        why = f"failed: {type(exc).__name__}: {exc}"
    except TemplateError as exc:
        error, line = ConfigError, _line(exc, first_line)
        why = (f"failed: {(exc.message or type(exc).__name__).rstrip('.')}. Only `args` is in scope; pass the "
               "missing argument or guard it with {% if args.x is defined %}")
    raise error(f"Template of skill '{skill}' {why.rstrip('.')}.", skill=skill, file=file, line=line) from None


def _line(exc: BaseException, first_line: int) -> int:
    line = 1
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == _TEMPLATE_FILE and frame.lineno:
            line = frame.lineno
    return first_line + line - 1


def environment(**options: Any) -> Any:
    from jinja2.exceptions import SecurityError
    from jinja2.sandbox import SandboxedEnvironment

    class _Bounded(SandboxedEnvironment):
        """Refuses `*` and `**` results that would exhaust memory or time; dicts are looked up by key only."""

        intercepted_binops = frozenset({"*", "**", "%"})

        def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
            _refuse_huge(getattr(obj, "__self__", None), getattr(obj, "__name__", ""), args, kwargs)
            return super().call(context, obj, *args, **kwargs)

        # `args.items` or `args["keys"]` must never fall back to a dict method when the key is
        # missing: a missing key is undefined (a strict error), as for any other name.
        def getitem(self, obj: Any, argument: Any) -> Any:
            if isinstance(obj, dict):
                return self._key(obj, argument)
            return super().getitem(obj, argument)

        def getattr(self, obj: Any, attribute: str) -> Any:
            if isinstance(obj, dict):
                return self._key(obj, attribute)
            return super().getattr(obj, attribute)

        def _key(self, obj: dict[Any, Any], key: Any) -> Any:
            try:
                return obj[key]
            except (TypeError, LookupError):
                pass
            if isinstance(key, str) and hasattr(obj, key) and not self.is_safe_attribute(obj, key, getattr(obj, key)):
                return self.unsafe_undefined(obj, key)  # `args.__class__` stays a sandbox refusal
            return self.undefined(obj=obj, name=key)

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "%":
                if isinstance(left, str):
                    _refuse_wide(left)
                return left % right
            if operator == "**":
                if isinstance(right, int) and abs(right) > MAX_EXPONENT:
                    raise SecurityError(f"exponent {right} is larger than {MAX_EXPONENT}")
                return left**right
            for seq, count in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(count, int) and count * len(seq) > MAX_REPEAT:
                    raise SecurityError(f"'*' would build a sequence longer than {MAX_REPEAT}")
            return left * right

    env = _Bounded(autoescape=False, keep_trailing_newline=True, **options)
    for name, width_at in (("center", 1), ("indent", 1)):  # filters that pad to a width they are given
        env.filters[name] = _bounded_filter(env.filters[name], width_at)
    env.filters["format"] = _bounded_format(env.filters["format"])
    env.filters["tojson"] = _bounded_tojson(env.filters["tojson"])
    return env


# str methods whose result grows with a number they are given (the first argument, or `width`)
_WIDTH_METHODS = frozenset({"ljust", "rjust", "center", "zfill", "expandtabs"})
_FORMAT_METHODS = frozenset({"format", "format_map"})
_NUMBERS = re.compile(r"\d+")


def _refuse_huge(owner: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A str method may not build a string past MAX_REPEAT: `s.ljust(10**8)`, `'{:>99999999}'.format(1)`."""
    from jinja2.exceptions import SecurityError

    if not isinstance(owner, str):
        return
    if name in _WIDTH_METHODS:
        width = args[0] if args else kwargs.get("width", kwargs.get("tabsize", 0))
        grows = width * max(1, owner.count("\t")) if name == "expandtabs" and isinstance(width, int) else width
        if isinstance(grows, int) and grows > MAX_REPEAT:
            raise SecurityError(f"'{name}' would build a string longer than {MAX_REPEAT}")
    elif name in _FORMAT_METHODS:
        _refuse_wide(owner)


def _refuse_wide(text: str) -> None:
    """A format string (`%` or `str.format`) whose widths or precisions pass MAX_REPEAT."""
    from jinja2.exceptions import SecurityError

    if any(int(n) > MAX_REPEAT for n in _NUMBERS.findall(text) if len(n) > 6):
        raise SecurityError(f"a format width or precision would build a string longer than {MAX_REPEAT}")


def _bounded_filter(original: Any, width_at: int) -> Any:
    def bounded(*args: Any, **kwargs: Any) -> Any:
        from jinja2.exceptions import SecurityError

        width = args[width_at] if len(args) > width_at else kwargs.get("width", 0)
        if isinstance(width, int) and width > MAX_REPEAT:
            raise SecurityError(f"a width of {width} would build a string longer than {MAX_REPEAT}")
        return original(*args, **kwargs)

    for attr in ("jinja_pass_arg",):  # keep how Jinja passes the environment or context
        if hasattr(original, attr):
            setattr(bounded, attr, getattr(original, attr))
    return bounded


def _bounded_format(original: Any) -> Any:
    def bounded(value: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(value, str):
            _refuse_wide(value)
        return original(value, *args, **kwargs)

    return bounded


def _bounded_tojson(original: Any) -> Any:
    def bounded(*args: Any, **kwargs: Any) -> Any:
        from jinja2.exceptions import SecurityError

        indent = kwargs.get("indent", args[2] if len(args) > 2 else None)
        if isinstance(indent, int) and indent > 64:
            raise SecurityError("tojson's indent is at most 64")
        return original(*args, **kwargs)

    if hasattr(original, "jinja_pass_arg"):
        bounded.jinja_pass_arg = original.jinja_pass_arg  # type: ignore[attr-defined]
    return bounded
