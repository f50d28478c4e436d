"""`agentapps serve` as a client sees it: one real server process for the module, driven with httpx2."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.serve.conftest import Served, events, start
from tests.serve.skills import CHATTY, SECRET, write_all
from tests.support.waiting import wait_for

ALICE, BOB = "alice-token-0123", "bob-token-4567"


@pytest.fixture(scope="module")
def served(module_project: Any) -> Iterator[Served]:
    write_all(module_project)
    server = start(module_project, "--token", ALICE, "--token", BOB, "--allow-origin", "http://good.example",
                   "--concurrency", "2", "--queue", "0", "--timeout", "3", "--heartbeat", "0.2",
                   env={"SERVE_TEST_SECRET": SECRET, "AGENTAPPS_TRUST_TIMEOUT": "1.5",
                        "SERVE_HOOK_SECRET": "hook-secret", "SERVE_HOOK_LOG": str(module_project.root / "hooks.log")})
    yield server
    server.stop()


def invoke(server: Served, skill: str, args: dict[str, Any] | None = None, token: str = ALICE,
           **extra: Any) -> Any:
    with server.client(token) as client:
        return client.post("/invocations", json={"skill": skill, "args": args or {}, **extra})


class Stream:
    """A /chat stream read on a thread: its events as they come, and its id once started."""

    def __init__(self, server: Served, skill: str, args: dict[str, Any] | None = None, token: str = ALICE) -> None:
        self.events: list[tuple[str, Any]] = []
        self.started = threading.Event()
        self.ended = threading.Event()
        self.status = 0
        self.client = server.client(token)
        self.thread = threading.Thread(target=self._read, args=(skill, args or {}), daemon=True)
        self.thread.start()

    def _read(self, skill: str, args: dict[str, Any]) -> None:
        with self.client.stream("POST", "/chat", json={"skill": skill, "args": args}) as response:
            self.status = response.status_code
            for name, data in events(response):
                self.events.append((name, data))
                if name == "stream-start":
                    self.started.set()
        self.started.set()
        self.ended.set()

    @property
    def id(self) -> str:
        assert self.started.wait(10)
        return str(self.events[0][1]["streamId"])

    def wait_for(self, name: str, timeout: float = 10, nth: int = 1) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [data for event, data in self.events if event == name]
            if len(found) >= nth:
                return found[nth - 1]  # type: ignore[no-any-return]
            time.sleep(0.02)
        raise AssertionError(f"no {name} event; got {[n for n, _ in self.events]}")

    def finish(self, timeout: float = 10) -> list[tuple[str, Any]]:
        assert self.ended.wait(timeout), "the stream did not end"
        self.client.close()
        return self.events

    def names(self) -> list[str]:
        return [n for n, _ in self.events]


def test_invocations_answers_with_what_run_json_prints(served):
    response = invoke(served, "greet", {"name": "Ada"})
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True and body["result"] == {"greeting": "Hello, Ada!"} and body["error"] is None
    assert set(body) >= {"ok", "skill", "result", "error", "duration_ms"}


def test_a_markdown_skill_reports_usage_like_run_json(served):
    body = invoke(served, "story").json()
    assert body["ok"] and body["result"] == "Found it."
    assert body["turns"] == 2 and body["steps"] == 1 and body["stop_reason"] == "answered"
    again = invoke(served, "story").json()  # each request is a run: its own replay cursor and totals
    assert again["result"] == "Found it." and again["turns"] == 2


@pytest.mark.parametrize(("skill", "args", "status", "kind", "says"), [
    ("greet", {}, 400, "ArgsError", "'name' is required"),
    ("greet", {"name": 3}, 400, "ArgsError", "is not of type 'string'"),
    ("greet", {"nmae": "Ada"}, 400, "ArgsError", "'name' is required. Did you mean 'name' instead of 'nmae'?"),
    ("chatty", {"txet": "hi"}, 400, "ArgsError", "('txet' is not accepted). Did you mean 'text' instead of 'txet'?"),
    ("nope", {}, 404, "SkillNotFoundError", "No skill 'nope'"),
    ("secret-helper", {}, 404, "SkillNotFoundError", "No skill"),
    ("gret", {}, 404, "SkillNotFoundError", "No skill 'gret' is served here (GET /skills lists them). Did you mean 'greet'?"),
    ("boom", {}, 500, "SkillError", "RuntimeError: the gears are stuck"),
    ("slow", {"seconds": 30}, 422, "LimitError", "longer than the server's limit of 3 s"),
    ("risky", {}, 400, "UsageError", "needs a stream: use POST /chat"),
])
def test_failures_are_one_line_json_with_the_exit_code_class(served, skill, args, status, kind, says):
    response = invoke(served, skill, args)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["type"] == kind and says in error["message"] and "\n" not in error["message"]
    assert "Traceback" not in response.text


def test_an_unknown_skill_is_never_likened_to_a_skill_that_is_not_served(served):
    answer = invoke(served, "secret-helpr", {})
    assert answer.status_code == 404 and "Did you mean" not in answer.text and "secret-helper" not in answer.text


def test_declared_secrets_never_reach_a_client(served):
    body = invoke(served, "leaky").json()
    assert SECRET not in json.dumps(body) and body["result"]["secret"].startswith("[redacted")


@pytest.mark.parametrize(("headers", "body", "status", "says"), [
    ({"Content-Type": "application/json"}, b"{not json", 400, "not valid JSON"),
    ({"Content-Type": "application/json"}, b"[1, 2]", 400, "must be a JSON object"),
    ({"Content-Type": "text/plain"}, b'{"skill": "greet"}', 415, "Content-Type: application/json"),
    ({"Content-Type": "application/json"}, b'{"skill": "greet", "args": []}', 400, "'args' must be a JSON object"),
    ({"Content-Type": "application/json"}, b'{"skill": 7}', 400, "'skill' must name a skill"),
    ({"Content-Type": "application/json"}, b'{"skill": "greet", "args": {"name": "' + b"x" * 1_100_000 + b'"}}',
     413, "larger than 1048576 bytes"),
])
def test_malformed_and_oversized_requests_are_refused(served, headers, body, status, says):
    with served.client(ALICE) as client:
        response = client.post("/invocations", content=body, headers=headers)
    assert response.status_code == status and says in response.json()["error"]["message"]


def test_a_body_larger_than_it_claims_is_cut_off(served):
    def chunks() -> Iterator[bytes]:  # no Content-Length: the server counts what arrives
        yield b'{"skill": "greet", "args": {"name": "'
        for _ in range(40):
            yield b"y" * 50_000
        yield b'"}}'

    with served.client(ALICE) as client:
        response = client.post("/invocations", content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 413


@pytest.mark.parametrize(("token", "origin", "status", "says"), [
    (None, None, 401, "bearer token is required"),
    ("wrong-token", None, 403, "not valid"),
    (ALICE, "http://evil.example", 403, "Origin http://evil.example is not allowed"),
])
def test_tokens_and_origins_are_checked(served, token, origin, status, says):
    headers = {"Origin": origin} if origin else {}
    with served.client(token) as client:
        response = client.get("/skills", headers=headers)
    assert response.status_code == status and says in response.json()["error"]["message"]
    assert "access-control-allow-origin" not in response.headers


def test_an_allowed_origin_gets_cors_and_others_none(served):
    with served.client() as client:
        preflight = client.options("/invocations", headers={"Origin": "http://good.example",
                                                             "Access-Control-Request-Method": "POST"})
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == "http://good.example"
    with served.client(ALICE) as client:
        listed = client.get("/skills", headers={"Origin": "http://good.example"})
    assert listed.headers["access-control-allow-origin"] == "http://good.example"


def test_open_endpoints_and_the_skill_list(served):
    with served.client() as client:
        assert client.get("/healthz").json()["ok"] is True
        spec = client.get("/openapi.json").json()
        assert spec["openapi"].startswith("3.1") and {"/invocations", "/chat", "/approve"} <= set(spec["paths"])
        assert spec["paths"]["/"]["get"]["security"] == [] and "text/html" in spec["paths"]["/"]["get"]["responses"]["200"]["content"]
        assert spec["paths"]["/openapi.json"]["get"]["security"] == []
        assert client.get("/").headers["content-type"].startswith("text/html")
        assert client.get("/nowhere").status_code == 401  # who asks comes first: no map of the API for strangers
    with served.client(ALICE) as client:
        assert client.get("/nowhere").json()["error"]["message"] == "No such endpoint: GET /nowhere."
        assert client.delete("/skills").status_code == 405
        skills = {s["name"]: s for s in client.get("/skills").json()["skills"]}
    assert {"greet", "story", "risky", "chatty", "hooked"} <= set(skills)
    assert skills["greet"]["params"]["required"] == ["name"] and skills["hooked"]["webhook"] is True


def test_chat_streams_agent_events_in_order_then_the_result(served):
    stream = Stream(served, "story")
    got = stream.finish()
    names = [n for n, _ in got]
    assert names[0] == "stream-start" and names[-1] == "result"
    agent = [n for n in names if n not in ("stream-start", "result")]
    assert agent == ["agent-start", "turn-start", "agent-message", "tool-call", "tool-result", "turn-end",
                     "turn-start", "agent-message", "turn-end", "agent-complete"]
    data = dict(got)
    assert data["tool-call"]["args"]["code"] == "return 6 * 7" and isinstance(data["tool-call"]["timestamp"], int)
    assert data["tool-result"]["ms"] >= 0 and data["result"]["result"] == "Found it."
    assert stream.status == 200


def test_an_approval_from_a_second_client_resumes_the_stream(served, module_project):
    stream = Stream(served, "twice")
    pending = stream.wait_for("approval-pending")
    assert pending["call"] == "greet" and pending["caller"] == "twice" and pending["args"] == {"name": "Bob"}
    decision = {"streamId": stream.id, "approvalId": pending["approvalId"], "decision": "approve"}
    with served.client(BOB) as bob:  # not the owner
        refused = bob.post("/approve", json=decision)
        assert refused.status_code == 403 and "Only the client that started" in refused.json()["error"]["message"]
        assert bob.post("/cancel", json={"streamId": stream.id}).status_code == 403
    with served.client(ALICE) as alice:  # the owner, on another connection
        assert alice.post("/approve", json={**decision, "decision": "always"}).status_code == 400  # this call only
        assert alice.post("/approve", json=decision).status_code == 200
        second = stream.wait_for("approval-pending", nth=2)  # the stream is open, waiting on its next call
        assert second["args"] == {"name": "Ann"} and second["approvalId"] != pending["approvalId"]
        again = alice.post("/approve", json=decision)
        assert again.status_code == 409 and "decided, timed out, or never asked" in again.json()["error"]["message"]
        assert alice.post("/approve", json={**decision, "approvalId": second["approvalId"]}).status_code == 200
    got = stream.finish()
    assert [data["decision"] for name, data in got if name == "approval-decided"] == ["approve", "approve"]
    result = dict(got)["result"]
    assert result["ok"] and result["result"] == "Done."
    assert "tool-error" not in dict(got)
    with served.client(ALICE) as alice:  # once the stream has ended, there is nothing left to decide on
        assert alice.post("/approve", json=decision).status_code == 404
    assert not (module_project.home / ".local" / "state").exists()  # a client's approval is remembered for no one


def test_a_denied_approval_reaches_the_model_as_a_denial(served):
    stream = Stream(served, "risky")
    pending = stream.wait_for("approval-pending")
    with served.client(ALICE) as alice:
        alice.post("/approve", json={"streamId": stream.id, "approvalId": pending["approvalId"], "decision": "deny"})
    got = dict(stream.finish())
    assert got["approval-decided"]["decision"] == "deny"
    assert "was not approved" in json.dumps(got["tool-error"])


def test_no_decision_in_time_denies(served):
    got = dict(Stream(served, "risky").finish())  # the server's trust timeout is 1.5 s
    assert got["approval-decided"]["decision"] == "timeout" and "tool-error" in got


def test_cancel_stops_the_run_and_denies_its_pending_approvals(served):
    stream = Stream(served, "risky")
    stream.wait_for("approval-pending")
    started = time.monotonic()
    with served.client(ALICE) as alice:
        assert alice.post("/cancel", json={"streamId": stream.id}).json()["ok"] is True
    got = dict(stream.finish())
    assert time.monotonic() - started < 2
    assert got["approval-decided"]["decision"] == "cancelled"
    assert got["error"]["error"]["exit_code"] == 130 and "result" not in got
    with served.client(ALICE) as alice:  # the stream is gone
        assert alice.post("/cancel", json={"streamId": stream.id}).status_code == 404


def test_a_client_may_have_only_so_many_runs_going(served):
    streams = [Stream(served, "slow", {"seconds": 5}) for _ in range(2)]
    for stream in streams:
        stream.wait_for("stream-start")
    refused = invoke(served, "greet", {"name": "Ada"})
    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
    assert invoke(served, "greet", {"name": "Ada"}, token=BOB).status_code == 200  # per client
    with served.client(ALICE) as alice:
        for stream in streams:
            alice.post("/cancel", json={"streamId": stream.id})
    for stream in streams:
        stream.finish()
    assert invoke(served, "greet", {"name": "Ada"}).status_code == 200


def test_threads_are_sessions_each_client_sees_only_its_own(served):
    first = invoke(served, "chatty", {"text": "one"}).json()
    thread = first["threadId"]
    assert first["result"] == {"heard": "one", "before": 0}
    second = invoke(served, "chatty", {"text": "two"}, threadId=thread).json()
    assert second["result"] == {"heard": "two", "before": 1} and second["threadId"] == thread
    with served.client(ALICE) as alice:
        listed = alice.get("/threads").json()["threads"]
        assert [t["id"] for t in listed if t["id"] == thread] and listed[0]["runs"] == 2
        shown = alice.get(f"/threads/{thread}").json()
        assert [e["args"]["text"] for e in shown["entries"]] == ["one", "two"]
    with served.client(BOB) as bob:
        assert bob.get(f"/threads/{thread}").status_code == 404
        assert thread not in [t["id"] for t in bob.get("/threads").json()["threads"]]
        assert bob.delete(f"/threads/{thread}").status_code == 404
    assert invoke(served, "chatty", {"text": "x"}, token=BOB, threadId=thread).status_code == 404
    # the session key is the server's to fill: naming it directly is the same as naming the thread
    named = invoke(served, "chatty", {"text": "x", "sessionId": thread}, token=BOB)
    assert named.status_code == 404 and named.json()["error"]["message"] == (
        f"No thread '{thread}' (GET /threads lists yours). args.sessionId of 'chatty' is the server's to fill: "
        "send threadId (an id it gave you) to continue a thread, or neither to start one.")
    assert "is the server's to fill" not in invoke(served, "chatty", {"text": "x"}, token=BOB, threadId=thread).text
    assert invoke(served, "greet", {"name": "A"}, threadId=thread).status_code == 400  # keeps no session
    with served.client(ALICE) as alice:
        assert alice.delete(f"/threads/{thread}").json()["ok"] is True
        assert alice.get(f"/threads/{thread}").status_code == 404


def test_a_session_the_server_did_not_start_for_the_client_is_no_thread_of_its(served, module_project):
    # a CLI (or CI, or scheduled) run left a session under a key a client can guess
    module_project.write("filechat.skill.py", CHATTY.replace('"session": "args.sessionId"',
                                                           '"session": {"key": "args.sessionId", "store": "file"}')
                         .replace('"name": "chatty"', '"name": "filechat"'))
    done = module_project.cli("run", "filechat", "--text", "private: merger with ACME", "--sessionId", "pr-42")
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 5
    while invoke(served, "filechat", {"text": "mine"}, token=BOB).status_code != 200:  # served once seen
        assert time.monotonic() < deadline
        time.sleep(0.2)
    for extra, args in (({"threadId": "pr-42"}, {"text": "x"}), ({}, {"text": "x", "sessionId": "pr-42"})):
        taken = invoke(served, "filechat", args, token=BOB, **extra)
        assert taken.status_code == 404 and "No thread 'pr-42'" in taken.text, taken.text
    with served.client(BOB) as bob:
        assert bob.get("/threads/pr-42").status_code == 404
        assert bob.delete("/threads/pr-42").status_code == 404
    shown = module_project.cli("run", "filechat", "--text", "again", "--sessionId", "pr-42")
    assert json.loads(shown.stdout)["before"] == 1  # the session is untouched


def test_served_runs_land_in_the_run_log(served, module_project):
    # both runs made here (under xdist the module's other tests may run on another worker, with a
    # server and a project of their own); records are written in batches, so they are waited for
    invoke(served, "greet", {"name": "Logged"})
    invoke(served, "boom")

    def logged() -> bool:
        rows = json.loads(module_project.cli("runs", "list", "--json").stdout)["runs"]
        return (any(r["skill"] == "greet" and r["exit_code"] == 0 for r in rows)
                and any(r["skill"] == "boom" and r["exit_code"] == 1 for r in rows))

    wait_for(logged, what="both runs in the run log")


def _signed(body: bytes, secret: str = "hook-secret") -> str:
    import hashlib
    import hmac

    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _hook_lines(project: Any, count: int, timeout: float = 5) -> list[Any]:
    log = project.root / "hooks.log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = log.read_text().splitlines() if log.exists() else []
        if len(lines) >= count:
            return [json.loads(line) for line in lines]
        time.sleep(0.05)
    return [json.loads(line) for line in (log.read_text().splitlines() if log.exists() else [])]


MISSING = ("UsageError", 2, "The webhook has no X-Hub-Signature-256 header.")  # like a missing bearer token
MISMATCH = ("DeniedError", 3, "The webhook signature does not match its body.")


@pytest.mark.parametrize(("signature", "delivery", "error"), [
    (None, "d-missing", MISSING),
    ("sha256=" + "0" * 64, "d-invalid", MISMATCH),
    ("sha256=deadbeef", "d-short", MISMATCH),
    (_signed(b'{"other": "body"}'), "d-other", MISMATCH),
])
def test_a_webhook_without_a_valid_signature_runs_nothing(served, module_project, signature, delivery, error):
    body = b'{"action": "opened"}'
    headers = {"Content-Type": "application/json", "X-GitHub-Delivery": delivery}
    if signature:
        headers["X-Hub-Signature-256"] = signature
    before = len(_hook_lines(module_project, 0, timeout=0))
    with served.client() as client:  # webhooks carry no bearer token: the signature is the proof
        response = client.post("/hooks/hooked", content=body, headers=headers)
    kind, exit_code, message = error
    assert response.status_code == 401  # unauthenticated, whatever the exit-code class (docs/serve.md)
    assert response.json() == {"ok": False, "error": {"type": kind, "message": message, "exit_code": exit_code,
                                                      "skill": "hooked", "file": None, "line": None}}
    time.sleep(0.2)
    assert len(_hook_lines(module_project, 0, timeout=0)) == before


def test_a_signed_webhook_runs_once_and_a_replay_is_refused(served, module_project):
    body = json.dumps({"action": "opened", "number": 7}).encode()
    headers = {"Content-Type": "application/json", "X-Hub-Signature-256": _signed(body),
               "X-GitHub-Delivery": "delivery-1"}
    before = len(_hook_lines(module_project, 0, timeout=0))
    with served.client() as client:
        accepted = client.post("/hooks/hooked", content=body, headers=headers)
        assert accepted.status_code == 202 and accepted.json()["runId"]
        replayed = client.post("/hooks/hooked", content=body, headers=headers)
        assert replayed.status_code == 409 and "replay" in replayed.json()["error"]["message"]
        assert replayed.json()["error"]["type"] == "DeniedError" and replayed.json()["error"]["exit_code"] == 3
        assert client.post("/hooks/greet", content=body, headers=headers).status_code == 404  # did not opt in
    assert _hook_lines(module_project, before + 1)[-1] == {"action": "opened", "number": 7}
    time.sleep(0.3)
    assert len(_hook_lines(module_project, 0, timeout=0)) == before + 1


def test_a_replay_in_another_spelling_of_the_same_signature_is_still_a_replay(served, module_project):
    # one more spelling than the fix was made for: the same signature in upper-case hex or with an
    # upper-case prefix, under a fresh delivery id (the claim is keyed on the signature the body gives)
    body = json.dumps({"action": "edited", "number": 9}).encode()
    signature = _signed(body)
    before = len(_hook_lines(module_project, 0, timeout=0))
    with served.client() as client:
        first = {"Content-Type": "application/json", "X-Hub-Signature-256": signature, "X-GitHub-Delivery": "s-1"}
        assert client.post("/hooks/hooked", content=body, headers=first).status_code == 202
        for spelled in ("sha256=" + signature[7:].upper(), "SHA256=" + signature[7:]):
            again = {**first, "X-Hub-Signature-256": spelled, "X-GitHub-Delivery": f"s-{spelled[:3]}"}
            assert client.post("/hooks/hooked", content=body, headers=again).status_code in (401, 409)
    _hook_lines(module_project, before + 1)
    time.sleep(0.3)
    assert len(_hook_lines(module_project, 0, timeout=0)) == before + 1


def test_a_signed_delivery_resent_under_a_fresh_delivery_id_is_a_replay(served, module_project):
    # X-GitHub-Delivery is not covered by the signature: whoever saw one delivery can set any id
    body = json.dumps({"action": "closed", "number": 8}).encode()
    signed = {"Content-Type": "application/json", "X-Hub-Signature-256": _signed(body)}
    before = len(_hook_lines(module_project, 0, timeout=0))
    with served.client() as client:
        assert client.post("/hooks/hooked", content=body, headers={**signed, "X-GitHub-Delivery": "g-1"}).status_code == 202
        for fresh in ("g-2", "g-3"):
            replayed = client.post("/hooks/hooked", content=body, headers={**signed, "X-GitHub-Delivery": fresh})
            assert replayed.status_code == 409, replayed.text
        assert client.post("/hooks/hooked", content=body, headers=signed).status_code == 409  # and with none
    _hook_lines(module_project, before + 1)
    time.sleep(0.3)
    assert len(_hook_lines(module_project, 0, timeout=0)) == before + 1


@pytest.mark.parametrize(("content_type", "body", "delivery"), [
    ("text/plain; charset=utf-8", "deploy finished: ok\nsecond line ünïcode", "d-text"),
    ("text/plain", '{"looks": "like json"}', "d-text-json"),  # JSON only by its Content-Type
    ("application/x-www-form-urlencoded", "payload=%7B%22a%22%3A1%7D", "d-form"),
])
def test_a_webhook_body_that_is_not_json_reaches_the_skill_as_text(served, module_project, content_type, body,
                                                                   delivery):
    raw = body.encode()
    headers = {"Content-Type": content_type, "X-Hub-Signature-256": _signed(raw), "X-GitHub-Delivery": delivery}
    before = len(_hook_lines(module_project, 0, timeout=0))
    with served.client() as client:
        accepted = client.post("/hooks/hooked", content=raw, headers=headers)
    assert accepted.status_code == 202, accepted.text
    assert accepted.json() == {"ok": True, "runId": accepted.json()["runId"], "skill": "hooked"}
    assert _hook_lines(module_project, before + 1)[before:] == [body]  # the text, exactly, as `input`


def test_keep_alive_requests_are_not_held_by_delayed_acks(served):
    # the response goes out in two writes; without TCP_NODELAY each keep-alive request took ~44 ms
    with served.client() as client:
        client.get("/healthz")
        took = []
        for _ in range(7):
            started = time.perf_counter()
            client.get("/healthz")
            took.append(time.perf_counter() - started)
    assert sorted(took)[3] < 0.025, took
