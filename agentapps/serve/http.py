"""HTTP plumbing of `agentapps serve`: JSON bodies read within the size limit, errors as JSON, and
the status each exit-code class gets.

Every error a client sees is `{"ok": false, "error": {type, message, exit_code, ...}}`: the same
error object `agentapps run --json` prints, one line, never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from agentapps.errors import AgentAppsError, ArgsError, UsageError

# the HTTP status of a run's outcome, by exit code (other codes: 500)
STATUS = {0: 200, 1: 500, 2: 400, 3: 403, 4: 422, 130: 499, 143: 503}


class Refused(Exception):
    """An HTTP refusal: a status, and the error the client is told about."""

    def __init__(self, status: int, error: AgentAppsError, headers: dict[str, str] | None = None) -> None:
        super().__init__(error.message)
        self.status, self.error, self.headers = status, error, headers or {}


def error_response(status: int, error: AgentAppsError | dict[str, Any], headers: dict[str, str] | None = None,
                   redact: Callable[[Any], Any] | None = None) -> JSONResponse:
    from agentapps.lifecycle.failure import record

    body = {"ok": False, "error": record(error) if isinstance(error, AgentAppsError) else error}
    return JSONResponse(redact(body) if redact else body, status_code=status, headers=headers)


def status_of(outcome: dict[str, Any]) -> int:
    if outcome.get("ok"):
        return 200
    error = outcome.get("error") or {}
    return STATUS.get(int(error.get("exit_code") or 1), 500)


def header(request: Request, name: bytes) -> str | None:
    """One request header (`name` lowercased, as ASGI gives them), without building starlette's
    `Headers`, whose `get` raises and catches a KeyError for each one missing."""
    for key, value in request.scope["headers"]:
        if key == name:
            return value.decode("latin-1")  # type: ignore[no-any-return]
    return None


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body, refused (413) beyond `limit` bytes whatever Content-Length claims. Read from
    the ASGI messages themselves: `Request.stream()` is an async generator made, stepped and
    closed per request, for the one message a small body comes in."""
    declared = header(request, b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Refused(413, ArgsError(f"The request body is larger than {limit} bytes."))
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await request.receive()
        if message["type"] != "http.request":  # the client went away: as Request.stream() says it
            raise ClientDisconnect()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise Refused(413, ArgsError(f"The request body is larger than {limit} bytes."))
        if not message.get("more_body", False):
            return b"".join((*chunks, chunk)) if chunks else chunk
        chunks.append(chunk)


async def read_json(request: Request, limit: int) -> dict[str, Any]:
    """A JSON object body; anything else is a 400 (415 without a JSON content type, which also makes
    a browser ask before a cross-site POST)."""
    kind = (header(request, b"content-type") or "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise Refused(415, UsageError("Send the body as JSON (Content-Type: application/json)."))
    raw = await read_body(request, limit)
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise Refused(400, UsageError(f"The body is not valid JSON: {str(exc)[:200]}")) from None
    if not isinstance(data, dict):
        raise Refused(400, UsageError(f"The body must be a JSON object, not {type(data).__name__}."))
    return data


def text_field(data: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value or len(value) > 200:
        raise Refused(400, UsageError(f"'{key}' must be a non-empty string of at most 200 characters."))
    return value


Handler = Callable[[Request], Awaitable[Response]]


def endpoint(handler: Handler) -> Handler:
    """Refusals and our errors become JSON; a bug becomes a one-line 500 (the traceback stays in the log)."""
    async def wrapped(request: Request) -> Response:
        server = request.app.state.server
        redact = server.g.internals.redactor.redact_data
        try:
            return await handler(request)
        except Refused as refused:
            return error_response(refused.status, refused.error, refused.headers, redact)
        except AgentAppsError as exc:
            return error_response(STATUS.get(exc.exit_code, 500), exc, None, redact)
    wrapped.__name__ = handler.__name__
    wrapped.__doc__ = handler.__doc__
    return wrapped
