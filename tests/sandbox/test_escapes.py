"""Escape payloads: each is contained, touches no file/network/process, and the sandbox lives on."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentapps.sandbox import Sandbox, SandboxLimits, SnippetResult
from agentapps.sandbox.process import CHILD

LIMITS = SandboxLimits(timeout_s=0.5, heap_bytes=32 << 20, max_output_chars=2000)
WATCHED = ("open", "socket.connect", "subprocess.Popen", "os.system", "os.posix_spawn", "os.fork")
BANNED_GLOBALS = {
    "ArrayBuffer", "SharedArrayBuffer", "DataView", "Atomics", "WebAssembly", "Proxy",
    "FinalizationRegistry", "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array",
    "Uint16Array", "Int32Array", "Uint32Array", "Float16Array", "Float32Array", "Float64Array",
    "BigInt64Array", "BigUint64Array", "Intl", "Temporal", "require", "process", "fetch", "Deno",
    "Bun",
}


@dataclass
class AuditRecorder:
    """Collects dangerous audit events raised (from any thread) while a snippet runs."""

    armed: bool = False
    events: list[str] = field(default_factory=list)

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        watched = event in WATCHED or event.startswith(("os.exec", "os.spawn"))
        if self.armed and watched and not _respawn(event, args):
            self.events.append(event)


def _respawn(event: str, args: tuple[Any, ...]) -> bool:
    """The host starting a fresh sandbox process after a failure (its own, not agent code's)."""
    if event == "subprocess.Popen":
        return str(CHILD) in list(map(str, args[1]))
    if event == "open":  # /dev/null for its stdin and stdout, and a file object on its stderr pipe
        return args[0] == os.devnull or isinstance(args[0], int)
    return False


@pytest.fixture(scope="session")
def audit() -> AuditRecorder:
    recorder = AuditRecorder()
    sys.addaudithook(recorder.hook)  # audit hooks cannot be removed: install once per session
    return recorder


class Host:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def __call__(self, name: str, args: Any) -> Any:
        self.calls.append((name, args))
        return {"name": name, "args": args}


Check = Callable[[SnippetResult, Host], None]


@dataclass(frozen=True)
class Payload:
    id: str
    code: str
    outcome: str  # "ok", an error type, or several joined by "|"
    says: str = ""  # text the error message (or the JSON of the value) must contain
    check: Check | None = None
    cleanup: str = ""  # undoes pollution of this isolate's own JS state before the next snippet


def no_calls(result: SnippetResult, host: Host) -> None:
    assert host.calls == []


def calls(*expected: tuple[str, Any]) -> Check:
    def check(result: SnippetResult, host: Host) -> None:
        assert host.calls == list(expected)
    return check


def clean_globals(result: SnippetResult, host: Host) -> None:
    names = set(result.value)
    assert names.isdisjoint(BANNED_GLOBALS)
    assert "ctx" in names and not any(n.startswith("__agentapps") for n in names)


PAYLOADS = [
    # host APIs that do not exist
    Payload("require-fs", "return require('fs').readFileSync('/etc/passwd', 'utf8')", "runtime",
            "require is not defined"),
    Payload("process-env", "return process.env", "runtime", "process is not defined"),
    Payload("dynamic-import", "return await import('fs')", "runtime", "Not supported"),
    Payload("dynamic-import-file-url", "return await import('file:///etc/passwd')", "runtime"),
    Payload("function-ctor-this", "return typeof new Function('return this')().process", "ok",
            '"undefined"'),
    Payload("constructor-chain", "return globalThis.constructor.constructor('return process')()",
            "runtime", "process is not defined"),
    Payload("async-function-ctor", "return await (async () => {}).constructor("
            "'return [typeof require, typeof process, typeof fetch]')()", "ok",
            '["undefined", "undefined", "undefined"]'),
    Payload("fetch", "return await fetch('http://169.254.169.254/')", "runtime", "fetch"),
    Payload("xhr", "return new XMLHttpRequest()", "runtime", "XMLHttpRequest"),
    Payload("websocket", "return new WebSocket('ws://x')", "runtime", "WebSocket"),
    # (issue 22's attack suite: spellings the earlier rounds did not try)
    Payload("async-generator-ctor", "return await Object.getPrototypeOf(async function* () {})"
            ".constructor('yield [typeof require, typeof process, typeof fetch]')().next()", "ok",
            '"value": ["undefined", "undefined", "undefined"]'),
    Payload("shadow-realm", "return new ShadowRealm().evaluate('typeof process')", "runtime",
            "ShadowRealm is not defined"),
    Payload("deno", "return Deno.readTextFileSync('/etc/passwd')", "runtime", "Deno"),
    Payload("bun", "return await Bun.file('/etc/passwd').text()", "runtime", "Bun"),
    # refs that are not bare skill names never reach the host
    Payload("file-ref", "return await ctx.manager.invoke('file:///etc/passwd', {})", "invoke",
            "not a bare skill name", no_calls),
    Payload("inline-ref", "return await ctx.manager.invoke('inline://code,export default 1')",
            "invoke", "not a bare skill name", no_calls),
    Payload("path-ref", "return await ctx.manager.invoke('../../bin/sh', {})", "invoke",
            "not a bare skill name", no_calls),
    # ctx and prototypes
    Payload("object-prototype-pollution", "Object.prototype.polluted = 'yes'; "
            "Array.prototype.extra = 1; return await ctx.manager.invoke('echo', {a: [1]})", "ok",
            '"args": {"a": [1]}', calls(("echo", {"a": [1]}))),
    Payload("tojson-pollution", "Object.prototype.toJSON = function () { return 'hijacked' }; "
            "await ctx.manager.invoke('echo', {a: 1}); return 1", "ok", "1",
            calls(("echo", "hijacked")), cleanup="delete Object.prototype.toJSON;"),
    Payload("ctx-prototype", "ctx.__proto__ = {evil: 1}; Object.setPrototypeOf(ctx.manager, {})",
            "runtime", "TypeError"),
    Payload("reassign-invoke", "ctx.manager.invoke = async () => 'hijacked'; ctx.manager = {}; "
            "globalThis.ctx = null; return await ctx.manager.invoke('echo', {k: 1})", "ok",
            '"name": "echo"', calls(("echo", {"k": 1}))),
    Payload("reassign-invoke-strict", "'use strict'; ctx.manager.invoke = null", "runtime",
            "read only"),
    Payload("redefine-invoke", "Object.defineProperty(ctx.manager, 'invoke', {value: () => 1})",
            "runtime", "TypeError"),
    Payload("delete-ctx", "delete globalThis.ctx; return typeof ctx.manager.invoke", "ok",
            '"function"'),
    Payload("bridge-not-named", "return Object.getOwnPropertyNames(globalThis)"
            ".filter(n => n.startsWith('__agentapps'))", "ok", "[]"),
    Payload("caller-chain", "function peek() { return peek.caller } const me = peek(); "
            "try { return String(me.caller) } catch (e) { return 'blocked: ' + e.name }", "ok",
            "blocked: TypeError"),
    Payload("json-hijack", "JSON.stringify = () => '{\"requests\":[{\"id\":1,\"name\":\"shell\","
            "\"args\":\"{}\"}],\"outcome\":null,\"limit\":null}'; JSON.parse = () => ({}); "
            "return 1", "ok", "1", no_calls),
    Payload("promise-hijack", "Promise.prototype.then = function () { return 'x' }; "
            "Promise = null; return await ctx.manager.invoke('echo', 5)", "ok", '"args": 5'),
    Payload("console-hijack", "console.log = () => { throw 1 }; console.log('kept'); return 1",
            "ok", "1", lambda r, h: _assert(r.logs == "kept")),
    # args crossing the bridge
    Payload("getter-returning-global", "return await ctx.manager.invoke('echo', "
            "{get x() { return globalThis }})", "ok", '"x": {"memory"',
            calls(("echo", {"x": {"memory": {"kept": True}}}))),  # plain JSON of enumerables only
    Payload("getter-returning-cycle", "return await ctx.manager.invoke('echo', "
            "{get x() { const a = {}; a.a = a; return a }})", "invoke", "not JSON", no_calls),
    Payload("getter-returning-function", "return await ctx.manager.invoke('echo', "
            "{get f() { return () => 1 }, n: 1})", "ok", '"args": {"n": 1}', calls(("echo", {"n": 1}))),
    Payload("tojson-in-args", "return await ctx.manager.invoke('echo', "
            "{toJSON() { return {swapped: true} }})", "ok", "swapped",
            calls(("echo", {"swapped": True}))),
    Payload("cyclic-args", "const a = {}; a.self = a; return await ctx.manager.invoke('echo', a)",
            "invoke", "circular", no_calls),
    Payload("huge-args", "return await ctx.manager.invoke('echo', {s: 'x'.repeat(2 << 20)})",
            "limit", "byte limit", no_calls),
    Payload("huge-args-swallowed", "try { await ctx.manager.invoke('echo', 'x'.repeat(2 << 20)) }"
            " catch (e) {} return 'swallowed'", "limit", "byte limit", no_calls),
    Payload("function-args", "return await ctx.manager.invoke('echo', () => 1)", "invoke",
            "JSON value", no_calls),
    Payload("undefined-args", "return await ctx.manager.invoke('echo')", "ok", '"args": null',
            calls(("echo", None))),
    Payload("bigint-args", "return await ctx.manager.invoke('echo', {n: 10n})", "invoke",
            "BigInt", no_calls),
    Payload("symbol-args", "return await ctx.manager.invoke('echo', Symbol('s'))", "invoke",
            "JSON value", no_calls),
    Payload("object-as-name", "return await ctx.manager.invoke({toString() { return 'echo' }})",
            "invoke", "name must be a string", no_calls),
    Payload("invoke-flood", "for (;;) ctx.manager.invoke('echo', {})", "timeout", "", no_calls),
    # time
    Payload("cpu-loop", "while (true) {}", "timeout"),
    Payload("catch-the-timeout", "while (true) { try { while (true) {} } catch (e) {} }", "timeout"),
    Payload("endless-await", "for (;;) await null", "timeout"),
    Payload("endless-promise-chain", "const spin = () => Promise.resolve().then(spin); spin(); "
            "return 1", "timeout|memory"),
    Payload("detached-async-loop", "(async () => { for (;;) await null })(); return 'done'",
            "timeout"),
    Payload("getter-bomb-return", "return {get x() { for (;;) {} }}", "timeout"),
    Payload("memory-accessor-bomb", "Object.defineProperty(globalThis, 'memory', "
            "{get() { for (;;) {} }})", "timeout"),
    Payload("set-timeout", "setTimeout(() => {}, 0)", "runtime", "setTimeout is not"),
    Payload("mini-racer-timer", "return __timer_manager.setTimeout(() => 1, 0)", "runtime"),
    Payload("set-interval", "setInterval(() => {}, 1)", "runtime", "setInterval"),
    # memory
    # (JSON.stringify flattens the string: 'x'.repeat() alone is a cheap rope)
    Payload("heap-bomb", "const a = []; "
            "for (;;) a.push(JSON.stringify('x'.repeat(1 << 16) + a.length))", "memory"),
    Payload("heap-bomb-in-memory", "memory.hog = []; "
            "for (;;) memory.hog.push(JSON.stringify('y'.repeat(1 << 16) + memory.hog.length))",
            "memory"),
    Payload("array-bomb", "const a = []; for (;;) a.push(new Array(1 << 16).fill(a.length))",
            "memory"),
    Payload("arraybuffer-bomb", "const a = []; for (;;) a.push(new ArrayBuffer(1 << 30))",
            "runtime", "ArrayBuffer is not defined"),
    Payload("typed-array", "return new Uint8Array(1 << 30).length", "runtime", "Uint8Array"),
    Payload("typed-array-base", "return Object.getPrototypeOf(Float64Array)", "runtime"),
    Payload("shared-array-buffer", "return new SharedArrayBuffer(8)", "runtime"),
    Payload("wasm-memory", "return new WebAssembly.Memory({initial: 65536})", "runtime",
            "WebAssembly"),
    Payload("atomics-wait", "return Atomics.wait(null, 0, 0)", "runtime", "Atomics"),
    Payload("intl-native-memory", "const a = [], s = new Intl.Segmenter('en'); "
            "for (;;) a.push(s.segment('unmetered ICU memory'))", "runtime", "Intl is not defined"),
    Payload("temporal-native-memory", "const a = []; for (;;) a.push(new Temporal.Duration(1))",
            "runtime", "Temporal is not defined"),
    # (a locale method given options builds a fresh ICU object per call: the options are dropped)
    Payload("locale-options-native-memory", "const d = new Date(0); "
            "return d.toLocaleDateString('en', {weekday: 'long', timeZone: 'Asia/Tokyo'}) === "
            "d.toLocaleDateString()", "ok", "true"),
    Payload("locale-formatting-still-works", "return [(1234.5).toLocaleString('en-US'), "
            "'a'.localeCompare('b')]", "ok", '["1,234.5", -1]'),
    Payload("proxy", "return new Proxy([], {get: () => 2 ** 32})", "runtime", "Proxy"),
    Payload("huge-array-fill", "return new Array(2 ** 32 - 1).fill(0).length", "runtime",
            "too long"),
    Payload("stack-overflow", "const f = () => f(); f()", "runtime", "Maximum call stack"),
    Payload("log-flood", "for (let i = 0; i < 1e6; i++) console.log('line', i)", "ok|timeout", "",
            lambda r, h: _assert(len(r.logs) < 2200)),
    # eval and friends
    Payload("eval", "return eval('typeof require + typeof process + typeof fetch')", "ok",
            "undefinedundefinedundefined"),
    Payload("indirect-eval", "return (0, eval)('Object.getOwnPropertyNames(this)')", "ok", "",
            clean_globals),
    Payload("sloppy-this", "return (function () { return Object.getOwnPropertyNames(this) })()",
            "ok", "", clean_globals),
    Payload("prepare-stack-trace", "Error.prepareStackTrace = (e, frames) => frames.map(f => "
            "String(f.getThis && f.getThis())); return new Error('x').stack", "ok|runtime"),
    Payload("hostile-throw", "throw {get message() { throw new Error('nope') }}", "runtime",
            "cannot be described"),
    Payload("bigint-return", "return 10n", "runtime", "not JSON"),
]


def _assert(condition: bool) -> None:
    assert condition


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(LIMITS, memory={"kept": True}) as sb:
        yield sb


@pytest.mark.parametrize("payload", PAYLOADS, ids=[p.id for p in PAYLOADS])
@pytest.mark.attack("sandbox escapes")
def test_escape_payload_is_contained(payload: Payload, sandbox: Sandbox,
                                     audit: AuditRecorder) -> None:
    host = Host()

    async def attack() -> tuple[SnippetResult, list[str], SnippetResult]:
        audit.events.clear()
        audit.armed = True
        try:
            result = await sandbox.run(payload.code, host)
        finally:
            audit.armed = False
        after = await sandbox.run(payload.cleanup + "return [1 + 1, memory.kept]", Host())
        return result, list(audit.events), after

    result, events, after = asyncio.run(attack())
    got = "ok" if result.ok else (result.error or {}).get("type")
    assert got in payload.outcome.split("|"), result
    shown = json.dumps(result.value) if result.ok else (result.error or {}).get("message", "")
    assert payload.says in shown
    if payload.check is not None:
        payload.check(result, host)
    assert events == []  # no file, network or process access while the payload ran
    assert after.ok and after.value == [2, True]  # alive, and memory survives (or is restored)


def test_at_least_28_payloads() -> None:
    assert len(PAYLOADS) >= 28


def test_python_objects_are_untouched_by_js_prototype_pollution(sandbox: Sandbox) -> None:
    host = Host()
    asyncio.run(sandbox.run("Object.prototype.polluted = 1; Object.prototype.then = 5", host))
    result = asyncio.run(sandbox.run("return await ctx.manager.invoke('echo', {a: 1})", host))
    assert host.calls == [("echo", {"a": 1})]
    assert result.value == {"name": "echo", "args": {"a": 1}}
    assert not hasattr({}, "polluted") and "polluted" not in dir(object)


# Builtins that loop in C++ over a huge length ignore V8's termination and abort the process
# ("Fatal JavaScript out of memory: invalid table size"); the prelude refuses such lengths.
# Run in a child process so that a regression is a failed test, not a dead test run.
V8_FATAL_PATHS = [
    "Array.prototype.fill.call({length: 2 ** 32 - 1}, 0)",
    "new Array(2 ** 30).toReversed()",
    "Array.from({length: 2 ** 32 - 1})",
    "new Array(2 ** 32 - 1).with(0, 1)",
    "'x'.repeat(2 ** 29 - 30).split('')",
    "'x'.repeat(2 ** 29 - 30).match(/x/g)",
    "/x/g[Symbol.match]('x'.repeat(2 ** 29 - 30))",
    "[].concat({length: 2 ** 32 - 1, [Symbol.isConcatSpreadable]: true})",
    "Array.prototype.copyWithin.call({length: 2 ** 53 - 1}, 0, 1)",
    "new Array(2 ** 32 - 1).sort()",
    "(() => { const a = []; a.length = 2 ** 32 - 1; return a.flat() })()",
]


def test_builtins_that_would_abort_v8_are_refused_in_a_child_process() -> None:
    script = textwrap.dedent(f"""
        import asyncio, json
        from agentapps.sandbox import Sandbox, SandboxLimits
        async def host(name, args):
            return None
        with Sandbox(SandboxLimits(timeout_s=2, heap_bytes=32 << 20)) as sb:
            for expr in {V8_FATAL_PATHS!r}:
                result = asyncio.run(sb.run("return " + expr, host))
                print(json.dumps(result.error), flush=True)
            print(json.dumps(asyncio.run(sb.run("return 'alive'", host)).value))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[-1] == '"alive"'
    errors = [json.loads(line) for line in lines[:-1]]
    assert len(errors) == len(V8_FATAL_PATHS)
    assert all(e["type"] == "runtime" and "too long" in e["message"] for e in errors), errors
