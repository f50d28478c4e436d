"""`GET /`: the chat page, one self-contained HTML file (page.html) shipped in the package."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
       "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


@lru_cache(maxsize=1)
def _html() -> str:
    return (Path(__file__).with_name("page.html")).read_text(encoding="utf-8")


async def index(request: Request) -> Response:
    return HTMLResponse(_html(), headers={"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                                          "Cache-Control": "no-cache"})
