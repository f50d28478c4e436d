"""What the hub skills and commands do: add, install, remove, update, list, search. Each returns
`{"results": [...], "text": "..."}`: rows for programs, a few lines for people."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agentapps.errors import IntegrityError, PackageError
from agentapps.hub import lock
from agentapps.hub.git import Repository
from agentapps.hub.install import (
    Staged,
    install_locked,
    python_requirements,
    remove_folder,
    skills_in,
)
from agentapps.hub.pydeps import settle
from agentapps.hub.registry import Registries, Release, configured
from agentapps.hub.resolve import resolve
from agentapps.hub.semver import Range
from agentapps.hub.sources import Source, check_name, package_name, parse_source
from agentapps.tools.packages import LOCK_FILE, PACKAGES_DIR, verify_installed

Answer = dict[str, Any]


def _row(name: str, entry: dict[str, Any], status: str) -> dict[str, Any]:
    return {"name": name, "version": entry.get("version"), "source": entry.get("source"),
            "commit": entry.get("commit"), "integrity": entry.get("integrity"), "skills": entry.get("skills", []),
            "status": status}


def _text(rows: list[dict[str, Any]], notes: list[str]) -> str:
    lines = [f"{r['status']:<10} {r['name']}{'@' + r['version'] if r.get('version') else ''}  "
             f"{(r.get('commit') or '')[:12]}  {' '.join(r.get('skills') or [])}".rstrip() for r in rows]
    return "\n".join(lines + notes) or "Nothing to do."


def _stage(project: Path, name: str, url: str, commit: str, path: str) -> Staged:
    staged = Staged(project, name)
    try:
        staged.export(url, commit, path)
    except BaseException:
        staged.discard()
        raise
    if not skills_in(staged.folder):
        staged.discard()
        raise PackageError(f"No skills in {url} at '{path or '/'}' (commit {commit[:12]}): a package needs "
                           "NAME/SKILL.md folders or NAME.skill.md/.skill.py files.")
    return staged


def _entry(source: Source, commit: str, staged: Staged, **extra: Any) -> dict[str, Any]:
    return {"source": source.spec, "url": source.url, "path": source.path, "ref": source.ref, "commit": commit,
            "integrity": staged.integrity, "skills": skills_in(staged.folder),
            "python": python_requirements(staged.folder), **extra}


def add_source(project: Path, spec: str, *, name: str | None = None, path: str | None = None,
               ref: str | None = None, install_deps: bool = False, cwd: Path | None = None) -> Answer:
    """`agentapps add SOURCE`: install the skills of a git repository, pinned to its commit. A
    relative folder is taken from `cwd` and written in the lock file relative to the project."""
    if name:  # refused before anything is fetched
        check_name(name)
    source = parse_source(spec, cwd or project, path=path, ref=ref)
    written = os.path.expanduser(spec.partition("#")[0])
    if Path(source.url).is_absolute() and not os.path.isabs(written):  # a relative local repository:
        source = Source(os.path.relpath(source.url, project), source.url, source.path, source.ref)  # from the project
    repo = Repository(project, source.url)
    commit = repo.resolve(source.ref)
    if path is None and not source.path and repo.exists(commit, "skills"):
        source = Source(source.spec, source.url, "skills", source.ref)  # laid out like anthropics/skills
    name = check_name(name) if name else package_name(source)
    with lock.guard(project):
        packages = lock.load(project)
        staged = _stage(project, name, source.url, commit, source.path)
        try:
            entry = _entry(source, commit, staged, version=None, requested=None, direct=True, registry=None,
                           dependencies={})
            staged.place()
        except BaseException:
            staged.discard()
            raise
        status = "updated" if name in packages else "added"
        packages[name] = entry
        lock.save(project, packages)
    notes = settle(entry["python"], install=install_deps)
    return {"results": [_row(name, entry, status)], "text": _text([_row(name, entry, status)], notes)}


def install(project: Path, *, frozen: bool = False, install_deps: bool = False) -> Answer:
    """`agentapps install`: make `.agent-apps/packages/` hold exactly what the lock file pins."""
    rows: list[dict[str, Any]] = []
    with lock.guard(project):
        packages = lock.load(project)
        if not (project / LOCK_FILE).is_file():
            if frozen:
                raise IntegrityError(f"There is no {LOCK_FILE} to install from (--frozen).")
            return {"results": [], "text": f"Nothing to install: there is no {LOCK_FILE}."}
        changed = False
        for name, entry in packages.items():
            try:
                check_name(name)
                try:
                    verify_installed(project, name)
                    rows.append(_row(name, entry, "ok"))
                    continue
                except IntegrityError:
                    pass  # missing or changed: install it from the lock
                if not frozen and not (entry.get("commit") and entry.get("integrity")):
                    _pin(project, name, entry)
                    changed = True
                else:
                    install_locked(project, name, entry)
            except (PackageError, IntegrityError) as exc:
                if exc.file is not None:
                    raise
                named = exc.message if exc.message.startswith(f"Package '{name}'") else f"Package '{name}': {exc.message}"
                raise type(exc)(named, file=project / LOCK_FILE) from None
            rows.append(_row(name, entry, "installed"))
        rows += _prune(project, set(packages))
        if changed:
            lock.save(project, packages)
    notes = settle(sorted({req for e in packages.values() for req in e.get("python") or []}), install=install_deps)
    return {"results": rows, "text": _text(rows, notes)}


def _pin(project: Path, name: str, entry: dict[str, Any]) -> None:
    """A lock entry written by hand (a source and maybe a ref, no commit or hash): pin it now."""
    if not isinstance(entry.get("source"), str):
        raise PackageError(f"Package '{name}' in the lock file has no `source`.")
    source = parse_source(entry["source"], project, path=entry.get("path"), ref=entry.get("ref"))
    commit = entry.get("commit") or Repository(project, source.url).resolve(source.ref)
    staged = _stage(project, name, source.url, commit, source.path)
    try:
        entry.update(_entry(source, commit, staged, **{k: v for k, v in entry.items() if k in _KEEP}))
        staged.place()
    except BaseException:
        staged.discard()
        raise


_KEEP = ("version", "requested", "direct", "registry", "dependencies")


def _prune(project: Path, keep: set[str]) -> list[dict[str, Any]]:
    """Remove package folders the lock file does not name."""
    folder = project / PACKAGES_DIR
    rows = []
    for child in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not child.name.startswith(".") and child.name not in keep:
            remove_folder(project, child.name)
            rows.append({"name": child.name, "version": None, "status": "removed"})
    return rows


def hub_add(project: Path, main_metadata: dict[str, Any] | None, request: str, *,
            install_deps: bool = False) -> Answer:
    """`hub-add NAME[@RANGE]`: resolve it and its dependencies from the registries and install them."""
    name, _, spec = request.strip().partition("@")
    check_name(name)
    with lock.guard(project):
        packages = lock.load(project)
        requests = {n: Range.parse(e.get("requested") or "*") for n, e in packages.items()
                    if e.get("direct") and e.get("registry")}
        requests[name] = Range.parse(spec or "*")
        rows, notes = _apply(project, Registries(project, configured(project, main_metadata)), packages, requests,
                             install_deps=install_deps)
    return {"results": rows, "text": _text(rows, notes)}


def _apply(project: Path, registries: Registries, packages: dict[str, dict[str, Any]],
           requests: dict[str, Range], *, install_deps: bool) -> tuple[list[dict[str, Any]], list[str]]:
    chosen = resolve(registries, requests)
    rows: list[dict[str, Any]] = []
    for name, release in sorted(chosen.items()):
        old = packages.get(name)
        if old is not None and old.get("version") == str(release.version) and old.get("registry"):
            old["requested"] = requests[name].text if name in requests else old.get("requested")
            old["direct"] = name in requests
            rows.append(_row(name, old, "ok"))
            continue
        packages[name] = _install_release(project, release, requests)
        rows.append(_row(name, packages[name], "updated" if old else "added"))
    for name in [n for n, e in packages.items() if e.get("registry") and n not in chosen]:
        remove_folder(project, name)  # a dependency nothing needs any more
        rows.append(_row(name, packages.pop(name), "removed"))
    lock.save(project, packages)
    wanted = sorted({req for n in chosen for req in packages[n].get("python") or []})
    return rows, settle(wanted, install=install_deps)


def _install_release(project: Path, release: Release, requests: dict[str, Range]) -> dict[str, Any]:
    source = parse_source(release.source, project, path=release.path, ref=release.ref)
    commit = Repository(project, source.url).resolve(source.ref)
    staged = _stage(project, release.name, source.url, commit, source.path)
    try:
        entry = _entry(source, commit, staged, version=str(release.version),
                       requested=requests[release.name].text if release.name in requests else None,
                       direct=release.name in requests, registry=release.registry,
                       dependencies={d: r.text for d, r in release.dependencies.items()})
        entry["python"] = sorted({*entry["python"], *release.python})
        staged.place()
    except BaseException:
        staged.discard()
        raise
    return entry


def hub_remove(project: Path, main_metadata: dict[str, Any] | None, name: str) -> Answer:
    """`hub-remove NAME`: uninstall a package (and registry dependencies nothing else needs)."""
    with lock.guard(project):
        packages = lock.load(project)
        if name not in packages:
            raise PackageError(f"Package '{name}' is not installed (see 'agentapps hub list').")
        entry = packages.pop(name)
        remove_folder(project, name)
        rows = [_row(name, entry, "removed")]
        requests = {n: Range.parse(e.get("requested") or "*") for n, e in packages.items()
                    if e.get("direct") and e.get("registry")}
        leftovers = [n for n, e in packages.items() if e.get("registry") and not e.get("direct")]
        if leftovers:
            keep = resolve(Registries(project, configured(project, main_metadata)), requests) if requests else {}
            for other in leftovers:
                if other not in keep:
                    remove_folder(project, other)
                    rows.append(_row(other, packages.pop(other), "removed"))
        lock.save(project, packages)
    return {"results": rows, "text": _text(rows, [])}


def hub_update(project: Path, main_metadata: dict[str, Any] | None, names: list[str], *,
               install_deps: bool = False) -> Answer:
    """`hub-update [NAME ...]`: newer versions within the requested ranges, newer commits of the
    refs git sources follow."""
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    with lock.guard(project):
        packages = lock.load(project)
        for name in names:
            if name not in packages:
                raise PackageError(f"Package '{name}' is not installed (see 'agentapps hub list').")
        for name, entry in list(packages.items()):
            if entry.get("registry") or (names and name not in names):
                continue
            source = parse_source(entry["source"], project, path=entry.get("path"), ref=entry.get("ref"))
            commit = Repository(project, source.url).resolve(source.ref)
            if commit == entry.get("commit"):
                rows.append(_row(name, entry, "ok"))
                continue
            entry["commit"] = commit
            _pin(project, name, entry)
            rows.append(_row(name, entry, "updated"))
        requests = {n: Range.parse(e.get("requested") or "*") for n, e in packages.items()
                    if e.get("direct") and e.get("registry")}
        if requests and (not names or any(packages[n].get("registry") for n in names)):
            hub_rows, notes = _apply(project, Registries(project, configured(project, main_metadata)),
                                     packages, requests, install_deps=install_deps)
            rows += hub_rows
        else:
            lock.save(project, packages)
    return {"results": rows, "text": _text(rows, notes)}


def hub_list(project: Path) -> Answer:
    """`hub-list`: the locked packages and whether each is installed as pinned."""
    rows = []
    for name, entry in sorted(lock.load(project).items()):
        try:
            verify_installed(project, name)
            status = "ok"
        except IntegrityError as exc:
            status = "missing" if not (project / PACKAGES_DIR / name).exists() else "changed"
            entry = {**entry, "problem": exc.message}
        rows.append({**_row(name, entry, status), "description": entry.get("description", ""),
                     "direct": bool(entry.get("direct")), "problem": entry.get("problem")})
    return {"results": rows, "text": _text(rows, []) if rows else "No packages installed."}


def hub_search(project: Path, main_metadata: dict[str, Any] | None, query: str = "") -> Answer:
    """`hub-search [--query Q]`: packages whose name, description, keywords or skill names contain Q
    (any case); an exact name first, the rest by name; no query lists everything."""
    q = query.strip().lower()
    found = []
    for release in Registries(project, configured(project, main_metadata)).everything():
        hay = [release.name, release.description, *release.keywords, *release.skills]
        if not q or any(q in text.lower() for text in hay):
            found.append(release)
    found.sort(key=lambda r: (r.name != q, r.name))
    rows = [{"name": r.name, "version": str(r.version), "description": r.description, "tags": r.keywords,
             "skills": r.skills, "deprecated": r.deprecated, "registry": r.registry} for r in found]
    text = "\n".join(f"{r['name']}@{r['version']}  {r['description']}"
                     + (f"  (deprecated: {r['deprecated']})" if r["deprecated"] else "") for r in rows)
    return {"results": rows, "text": text or f"No package matches '{query}'."}
