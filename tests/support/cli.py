"""Running the CLI for a test: in this process (the default: `run hello` takes 30-45 ms here against
150-260 ms for a new interpreter, on the 2-core machine under load) or, when a test opts in, as a
real `python -m agentapps` process.

`in_process(argv, env=..., cwd=..., input=...)` calls the CLI's entry point (`agentapps.cli.main`)
here, the way `python -m agentapps` would: argv, environment, working directory, stdin and the
standard streams are the run's own while it lasts, and stdout, stderr and the exit code come back as
the `subprocess.CompletedProcess` a real process gives. Afterwards everything process-wide the run
could change is put back: environment, working directory, `sys.argv`/`sys.path`/`sys.meta_path`, the
standard streams, signal handlers and the interval timer, the umask, warning filters and the
exception hooks; context variables are set in a copy of the test's context. Threads the run started
are waited for, as interpreter exit waits for them. A run that leaves a thread or a process running
fails the test (the process is killed): a real exit could hide such a leak, this runner does not.

A test needs a real process (`real_process=True` on `Project.cli`) when it sends signals, uses a
pseudo-terminal, runs processes side by side, measures imports or start-up, needs the process to die
(a crash, `--timeout`'s hard exit, a watchdog), or runs a command that serves until it is stopped
(serve, worker, mcp-server). `in_process` refuses what it cannot serve faithfully (see
`needs_real_process`), so such a test fails with the reason instead of taking pytest down with it.
`tests/cli/test_in_process.py` runs a table of invocations both ways and compares what they print.
"""

from __future__ import annotations

import contextvars
import faulthandler
import io
import json
import locale
import os
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO

# Commands that serve until they are stopped run as real processes; a worker given --max-events does
# not. (`repl` reads stdin to its end: in process, stdin is never a terminal.)
LONG_LIVED = ("serve", "worker", "mcp-server")
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
           signal.SIGUSR2, signal.SIGCHLD, signal.SIGPIPE, signal.SIGWINCH)
THREAD_EXIT_WAIT_S = 10.0  # a thread the run left behind gets this long, as interpreter exit would wait


class NeedsRealProcess(AssertionError):
    """This invocation cannot be served in process; the test must pass `real_process=True`."""


def needs_real_process(argv: Sequence[str]) -> str | None:
    """Why `argv` must run as a real process, or None when the in-process runner serves it."""
    head = list(argv[: argv.index("--")] if "--" in argv else argv)
    words = [a for a in head if a not in ("-v", "--verbose")]
    if words and words[0] in LONG_LIVED and not (words[0] == "worker" and _bounded_worker(words)):
        return f"'agentapps {words[0]}' runs until it is stopped"
    if words and words[0] == "run":
        from agentapps.cli import run_options
        from agentapps.errors import AgentAppsError

        try:
            opts = run_options.parse(list(argv[list(argv).index("run") + 1:]))
        except AgentAppsError:  # refused by the parser: nothing runs
            return None
        if opts is not None and opts.timeout is not None:
            return "--timeout ends the process itself when the run overstays (SIGALRM, a watchdog, os._exit)"
    return None


def _bounded_worker(words: list[str]) -> bool:
    """A worker given --max-events exits by itself (a second signal's os._exit needs a real one)."""
    return any(w == "--max-events" or w.startswith("--max-events=") for w in words)


def real_process(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, input: str | bytes | None,
                 timeout: float, text: bool = True) -> Any:
    """Run the real CLI in a subprocess, the way a user would (`text=False`: stdin, stdout and
    stderr as bytes)."""
    return subprocess.run(  # noqa: PLW1510 - the exit code is what tests assert on
        [sys.executable, "-m", "agentapps", *argv],
        cwd=cwd, env=dict(env), input=input if input is not None else ("" if text else b""),
        capture_output=True, text=text, timeout=timeout,
    )


def in_process(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, input: str | bytes | None,
               timeout: float = 60, text: bool = True) -> Any:
    """Run the CLI's entry point in this process as `python -m agentapps ARGV` would run; what
    `real_process` returns, for the same arguments."""
    why = needs_real_process(argv)
    if why is not None:
        raise NeedsRealProcess(f"agentapps {' '.join(argv)}: {why}; pass real_process=True.")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as inp:
        data = input or ""
        inp.write(data.encode(locale.getpreferredencoding(False)) if isinstance(data, str) else data)
        inp.seek(0)  # (encoded as subprocess.run encodes it)
        with _process_state(env, cwd, argv), _standard_streams(inp, out, err), _hang_guard(timeout):
            threads, children = set(threading.enumerate()), set(_descendants())
            code = contextvars.copy_context().run(_main, list(argv))
            _drop_warm_sandbox()
            _wait_for_threads(threads)
            _no_new_children(children)
        read = _text if text else _bytes
        return subprocess.CompletedProcess([sys.executable, "-m", "agentapps", *argv], code, read(out), read(err))


def _main(argv: list[str]) -> int:
    """`agentapps.cli.main(argv)` and the exit status the interpreter would give its outcome."""
    try:
        from agentapps.cli import main

        main(argv)
    except SystemExit as exc:
        return _exit_status(exc.code)
    except KeyboardInterrupt:  # uncaught, the interpreter dies of SIGINT
        traceback.print_exc()
        return -signal.SIGINT
    except BaseException:  # noqa: BLE001 - uncaught: the interpreter prints it and exits 1
        traceback.print_exc()
        return 1
    finally:
        for stream in (sys.stdout, sys.stderr):  # what interpreter exit flushes
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
    return 0


def _exit_status(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)  # sys.exit("text"): the text on stderr, status 1
    return 1


def _bytes(handle: BinaryIO) -> bytes:
    handle.seek(0)
    return handle.read()


