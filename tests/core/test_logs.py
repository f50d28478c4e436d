"""The agentapps loggers under a CLI run (agentapps.core.logs): routed to stderr, loaded only when used."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from agentapps.core import logs


@pytest.fixture
def stderr(monkeypatch):
    """A StringIO as sys.stderr, set when the test asks for it (pytest's capture resets sys.stderr
    between setup and the test itself)."""
    stream = io.StringIO()

    def use() -> io.StringIO:
        monkeypatch.setattr(sys, "stderr", stream)
        return stream
    yield use
    logs.unroute()


def test_records_go_to_stderr_with_their_level_and_debug_only_when_verbose(stderr):
    stderr = stderr()
    logs.route(verbose=False)
    log = logs.logger("agentapps.test")
    log.debug("hidden")
    log.warning("disk low")
    assert stderr.getvalue() == "warning: disk low\n"
    logs.unroute()
    logs.route(verbose=True)
    logs.logger("agentapps.test").debug("shown")
    assert stderr.getvalue().endswith("debug: shown\n")


def test_unroute_puts_the_logger_back_as_it_was(stderr):
    import logging

    stderr = stderr()
    before = logging.getLogger("agentapps")
    level, propagate, handlers = before.level, before.propagate, list(before.handlers)
    logs.route(verbose=True)
    logs.unroute()
    logs.logger("agentapps.test").warning("after the run")
    assert stderr.getvalue() == ""
    assert (before.level, before.propagate, before.handlers) == (level, propagate, handlers)


def test_a_run_that_never_logs_never_loads_logging_and_the_first_import_installs_the_route():
    code = ("import sys, io\nfrom agentapps.core import logs\n"
            "sys.stderr = io.StringIO()\nlogs.route(verbose=False)\nloaded = 'logging' in sys.modules\n"
            "import logging\nlogging.getLogger('agentapps.skill').warning('late')\n"
            "logs.logger('agentapps.x').warning('mine')\nout = sys.stderr.getvalue()\nlogs.unroute()\n"
            "print(loaded, repr(out), logging.__spec__.name, any('WhenImported' in type(f).__name__ for f in sys.meta_path))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.stdout.strip() == "False 'warning: late\\nwarning: mine\\n' logging False", result.stderr


def test_the_route_keeps_the_runs_stderr_when_logging_is_first_imported_under_another_stream():
    # A skill or library that first imports logging inside redirect_stderr(...) must not take the
    # run's records with it: they stay on the stderr the run routed (its redacted one), not in the
    # skill's buffer and not on the stream the redirect named (stdout, the result stream).
    code = ("import sys, io, contextlib\nfrom agentapps.core import logs\n"
            "run_err = sys.stderr = io.StringIO()\nlogs.route(verbose=False)\n"
            "other = io.StringIO()\n"
            "with contextlib.redirect_stderr(other):\n    import logging\n"
            "logging.getLogger('agentapps.skill').warning('after the import')\n"
            "logs.logger('agentapps.x').warning('mine')\nlogs.unroute()\n"
            "print(repr(run_err.getvalue()), repr(other.getvalue()))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.stdout.strip() == "'warning: after the import\\nwarning: mine\\n' ''", result.stderr


def test_a_skill_that_first_imports_logging_under_redirect_stderr_leaves_the_runs_records_redacted_on_stderr(project):
    # seen failing: the route's handler was bound to sys.__stdout__ (the redirect's stream), so the
    # warning reached stdout with the declared secret in clear
    project.write("skills/noisy.skill.py", '''
        frontmatter = {"name": "noisy", "metadata": {"env": ["NOISY_TOKEN"]}}

        def run(ctx, args):
            import contextlib, os, sys
            with contextlib.redirect_stderr(sys.__stdout__):  # a library quietening its import
                import logging
            logging.getLogger("agentapps.noisy").warning("token " + os.environ["NOISY_TOKEN"])
            return "done"
        ''')
    result = project.cli("run", "noisy", NOISY_TOKEN="tok-5e1f-secret")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n"
    assert result.stderr == "warning: token [redacted:NOISY_TOKEN]\n"
