"""The git transport: the `git` command in a subprocess, over a mirror of each repository kept in
`.agent-apps/cache/git/`, so a second install of the same commit needs no network.

Git never prompts (GIT_TERMINAL_PROMPT=0) and each command has a time limit
(AGENTAPPS_GIT_TIMEOUT seconds, 300 by default); a failure is a PackageError with git's last line.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from agentapps.errors import IntegrityError, PackageError

MIRRORS = Path(".agent-apps") / "cache" / "git"
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 object names, in full


def _git(args: list[str], *, cwd: Path | None = None, what: str) -> bytes:
    if shutil.which("git") is None:
        raise PackageError("The `git` command is not installed; the hub and `agentapps add` need it.")
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "LC_ALL": "C"}
    try:
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=False,
                              timeout=float(os.environ.get("AGENTAPPS_GIT_TIMEOUT", "300")), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise PackageError(f"git timed out while {what}.") from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise PackageError(f"git failed while {what}: {lines[-1] if lines else f'exit {done.returncode}'}")
    return done.stdout


class Repository:
    """A local mirror of one git repository."""

    def __init__(self, project: Path, url: str) -> None:
        self.url = url
        self.folder = project / MIRRORS / hashlib.sha256(url.encode()).hexdigest()[:24]
        self._fetched = False

    def fetch(self) -> None:
        """Clone the mirror, or bring it up to date (once per object)."""
        if self._fetched:
            return
        if (self.folder / "HEAD").is_file():
            _git(["remote", "update", "--prune"], cwd=self.folder, what=f"fetching {self.url}")
        else:
            self.folder.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.folder.with_name(self.folder.name + f".tmp{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            _git(["clone", "--mirror", "--quiet", "--", self.url, str(tmp)], what=f"cloning {self.url}")
            os.replace(tmp, self.folder)
        self._fetched = True

    def resolve(self, ref: str | None) -> str:
        """The commit a ref names now (the default branch when None), fetching first."""
        self.fetch()
        name = ref or "HEAD"
        if name.startswith("-"):
            raise PackageError(f"'{name}' is not a git ref.")
        try:
            return _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{name}^{{commit}}"],
                        cwd=self.folder, what=f"resolving '{name}'").decode().strip()
        except PackageError:
            raise PackageError(f"No branch, tag or commit '{name}' in {self.url}.") from None

    def has(self, commit: str) -> bool:
        if not (self.folder / "HEAD").is_file():
            return False
        try:
            _git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=self.folder, what="looking for a commit")
        except PackageError:
            return False
        return True

    def ensure(self, commit: str) -> None:
        """Make sure the mirror has `commit` (fetching when it does not). A lock file names commits
        in full: anything else (an option, a branch) is refused before git sees it."""
        if not _COMMIT.fullmatch(commit):
            raise PackageError(f"{commit[:80]!r} is not a full commit id.")
        if not self.has(commit):
            self.fetch()
            if not self.has(commit):
                raise IntegrityError(f"Commit {commit} is not in {self.url} (rewritten history?).")

    def read(self, commit: str, path: str) -> bytes:
        """One file's bytes at a commit."""
        return _git(["show", f"{commit}:{path}"], cwd=self.folder, what=f"reading {path} from {self.url}")

    def exists(self, commit: str, path: str) -> bool:
        try:
            _git(["cat-file", "-e", f"{commit}:{path}" if path else f"{commit}^{{tree}}"], cwd=self.folder,
                 what="looking for a path")
        except PackageError:
            return False
        return True

    def kind(self, commit: str, path: str) -> str:
        """What `commit:path` is: tree (a folder), blob (a file) or commit (a submodule)."""
        return _git(["cat-file", "-t", f"{commit}:{path}"], cwd=self.folder, what="looking at a path").decode().strip()

    def export(self, commit: str, path: str, dest: Path) -> None:
        """Write the tree at `commit:path` into the new folder `dest` (git archive, extracted with
        tarfile's data filter: nothing lands outside `dest`)."""
        if not self.exists(commit, path):
            raise PackageError(f"No folder '{path}' in {self.url} at commit {commit[:12]}.")
        if path and self.kind(commit, path) != "tree":
            raise PackageError(f"'{path}' in {self.url} at commit {commit[:12]} is a file; a package's path "
                               "names a folder of skills.")
        data = _git(["archive", "--format=tar", f"{commit}:{path}" if path else commit], cwd=self.folder,
                    what=f"exporting {path or 'the repository'} from {self.url}")
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            members = archive.getmembers()
            for member in members:  # a package holds only files and folders, as the check says
                if not (member.isfile() or member.isdir()):
                    kind = "symlink" if member.issym() or member.islnk() else "special file"
                    raise PackageError(f"'{member.name}' in {self.url} at commit {commit[:12]} is a {kind}; "
                                       "a package holds only files and folders.")
            dest.mkdir(parents=True)
            archive.extractall(dest, members=members, filter="data")
        # git archive dates every file at its commit's second: two commits in one second would
        # give a changed skill the modification time a loaded one had (code is cached by path and
        # time), so files are dated when they are written here
        for root, _, files in os.walk(dest):
            for name in files:
                os.utime(os.path.join(root, name))
