"""The on-disk index cache: reused across processes, never stale, never fatal."""

from __future__ import annotations

import json
import os
import time

import pytest

from agentapps.tools import index_cache

pytestmark = pytest.mark.cold_cache  # these tests are about the cache: HOME starts without one


def _skill(project, desc):
    return project.write("s.skill.md", f"---\nname: s\ndescription: {desc}\n---\nBody {desc}\n")


def _rows(cache):
    import sqlite3

    conn = sqlite3.connect(cache)
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        rows = {p: json.loads(d) for p, d in conn.execute("SELECT path, data FROM files")}
    finally:
        conn.close()
    return meta, rows


def test_a_second_process_reuses_the_cache_and_sees_edits(project):
    path = _skill(project, "first")
    assert json.loads(project.cli("describe", "s", "--json", real_process=True).stdout)["description"] == "first"
    cache = index_cache.cache_path(project.root)
    assert cache is not None and cache.parent == project.home / ".cache" / "agentapps"
    _, rows = _rows(cache)
    assert str(path) in rows and rows[str(path)]["frontmatter"]["description"] == "first"
    time.sleep(0.01)
    _skill(project, "second-version")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 50_000_000))
    assert json.loads(project.cli("describe", "s", "--json", real_process=True).stdout)["description"] == "second-version"


