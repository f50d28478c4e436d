"""The sandbox process: owns one V8 isolate and runs what the host sends over one socket.

agentapps/sandbox/process.py starts it as `python -I -S -B child.py FD PACKAGE_DIR DATA_BYTES
HEAP_BYTES PARENT_PID DEATHSIG`, with an empty environment, cwd `/` and no other open fds. It
imports only the standard library and mini-racer, and trusts nothing it runs: the host kills it
on a timeout and reads its death as a failed snippet.

Wire format, both ways: frames of a 4-byte big-endian length and a body. A host frame is a list
of operations, each a kind byte and two length-prefixed fields: `B` script (evaluate it; its
value, an object, becomes the target), `S` key value (set a string property of the target), `G`
key (read one). Only the prelude is evaluated; the bridge is driven through its accessors. The
reply is one tag byte: `V` + the UTF-8 string the last operation gave, `N` (it gave something
else), `M` + text (the heap limit was hit) or `E` + text (an operation failed).

Start-up is most of a first snippet's latency, so this file imports as little as it can (no
typing, pathlib or json) and drives mini-racer's native library directly through its C ABI when
the installed version's ABI was checked (ABI_CHECKED): that skips mini-racer's Python layer and
asyncio (importing py_mini_racer took 85-99 ms under `python -X importtime` on 2026-11-27, 2 cores
at load 5.6). Any other version goes through mini-racer's public API.
"""

from __future__ import annotations

import _queue
import _signal  # type: ignore[import-not-found]  # `signal` imports enum: 5.6-8.5 ms, 2026-11-27
import _thread
import ctypes
import os
import resource
import select
import sys

TYPE_CHECKING = False  # typing costs milliseconds of start-up here; mypy reads this name as True
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

ABI_CHECKED = ("0.14.",)  # mini-racer versions whose C ABI (below) was checked by hand
V8_FLAGS = b"--single-threaded"  # what mini-racer itself passes
PR_SET_PDEATHSIG = 1
POLLRDHUP = getattr(select, "POLLRDHUP", 0)
LIBRARY = "libmini_racer.dylib" if sys.platform == "darwin" else "libmini_racer.so"
HANGUP = POLLRDHUP | select.POLLHUP | select.POLLERR | select.POLLNVAL


class MemoryLimit(Exception):
    """V8 terminated the running JavaScript at the isolate's hard heap limit."""


class EvalFailed(Exception):
    """An evaluation ended in an exception (the prelude catches agent code's, so: a fault)."""


def harden(parent_pid: int, data_bytes: int, deathsig: bool, fd: int) -> None:
    """Cap memory, forbid core dumps and file writes, and die with the host."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a V8 fatal error must not dump gigabytes
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # this process never writes a file
    resource.setrlimit(resource.RLIMIT_DATA, (data_bytes, data_bytes))
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # Ctrl-C reaches the host, which kills us
    if deathsig and sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, _signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the host died before the death signal was armed
        os._exit(0)
    _thread.start_new_thread(_exit_on_hangup, (fd, parent_pid))


def _exit_on_hangup(fd: int, parent_pid: int) -> None:
    """The host's end of the socket closes when the host dies, however it dies: exit then, even
    while the isolate is busy (this thread waits in poll, without the main thread). Where poll
    does not report a hang-up (POLLRDHUP is Linux's), a new parent id tells the same, within 1 s."""
    poller = select.poll()
    poller.register(fd, POLLRDHUP)
    while True:
        if any(events & HANGUP for _, events in poller.poll(1000)) or os.getppid() != parent_pid:
            os._exit(0)


class _Union(ctypes.Union):
    _fields_ = (("ptr", ctypes.c_void_p), ("int_val", ctypes.c_int64),
                ("double_val", ctypes.c_double))


class _Value(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("value", _Union), ("len", ctypes.c_size_t), ("type", ctypes.c_uint8))


_VALUE_P = ctypes.POINTER(_Value)
_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_uint64, _VALUE_P)
_STRING, _OBJECT, _OOM = 5, 10, 202
_ERRORS = {200, 201, 203, 204, 205, 206}  # execute, parse, timeout, terminated, value, key


