"""The two HTTP doors start and refuse alike (`agentapps.lifecycle.server`): a bad port, a public
address without a token and a port in use are each one line and exit 2, from `serve` and from
`mcp-server --transport http`."""

from __future__ import annotations

import socket

import pytest

DOORS = {"serve": ("serve",), "mcp-server": ("mcp-server", "--transport", "http")}


@pytest.mark.parametrize("door", DOORS)
def test_a_port_in_use_is_one_line_and_exit_2(project, door):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = project.cli(*DOORS[door], "--port", str(port), timeout=30, real_process=True)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (f"error: Cannot listen on 127.0.0.1:{port}: the port is in use "
                                     "(another server?); pick another --port.")


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize(("argv", "says"), [
    (("--port", "70000"), "error: --port must be 0-65535, got 70000."),
    (("--host", "0.0.0.0"), "error: Serving on 0.0.0.0 (not loopback) needs --token (or AGENTAPPS_"),
])
def test_bad_listening_options_are_one_line_and_exit_2(project, door, argv, says):
    result = project.cli(*DOORS[door], *argv, timeout=30, real_process=True)
    assert result.returncode == 2 and result.stderr.startswith(says), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
