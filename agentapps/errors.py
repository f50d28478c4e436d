"""The one rooted error tree; each class knows its exit code, the CLI turns them into exits.

    AgentAppsError                      exit 1  (root; "the skill failed")
    ├── UsageError                      exit 2  bad flags, bad input
    │   ├── ArgsError                   exit 2  args refused (schema, size, depth)
    │   ├── SkillNotFoundError          exit 2  unknown name, with close names
    │   ├── SkillLoadError              exit 2  a skill file that cannot be loaded (file:line)
    │   ├── ConfigError                 exit 2  project/metadata configuration is wrong
    │   └── PackageError                exit 2  hub: unknown package, no matching version, bad source
    ├── SkillError                      exit 1  a skill raised or returned something invalid
    │   ├── ReturnsError                exit 1  result does not match `returns`
    │   ├── ChainError                  exit 1  middleware broke the onion's rules
    │   ├── ProviderError               exit 1  the model provider failed
    │   ├── ConflictError               exit 1  compare-and-swap lost (state-set expect)
    │   ├── StoreCorruptError           exit 1  a state/session file is unreadable
    │   ├── StoreWriteError             exit 1  a state/session file could not be written
    │   └── StoreUnavailableError       exit 1  the Redis server went away (exit 2 if never reached)
    ├── DeniedError                     exit 3  allowed-tools, file confinement, SSRF, trust
    │   └── SandboxUnavailableError     exit 3  `sandbox: required` where the OS sandbox cannot run
    ├── LimitError                      exit 4  depth, turns, steps, timeouts, sizes
    │   └── LockTimeoutError            exit 4  a state lock could not be taken in time
    ├── IntegrityError                  exit 5  an installed package differs from the lock file
    ├── ResumeError                     `run --resume ID` refused:
    │   ├── UnknownRunError             exit 6  no run ID in the run log
    │   ├── RunFinishedError            exit 7  run ID ended well: nothing to resume
    │   ├── NoCheckpointError           exit 8  run ID left no checkpoint (or one that cannot be used)
    │   └── SkillChangedError           exit 9  the skill file changed since run ID (--force resumes)
    └── RunInterruptedError             exit 130 Ctrl-C / SIGTERM (143), a cancelled run

Messages are one line, name the skill (and file:line where there is one) and say the remedy.
"""

from __future__ import annotations

from pathlib import Path


class AgentAppsError(Exception):
    """Root of every error agentapps raises on purpose."""

    exit_code = 1
    kind = "error"

    def __init__(
        self,
        message: str,
        *,
        skill: str | None = None,
        file: str | Path | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.skill = skill
        self.file = str(file) if file is not None else None
        self.line = line

    def location(self) -> str:
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file

    def __str__(self) -> str:
        loc = self.location()
        return f"{loc}: {self.message}" if loc else self.message

    def to_dict(self) -> dict[str, object]:
        return {
            "type": type(self).__name__,
            "message": str(self),
            "exit_code": self.exit_code,
            "skill": self.skill,
            "file": self.file,
            "line": self.line,
        }


class UsageError(AgentAppsError):
    exit_code = 2


class ArgsError(UsageError):
    pass


class SkillNotFoundError(UsageError):
    pass


class SkillLoadError(UsageError):
    pass


class ConfigError(UsageError):
    """`setting` is the metadata path of the refused value, e.g. ("model", "maxTurns"): it lets the
    run and `check` find the file and line where that value is written."""

    def __init__(
        self,
        message: str,
        *,
        skill: str | None = None,
        file: str | Path | None = None,
        line: int | None = None,
        setting: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message, skill=skill, file=file, line=line)
        self.setting = setting


class PackageError(UsageError):
    """The hub or `agentapps add` cannot do what was asked: an unknown package, no version in a
    range, a source git cannot fetch, a package declaring something it may not."""


class SkillError(AgentAppsError):
    exit_code = 1


class ReturnsError(SkillError):
    pass


class ChainError(SkillError):
    pass


class ProviderError(SkillError):
    pass


class ConflictError(SkillError):
    pass


class StoreCorruptError(SkillError):
    pass


class StoreWriteError(SkillError):
    """State or a session was not saved (disk full, read-only folder); the old file is untouched.

    `result` holds `(value,)` when the skill had finished and only saving its session failed, so
    the CLI can still print the result.
    """

    result: tuple[object] | None = None


class StoreUnavailableError(SkillError):
    """The Redis server cannot be reached. Exit 2 when it never answered this process (a wrong URL or
    a server that is not running: a configuration problem), exit 1 when it went away mid-run."""

    def __init__(self, message: str, *, at_start: bool = False) -> None:
        super().__init__(message)
        self.exit_code = 2 if at_start else 1


class DeniedError(AgentAppsError):
    exit_code = 3


class SandboxUnavailableError(DeniedError):
    """`sandbox: required` and bubblewrap cannot run here: the command is refused, never run bare."""


class LimitError(AgentAppsError):
    exit_code = 4


class LockTimeoutError(LimitError):
    pass


class IntegrityError(AgentAppsError):
    """An installed package's content is not what the lock file pins (a changed, added or removed
    file, a package missing from the lock): its skills are refused, `install --frozen` fails."""

    exit_code = 5


class ResumeError(AgentAppsError):
    """`agentapps run --resume ID` (`runs resume ID`) cannot continue run ID; each reason has its code."""

    exit_code = 6


class UnknownRunError(ResumeError):
    exit_code = 6


class RunFinishedError(ResumeError):
    exit_code = 7


class NoCheckpointError(ResumeError):
    exit_code = 8


class SkillChangedError(ResumeError):
    exit_code = 9


class RunBusyError(ResumeError):
    """Another process is running or resuming that run now (agentapps.stores.runlock)."""

    exit_code = 10


class RunInterruptedError(AgentAppsError):
    """The run was stopped from outside: Ctrl-C (exit 130), SIGTERM (143), a cancelled request."""

    exit_code = 130

    def __init__(self, message: str = "Interrupted.", *, signal_number: int = 2) -> None:
        super().__init__(message)
        self.exit_code = 128 + signal_number

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "type": "Interrupted"}


InterruptedError_ = RunInterruptedError  # the old name, still imported by the doors (cli, serve, mcp)
