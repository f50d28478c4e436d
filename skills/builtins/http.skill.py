"""http: an HTTP(S) request to a public address (private ones only through AGENTAPPS_HTTP_ALLOW)."""

import asyncio

from agentapps import UsageError
from agentapps.io import fetch, normalize_url, traceparent
from agentapps.pipeline import candidate, check_chain

OVERRIDES = ("x-http-method-override", "x-http-method", "x-method-override")
# How much a method may change on the server, for choosing between the method sent and the one an
# override header asks for: an unknown method ranks above DELETE.
RANK = {"GET": 0, "HEAD": 0, "OPTIONS": 0, "TRACE": 0, "POST": 1, "PUT": 2, "PATCH": 2, "DELETE": 3}

frontmatter = {
    "name": "http",
    "description": "Make an HTTP or HTTPS request to a public host; returns status, headers and the body as text.",
    "metadata": {
        "tags": ["builtin", "network"],
        # a constraint on `url` alone admits GET only: another method must be constrained too
        "action-args": ["url", "method"],
        "params": {
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "http:// or https:// URL."},
                "method": {"type": "string", "default": "GET", "description": "GET, POST, PUT, PATCH, DELETE, HEAD."},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "body": {"type": "string", "description": "Request body (text)."},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 300, "default": 60,
                            "description": "Seconds for the whole request."},
            },
            "required": ["url"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "required": ["status", "headers", "body", "url"]},
    },
}


def _overridden(method, headers):
    """The method the server may act on: the one a method-override header asks for or the one
    sent, whichever may change more. Override headers that disagree are refused: servers differ on
    which of them (first, last, which name; `_` read as `-`) they take."""
    asked = set()
    for name, value in headers.items():
        if str(name).strip().lower().replace("_", "-") in OVERRIDES:
            asked |= {v.strip().upper() for v in str(value).split(",") if v.strip()} or {""}
    if len(asked) > 1:
        raise UsageError(f"http: method-override headers ask for different methods ({', '.join(sorted(asked))}); "
                         "send one override header with one method.", skill="http")
    if not asked or not isinstance(method, str):
        return method
    (override,) = asked
    return max((method.strip().upper(), override), key=lambda m: RANK.get(m, 4))


def policy_view(ctx, args):
    """`url` as sent (normalize_url) and `method` upper-cased, or the method an override header
    asks for when it may change more (`_overridden`), and left out when it is GET."""
    view = dict(args)
    if isinstance(args.get("url"), str):
        view["url"] = normalize_url(args["url"])
    headers = args.get("headers") if isinstance(args.get("headers"), dict) else {}
    method = _overridden(args.get("method", "GET"), headers)
    view.pop("method", None)
    if isinstance(method, str) and method.strip().upper() != "GET":
        view["method"] = method.strip().upper()
    elif not isinstance(method, str):
        view["method"] = method
    return view


def _hop_check(ctx, args):
    """A redirect is a new request: the calling skill's grant must admit it as if it were asked for
    (`http(url=https://api.github.com/*)` does not follow a redirect to another host)."""
    policies = ctx.run.caller_policies
    if not policies:
        return None
    who = candidate(ctx)

    def check(method, url):
        check_chain(policies, who, policy_view(ctx, {**args, "url": url, "method": method}))

    return check


def _headers(ctx, args):
    """The request's headers, plus the call's `traceparent` when traces are on and the caller set
    none: the server it reaches joins the run's trace (a redirect to another origin drops it)."""
    headers = args.get("headers")
    if any(str(name).lower() == "traceparent" for name in headers or {}):
        return headers
    parent = traceparent(ctx)
    return headers if parent is None else {**(headers or {}), "traceparent": parent}


async def run(ctx, args):
    response = await asyncio.to_thread(
        fetch, args.get("method", "GET"), args["url"], headers=_headers(ctx, args), body=args.get("body"),
        timeout=float(args.get("timeout", 60)), check_hop=_hop_check(ctx, args),
    )
    return {"status": response.status, "headers": response.headers, "body": response.text, "url": response.url}