def test_a_corrupt_cache_is_ignored_and_rewritten(project):
    _skill(project, "ok")
    project.cli("list")
    cache = index_cache.cache_path(project.root)
    cache.write_text("{not a database")
    result = project.cli("describe", "s", "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["description"] == "ok"
    assert _rows(cache)[0]["version"] == str(index_cache.VERSION)


def test_cache_can_be_switched_off(project):
    _skill(project, "ok")
    project.cli("list", AGENTAPPS_CACHE_DIR="off")
    assert not (project.home / ".cache").exists()


def test_values_that_do_not_survive_json_are_not_cached(project):
    path = project.write("d.skill.md", "---\nname: d\nmetadata:\n  since: 2024-01-01\n---\nx\n")
    project.cli("list")
    _, rows = _rows(index_cache.cache_path(project.root))
    assert str(path) not in rows
    assert project.cli("describe", "d").returncode == 0


def _described_after(project, sql, *params):
    """`describe s` in a new process after `sql` changed the cache a first process wrote."""
    _skill(project, "ok")
    project.cli("list")
    cache = index_cache.cache_path(project.root)
    _damage(cache, sql, *params)
    return project.cli("describe", "s", "--json"), cache


def _damage(cache, sql, *params):
    import sqlite3

    conn = sqlite3.connect(cache)
    conn.execute(sql, params)
    conn.commit()
    conn.close()


DAMAGED_ROWS = {
    "deeply nested data": "[" * 100_000 + "]" * 100_000,
    "data not an object": "[1, 2, 3]",
    "data not json": "{nope",
    "tool with a bad name": json.dumps({"name": 7, "kind": "markdown", "frontmatter": {}, "path": "PATH",
                                        "body": "", "body_line": 1, "uri": None, "mtime": 1}),
    "metadata not a mapping": json.dumps({"name": "s", "kind": "markdown", "frontmatter": {"metadata": 3},
                                          "path": "PATH", "body": "", "body_line": 1, "uri": None, "mtime": 1}),
    "another skill's definition": json.dumps({"name": "evil", "kind": "markdown", "frontmatter": {"name": "evil"},
                                              "path": "PATH", "body": "x", "body_line": 1, "uri": None,
                                              "mtime": 1}),
}


@pytest.mark.parametrize("data", list(DAMAGED_ROWS.values()), ids=list(DAMAGED_ROWS))
def test_a_damaged_row_is_read_again_from_the_skill_file(project, data):
    path = _skill(project, "ok")
    assert project.cli("list").returncode == 0
    cache = index_cache.cache_path(project.root)
    _damage(cache, "UPDATE files SET data = ? WHERE path = ?", data.replace("PATH", str(path)), str(path))
    result = project.cli("describe", "s", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["description"] == "ok"


@pytest.mark.parametrize("content", [b"\xff\xfe\x00garbage", b"", b"SQLite format 3\x00" + b"\x00" * 100],
                         ids=["garbage", "empty", "truncated database"])
def test_any_corrupt_cache_file_is_ignored_and_rewritten(project, content):
    _skill(project, "ok")
    cache = index_cache.cache_path(project.root)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(content)
    result = project.cli("describe", "s", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["description"] == "ok"
    assert _rows(cache)[1]  # rewritten


WRONG_TYPES = '{"paths": [1], "mtimes": [1], "sizes": [1], "names": ["s"], "env": [""]}'
UNEVEN = '{"paths": ["a", "b"], "mtimes": [1], "sizes": [1], "names": ["s"], "env": [""]}'


@pytest.mark.parametrize("manifest", ["{", "[]", '{"paths": []}', WRONG_TYPES, UNEVEN])
def test_a_damaged_manifest_is_ignored_and_rewritten(project, manifest):
    # found through the indexed columns: no manifest read
    result, cache = _described_after(project, "UPDATE meta SET value = ? WHERE key = 'manifest'", manifest)
    assert result.returncode == 0 and json.loads(result.stdout)["description"] == "ok"
    listed = project.cli("list", "--json")  # from the listing, which is sound: the manifest is not read
    assert listed.returncode == 0 and "s" in [s["name"] for s in json.loads(listed.stdout)["skills"]]
    project.cli("which", "no-such-skill")  # a miss checks every file: the manifest is read, found damaged
    assert json.loads(_rows(cache)[0]["manifest"])["names"] == ["s"]


def test_a_cache_of_another_root_or_version_is_not_used(project):
    result, cache = _described_after(project, "UPDATE meta SET value = '1' WHERE key = 'version'")
    assert result.returncode == 0 and json.loads(result.stdout)["description"] == "ok"
    assert _rows(cache)[0]["version"] == str(index_cache.VERSION)


def test_a_folder_where_the_cache_file_should_be_is_ignored(project):
    _skill(project, "ok")
    cache = index_cache.cache_path(project.root)
    cache.mkdir(parents=True)
    result = project.cli("describe", "s", "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["description"] == "ok"


def test_a_warm_process_decodes_only_the_definitions_it_uses(project):
    for i in range(50):
        project.write(f"many/s{i}.skill.md", f"---\nname: s{i}\nmetadata: {{env: [VAR_{i}]}}\n---\nBody\n")
    project.cli("list")  # writes the cache
    from agentapps.boot import bootstrap

    lookup = bootstrap(project.root).globals.lookup
    assert lookup.find("s7").name == "s7"
    index = next(i for i in lookup.indexes if i.entry.kind == "project")
    assert list(index.defs) == [str(project.root / "many" / "s7.skill.md")]
    assert {f"VAR_{i}" for i in range(50)} <= lookup.declared_env()  # from the index, still decoding none
    assert len(index.defs) == 1
    rows, _ = lookup.list_summaries()  # what `list` shows comes from the summaries, decoding none
    assert {r["name"] for r in rows} >= {f"s{i}" for i in range(50)} and len(index.defs) == 1


def test_a_warm_process_reads_only_the_rows_of_the_names_it_asks_for(project):
    for i in range(50):
        project.write(f"many/s{i}.skill.md", f"---\nname: s{i}\nmetadata: {{env: [VAR_{i}]}}\n---\nBody\n")
    project.cli("list")  # writes the cache
    from agentapps.boot import bootstrap

    lookup = bootstrap(project.root).globals.lookup
    index = next(i for i in lookup.indexes if i.entry.kind == "project")
    assert lookup.find("s7").name == "s7" and lookup.find("s12").name == "s12"
    assert index._manifest is not None and index._manifest._rows is None  # the manifest itself: unread
    assert {f"VAR_{i}" for i in range(50)} <= lookup.declared_env()
    assert index._manifest._rows is None
    assert len(index.names) == 50 and index._manifest._rows is not None  # all names: every row, once


def test_out_of_shape_indexed_columns_fall_back_to_the_whole_manifest(project):
    result, _ = _described_after(project, "UPDATE files SET kind = 'strange', size = 'x'")
    assert result.returncode == 0 and json.loads(result.stdout)["description"] == "ok"


def test_a_new_process_trusts_a_fresh_cache_and_checks_every_file_on_a_miss(project):
    for i in range(5):
        project.write(f"many/s{i}.skill.md", f"---\nname: s{i}\n---\nBody\n")
    project.cli("list")  # checks every file and writes the cache
    from agentapps.boot import bootstrap
    from agentapps.tools.loader import RUN_STARTED

    lookup = bootstrap(project.root).globals.lookup
    RUN_STARTED.set(None)  # about the index: this test writes a skill after "the run" started
    assert lookup.find("s3").name == "s3"
    index = next(i for i in lookup.indexes if i.entry.kind == "project")
    assert index.verified is False  # adopted without a stat of every file
    # a file edited in place to take a new name (its folder's mtime unchanged) is found on the miss
    path = project.root / "many" / "s4.skill.md"
    folder = os.stat(path.parent).st_mtime_ns
    path.write_text("---\nname: renamed\n---\nBody\n")
    os.utime(path.parent, ns=(folder, folder))
    assert lookup.find("renamed").path == path
    assert index.verified is True


def test_which_and_check_always_check_every_file(project):
    path = project.write("x.skill.md", "---\nname: first-name\n---\nBody\n")
    assert project.cli("list").returncode == 0
    folder = os.stat(path.parent).st_mtime_ns
    path.write_text("---\nname: second-name\n---\nBody\n")
    os.utime(path.parent, ns=(folder, folder))
    assert project.cli("which", "second-name").returncode == 0
    assert "second-name" in project.cli("check", "--json").stdout or project.cli("check").returncode == 0


def test_trusting_the_cache_can_be_switched_off(project):
    path = project.write("x.skill.md", "---\nname: first-name\n---\nBody\n")
    project.cli("list")
    folder = os.stat(path.parent).st_mtime_ns
    path.write_text("---\nname: second-name\ndescription: new\n---\nBody\n")
    os.utime(path.parent, ns=(folder, folder))
    out = project.cli("list", "--json", AGENTAPPS_INDEX_TRUST="off")
    assert "second-name" in [s["name"] for s in json.loads(out.stdout)["skills"]]


LISTED = '{"name": "s", "description": "ok", "kind": "markdown", "source": "project", "path": "P", "tags": [], "hidden": false}'


@pytest.mark.parametrize("listing", ["{", "{}", "[1]", '[{"name": "s"}]', "[" + LISTED.replace('"ok"', "7") + "]",
                                     "[" + LISTED.replace('"project"', '"user"') + "]",
                                     "[" + LISTED.replace("[]", "[1]") + "]", "[" + LISTED.replace("false", "\"no\"") + "]",
                                     "[" + LISTED.replace('"markdown"', '"strange"') + "]"])
def test_a_damaged_listing_is_ignored_and_listing_reads_the_definitions(project, listing):
    _skill(project, "ok")
    project.cli("list")
    cache = index_cache.cache_path(project.root)
    _damage(cache, "UPDATE meta SET value = ? WHERE key = 'listing'", listing.replace("P", str(project.root / "s.skill.md")))
    result = project.cli("list", "--json")
    assert result.returncode == 0, result.stderr
    assert [s for s in json.loads(result.stdout)["skills"] if s["name"] == "s"] == [
        json.loads(LISTED.replace("P", str(project.root / "s.skill.md")))]


def test_list_in_a_warm_process_reads_only_the_listing(project):
    for i in range(50):
        project.write(f"many/s{i}.skill.md", f"---\nname: s{i}\ndescription: skill {i}\nmetadata: {{tags: [t{i}]}}\n---\nBody\n")
    project.cli("list")  # writes the cache
    from agentapps.boot import bootstrap

    lookup = bootstrap(project.root).globals.lookup
    rows, problems = lookup.list_summaries()
    index = next(i for i in lookup.indexes if i.entry.kind == "project")
    assert index._manifest is not None and index._manifest._rows is None  # the manifest: unread
    assert not index.defs and not problems  # nor any definition
    listed = {r["name"]: r for r in rows}
    assert listed["s7"] == {"name": "s7", "description": "skill 7", "kind": "markdown", "source": "project",
                            "path": str(project.root / "many" / "s7.skill.md"), "tags": ["t7"], "hidden": False}


def test_list_shows_a_file_edited_in_place_once_the_last_check_is_a_minute_old(project):
    path = project.write("x.skill.md", "---\nname: first-name\ndescription: old\n---\nBody\n")
    assert project.cli("list").returncode == 0
    folder = os.stat(path.parent).st_mtime_ns
    path.write_text("---\nname: second-name\ndescription: new\n---\nBody\n")
    os.utime(path.parent, ns=(folder, folder))  # an edit in place: the folder looks untouched
    _damage(index_cache.cache_path(project.root), "UPDATE meta SET value = '0' WHERE key = 'verified'")
    listed = {s["name"]: s["description"] for s in json.loads(project.cli("list", "--json").stdout)["skills"]}
    assert listed.get("second-name") == "new" and "first-name" not in listed


def test_the_cache_is_trusted_by_what_changed_on_disk_not_by_its_age(project):
    _skill(project, "ok")
    assert project.cli("list").returncode == 0
    cache = index_cache.cache_path(project.root)
    _damage(cache, "UPDATE meta SET value = '0' WHERE key = 'verified'")  # checked long ago
    manifest = index_cache.open_manifest(project.root, "project")
    try:
        assert manifest is not None and manifest.trusted()  # the same files in the same folders
        (project.root / "new.skill.md").write_text("---\nname: new\n---\nBody\n")
        assert not manifest.trusted()  # a file added changed its folder
    finally:
        if manifest is not None:
            manifest.close()
