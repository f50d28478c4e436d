"""`GET /openapi.json`: the API of `agentapps serve` as an OpenAPI 3.1 document.

Written as data rather than through apispec (issue 20 weighed 6.10.1): apispec's core assembles
the same dicts from operation dicts we would still write by hand (`spec.path(operations=...)`),
adds a runtime dependency to `serve`, and checks nothing itself (its `validate_spec` calls
openapi-spec-validator). The tests run openapi-spec-validator on this document instead (valid
OpenAPI 3.1, every `$ref` resolves) and compare its paths with the app's routes."""

from __future__ import annotations

from typing import Any

ERROR = {"$ref": "#/components/schemas/Failure"}


def _op(summary: str, body: dict[str, Any] | None, ok: dict[str, Any], *, media: str = "application/json",
        codes: tuple[int, ...] = (400, 401, 403, 404, 413, 429), param: str | None = None,
        body_media: str = "application/json", success: str = "200") -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": {
        success: {"description": "OK", "content": {media: {"schema": ok}}},
        **{str(c): {"description": "Refused", "content": {"application/json": {"schema": ERROR}}} for c in codes}}}
    if body is not None:
        op["requestBody"] = {"required": True, "content": {body_media: {"schema": body}}}
    if param is not None:
        op["parameters"] = [{"name": param, "in": "path", "required": True, "schema": {"type": "string"}}]
    return op


RUN_REQUEST = {"type": "object", "required": ["skill"], "properties": {
    "skill": {"type": "string"}, "args": {"type": "object"}, "threadId": {"type": "string"}}}
STREAM = {"type": "object", "required": ["streamId"], "properties": {"streamId": {"type": "string"}}}
DECISION = {"type": "object", "required": ["streamId", "approvalId", "decision"], "properties": {
    "streamId": {"type": "string"}, "approvalId": {"type": "string"},
    "decision": {"enum": ["approve", "deny"]}}}
OK = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
MESSAGE = {"type": "object", "required": ["streamId", "message"], "properties": {
    "streamId": {"type": "string"}, "message": {"type": "string", "minLength": 1}}}
QUEUED = {"type": "object", "properties": {"ok": {"type": "boolean"}, "streamId": {"type": "string"},
                                           "queued": {"enum": ["steer", "follow-up"]}}}
ANY = {"type": "object"}
ACCEPTED = {"type": "object", "required": ["ok", "runId", "skill"], "properties": {
    "ok": {"const": True}, "runId": {"type": "string"}, "skill": {"type": "string"}}}


def document() -> dict[str, Any]:
    run = {"$ref": "#/components/schemas/Run"}
    return {
        "openapi": "3.1.0",
        "info": {"title": "agentapps serve", "version": "1",
                 "description": "Skills behind an HTTP API (docs/serve.md)."},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "required": ["type", "message", "exit_code"], "properties": {
                    "type": {"type": "string"}, "message": {"type": "string"}, "exit_code": {"type": "integer"},
                    "skill": {"type": ["string", "null"]}, "file": {"type": ["string", "null"]},
                    "line": {"type": ["integer", "null"]}}},
                "Failure": {"type": "object", "properties": {"ok": {"const": False},
                                                             "error": {"$ref": "#/components/schemas/Error"}}},
                "Run": {"type": "object", "required": ["ok", "skill", "result", "error", "duration_ms"],
                        "properties": {"ok": {"type": "boolean"}, "skill": {"type": "string"}, "result": {},
                                       "error": {"anyOf": [{"$ref": "#/components/schemas/Error"}, {"type": "null"}]},
                                       "duration_ms": {"type": "number"}, "usage": ANY, "cost": {},
                                       "models": ANY, "turns": {}, "steps": {}, "stop_reason": {},
                                       "threadId": {"type": "string"}}},
            }},
        "security": [{"bearer": []}],
        "paths": {
            "/invocations": {"post": _op("Run a skill to the end", RUN_REQUEST, run)},
            "/chat": {"post": _op("Run a skill, streaming its events", RUN_REQUEST, {"type": "string"},
                                  media="text/event-stream")},
            "/approve": {"post": _op("Decide a pending approval", DECISION, OK, codes=(400, 401, 403, 404, 409))},
            "/cancel": {"post": _op("Cancel a stream", STREAM, OK, codes=(400, 401, 403, 404))},
            "/steer": {"post": _op("Steer a stream's agent: stop its running tool calls, the message is "
                                   "its next step's", MESSAGE, QUEUED, codes=(400, 401, 403, 404, 409, 429, 503),
                                success="202")},
            "/follow-up": {"post": _op("Queue the next user turn of a stream's agent", MESSAGE, QUEUED,
                                       codes=(400, 401, 403, 404, 409, 429, 503), success="202")},
            "/threads": {"get": _op("Your threads", None, ANY, codes=(401, 403))},
            "/threads/{thread}": {"get": _op("A thread and its entries", None, ANY, codes=(401, 403, 404),
                                             param="thread"),
                                  "delete": _op("Delete a thread", None, OK, codes=(401, 403, 404), param="thread")},
            "/skills": {"get": _op("The skills served, with their schemas", None, ANY, codes=(401, 403))},
            "/hooks/{skill}": {"post": {**_op("A signed webhook (X-Hub-Signature-256); any body: JSON is parsed, "
                                              "anything else is text", {}, ACCEPTED,
                                              codes=(400, 401, 404, 409, 413, 503), param="skill",
                                              body_media="*/*", success="202"),
                                        "security": []}},
            "/healthz": {"get": {**_op("Liveness", None, OK, codes=()), "security": []}},
            "/openapi.json": {"get": {**_op("This document", None, ANY, codes=()), "security": []}},
            "/": {"get": {**_op("The chat page", None, {"type": "string"}, media="text/html", codes=()),
                          "security": []}},
        },
    }
