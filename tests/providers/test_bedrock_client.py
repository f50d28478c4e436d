"""The Bedrock wrapper, driven through the real boto3 client against the loopback fake Bedrock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

from agentapps.errors import ConfigError, DeniedError, InterruptedError_, ProviderError
from agentapps.providers.bedrock import TurnResult, explain_error, make_client, stream_turn
from tests.fakes.bedrock import FakeBedrock, Reply
from tests.fakes.eventstream import event_frame, exception_frame

REPO = Path(__file__).resolve().parents[2]
MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
PROFILE_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
SECRET = "canary-secret-wJalrXUtnFEMI-K7MDENG"
USER = [{"role": "user", "content": [{"text": "hello"}]}]
TOOL = {
    "toolSpec": {
        "name": "invoke",
        "description": "Run a JavaScript snippet.",
        "inputSchema": {"json": {"type": "object", "properties": {"code": {"type": "string"}}}},
    }
}


def _isolate_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, keys: bool) -> None:
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    for name in ("config", "credentials"):
        (tmp_path / name).write_text("", encoding="utf-8")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    if keys:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLEFAKEKEY00")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _isolate_aws(monkeypatch, tmp_path, keys=True)


@pytest.fixture
def connect(aws_env: None) -> Iterator[Any]:
    """`connect(fake)`: a real bedrock-runtime client aimed at the fake, botocore retries off."""
    clients: list[Any] = []

    def make(fake: FakeBedrock, **options: Any) -> Any:
        clients.append(make_client("us-east-1", endpoint_url=fake.endpoint_url, max_attempts=1,
                                   **options))  # fmt: skip
        return clients[-1]

    yield make
    for client in clients:
        client.close()


def turn(client: Any, **overrides: Any) -> TurnResult:
    options: dict[str, Any] = {
        "model_id": MODEL,
        "system": "You are terse.",
        "messages": USER,
        "tools": [TOOL],
        "inference": {"maxTokens": 256},
        "backoff_base": 0,
        "sleep": lambda _seconds: None,
    }
    return stream_turn(client, **{**options, **overrides})


# -- the event-stream encoder ---------------------------------------------------------------------


def test_encoded_frames_decode_with_botocore_in_any_chunking() -> None:
    frames = event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hé"}})
    frames += exception_frame("throttlingException", "slow down")
    buffer = EventStreamBuffer()
    for i in range(0, len(frames), 7):
        buffer.add_data(frames[i : i + 7])
    first, second = list(buffer)
    assert first.headers == {
        ":event-type": "contentBlockDelta",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert json.loads(first.payload) == {"contentBlockIndex": 0, "delta": {"text": "hé"}}
    assert second.headers[":message-type"] == "exception"
    assert second.headers[":exception-type"] == "throttlingException"
    assert json.loads(second.payload) == {"message": "slow down"}


def test_a_flipped_payload_byte_fails_the_message_crc() -> None:
    frame = bytearray(event_frame("messageStop", {"stopReason": "end_turn"}))
    frame[-6] ^= 0xFF
    buffer = EventStreamBuffer()
    buffer.add_data(bytes(frame))
    with pytest.raises(ChecksumMismatch):
        list(buffer)


def test_fake_splits_tool_input_into_several_json_fragments() -> None:
    reply = Reply(tool_uses=[{"name": "invoke", "input": {"code": "ctx.manager.finish(42)"}}])
    fragments = [
        body["delta"]["toolUse"]["input"]
        for kind, body in reply.events()
        if kind == "contentBlockDelta"
    ]
    assert len(fragments) >= 3
    assert json.loads("".join(fragments)) == {"code": "ctx.manager.finish(42)"}


# -- a turn, assembled ----------------------------------------------------------------------------


def test_text_deltas_reach_on_text_in_order(connect: Any) -> None:
    seen: list[str] = []
    with FakeBedrock([Reply(text=["Hel", "lo, ", "wor", "ld"])]) as fake:
        result = turn(connect(fake), on_text=seen.append)
    assert seen == ["Hel", "lo, ", "wor", "ld"]
    assert result.content == [{"text": "Hello, world"}]
    assert result.stop_reason == "end_turn"


def test_tool_use_input_is_reassembled_from_fragments(connect: Any) -> None:
    use = {"toolUseId": "tooluse_1", "name": "invoke", "input": {"code": "1 + 1", "n": [1, 2]}}
    with FakeBedrock([Reply(text="Let me run it.", tool_uses=[{"toolUse": use}])]) as fake:
        result = turn(connect(fake))
    assert result.content == [{"text": "Let me run it."}, {"toolUse": use}]
    assert result.stop_reason == "tool_use"


def test_request_body_is_the_converse_shape_we_sent(connect: Any) -> None:
    history = [*USER, {"role": "assistant", "content": [{"text": "hi"}]},
               {"role": "user", "content": [{"text": "again"}]}]  # fmt: skip
    inference = {"maxTokens": 512, "temperature": 0.2, "stopSequences": ["END"], "topP": None}
    with FakeBedrock([Reply(text="ok")]) as fake:
        turn(connect(fake), messages=history, inference=inference)
    (request,) = fake.requests
    assert request.operation == "converse-stream"
    assert request.body == {
        "system": [{"text": "You are terse."}],
        "messages": history,
        "toolConfig": {"tools": [TOOL], "toolChoice": {"auto": {}}},
        "inferenceConfig": {"maxTokens": 512, "temperature": 0.2, "stopSequences": ["END"]},
    }


def test_bare_tool_specs_are_wrapped_as_tool_spec(connect: Any) -> None:
    bare = {"name": "invoke", "description": "Run code.", "inputSchema": {"type": "object"}}
    with FakeBedrock([Reply(text="ok")]) as fake:
        turn(connect(fake), tools=[bare], system="")
    body = fake.requests[0].body
    assert "system" not in body
    assert body["toolConfig"]["tools"] == [
        {"toolSpec": {**bare, "inputSchema": {"json": {"type": "object"}}}}
    ]


def test_usage_is_collected_from_metadata_with_the_cache_counters(connect: Any) -> None:
    usage = {"inputTokens": 321, "outputTokens": 54, "cacheReadInputTokens": 2048,
             "cacheWriteInputTokens": 17}
    with FakeBedrock([Reply(text="ok", usage=usage)]) as fake:
        result = turn(connect(fake))
    assert result.usage == usage


def test_max_tokens_stop_reason_is_passed_through(connect: Any) -> None:
    with FakeBedrock([Reply(text="cut sho", stop_reason="max_tokens")]) as fake:
        assert turn(connect(fake)).stop_reason == "max_tokens"


def test_inference_profile_model_id_reaches_the_fake_decoded(connect: Any) -> None:
    with FakeBedrock([Reply(text="ok")]) as fake:
        turn(connect(fake), model_id=PROFILE_MODEL)
    assert fake.requests[0].model_id == PROFILE_MODEL


# -- retries --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "failure",
    [
        Reply.http_error("ThrottlingException"),
        Reply.http_error("ServiceUnavailableException"),
        Reply.mid_stream("throttlingException", after=3),
        Reply.mid_stream("internalServerException", after=4),
        Reply.mid_stream(None, after=3),  # connection dropped
    ],
    ids=["http-429", "http-503", "mid-stream-throttling", "mid-stream-internal", "dropped"],
)
def test_transient_failure_then_success_is_retried(connect: Any, failure: Reply) -> None:
    retries: list[tuple[int, float, str]] = []
    with FakeBedrock([failure, Reply(text="recovered")]) as fake:
        result = turn(connect(fake), on_retry=lambda *report: retries.append(report))
    assert result.content == [{"text": "recovered"}]
    assert len(fake.requests) == 2
    assert [attempt for attempt, _delay, _message in retries] == [1]


def test_mid_stream_failures_beyond_the_limit_raise_provider_error(connect: Any) -> None:
    script = [Reply.mid_stream("throttlingException") for _ in range(3)] + [Reply(text="late")]
    with (
        FakeBedrock(script) as fake,
        pytest.raises(ProviderError, match="retried 2 times") as caught,
    ):
        turn(connect(fake), max_stream_retries=2)
    assert len(fake.requests) == 3
    assert "\n" not in str(caught.value)


def test_backoff_is_full_jitter_bounded_by_the_cap(connect: Any) -> None:
    delays: list[float] = []
    slept: list[float] = []
    script = [Reply.http_error("ThrottlingException") for _ in range(5)] + [Reply(text="ok")]
    with FakeBedrock(script) as fake:
        turn(connect(fake), backoff_base=1.0, backoff_cap=3.0, max_stream_retries=5,
             sleep=slept.append, on_retry=lambda _n, delay, _m: delays.append(delay))  # fmt: skip
    bounds = [1.0, 2.0, 3.0, 3.0, 3.0]
    assert all(0 <= delay <= bound for delay, bound in zip(delays, bounds, strict=True))
    assert sum(slept) == pytest.approx(sum(delays))


NOT_RETRIED = [
    ("AccessDeniedException", "You don't have access to the model", DeniedError,
     "bedrock:InvokeModelWithResponseStream"),
    ("ValidationException",
     ("Invocation of model ID anthropic.claude-3-5-haiku-20241022-v1:0 with on-demand throughput "
      "isn\u2019t supported. Retry your request with the ID or ARN of an inference profile."),
     ConfigError, f"'us.{MODEL}'"),
    ("ResourceNotFoundException", "Model not found.", ConfigError, "list-foundation-models"),
    ("ValidationException", "messages: field required", ProviderError, "messages: field required"),
    ("UnrecognizedClientException", "The security token included in the request is invalid.",
     ConfigError, "AWS_PROFILE"),
]  # fmt: skip


@pytest.mark.parametrize(("error", "message", "kind", "says"), NOT_RETRIED)
def test_client_errors_are_not_retried_and_explained_in_one_line(
    connect: Any, error: str, message: str, kind: type[Exception], says: str
) -> None:
    script = [Reply.http_error(error, message), Reply(text="never")]
    with FakeBedrock(script) as fake, pytest.raises(kind) as caught:
        turn(connect(fake))
    assert len(fake.requests) == 1
    text = str(caught.value)
    assert says in text and "\n" not in text
    assert type(caught.value) is kind


def test_error_messages_never_carry_the_secret_key(connect: Any) -> None:
    leaky = f"User with key {SECRET} and AKIAIOSFODNN7EXAMPLE is not authorized"
    script = [Reply.http_error("AccessDeniedException", leaky)]
    with FakeBedrock(script) as fake, pytest.raises(DeniedError) as caught:
        turn(connect(fake))
    assert SECRET not in str(caught.value)
    assert "AKIAIOSFODNN7EXAMPLE" not in str(caught.value)


# -- configuration --------------------------------------------------------------------------------


def test_missing_credentials_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _isolate_aws(monkeypatch, tmp_path, keys=False)
    with FakeBedrock([Reply(text="never")]) as fake:
        client = make_client("us-east-1", endpoint_url=fake.endpoint_url, max_attempts=1)
        with pytest.raises(ConfigError, match="aws configure") as caught:
            turn(client)
        client.close()
    assert "AWS_PROFILE" in str(caught.value)
    assert fake.requests == []


def test_missing_region_is_a_config_error_saying_how_to_set_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _isolate_aws(monkeypatch, tmp_path, keys=True)
    with pytest.raises(ConfigError, match="AWS_REGION"):
        make_client(None)


def test_unknown_profile_is_a_config_error(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    with pytest.raises(ConfigError, match="no-such-profile"):
        make_client("us-east-1")


def test_client_uses_standard_retries_and_the_timeouts(aws_env: None) -> None:
    client = make_client("eu-west-1", connect_timeout=3, read_timeout=42)
    config = client.meta.config
    assert config.retries == {"mode": "standard", "total_max_attempts": 5}
    assert (config.connect_timeout, config.read_timeout) == (3, 42)
    assert client.meta.region_name == "eu-west-1"
    client.close()


def test_region_and_endpoint_come_from_the_environment(
    aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeBedrock([Reply(text="from env")]) as fake:
        monkeypatch.setenv("AWS_REGION", "us-west-2")
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", fake.endpoint_url)
        client = make_client(None, max_attempts=1)
        assert turn(client).content == [{"text": "from env"}]
        client.close()
    assert "us-west-2" in fake.requests[0].headers["authorization"]


def test_endpoint_connection_errors_name_the_endpoint_setting() -> None:
    from botocore.exceptions import EndpointConnectionError

    exc = EndpointConnectionError(endpoint_url="http://127.0.0.1:9/model")
    error = explain_error(exc, model_id=MODEL, region="us-east-1")
    assert isinstance(error, ProviderError)
    assert "AWS_ENDPOINT_URL_BEDROCK_RUNTIME" in str(error)


# -- interrupts and import cost -------------------------------------------------------------------


def test_cancelling_a_slow_stream_interrupts_within_a_second(connect: Any) -> None:
    flag = threading.Event()
    slow = Reply(text=" ".join(["word"] * 60), delay=0.1)
    with FakeBedrock([slow]) as fake:
        client = connect(fake)
        started = time.monotonic()
        with pytest.raises(InterruptedError_):
            turn(client, on_text=lambda _text: flag.set(), cancelled=flag.is_set)
        assert time.monotonic() - started < 1.0
        deadline = time.monotonic() + 3
        while not fake.requests[0].aborted and time.monotonic() < deadline:
            time.sleep(0.05)
    assert fake.requests[0].aborted, "the fake should see the client close the stream"


def test_cancelling_during_backoff_stops_before_the_next_attempt(connect: Any) -> None:
    flag = threading.Event()
    script = [Reply.http_error("ThrottlingException"), Reply(text="never")]
    with FakeBedrock(script) as fake, pytest.raises(InterruptedError_):
        turn(connect(fake), backoff_base=30, sleep=lambda _s: flag.set(), cancelled=flag.is_set)
    assert len(fake.requests) == 1


def test_errors_raised_by_on_text_propagate_unchanged(connect: Any) -> None:
    def broken_pipe(_text: str) -> None:
        raise BrokenPipeError("stdout closed")

    with FakeBedrock([Reply(text="hello")]) as fake, pytest.raises(BrokenPipeError):
        turn(connect(fake), on_text=broken_pipe)
    assert len(fake.requests) == 1


def test_importing_the_wrapper_does_not_import_boto3() -> None:
    code = (
        "import sys, agentapps.providers.bedrock; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'boto3', 'botocore'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          check=True, timeout=30)  # fmt: skip
    assert done.stdout.strip() == "[]"


def test_fake_runs_as_a_standalone_process(connect: Any, tmp_path: Path) -> None:
    script, port_file, log = tmp_path / "script.json", tmp_path / "port", tmp_path / "requests"
    script.write_text(json.dumps([{"error": "ThrottlingException"}, {"text": "from afar"}]))
    argv = [sys.executable, "-m", "tests.fakes.bedrock", "--script", str(script),
            "--port-file", str(port_file), "--requests-file", str(log)]  # fmt: skip
    process = subprocess.Popen(argv, cwd=REPO)
    try:
        deadline = time.monotonic() + 10
        while not port_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        client = make_client("us-east-1", endpoint_url=f"http://127.0.0.1:{port_file.read_text()}",
                             max_attempts=1)  # fmt: skip
        result = turn(client, model_id=PROFILE_MODEL)
        client.close()
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert result.content == [{"text": "from afar"}]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["model_id"] for line in lines] == [PROFILE_MODEL, PROFILE_MODEL]
    assert lines[1]["body"]["messages"] == USER
