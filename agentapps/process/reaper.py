"""A per-command subreaper: runs one command and, when it ends or is stopped, kills what it left.

Run as a script (`python -I -S reaper.py PARENT_PID PROGRAM ARGS...`; standard library only and
no site, so its start is the interpreter's own). It marks itself a child subreaper
(prctl PR_SET_CHILD_SUBREAPER), so every
process the command starts stays its descendant even after `setsid`, double forks or the death of
an intermediate parent. When the command exits, or on SIGTERM/SIGINT/SIGHUP, or when its parent
dies, it SIGKILLs every descendant it has (found through /proc PPid links), reaps them, and exits
with the command's status. Nothing here needs privileges.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _Stop(Exception):
    def __init__(self, signum: int) -> None:
        self.signum = signum


def _stop(signum: int, frame: object) -> None:
    raise _Stop(signum)


def descendants(pid: int) -> list[int]:
    """Every live or zombie process below `pid`, read from /proc/*/stat."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue  # gone meanwhile
        fields = data[data.rindex(b")") + 2 :].split()  # the name may hold spaces and ')'
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def kill_all(me: int) -> None:
    """SIGKILL and reap every descendant; orphans of killed parents come to us and go the same way."""
    while True:
        try:
            os.waitpid(-1, os.WNOHANG)  # reaps one zombie if there is one
        except ChildProcessError:
            return  # no children means no descendants: every orphan below us is reparented to us
        for pid in descendants(me):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _exit_like(status: int) -> None:
    """Exit as the command did: with its code, or killed by the same signal."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)
    os._exit(os.waitstatus_to_exitcode(status))


def main(argv: list[str]) -> None:
    parent, program = int(argv[0]), argv[1:]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stop)
    me = os.getpid()
    try:
        if os.getppid() != parent:  # the parent died before PR_SET_PDEATHSIG took effect
            raise _Stop(signal.SIGTERM)
        child = os.posix_spawn(program[0], program, os.environ,
                               setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, *STOP_SIGNALS))
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # only the command holds the pipes: they close when its tree is gone
            os.dup2(devnull, fd)
        _, status = os.waitpid(child, 0)
        kill_all(me)
    except _Stop as stop:
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
        kill_all(me)
        os._exit(128 + stop.signum)
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