class NativeDriver:
    """libmini_racer through its C ABI. An evaluation's result arrives by callback on V8's thread;
    property reads and writes are synchronous calls that run the bridge's accessors and drain
    microtasks, at about a third of an evaluation's cost (measured)."""

    def __init__(self, package: str, heap_bytes: int) -> None:
        lib = ctypes.CDLL(os.path.join(package, LIBRARY))
        u64, value_p = ctypes.c_uint64, _VALUE_P
        lib.mr_init_v8.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        lib.mr_init_context.argtypes = [_CALLBACK]
        lib.mr_init_context.restype = u64
        lib.mr_alloc_string_val.argtypes = [u64, ctypes.c_char_p, u64, ctypes.c_uint8]
        lib.mr_alloc_string_val.restype = value_p
        lib.mr_eval.argtypes = [u64, value_p, u64]
        lib.mr_eval.restype = u64
        lib.mr_get_object_item.argtypes = [u64, value_p, value_p]
        lib.mr_get_object_item.restype = value_p
        lib.mr_set_object_item.argtypes = [u64, value_p, value_p, value_p]
        lib.mr_set_object_item.restype = value_p
        lib.mr_free_value.argtypes = [u64, value_p]
        lib.mr_set_hard_memory_limit.argtypes = [u64, ctypes.c_size_t]
        lib.mr_hard_memory_limit_reached.argtypes = [u64]
        lib.mr_hard_memory_limit_reached.restype = ctypes.c_bool
        self._lib = lib
        self._results: _queue.SimpleQueue[ctypes._Pointer[_Value]] = _queue.SimpleQueue()
        self._callback = _CALLBACK(lambda _id, value: self._results.put(value))  # kept alive
        lib.mr_init_v8(V8_FLAGS, os.path.join(package, "icudtl.dat").encode())
        self._ctx = lib.mr_init_context(self._callback)
        lib.mr_set_hard_memory_limit(self._ctx, heap_bytes)
        self._target: ctypes._Pointer[_Value] | None = None
        self._keys: dict[bytes, ctypes._Pointer[_Value]] = {}

    def _string(self, data: bytes) -> ctypes._Pointer[_Value]:
        value: ctypes._Pointer[_Value] = self._lib.mr_alloc_string_val(self._ctx, data, len(data),
                                                                       _STRING)
        return value

    def _key(self, name: bytes) -> ctypes._Pointer[_Value]:
        if name not in self._keys:
            self._keys[name] = self._string(name)
        return self._keys[name]

    def run(self, ops: list[tuple[bytes, bytes, bytes]]) -> bytes | None:
        """Carry out `ops` in order; return what the last one gave (a string, or None)."""
        lib, ctx = self._lib, self._ctx
        text = None
        for kind, key, value in ops:
            if kind == b"S":
                data = self._string(value)
                result = lib.mr_set_object_item(ctx, self._target, self._key(key), data)
                lib.mr_free_value(ctx, data)
            elif kind == b"G":
                result = lib.mr_get_object_item(ctx, self._target, self._key(key))
            else:  # B: evaluate a script and keep its value (an object) as the target
                source = self._string(key)
                lib.mr_eval(ctx, source, 0)
                result = self._results.get()
                lib.mr_free_value(ctx, source)
                if result.contents.type == _OBJECT:
                    if self._target is not None:
                        lib.mr_free_value(ctx, self._target)
                    self._target, text = result, None
                    continue
            raw = result.contents
            kind_of = raw.type
            text = ctypes.string_at(raw.value.ptr, raw.len) if kind_of == _STRING or kind_of >= 200 else None
            lib.mr_free_value(ctx, result)
            if kind_of == _OOM or lib.mr_hard_memory_limit_reached(ctx):
                raise MemoryLimit((text or b"").decode("utf-8", "replace"))
            if kind_of in _ERRORS:
                raise EvalFailed((text or b"").decode("utf-8", "replace"))
            if kind == b"B":
                raise EvalFailed("the bridge script did not return an object")
        return text


