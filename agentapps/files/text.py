"""Reading a window of lines from an open file with every byte count bounded (sparse files included)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

from agentapps.errors import LimitError

MAX_SCAN_BYTES = 64 * 1024 * 1024  # what one read may look at, skipped lines included
_HEAD = 8192


class _Binary(Exception):
    pass


class _Budget:
    """Bytes left to scan; reading past it stops the scan instead of walking a 20 GB hole."""

    def __init__(self, total: int) -> None:
        self.left = total

    def readline(self, handle: BinaryIO, size: int) -> bytes:
        if self.left <= 0:
            return b""
        raw = handle.readline(min(size, self.left))
        self.left -= len(raw)
        if b"\x00" in raw:  # a NUL means binary (a sparse file's holes read as NULs)
            raise _Binary
        return raw


def _lines(handle: BinaryIO, cap: int, budget: _Budget) -> Iterator[tuple[bytes, int, bool]]:
    """Each line as (at most its first `cap` + 1 bytes, its length, whether that length is only a
    lower bound because the scan budget ran out): a huge line is never held whole."""
    while raw := budget.readline(handle, cap + 1):
        length = len(raw)
        if length > cap and not raw.endswith(b"\n"):
            while rest := budget.readline(handle, 1 << 20):
                length += len(rest)
                if rest.endswith(b"\n"):
                    break
        yield raw, length, budget.left <= 0 and not raw.endswith(b"\n")


def read_lines(handle: BinaryIO, shown: str, *, offset: int, limit: int | None, max_bytes: int,
               scan: int = MAX_SCAN_BYTES) -> str:
    """Lines `offset`.. of the open file, at most `limit` lines and `max_bytes` bytes, with a marker
    saying how to read on; `shown` names the file in markers."""
    size = os.fstat(handle.fileno()).st_size
    if b"\x00" in handle.read(min(size, _HEAD)):
        return f"[binary file {shown}, {size} bytes: not shown]"
    handle.seek(0)
    lines: list[str] = []
    used = 0
    truncated = False
    long_line: tuple[int, int, bool] | None = None  # a line alone over the cap: number, bytes, bound
    budget = _Budget(scan)
    number = -1
    try:
        for number, (raw, length, bound) in enumerate(_lines(handle, max_bytes, budget)):
            if number < offset:
                continue
            if limit is not None and len(lines) >= limit:
                truncated = True
                break
            if used + length > max_bytes:
                truncated = True
                if not lines:  # showing nothing would leave the reader stuck at this offset
                    lines.append(raw[:max_bytes].decode("utf-8", errors="replace"))
                    long_line = (number, length, bound)
                break
            used += length
            lines.append(raw.decode("utf-8", errors="replace"))
    except _Binary:
        return f"[binary file {shown}, {size} bytes: not shown]"
    if number < offset and budget.left <= 0:
        raise LimitError(f"file-read: line {offset + 1} of {shown} lies beyond the first "
                         f"{scan // (1024 * 1024)} MiB, more than one read scans.")
    text = "".join(lines)
    if long_line is not None:
        number, length, bound = long_line
        size_text = f"over {length} bytes" if bound else f"{length} bytes"
        text += (f"\n[... truncated: line {number + 1} of {shown} is {size_text} long; showed only its "
                 f"first {max_bytes} bytes. Read the next line with offset={number + 1}.]\n")
    elif truncated or (budget.left <= 0 and lines):
        last = offset + len(lines)
        text += (f"\n[... truncated: {shown} is {size} bytes; showed lines {offset + 1}-{last}. "
                 f"Read on with offset={last}.]\n")
    return text
