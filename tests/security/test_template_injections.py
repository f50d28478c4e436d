"""Template injections the earlier rounds did not try (issue 22's attack suite): Jinja2 sandbox escapes
through format strings and filters, arguments that carry template or format syntax, and sizes built
by string methods. The rest of the class lives in tests/directives/ (test_template.py, test_expand.py)."""

from __future__ import annotations

from typing import Any

import pytest

from agentapps.directives.template import render
from agentapps.errors import AgentAppsError, DeniedError, LimitError

INJECTION = pytest.mark.attack("template injections")
# what an attacker controls: the arguments (a template is project code, but it is tried too)
ARGS = {"s": "x", "fmt": "{0.__class__.__mro__}", "named": "{s.__class__.__mro__}", "l": [1, 2],
        "q": "{{ 7 * 7 }}{% include 'x' %}:arg[s]", "pct": "%(s)s"}


def rendered(body: str, args: dict[str, Any] | None = None) -> str:
    result = render(body, ARGS if args is None else args, skill="t", file=None, first_line=1)
    return result.restore(result.text)


@INJECTION
@pytest.mark.parametrize("body", [
    "{{ args.fmt.format(args.s) }}",  # a format string from an argument reaches a dunder
    "{{ args.named.format_map(args) }}",
    "{% set f = '{0.__init__.__globals__}'.format %}{{ f(args.s) }}",  # format through an alias
    "{{ args.s | attr('__class__') }}",
    "{{ args.l | selectattr('__class__') | list }}",
    "{{ args.l | sort(attribute='__class__') }}",
    "{{ args.l | map(attribute='__class__') | list }}",
])
def test_the_sandbox_refuses_dunders_reached_through_format_strings_and_filters(body: str) -> None:
    with pytest.raises(DeniedError, match="sandbox forbids"):
        rendered(body)


@INJECTION
def test_an_argument_holding_template_syntax_is_text() -> None:
    assert rendered("Q: {{ args.q }} | {{ args.pct % args }}") == "Q: {{ 7 * 7 }}{% include 'x' %}:arg[s] | x"


@INJECTION
def test_a_template_cannot_change_the_arguments_later_steps_see() -> None:
    args = {"l": [1, 2]}
    assert rendered("{{ args.l.append(3) }}{{ args.l.pop(0) }}{{ args.l }}", args) == "1[2, 3]"
    assert args == {"l": [1, 2]}


@INJECTION
@pytest.mark.parametrize("body", [
    "{{ args.s.ljust(10 ** 8) | length }}",
    "{{ ('%0100000000d' % 1) | length }}",
    "{{ args.s | center(10 ** 8) | length }}",
])
def test_string_methods_cannot_build_huge_strings(body: str) -> None:
    with pytest.raises((DeniedError, LimitError)):
        rendered(body)


@INJECTION
def test_a_format_string_argument_fails_as_a_template_error() -> None:
    with pytest.raises(AgentAppsError):
        rendered("{{ args.fmt.format_map(args) }}")