class ApiDriver:
    """mini-racer's public API (any version). Created and used on a running asyncio loop, where
    `MiniRacer.eval` waits for the isolate directly instead of hopping through another thread."""

    def __init__(self, package: str, heap_bytes: int) -> None:
        sys.path.insert(0, os.path.dirname(package))
        from py_mini_racer import MiniRacer

        self._mr = MiniRacer()
        self._mr.set_hard_memory_limit(heap_bytes)
        self._target: Any = None

    def run(self, ops: list[tuple[bytes, bytes, bytes]]) -> bytes | None:
        from py_mini_racer import JSEvalException, JSMappedObject, JSOOMException

        value: object = None
        for kind, key, data in ops:
            try:
                if kind == b"S":
                    self._target[key.decode()] = data.decode("utf-8", "surrogatepass")
                    value = None
                elif kind == b"G":
                    value = self._target[key.decode()]
                else:
                    value = self._mr.eval(key.decode("utf-8", "surrogatepass"))
                    if not isinstance(value, JSMappedObject):
                        raise EvalFailed("the bridge script did not return an object")
                    self._target, value = value, None
            except JSOOMException as exc:
                raise MemoryLimit(str(exc)) from None
            except JSEvalException as exc:
                if self._mr.was_hard_memory_limit_reached():
                    raise MemoryLimit(str(exc)) from None
                raise EvalFailed(str(exc)) from None
            if self._mr.was_hard_memory_limit_reached():
                raise MemoryLimit("JavaScript memory limit reached")
        return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else None


def abi_checked(package: str) -> bool:
    try:
        with open(os.path.join(package, "__about__.py"), encoding="utf-8") as about:
            text = about.read()
    except OSError:
        return False
    return (any(f'__version__ = "{version}' in text for version in ABI_CHECKED)
            and os.path.exists(os.path.join(package, LIBRARY)))


def frames(fd: int) -> Iterator[bytes]:
    """The bodies of the frames read from `fd`, until it closes."""
    buffer = bytearray()
    while True:
        end = 4 + int.from_bytes(buffer[:4], "big") if len(buffer) >= 4 else 4
        if len(buffer) >= 4 and len(buffer) >= end:
            yield bytes(buffer[4:end])
            del buffer[:end]
            continue
        chunk = os.read(fd, max(end - len(buffer), 1 << 16))
        if not chunk:
            return
        buffer += chunk


def split(body: bytes) -> Iterator[tuple[bytes, bytes, bytes]]:
    """The operations of one host frame: a kind byte and two length-prefixed fields each."""
    at = 0
    while at < len(body):
        kind, size = body[at:at + 1], int.from_bytes(body[at + 1:at + 5], "big")
        key = body[at + 5:at + 5 + size]
        at += 5 + size
        size = int.from_bytes(body[at:at + 4], "big")
        yield kind, key, body[at + 4:at + 4 + size]
        at += 4 + size


def send(fd: int, body: bytes) -> None:
    view = memoryview(len(body).to_bytes(4, "big") + body)
    while view:
        view = view[os.write(fd, view):]


def serve(fd: int, evaluate: Callable[[list[tuple[bytes, bytes, bytes]]], bytes | None]) -> None:
    for frame in frames(fd):
        try:
            value = evaluate(list(split(frame)))
            reply = b"N" if value is None else b"V" + value
        except MemoryLimit as exc:
            reply = b"M" + str(exc).encode("utf-8", "replace")[:2000]
        except EvalFailed as exc:
            reply = b"E" + str(exc).encode("utf-8", "replace")[:2000]
        send(fd, reply)


def main(argv: list[str]) -> None:
    fd, package = int(argv[1]), argv[2]
    data_bytes, heap_bytes, parent_pid = int(argv[3]), int(argv[4]), int(argv[5])
    harden(parent_pid, data_bytes, argv[6] == "1", fd)
    if abi_checked(package):
        serve(fd, NativeDriver(package, heap_bytes).run)
    else:
        import asyncio

        async def on_loop() -> None:
            serve(fd, ApiDriver(package, heap_bytes).run)

        asyncio.run(on_loop())
    os._exit(0)  # never run interpreter teardown with a live isolate: it can hang


if __name__ == "__main__":
    main(sys.argv)
