"""The OS sandbox a command started for a skill runs in: bubblewrap's command line, and whether it runs here.

A `Sandbox` says which folder is writable (the project), which paths inside it stay read-only (the
protected ones, computed by `agentapps.files.sandboxing`), and whether the network is allowed. `wrap`
turns a program's argv into the bwrap command line that runs it:

- its own pid, ipc and uts namespaces (`--unshare-pid/ipc/uts`), a fresh `/proc`, a minimal `/dev`:
  it sees and can signal only its own processes, and no `/proc/<pid>/environ` of ours;
- a read-only view of `/`, the project bound writable over it, the protected paths bound read-only
  over that; every capability dropped (as root too), so nothing can be remounted;
- a private, empty `/tmp` and an empty, private folder at `$HOME` (the same path, nothing in it);
- no network (`--unshare-net`: only its own loopback; `/run` hidden, with the sockets it holds)
  unless `network` is set;
- `--die-with-parent` and `--new-session`: when the process that started bwrap dies, the namespace's
  first process dies, and the kernel kills everything else in it.

Whether bwrap can run is probed once per process (a first `bwrap ... true`). The binary is
`AGENTAPPS_BWRAP` when set (a path; tests use it to simulate a machine without bwrap), else `bwrap`
on PATH. Mode `auto` then degrades with one stderr line per process; `required` raises
SandboxUnavailableError.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agentapps.errors import SandboxUnavailableError

MODES = ("auto", "required", "off")
DEFAULT_MODE = "auto"
BWRAP_SETTING = "AGENTAPPS_BWRAP"
PROBE_TIMEOUT = 10.0
_ISOLATION = ("--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
              "--unshare-cgroup-try", "--cap-drop", "ALL")


@dataclass(frozen=True)
class Sandbox:
    """Where a command may write, what stays read-only there, and whether it has a network."""

    bwrap: str
    root: str  # the project (a real path): writable
    read_only: tuple[str, ...] = ()  # real paths inside the writable ones the command may read but not change
    also: tuple[str, ...] = ()  # other writable folders (real paths): an MCP server's declared cwd
    shown: tuple[str, ...] = ()  # folders under a hidden one (HOME, /tmp) shown read-only: skill roots
    network: bool = False
    home: str | None = None  # the real home folder to hide (our $HOME), None when there is none to hide

    def wrap(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str]) -> list[str]:
        """The bwrap command line that runs `argv` in `cwd` with `env` (given to bwrap itself as its
        environment: bwrap's own process inside, pid 1, shows it in /proc/1/environ)."""
        line = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        line += [] if self.network else ["--unshare-net", "--tmpfs", "/run"]
        # (a home that is the project itself stays: hiding it would hide the project)
        hidden = {os.path.realpath(h) for h in (self.home, env.get("HOME")) if h and _hideable(h)} - {self.root}
        before = [h for h in hidden if not _inside(h, self.root)]
        after = [h for h in hidden if _inside(h, self.root)]
        for home in sorted(before):
            line += ["--tmpfs", home]
        for folder in (self.root, *self.also):
            if folder != "/":  # (a run outside any project, started at /: nothing there is writable)
                line += ["--bind", folder, folder]
        for path in self.read_only:
            line += ["--ro-bind", path, path]
        for home in sorted(after):
            line += ["--tmpfs", home]
        for folder in self.shown:  # after the tmpfs mounts that hid them; never a home folder itself
            if not any(_inside(folder, w) or _inside(w, folder) for w in (self.root, *self.also)) \
                    and not any(_inside(h, folder) for h in hidden):
                line += ["--ro-bind", folder, folder]
        if env.get("TMPDIR"):
            line += ["--setenv", "TMPDIR", "/tmp"]  # whatever folder it named is read-only or hidden now
        return [self.bwrap, *_ISOLATION, *line, "--chdir", cwd, "--", *argv]


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _hideable(home: str) -> bool:
    return os.path.isabs(home) and os.path.realpath(home) != "/" and os.path.isdir(home)


def bwrap_binary() -> str | None:
    """The bwrap to use: the AGENTAPPS_BWRAP setting, else `bwrap` on PATH; None when there is none."""
    setting = os.environ.get(BWRAP_SETTING)
    if setting:
        return setting if os.path.isfile(setting) and os.access(setting, os.X_OK) else None
    return shutil.which("bwrap")


@functools.cache
def _probe(binary: str) -> str | None:
    """Why `binary` cannot start a sandboxed command here, or None when it can (run once per binary
    per process: the answer is a fact about this machine)."""
    probe = Sandbox(binary, "/", network=False).wrap(["/bin/true"], cwd="/", env={})
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=PROBE_TIMEOUT, env={}, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{binary} did not start: {exc}"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return f"{binary} cannot create namespaces here ({said[:200]})"
    return None


def unavailable_reason() -> str | None:
    """Why the sandbox cannot run in this process, or None when it can."""
    binary = bwrap_binary()
    if binary is None:
        where = os.environ.get(BWRAP_SETTING)
        return f"{where} (AGENTAPPS_BWRAP) is not an executable file" if where else "bwrap is not on PATH"
    return _probe(binary)


@functools.cache
def _say_once(reason: str) -> None:
    """The one line per process that says why commands run without the sandbox under `auto`."""
    print(f"agentapps: commands run without the OS sandbox: {reason} (sandbox: auto; install "
          "Debian's bubblewrap, or set `sandbox: required` to refuse instead).", file=sys.stderr, flush=True)


def choose(mode: str, *, origin: str) -> str | None:
    """The bwrap binary to run commands under for `mode`, or None to run them as they are (`off`, or
    `auto` where bwrap cannot run: said once). `required` where it cannot run raises. `origin` names
    where the mode was set, for the error."""
    if mode == "off":
        return None
    reason = unavailable_reason()
    if reason is None:
        return bwrap_binary()
    if mode == "required":
        raise SandboxUnavailableError(
            f"sandbox: required ({origin}), but the OS sandbox cannot run here: {reason}. Install "
            "Debian's bubblewrap (apt-get install bubblewrap) and allow unprivileged user namespaces, "
            "or set `sandbox: auto`.")
    _say_once(reason)
    return None
