"""The last resort behind `--timeout`: a forked process that kills a run stuck in native code.

The SIGALRM deadline in supervise.py ends a run even while `re` or a blocking call holds the main
thread, because those check for signals. C code that never does (`sum(range(10**12))`, a C
extension's loop) holds the interpreter so that no handler and no thread of ours can run. So a
small child, forked before the run starts, waits on a pipe: when the run's process exits, the pipe
closes and the child exits with it; if the deadline passes first, the child writes the limit error
(and the `--json` object), kills every descendant of the run, then the run itself (SIGKILL: its
exit status is then 137, not 4 — nothing inside a stuck process can choose its exit code).
"""

from __future__ import annotations

import os
import select
import signal
import threading


def descendants(root: int) -> list[int]:
    """Every process whose parent chain leads to `root` (Linux /proc; elsewhere none are found)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:  # os.open/os.read: a fifth of Path.read_text's cost, and this reads every process
            fd = os.open(f"/proc/{entry}/stat", os.O_RDONLY)
        except OSError:
            continue
        try:
            stat = os.read(fd, 4096)
        except OSError:
            continue
        finally:
            os.close(fd)
        ppid = int(stat[stat.rindex(b")") + 2 :].split(None, 2)[1])  # after "pid (comm) state"
        children.setdefault(ppid, []).append(int(entry))
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _watch(read_end: int, seconds: float, stderr_line: bytes, stdout_line: bytes) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # the run handles those; the closing pipe tells us it is gone
    ready, _, _ = select.select([read_end], [], [], seconds)
    if ready:
        return
    parent = os.getppid()
    if parent == 1:
        return
    os.kill(parent, signal.SIGSTOP)  # freeze it so it cannot start more children while we look
    for pid in descendants(parent):
        if pid != os.getpid():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    os.write(2, stderr_line)
    if stdout_line:
        os.write(1, stdout_line)
    os.kill(parent, signal.SIGKILL)


def start(seconds: float, stderr_line: str, stdout_line: str = "") -> int | None:
    """Fork the watchdog; the returned descriptor must stay open while the run lasts (close it, or
    exit, to dismiss the watchdog). None when forking is not safe (other threads are running)."""
    if threading.active_count() > 1 or not hasattr(os, "fork"):
        return None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.closerange(3, read_end)
            os.closerange(read_end + 1, 1 << 16)
            os.close(0)
            _watch(read_end, seconds, stderr_line.encode("utf-8", "replace"),
                   stdout_line.encode("utf-8", "replace"))
        finally:
            os._exit(0)
    os.close(read_end)
    threading.Thread(target=_reap, args=(pid,), daemon=True).start()
    return write_end


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)  # no zombie left behind once the watchdog has been dismissed
    except ChildProcessError:
        pass
