"""`POST /hooks/{skill}`: webhooks for skills that opt in with `metadata.webhook: {secret: VAR}`.

The signature is checked before anything runs, GitHub's way: `X-Hub-Signature-256: sha256=<hex
HMAC-SHA256 of the raw body>` with the value of VAR, a variable the skill declares in
`metadata.env`. A delivery is accepted once for a day, across replicas: its signature (so its body)
and its `X-GitHub-Delivery` id are each claimed, since the id header is not signed. The skill
runs in the background with the payload as `input` (parsed JSON for a JSON body, else text); the
answer is 202 with the run's id.

Refusals: 401 without the header (a UsageError, exit code 2, as for a missing bearer token) or
with a signature that does not match (a DeniedError, exit code 3: a webhook has no identity to
forbid, so a bad signature is unauthenticated, not forbidden); 409 for a replay (exit code 3);
503 when the secret is not set on this server.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from agentapps.errors import ConfigError, DeniedError, SkillNotFoundError, UsageError
from agentapps.serve.calls import admit, checked_args
from agentapps.serve.http import Refused, endpoint, read_body
from agentapps.serve.runs import LiveRun

if TYPE_CHECKING:
    from agentapps.serve.state import Server
    from agentapps.types import ToolDef

REPLAY_SECONDS = 86400


def secret_of(tool: ToolDef) -> str:
    """The name of the variable holding the skill's webhook secret (a ConfigError if it is not declared)."""
    spec = tool.metadata.get("webhook")
    name = spec if isinstance(spec, str) else spec.get("secret") if isinstance(spec, dict) else None
    declared = tool.metadata.get("env")
    declared = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
    if not isinstance(name, str) or name not in declared:
        raise ConfigError(f"Skill '{tool.name}' has a webhook without a declared secret: use `webhook: "
                          "{secret: VAR}` with VAR listed in `metadata.env`.", skill=tool.name, file=tool.path)
    return name


def payload_of(request: Request, body: bytes) -> Any:
    if request.headers.get("content-type", "").split(";")[0].strip().lower() == "application/json":
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            raise Refused(400, UsageError("The webhook body is not valid JSON.")) from None
    return body.decode("utf-8", "replace")


@endpoint
async def hook(request: Request) -> Response:
    server: Server = request.app.state.server
    name = request.path_params["skill"]
    tool = server.tool(name)
    if tool is None or not tool.metadata.get("webhook"):
        raise Refused(404, SkillNotFoundError(f"No webhook for '{name[:64]}' here."))
    variable = secret_of(tool)
    secret = os.environ.get(variable)
    if not secret:
        raise Refused(503, ConfigError(f"The webhook secret {variable} of skill '{name}' is not set on this server.",
                                       skill=name))
    body = await read_body(request, server.options.max_body)
    signature = request.headers.get("x-hub-signature-256")
    if not signature:
        # like a missing bearer token: 401 with a usage error (exit code 2); a wrong one is denied (3)
        raise Refused(401, UsageError("The webhook has no X-Hub-Signature-256 header.", skill=name))
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(signature.strip().encode(), expected.encode()):
        raise Refused(401, DeniedError("The webhook signature does not match its body.", skill=name))
    args = checked_args(server, tool, {"input": payload_of(request, body)})
    # X-GitHub-Delivery is not signed: a captured delivery resent under a fresh id is still a replay.
    # So the signature (which binds the body) is claimed as well as the delivery id; a redelivery of
    # the same body is refused either way.
    delivery = request.headers.get("x-github-delivery")
    keys = [f"hook:{name}:sig:{expected}"] + ([f"hook:{name}:id:{delivery[:200]}"] if delivery else [])
    fresh = [await server.coord.claim(key, REPLAY_SECONDS) for key in keys]
    if not all(fresh):
        raise Refused(409, DeniedError("This delivery was received already (a replay).", skill=name))
    run = await admit(server, f"webhook:{name}", LiveRun(server, name, args, owner=f"webhook:{name}"))
    assert run.task is not None
    server.keep(run.task)
    return JSONResponse({"ok": True, "runId": run.id, "skill": name}, status_code=202)