def _text(handle: BinaryIO) -> str:
    """What `subprocess.run(..., text=True)` reads from a pipe: decoded, newlines translated."""
    handle.seek(0)
    return io.TextIOWrapper(io.BytesIO(handle.read())).read()


@cache
def _streams() -> dict[str, tuple[str, str]]:
    """(encoding, errors) of a real CLI process's stdin, stdout and stderr when they are pipes (the
    locale decides: under C.UTF-8, stdout uses surrogateescape). Asked of one interpreter, once."""
    code = ("import json, sys; print(json.dumps({n: [s.encoding, s.errors] for n, s in "
            "(('stdin', sys.stdin), ('stdout', sys.stdout), ('stderr', sys.stderr))}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          stdin=subprocess.PIPE, env={k: v for k, v in os.environ.items()
                                                      if not k.startswith("PYTHONIOENCODING")})
    return {name: (pair[0], pair[1]) for name, pair in json.loads(done.stdout).items()}


@contextmanager
def _standard_streams(inp: BinaryIO, out: BinaryIO, err: BinaryIO) -> Iterator[None]:
    kinds = _streams()
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(_Unclosed(inp), *kinds["stdin"])
    sys.stdout = io.TextIOWrapper(_Unclosed(out), *kinds["stdout"])
    sys.stderr = io.TextIOWrapper(_Unclosed(err), *kinds["stderr"], line_buffering=True)
    mine = sys.stdin, sys.stdout, sys.stderr
    try:
        yield
    finally:
        for stream in mine:
            try:
                stream.close()  # flushed into the temporary files the runner reads
            except (OSError, ValueError):
                pass
        sys.stdin, sys.stdout, sys.stderr = saved


class _Unclosed(io.BufferedRandom):
    """A file's buffer that a run may close (as `sys.stdout.close()` closes fd 1) without closing
    the temporary file the runner reads afterwards."""

    def __init__(self, handle: BinaryIO) -> None:
        super().__init__(io.FileIO(os.dup(handle.fileno()), "r+"))


@contextmanager
def _process_state(env: Mapping[str, str], cwd: Path, argv: Sequence[str]) -> Iterator[None]:
    """The run's environment, working directory and interpreter state; all of it put back after."""
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_argv, saved_path, saved_meta = sys.argv[:], sys.path[:], sys.meta_path[:]
    saved_signals = {s: signal.getsignal(s) for s in SIGNALS}
    saved_hooks = sys.excepthook, sys.unraisablehook, threading.excepthook
    saved_umask = os.umask(0o022)
    os.umask(saved_umask)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.argv = [_main_path(), *argv]
    # `python -m agentapps` does not search the working directory for modules (agentapps/__main__.py)
    sys.path[:] = [p for p in sys.path if p not in ("", ".")]
    sys.excepthook, sys.unraisablehook = sys.__excepthook__, sys.__unraisablehook__
    threading.excepthook = threading.__excepthook__
    try:
        with warnings.catch_warnings():
            _interpreter_warning_filters()
            yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for number, handler in saved_signals.items():
            if handler is not None:
                signal.signal(number, handler)
        os.umask(saved_umask)
        sys.excepthook, sys.unraisablehook = saved_hooks[0], saved_hooks[1]
        threading.excepthook = saved_hooks[2]
        # a finder a library added while the run imported it (six's, for `six.moves`) stays, as the
        # library stays in sys.modules; agentapps' own logging finder is put back as it was
        added = [f for f in sys.meta_path if f not in saved_meta and not type(f).__module__.startswith("agentapps")]
        sys.argv, sys.path[:], sys.meta_path[:] = saved_argv, saved_path, saved_meta + added
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def _main_path() -> str:
    import agentapps

    return str(Path(agentapps.__file__).with_name("__main__.py"))


def _interpreter_warning_filters() -> None:
    """The filters of an interpreter started without -W (pytest makes every warning an error)."""
    warnings.resetwarnings()
    for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning, DeprecationWarning):
        warnings.simplefilter("ignore", category)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")


def _drop_warm_sandbox() -> None:
    """A long-lived command (a worker, the REPL) keeps a spare sandbox process for the rest of its
    process (agentapps.sandbox.pool); the run is over, so is that process: the spare goes, and the
    next run in this test process starts as a fresh `python -m agentapps` would (not warm)."""
    pool = sys.modules.get("agentapps.sandbox.pool")
    if pool is not None:
        pool.keep_warm(False)


def _wait_for_threads(before: set[threading.Thread]) -> None:
    """Interpreter exit waits for every non-daemon thread; so does the end of an in-process run."""
    for thread in set(threading.enumerate()) - before:
        if not thread.daemon:
            thread.join(THREAD_EXIT_WAIT_S)
            if thread.is_alive():
                raise AssertionError(f"the run left thread {thread.name!r} running; a real process "
                                     "would not have exited either")


def _descendants() -> list[int]:
    from agentapps.cli.watchdog import descendants

    return descendants(os.getpid())


def _no_new_children(before: set[int]) -> None:
    """A run must not leave processes behind. A real CLI's exit would hide some (the sandbox and the
    reaper die with their parent) and orphan others; here each is killed and the test fails, so a
    test that asserts nothing outlives a run can still fail."""
    left = sorted(set(_descendants()) - before)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (OSError, ChildProcessError):  # gone, or not our child (a grandchild)
            pass
    if left:
        raise AssertionError(f"the run left processes {left} running")


@contextmanager
def _hang_guard(timeout: float) -> Iterator[None]:
    """A run that hangs past `timeout` ends the test session with every thread's traceback on stderr
    (a real process would be killed; a hung in-process run can only be shown, not stopped)."""
    faulthandler.dump_traceback_later(timeout + 30, exit=True, file=sys.__stderr__)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
