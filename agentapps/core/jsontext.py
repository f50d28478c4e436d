"""JSON text from an encoder made once, for data encoded on every request or run.

`json.JSONEncoder.encode` makes its C encoder anew on each call: half of what encoding a small
object costs (a run-log digest, serve's answer to a trivial call). `encoder()` makes it once, with
the arguments `json` itself passes it (the same on CPython 3.11-3.13), and falls back to
`JSONEncoder.encode` where there is no C accelerator. The text is the same either way.

There is no circular-reference check: json keeps that check's state in the encoder, and a call that
fails part-way leaves it behind, to refuse later values by mistake. Data that holds itself ends in
RecursionError instead of ValueError; the callers' data (JSON, command-line args, a run's outcome)
has no cycles.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from typing import Any


def encoder(*, sort_keys: bool = False, ensure_ascii: bool = True, allow_nan: bool = True,
            separators: tuple[str, str] = (", ", ": "),
            default: Callable[[Any], Any] | None = None) -> Callable[[Any], str]:
    """What `json.JSONEncoder(...).encode` gives with these options, for data without cycles."""
    plain = json.JSONEncoder(sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=allow_nan,
                             separators=separators, default=default)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - an interpreter without json's C accelerator
        return plain.encode
    quote = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    chunks = make(None, plain.default, quote, None, separators[1], separators[0], sort_keys, False, allow_nan)

    def encode(value: Any) -> str:
        return "".join(chunks(value, 0))

    return encode
