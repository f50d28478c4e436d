"""Argument constraints bind what really happens: every spelling of a path, command or URL is
allowed exactly when the action it performs matches the constraint (issue 9 §2).

Each case goes through the real pipeline: a code skill whose allowed-tools carries the constraint
invokes the built-in, and the test looks at what happened on disk, in processes or on the wire.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentapps.errors import AgentAppsError, DeniedError, UsageError

CALLER = """
frontmatter = {{"name": "caller", "allowed-tools": {allowed!r}, "metadata": {{"params": {{"type": "object"}}}}}}

async def run(ctx, args):
    return await ctx.manager.invoke(args["call"], args["with"])
"""


def caller(project: Any, allowed: str) -> None:
    project.write("caller.skill.py", CALLER.format(allowed=allowed))


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()}


@pytest.fixture
def tree(project: Any) -> Any:
    """docs/ (with sub/, a symlinked folder and a symlinked file leading into skills/), skills/."""
    project.write("docs/readme.txt", "docs text\n")
    project.write("docs/sub/keep.txt", "k\n")
    project.write("skills/target.txt", "skills text\n")
    os.symlink("../skills", project.root / "docs" / "to-skills")
    os.symlink("../skills/target.txt", project.root / "docs" / "file-link")
    return project


# (path as given, where the write really lands or None when it must be refused)
WRITE_CASES = [
    ("docs/x.txt", "docs/x.txt"),
    ("./docs/x.txt", "docs/x.txt"),
    ("docs//x.txt", "docs/x.txt"),
    ("docs/./x.txt", "docs/x.txt"),
    ("docs/sub/../x.txt", "docs/x.txt"),
    ("docs/missing/../x.txt", "docs/x.txt"),
    ("docs/../docs/x.txt", "docs/x.txt"),
    ("docs/x.txt/", "docs/x.txt"),
    ("{root}/docs/x.txt", "docs/x.txt"),
    ("docs/new/deeper/x.txt", "docs/new/deeper/x.txt"),
    ("docs/x\n../../skills/x.txt", "docs/skills/x.txt"),  # a newline is part of a name, not a separator
    ("docs/../skills/x.txt", None),
    ("{root}/skills/x.txt", None),
    ("docs/to-skills/x.txt", None),  # a symlink inside docs/ that leads to skills/
    ("docs/file-link", None),
    ("docs/to-skills/../docs/x.txt", "docs/x.txt"),  # `..` after a symlink climbs from its target
    ("docs/to-skills/../skills/x.txt", None),
    ("Docs/x.txt", None),  # another folder on a case-sensitive file system
    ("\uff44ocs/x.txt", None),  # a fullwidth letter: another name
    ("d\u200bocs/x.txt", None),  # a zero-width space: another name
    ("docs", None),
    ("../proj/docs/x.txt", None),  # the same folder reached from outside: refused as outside
]


@pytest.mark.parametrize(("path", "lands"), WRITE_CASES)
def test_file_write_constraint_binds_the_file_really_written(tree: Any, path: str, lands: str | None) -> None:
    caller(tree, "file-write(path=docs/*)")
    given = path.format(root=tree.root)
    before = files_under(tree.root)
    if lands is None:
        with pytest.raises(DeniedError):
            tree.invoke("caller", {"call": "file-write", "with": {"path": given, "content": "written"}})
        assert files_under(tree.root) == before
        assert (tree.root / "skills" / "target.txt").read_text() == "skills text\n"
        return
    result = tree.invoke("caller", {"call": "file-write", "with": {"path": given, "content": "written"}})
    assert result["path"] == lands
    assert (tree.root / lands).read_text() == "written"
    assert files_under(tree.root) - before == {lands}


READ_CASES = [
    ("docs/readme.txt", "docs text\n"),
    ("./docs/readme.txt", "docs text\n"),
    ("docs/sub/../readme.txt", "docs text\n"),
    ("{root}/docs/readme.txt", "docs text\n"),
    ("docs/file-link", None),
    ("docs/to-skills/target.txt", None),
    ("docs/../skills/target.txt", None),
    ("{root}/docs/../skills/target.txt", None),
]


@pytest.mark.parametrize(("path", "text"), READ_CASES)
def test_file_read_constraint_binds_the_file_really_read(tree: Any, path: str, text: str | None) -> None:
    caller(tree, "file-read(path=docs/*)")
    given = path.format(root=tree.root)
    if text is None:
        with pytest.raises(DeniedError, match="does not match"):
            tree.invoke("caller", {"call": "file-read", "with": {"path": given}})
    else:
        assert tree.invoke("caller", {"call": "file-read", "with": {"path": given}}) == text


@pytest.mark.parametrize("path", ["skills/target.txt", "docs/../skills/target.txt", "docs/to-skills/target.txt",
                                  "docs/file-link", "./skills//target.txt"])
def test_a_deny_rule_cannot_be_dodged_by_respelling(tree: Any, path: str) -> None:
    caller(tree, "file-read(path=skills/*, $deny) file-read")
    with pytest.raises(DeniedError, match="denied by"):
        tree.invoke("caller", {"call": "file-read", "with": {"path": path}})
    assert tree.invoke("caller", {"call": "file-read", "with": {"path": "docs/readme.txt"}}) == "docs text\n"


def test_a_constraint_on_another_argument_leaves_the_path_unbound_so_it_denies(tree: Any) -> None:
    caller(tree, "file-read(limit=*)")
    with pytest.raises(DeniedError, match="argument 'path' changes what 'file-read' does"):
        tree.invoke("caller", {"call": "file-read", "with": {"path": "docs/readme.txt", "limit": 1}})


@pytest.mark.parametrize(("glob", "allowed"), [("docs/*", True), ("./docs/*", True), ("docs//*", True),
                                               ("**/*", False), ("*", False)])
def test_file_list_constraint_binds_the_glob_really_matched(tree: Any, glob: str, allowed: bool) -> None:
    caller(tree, "file-list(glob=docs/*)")
    if allowed:
        listed = tree.invoke("caller", {"call": "file-list", "with": {"glob": glob}})
        assert listed and all(p.startswith("docs/") for p in listed)
    else:
        with pytest.raises(DeniedError):
            tree.invoke("caller", {"call": "file-list", "with": {"glob": glob}})
    with pytest.raises(DeniedError, match="does not match"):  # no glob means every file
        tree.invoke("caller", {"call": "file-list", "with": {}})


@pytest.fixture
def fake_git(project: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A `git` on PATH that prints its arguments, so the test sees which command really ran."""
    bin_dir = project.root / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text('#!/bin/sh\necho "git ran with: $*"\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return project


GIT_STATUS = "git ran with: status\n"
# (args to shell, what stdout shows when allowed by `git status`, or None when it must be refused)
SHELL_CASES: list[tuple[dict[str, Any], str | None]] = [
    ({"command": "git status"}, GIT_STATUS),
    ({"argv": ["git", "status"]}, GIT_STATUS),
    ({"command": "git  status"}, GIT_STATUS),
    ({"command": "\tgit status "}, GIT_STATUS),
    ({"command": "git \"status\""}, GIT_STATUS),
    ({"command": "git 'status'"}, GIT_STATUS),
    ({"command": "g\\it status"}, GIT_STATUS),
    ({"command": "git status; touch pwned"}, None),
    ({"command": "git status && touch pwned"}, None),
    ({"command": "git status || touch pwned"}, None),
    ({"command": "git status | touch pwned"}, None),
    ({"command": "git status $(touch pwned)"}, None),
    ({"command": "git status `touch pwned`"}, None),
    ({"command": "git status \"$(touch pwned)\""}, None),
    ({"command": "git status\ntouch pwned"}, None),
    ({"command": "git status\rtouch pwned"}, None),
    ({"command": "git status > pwned"}, None),
    ({"command": "X=1 git status"}, None),
    ({"command": "PATH=. git status"}, None),
    ({"command": "git status #"}, GIT_STATUS),  # a comment runs nothing
    ({"command": "git status*"}, None),
    ({"argv": ["sh", "-c", "git status"]}, GIT_STATUS),  # a literal script is read as the commands it runs
    ({"argv": ["sh", "-c", "git status; touch pwned"]}, None),
    ({"argv": ["git", "status; touch pwned"]}, None),
    ({"command": "git status", "input": "touch pwned\n"}, None),
]


@pytest.mark.parametrize(("args", "stdout"), SHELL_CASES)
def test_shell_constraint_binds_the_command_really_run(fake_git: Any, args: dict[str, Any], stdout: str | None) -> None:
    caller(fake_git, "shell(command=git status)")
    if stdout is None:
        with pytest.raises(DeniedError):
            fake_git.invoke("caller", {"call": "shell", "with": args})
    else:
        assert fake_git.invoke("caller", {"call": "shell", "with": args})["stdout"] == stdout
    assert not (fake_git.root / "pwned").exists()


def test_command_and_argv_together_are_refused_before_anything_runs(fake_git: Any) -> None:
    caller(fake_git, "shell(command=git status)")
    with pytest.raises(UsageError, match="not both"):
        fake_git.invoke("caller", {"call": "shell", "with": {"command": "git status", "argv": ["touch", "pwned"]}})
    caller(fake_git, "shell")
    with pytest.raises(UsageError, match="not both"):
        fake_git.invoke("caller", {"call": "shell", "with": {"command": "git status", "argv": ["touch", "pwned"]}})
    assert not (fake_git.root / "pwned").exists()


@pytest.mark.parametrize(("args", "stdout"), [
    ({"command": "git status --short"}, "git ran with: status --short\n"),
    ({"argv": ["git", "status", "; touch pwned"]}, "git ran with: status ; touch pwned\n"),
    ({"command": "git status '$(touch pwned)'"}, "git ran with: status $(touch pwned)\n"),
    ({"command": "git status; touch pwned"}, None),
    ({"command": "git status $(touch pwned)"}, None),
    ({"command": "git status\ntouch pwned"}, None),
])
def test_a_wildcard_command_constraint_admits_arguments_never_more_commands(
    fake_git: Any, args: dict[str, Any], stdout: str | None
) -> None:
    caller(fake_git, "shell(command=git status*)")
    if stdout is None:
        with pytest.raises(DeniedError):
            fake_git.invoke("caller", {"call": "shell", "with": args})
    else:
        assert fake_git.invoke("caller", {"call": "shell", "with": args})["stdout"] == stdout
    assert not (fake_git.root / "pwned").exists()


def test_a_script_is_admitted_when_every_command_in_it_is(fake_git: Any) -> None:
    caller(fake_git, "shell(command={git status,echo *})")
    result = fake_git.invoke("caller", {"call": "shell", "with": {"command": "git status && echo done"}})
    assert result["stdout"] == GIT_STATUS + "done\n"
    with pytest.raises(DeniedError, match="command 2 of 2"):
        fake_git.invoke("caller", {"call": "shell", "with": {"command": "git status && touch pwned"}})
    assert not (fake_git.root / "pwned").exists()


class _Recorder(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append((self.command, self.path))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    do_POST = do_DELETE = do_GET


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    httpd.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    monkeypatch.setenv("AGENTAPPS_HTTP_ALLOW", "127.0.0.1")
    yield httpd
    httpd.shutdown()
    httpd.server_close()


# (args to http with {base} = http://127.0.0.1:PORT, the request the server sees, or None: refused)
HTTP_CASES: list[tuple[dict[str, Any], tuple[str, str] | None]] = [
    ({"url": "{base}/ok/x"}, ("GET", "/ok/x")),
    ({"url": "HTTP://127.0.0.1:{port}/ok/x"}, ("GET", "/ok/x")),
    ({"url": "http://0177.0.0.1:{port}/ok/x"}, ("GET", "/ok/x")),
    ({"url": "{base}/ok/./x#../../admin"}, ("GET", "/ok/x")),
    ({"url": "{base}/ok/x", "method": "get"}, ("GET", "/ok/x")),
    ({"url": "{base}/ok/../admin"}, None),
    ({"url": "{base}/ok/%2e%2e/admin"}, None),
    ({"url": "{base}/ok/%2E%2E/admin"}, None),
    ({"url": "http://127.0.0.1:{port}@127.0.0.2:{port}/ok/x"}, None),
    ({"url": "{base}/ok/x", "method": "POST"}, None),
    ({"url": "{base}/ok/x", "method": "DELETE"}, None),
    ({"url": "{base}/ok/x", "headers": {"X-HTTP-Method-Override": "DELETE"}}, None),
    # dots hidden behind percent-encoding: a server that decodes before resolving leaves /ok/
    ({"url": "{base}/ok/..%2Fadmin"}, None),
    ({"url": "{base}/ok/%2E%2E%2Fadmin"}, None),
    ({"url": "{base}/ok/%2e%2e%2fadmin"}, None),
    ({"url": "{base}/ok/..%5Cadmin"}, None),
    ({"url": "{base}/ok/%252e%252e%252fadmin"}, None),
    ({"url": "{base}/ok/%25252e%25252e/admin"}, None),
    ({"url": "{base}/ok/.%2E/admin"}, None),
    ({"url": "{base}/ok/a%2Fb"}, ("GET", "/ok/a%2Fb")),  # an encoded slash alone stays inside
    ({"url": "{base}/ok/..x%2Fy"}, ("GET", "/ok/..x%2Fy")),
    # several method-override headers: not the last one, nor the one the view likes best
    ({"url": "{base}/ok/x", "headers": {"X-HTTP-Method-Override": "DELETE", "x-http-method-override": "GET"}},
     None),
    ({"url": "{base}/ok/x", "headers": {"X-HTTP-Method": "DELETE", "X-Method-Override": "GET"}}, None),
    ({"url": "{base}/ok/x", "headers": {"X-Method-Override": "DELETE, GET"}}, None),
    ({"url": "{base}/ok/x", "headers": {"X_HTTP_Method_Override": "DELETE"}}, None),
    ({"url": "{base}/ok/x", "method": "DELETE", "headers": {"X-HTTP-Method-Override": "GET"}}, None),
    ({"url": "{base}/ok/x", "headers": {"X-HTTP-Method-Override": "get", "X-Method-Override": "GET"}},
     ("GET", "/ok/x")),
]


@pytest.mark.parametrize(("args", "request_seen"), HTTP_CASES)
def test_http_constraint_binds_the_request_really_sent(
    project: Any, server: Any, args: dict[str, Any], request_seen: tuple[str, str] | None
) -> None:
    port = server.server_address[1]
    base = f"http://127.0.0.1:{port}"
    caller(project, f"http(url={base}/ok/*)")
    given = {k: v.format(base=base, port=port) if isinstance(v, str) else v for k, v in args.items()}
    if request_seen is None:
        with pytest.raises((DeniedError, UsageError), match="may not call 'http'|percent-encoding|override"):
            project.invoke("caller", {"call": "http", "with": given})
        assert server.seen == []
    else:
        result = project.invoke("caller", {"call": "http", "with": given})
        assert result["status"] == 200
        assert server.seen == [request_seen]


def test_other_methods_need_their_own_constraint(project: Any, server: Any) -> None:
    base = f"http://127.0.0.1:{server.server_address[1]}"
    caller(project, f"http(url={base}/ok/*, method=POST)")
    assert project.invoke("caller", {"call": "http", "with": {"url": f"{base}/ok/x", "method": "post"}})["status"] == 200
    with pytest.raises(DeniedError):
        project.invoke("caller", {"call": "http", "with": {"url": f"{base}/ok/x", "method": "DELETE"}})
    assert server.seen == [("POST", "/ok/x")]


def test_refusals_through_the_cli_exit_3_with_one_line(tree: Any) -> None:
    caller(tree, "file-write(path=docs/*)")
    result = tree.cli("run", "caller", "--arg-json",
                      json.dumps({"call": "file-write", "with": {"path": "docs/../skills/x.txt", "content": "x"}}))
    assert result.returncode == 3, result.stderr
    assert result.stderr.count("\n") == 1 and "does not match 'docs/*'" in result.stderr
    assert not (tree.root / "skills" / "x.txt").exists()


def test_errors_are_from_the_tree(tree: Any) -> None:
    caller(tree, "file-read(path=docs/*)")
    with pytest.raises(AgentAppsError):
        tree.invoke("caller", {"call": "file-read", "with": {"path": "docs/\x00x"}})


HANDLER = """
frontmatter = {{"name": {name!r}, "metadata": {{"params": {{"type": "object"}}}}}}

def run(ctx, args):
    return None
"""


@pytest.mark.parametrize(("ref", "allowed"), [("recorder", True), ("rec/../other.skill.py", False),
                                              ("./recorder.skill.py", False), ("other", False)])
def test_event_subscribe_ref_constraint_binds_the_handler_really_subscribed(project: Any, ref: str, allowed: bool) -> None:
    project.write("recorder.skill.py", HANDLER.format(name="recorder"))
    project.write("other.skill.py", HANDLER.format(name="other"))
    (project.root / "rec").mkdir()
    caller(project, "event-subscribe(ref=rec*)")
    call = {"call": "event-subscribe", "with": {"topic": "t", "ref": ref}}
    if allowed:
        assert project.invoke("caller", call)["created"] is True
    else:
        with pytest.raises(DeniedError, match="does not match"):
            project.invoke("caller", call)
