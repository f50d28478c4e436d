"""Decoding the JSON text a store holds: what agentapps could not have written is said, never raised raw."""

from __future__ import annotations

import json
from typing import Any


class NotStored(Exception):
    """Text in a store that agentapps could not have written; the message says what is wrong with it."""


def decode(raw: bytes | str, what: str) -> Any:
    """The JSON value in `raw`; NotStored when it is not UTF-8, not JSON, NaN or Infinity, an integer
    of more than 4300 digits, or nested too deeply (`what` names it in that message)."""
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except UnicodeDecodeError:
        why = "is not UTF-8 text"
    except json.JSONDecodeError as exc:
        why = f"is not valid JSON ({exc.msg} at character {exc.pos})"
    except ValueError as exc:  # NaN or Infinity; an integer of more than 4300 digits
        why = f"is not JSON data agentapps writes ({str(exc).split(';')[0]})"
    except RecursionError:
        why = f"is nested too deeply to be {what}"
    raise NotStored(why)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
