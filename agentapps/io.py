"""Public: files inside the project, shell commands and HTTP, confined and guarded as the bundled
file-*, shell and http skills use them. Stable within a major version (see `agentapps`).

    from agentapps.io import read_text

Files (paths are relative to the project root `root`; DeniedError outside it):
    read_text(root, path, *, offset=0, limit=None)   lines of a text file
    write_text(root, path, content, *, append=False)  write or append, atomically
    list_files(root, pattern="**/*"), normalize_glob(pattern)   files matching a glob
    search_files(root, pattern, *, path="", glob="**/*")    lines matching a regular expression
    is_protected(rel, ctx), approve_code_write(ctx, rel, details)   writing code needs approval
    skill_folder(tool), folder_files(folder)   a folder skill's folder and the files beside SKILL.md
Commands:
    effective_command(command, argv)   the /bin/sh command line for these arguments
    command_view(command, argv, root)  its simple commands reduced, as trust rules and grants see them
    minimal_env(declared)           PATH, HOME, LANG and friends, plus the declared variables
    run_command(line, *, cwd, env, timeout, ...)   run `/bin/sh -c line`, children tracked
    command_sandbox(ctx)            the OS sandbox for a command this call starts (docs/sandbox.md)
HTTP:
    normalize_url(url)              the URL as sent (UsageError unless plain http(s) with a host)
    fetch(method, url, ...)         one request; every hop's addresses checked (no private addresses)
    traceparent(ctx)                the W3C `traceparent` of this call when traces are on, else None

Names are imported on first use: importing this module imports nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentapps.core.exports import lazy_exports

if TYPE_CHECKING:
    from agentapps.files.guard import approve_code_write, is_protected
    from agentapps.files.ops import list_files, normalize_glob, read_text, write_text
    from agentapps.files.sandboxing import command_sandbox
    from agentapps.files.search import search as search_files
    from agentapps.files.skillfolder import folder_files, skill_folder
    from agentapps.net.http import fetch
    from agentapps.net.urls import normalize_url
    from agentapps.process.command import effective_command
    from agentapps.process.shell import minimal_env, run_command
    from agentapps.telemetry.ending import traceparent
    from agentapps.tools.shellview import command_view

_EXPORTS = {
    "read_text": "agentapps.files.ops",
    "write_text": "agentapps.files.ops",
    "list_files": "agentapps.files.ops",
    "normalize_glob": "agentapps.files.ops",
    "search_files": "agentapps.files.search:search",
    "is_protected": "agentapps.files.guard",
    "approve_code_write": "agentapps.files.guard",
    "skill_folder": "agentapps.files.skillfolder",
    "folder_files": "agentapps.files.skillfolder",
    "effective_command": "agentapps.process.command",
    "command_sandbox": "agentapps.files.sandboxing",
    "command_view": "agentapps.tools.shellview",
    "minimal_env": "agentapps.process.shell",
    "run_command": "agentapps.process.shell",
    "normalize_url": "agentapps.net.urls",
    "fetch": "agentapps.net.http",
    "traceparent": "agentapps.telemetry.ending",
}

__all__ = ["approve_code_write", "command_sandbox", "command_view", "effective_command", "fetch", "folder_files",
           "is_protected", "list_files", "minimal_env", "normalize_glob", "normalize_url", "read_text", "run_command",
           "search_files",
           "skill_folder", "traceparent", "write_text"]

__getattr__ = lazy_exports(__name__, _EXPORTS)
