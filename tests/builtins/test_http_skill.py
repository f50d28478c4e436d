"""The http skill through the pipeline: private addresses refused (exit 3) unless allow-listed."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if "/hop-to/" in self.path:  # a redirect to another path on this server
            self.send_response(302)
            self.send_header("Location", "/" + self.path.split("/hop-to/", 1)[1])
            self.end_headers()
            return
        if self.path == "/redirect-metadata":
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            self.end_headers()
            return
        body = b'{"hello": "world"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.attack("SSRF spellings")
def test_loopback_is_refused_by_default(project, server):
    result = project.cli("run", "http", "--url", server + "/")
    assert result.returncode == 3 and "127.0.0.1" in result.stderr


def test_allow_list_reaches_a_local_server(project, server):
    result = project.cli("run", "http", "--url", server + "/", AGENTAPPS_HTTP_ALLOW="127.0.0.1")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["status"] == 200 and json.loads(out["body"]) == {"hello": "world"}


@pytest.mark.attack("SSRF spellings")
def test_redirect_to_the_metadata_address_is_refused(project, server):
    result = project.cli("run", "http", "--url", server + "/redirect-metadata", AGENTAPPS_HTTP_ALLOW="127.0.0.1")
    assert result.returncode == 3 and "169.254.169.254" in result.stderr


def test_non_http_schemes_are_bad_input(project):
    result = project.cli("run", "http", "--url", "file:///etc/passwd")
    assert result.returncode == 2


@pytest.mark.parametrize(("start", "allowed"), [("/api/hop-to/api/data", True), ("/api/hop-to/private/x", False)])
def test_a_redirect_must_pass_the_callers_url_constraint(project, server, start, allowed):
    project.write("fetcher.skill.py", f"""
frontmatter = {{"name": "fetcher", "allowed-tools": "http(url={server}/api/*)"}}

async def run(ctx, args):
    return (await ctx.manager.invoke("http", {{"url": "{server}{start}"}}))["url"]
""")
    result = project.cli("run", "fetcher", AGENTAPPS_HTTP_ALLOW="127.0.0.1")
    if allowed:
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip().endswith("/api/data")
    else:
        assert result.returncode == 3
        assert "Skill 'fetcher' may not call 'http': argument 'url' does not match" in result.stderr
