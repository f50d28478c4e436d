"""One process at a time per resumable run: the lock an `agentapps run` takes on its run id (at its
first checkpoint, or before `--resume ID` reads the checkpoint), so a second `--resume` of the same
run is refused at once (RunBusyError) instead of both playing the same turns.

- **Files** (the project keeps checkpoints in files): an OS lock (`flock`) on
  `CHECKPOINTS/.run-ID.lock`, which the kernel releases when the process ends, however it ends
  (`kill -9` included). The file holds the holder's pid, for the refusal's message; the holder
  removes it as it releases it (a killed one's is left, unheld, until pruned).
- **Redis** (`stores: {sessions: redis}`): `SET NX` of `agentapps:{namespace}:checkpoint-lock:run-ID`
  with an expiry of TTL seconds, refreshed by a thread every TTL/3 while the process lives and
  deleted at its end. A holder killed with `kill -9` leaves the key until it expires; a contender
  on the same host whose holder's pid is gone takes it over at once.

Every lock taken is released by `release_all()`, which `agentapps run` calls as it returns.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentapps.errors import RunBusyError

if TYPE_CHECKING:
    from agentapps.context.context import Globals
    from agentapps.stores.link import RedisLink

TTL_SECONDS = 30.0
_HELD: list[RunLock] = []
_COMPARE_DELETE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
_COMPARE_EXPIRE = ("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) "
                   "end return 0")


class RunLock(Protocol):
    def release(self) -> None: ...


def take(g: Globals, run_id: int) -> RunLock:
    """Hold run `run_id` for this process, or RunBusyError when another process holds it."""
    from agentapps.stores.config import backend

    lock: RunLock
    if backend(g, "sessions") == "redis":
        from agentapps.stores.config import link_for

        lock = RedisRunLock.take(link_for(g), run_id)
    else:
        lock = FileRunLock.take(g.config.log_dir / "checkpoints", run_id)
    _HELD.append(lock)
    return lock


def release_all() -> None:
    """Release every run lock this process took (never raises)."""
    while _HELD:
        try:
            _HELD.pop().release()
        except Exception:  # noqa: BLE001, S110 - a lock left behind ends with the process, or expires
            pass


def _busy(run_id: int, holder: str) -> RunBusyError:
    return RunBusyError(f"Run {run_id} is being run or resumed by {holder}; wait for it to end (or stop "
                        "it), then resume it.")


class FileRunLock:
    """`flock` on `folder/.run-ID.lock`, held while its descriptor is open."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd: int | None = fd
        self.path = path

    @classmethod
    def take(cls, folder: Path, run_id: int) -> FileRunLock:
        from agentapps.core.atomic import make_private_dirs

        make_private_dirs(folder)
        path = folder / f".run-{run_id}.lock"
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                os.close(fd)
                raise _busy(run_id, f"process {holder}" if holder.isdigit() else "another process") from None
            except BaseException:
                os.close(fd)
                raise
            try:  # a pruner may have removed the file between our open and our lock: lock the new one
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        return cls(fd, path)

    def release(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            try:  # removed while held: a taker that opened it meanwhile sees the change and starts over
                self.path.unlink()
            except OSError:
                pass
            os.close(fd)  # a killed holder's file stays, unheld: pruning removes it when it is old


def prune_locks(folder: Path, before: float) -> None:
    """Remove the lock files last taken before `before` (epoch seconds) that nobody holds."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(".run-") and n.endswith(".lock")]
    except OSError:
        return
    for name in names:
        path = folder / name
        try:
            if os.stat(path).st_mtime >= before:
                continue
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path.unlink()  # while held: a later taker sees the inode changed and locks a new file
        except OSError:
            pass
        finally:
            os.close(fd)


class RedisRunLock:
    """`SET NX PX` of the run's lock key, its expiry refreshed by a daemon thread."""

    def __init__(self, link: RedisLink, key: str, token: str, ttl: float) -> None:
        self.link, self.key, self.token, self.ttl = link, key, token, ttl
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._refresh, name=f"agentapps {key}", daemon=True)
        self.thread.start()

    @classmethod
    def take(cls, link: RedisLink, run_id: int, ttl: float = TTL_SECONDS) -> RedisRunLock:
        import socket
        import uuid

        key = link.key("checkpoint-lock", f"run-{run_id}")
        host = socket.gethostname()
        token = f"{host}:{os.getpid()}:{uuid.uuid4().hex}"
        client: Any = link.client
        for _ in range(2):
            if link.call(client.set, key, token, nx=True, px=int(ttl * 1000)):
                return cls(link, key, token, ttl)
            raw = link.call(client.get, key)
            held = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw or "")
            their_host, _, rest = held.partition(":")
            pid = rest.partition(":")[0]
            if not (their_host == host and pid.isdigit() and not _alive(int(pid))):
                where = f"process {pid} on {their_host}" if pid.isdigit() else "another process"
                raise _busy(run_id, where)
            link.call(link.script(_COMPARE_DELETE), [key], held)  # its holder died: take it over
        raise _busy(run_id, "another process")

    def _refresh(self) -> None:
        expire = self.link.script(_COMPARE_EXPIRE)
        while not self.stop.wait(self.ttl / 3):
            try:
                expire([self.key], self.token, int(self.ttl * 1000))
            except Exception:  # noqa: BLE001, S110 - Redis away for a while: try again next time
                pass

    def release(self) -> None:
        if self.stop.is_set():
            return
        self.stop.set()
        self.link.script(_COMPARE_DELETE)([self.key], self.token)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
