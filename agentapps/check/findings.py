"""What `check` reports: one Finding per problem, and the Report that sorts, counts and renders them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

Severity = Literal["error", "warning"]
EXIT_ERRORS = 2  # the exit code of a check with errors: the same as any other bad-input error


@dataclass(frozen=True)
class Finding:
    """One problem in one skill file, at a line (1-based)."""

    path: str
    line: int
    severity: Severity
    code: str
    message: str

    def text(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path  # line 0: a folder, not a file
        return f"{where}: {self.severity}: {self.message}"


@dataclass(frozen=True)
class Nested:
    """A project nested in a checked folder, checked under its own main skill (None: it has none)."""

    path: str
    skills: int
    main: str | None

    def text(self) -> str:
        main = f"main skill '{self.main}'" if self.main else "no main skill"
        return f"{self.path}: nested project ({main}): checked {_count(self.skills, 'skill')}\n"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass
class Report:
    """Every finding of one check, and how many skill files were checked."""

    skills: int = 0
    findings: list[Finding] = field(default_factory=list)
    nested: list[Nested] = field(default_factory=list)
    reused: int = 0  # skills whose findings were kept from an earlier check (agentapps.check.cache)

    def strict(self) -> Report:
        """The same report with every warning promoted to an error (`--strict`)."""
        promoted = [replace(f, severity="error") for f in self.findings]
        return Report(self.skills, promoted, list(self.nested), self.reused)

    def sorted(self) -> list[Finding]:
        return sorted(self.findings, key=lambda f: (f.path, f.line, f.code, f.message))

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.severity == "warning")

    @property
    def exit_code(self) -> int:
        return EXIT_ERRORS if self.errors else 0

    def summary(self) -> str:
        inside = sum(n.skills for n in self.nested)
        where = (f" ({self.skills - inside} here, {inside} in {_count(len(self.nested), 'nested project')})"
                 if self.nested else "")
        return (f"checked {_count(self.skills, 'skill')}{where}: {_count(self.errors, 'error')}, "
                f"{_count(self.warnings, 'warning')}")

    def text(self) -> str:
        findings = "".join(f.text() + "\n" for f in self.sorted())
        return findings + "".join(n.text() for n in self.nested) + self.summary() + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "findings": [asdict(f) for f in self.sorted()],
            "nested": [asdict(n) for n in self.nested],
            "summary": {"skills": self.skills, "errors": self.errors, "warnings": self.warnings,
                        "ok": self.errors == 0},
        }
