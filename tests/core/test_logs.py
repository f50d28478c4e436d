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
