"""What a test run reports: one line per case (and a diff for a mismatch), a summary, the same as
JSON, and JUnit XML for CI (one <testsuite> per skill, one <testcase> per case, <failure> with the
reason and diff)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentapps.skilltest.runner import CaseResult

EXIT_FAILED = 1  # some case failed; bad input (a tests file, a flag) is exit 2 like any usage error


def summary(results: Sequence[CaseResult]) -> dict[str, Any]:
    failed = sum(1 for r in results if not r.passed)
    return {"cases": len(results), "passed": len(results) - failed, "failed": failed, "ok": failed == 0,
            "skills": len({(r.skill, r.tests_file) for r in results}),
            "duration_ms": round(max((r.duration_ms for r in results), default=0.0), 1)}


def to_dict(results: Sequence[CaseResult]) -> dict[str, Any]:
    return {"cases": [r.to_dict() for r in results], "summary": summary(results)}


def exit_code(report: dict[str, Any]) -> int:
    return 0 if report["summary"]["ok"] else EXIT_FAILED


def _shown(text: str) -> str:
    """A case name as a terminal may print it: control characters (a bell, an escape sequence that
    moves the cursor or retitles the window) become `\\xNN`."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def case_line(case: dict[str, Any]) -> str:
    """`PASS summarize: outlines the report (0.2 s)`, or FAIL with the reason, the diff indented below."""
    took = f"{case['duration_ms'] / 1000:.1f} s"
    head = f"{'PASS' if case['status'] == 'passed' else 'FAIL'} {case['skill']}: {_shown(case['case'])} ({took})"
    if case.get("recorded"):
        head += f" [recorded {case['recorded']}]"
    if case["status"] == "passed":
        return head + "\n"
    text = f"{head}\n     {case['file']}:{case['line']}: {case['reason']}\n"
    if case.get("diff"):
        text += "".join(f"     {line}\n" for line in case["diff"].splitlines())
    return text


def summary_line(report: dict[str, Any]) -> str:
    s = report["summary"]
    if not s["cases"]:
        return "no test cases: write <skill>.tests.yaml beside a skill (docs/toolchain.md)\n"
    cases = "1 case" if s["cases"] == 1 else f"{s['cases']} cases"
    skills = "1 skill" if s["skills"] == 1 else f"{s['skills']} skills"
    return f"{cases} of {skills}: {s['passed']} passed, {s['failed']} failed\n"


def junit(report: dict[str, Any]) -> bytes:
    """JUnit XML (the schema Jenkins, GitLab and GitHub reporters read)."""
    import xml.etree.ElementTree as ET

    s = report["summary"]
    top = ET.Element("testsuites", name="agentapps test", tests=str(s["cases"]), failures=str(s["failed"]),
                     errors="0", time=_seconds(s["duration_ms"]))
    suites: dict[str, list[dict[str, Any]]] = {}
    for case in report["cases"]:
        suites.setdefault(f"{case['skill']}\0{case['file']}", []).append(case)
    for key, cases in suites.items():
        skill = key.split("\0")[0]
        failed = sum(1 for c in cases if c["status"] != "passed")
        suite = ET.SubElement(top, "testsuite", name=skill, tests=str(len(cases)), failures=str(failed),
                              errors="0", skipped="0", file=cases[0]["file"],
                              time=_seconds(sum(c["duration_ms"] for c in cases)))
        for case in cases:
            node = ET.SubElement(suite, "testcase", name=_clean(case["case"]), classname=skill, file=case["file"],
                                 line=str(case["line"]), time=_seconds(case["duration_ms"]))
            if case["status"] != "passed":
                failure = ET.SubElement(node, "failure", message=_clean(case["reason"] or "failed"), type="failure")
                failure.text = _clean("\n".join(x for x in (case["reason"], case.get("diff")) if x))
    ET.indent(top)
    body: bytes = ET.tostring(top, encoding="utf-8", xml_declaration=True)
    return body + b"\n"


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.3f}"


def _clean(text: str) -> str:
    """Text XML 1.0 can hold: control characters other than tab and newlines, surrogates and
    U+FFFE/U+FFFF are dropped."""
    return "".join(ch for ch in text if ch in "\t\n\r" or (0x20 <= ord(ch) < 0xD800)
                   or (0xE000 <= ord(ch) < 0xFFFE) or ord(ch) > 0xFFFF)
