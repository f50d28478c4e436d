"""The hub over a local git registry: search, add with semver ranges and dependencies, the lock,
`install --frozen`, remove and update, Python dependencies reported, bad indexes named."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.support.gitrepos import code_skill, commit, git, index

LOCK = "agentapps-lock.json"


def version(name, text, *, path=None, deps=None, python=None, **extra):
    return {"path": path or f"packages/{name}-{text}", **({"dependencies": deps} if deps else {}),
            **({"python": python} if python else {}), **extra}


def files(name, text, skill):
    return {f"packages/{name}-{text}/{skill}.skill.py": code_skill(skill, f"{name} {text}")}


@pytest.fixture
def registry(tmp_path):
    """A registry holding its packages itself: csv-tools 1.0.0, 1.4.0, 2.0.0 and 2.1.0-beta.1,
    report 1.0.0 needing csv-tools ^1.0.0, and broken (needs a package no registry has)."""
    repo = tmp_path / "registry"
    contents = {}
    for text in ("1.0.0", "1.4.0", "2.0.0", "2.1.0-beta.1"):
        contents.update(files("csv-tools", text, "csv-read"))
    contents.update(files("report", "1.0.0", "report-make"))
    contents.update(files("broken", "1.0.0", "broken-skill"))
    contents["index.json"] = index({
        "csv-tools": {"description": "Read and write CSV files.", "keywords": ["tables", "spreadsheet"],
                      "versions": {t: version("csv-tools", t, skills=["csv-read"])
                                   for t in ("1.0.0", "1.4.0", "2.0.0", "2.1.0-beta.1")}},
        "report": {"description": "Monthly reports from CSV data.", "keywords": ["csv"],
                   "versions": {"1.0.0": version("report", "1.0.0", deps={"csv-tools": "^1.0.0"},
                                                 python=["packaging>=20"], skills=["report-make"])}},
        "broken": {"description": "Depends on nothing that exists: a report of failure.",
                   "versions": {"1.0.0": version("broken", "1.0.0", deps={"ghost": "^1"})}},
    })
    commit(repo, contents)
    return repo


@pytest.fixture
def hub(project, registry):
    project.write("main.skill.md", f"""
        ---
        name: main
        metadata:
          role: main
          hub: {{registries: ["{registry}"]}}
        ---
        The project.
        """)
    return project


def lock(project):
    return json.loads((project.root / LOCK).read_text())["packages"]


def test_search_matches_names_descriptions_keywords_and_skills_exact_name_first(hub):
    def names(query):
        done = hub.cli("hub", "search", query, "--json")
        assert done.returncode == 0, done.stderr
        return [r["name"] for r in json.loads(done.stdout)["results"]]

    assert names("") == ["broken", "csv-tools", "report"]
    assert names("csv") == ["csv-tools", "report"]  # name and description; keyword
    assert names("report") == ["report", "broken"]  # the exact name first, then alphabetical
    assert names("SPREADSHEET") == ["csv-tools"]
    assert names("report-make") == ["report"]  # a skill's name
    assert names("zebra") == []
    row = json.loads(hub.cli("hub", "search", "csv-tools", "--json").stdout)["results"][0]
    assert (row["version"], row["tags"]) == ("2.0.0", ["tables", "spreadsheet"])  # the newest release


def test_add_resolves_dependencies_and_pins_everything(hub):
    done = hub.cli("hub", "add", "report")
    assert done.returncode == 0, done.stderr
    locked = lock(hub)
    assert {n: (e["version"], e["direct"]) for n, e in locked.items()} == {
        "report": ("1.0.0", True), "csv-tools": ("1.4.0", False)}  # newest within ^1.0.0, not 2.0.0
    assert locked["report"]["dependencies"] == {"csv-tools": "^1.0.0"}
    assert all(e["integrity"].startswith("sha512-") and len(e["commit"]) == 40 for e in locked.values())
    assert hub.cli("run", "csv-read").stdout.strip() == "csv-tools 1.4.0"
    assert hub.cli("run", "report-make").stdout.strip() == "report 1.0.0"


@pytest.mark.parametrize(("request_", "expected"), [
    ("csv-tools", "2.0.0"), ("csv-tools@^1.0.0", "1.4.0"), ("csv-tools@~1.0", "1.0.0"),
    ("csv-tools@1.0.0", "1.0.0"), ("csv-tools@1.x", "1.4.0"), ("csv-tools@>=1.1 <2", "1.4.0"),
    ("csv-tools@^2.1.0-beta.0", "2.1.0-beta.1"),
])
def test_add_picks_the_newest_version_the_range_allows(hub, request_, expected):
    assert hub.cli("hub", "add", request_).returncode == 0
    assert lock(hub)["csv-tools"]["version"] == expected
    assert hub.cli("run", "csv-read").stdout.strip() == f"csv-tools {expected}"


def test_a_direct_range_and_a_dependency_range_must_agree(hub):
    assert hub.cli("hub", "add", "csv-tools@^2").returncode == 0
    done = hub.cli("hub", "add", "report")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "No version of 'csv-tools' satisfies ^2 (by (requested)), ^1.0.0 (by report@1.0.0)" in done.stderr
    assert lock(hub)["csv-tools"]["version"] == "2.0.0"  # nothing changed


def test_python_dependencies_are_reported_never_installed_silently(hub):
    done = hub.cli("hub", "add", "report")
    assert "Python dependencies declared, not installed: packaging>=20" in done.stdout
    assert "--install-deps" in done.stdout
    assert lock(hub)["report"]["python"] == ["packaging>=20"]


def test_python_dependencies_are_installed_with_the_approval_flag(hub):
    done = hub.cli("hub", "add", "report", "--install-deps")  # already satisfied here: pip needs no index
    assert done.returncode == 0, done.stderr
    assert "Installed Python dependencies" in done.stdout and "packaging>=20" in done.stdout


def test_the_lock_restores_with_frozen_after_a_registry_install(hub):
    hub.cli("hub", "add", "report")
    before = (hub.root / LOCK).read_bytes()
    shutil.rmtree(hub.root / ".agent-apps/packages")
    done = hub.cli("install", "--frozen")
    assert done.returncode == 0, done.stderr
    assert (hub.root / LOCK).read_bytes() == before
    assert hub.cli("run", "csv-read").stdout.strip() == "csv-tools 1.4.0"


def test_remove_drops_dependencies_nothing_else_needs(hub):
    hub.cli("hub", "add", "report")
    done = hub.cli("hub", "remove", "report", "--json")
    assert done.returncode == 0, done.stderr
    assert sorted(r["name"] for r in json.loads(done.stdout)["results"]) == ["csv-tools", "report"]
    assert lock(hub) == {} and list((hub.root / ".agent-apps/packages").iterdir()) == []


def test_a_dependency_also_asked_for_directly_stays(hub):
    hub.cli("hub", "add", "csv-tools@^1")
    hub.cli("hub", "add", "report")
    hub.cli("hub", "remove", "report")
    assert list(lock(hub)) == ["csv-tools"]


def test_update_moves_to_a_newer_version_within_the_range(hub, registry):
    hub.cli("hub", "add", "csv-tools@^1")
    data = json.loads((registry / "index.json").read_text())
    data["packages"]["csv-tools"]["versions"]["1.5.0"] = version("csv-tools", "1.5.0")
    commit(registry, {"index.json": json.dumps(data), **files("csv-tools", "1.5.0", "csv-read")})
    done = hub.cli("hub", "update")
    assert done.returncode == 0, done.stderr
    assert lock(hub)["csv-tools"]["version"] == "1.5.0" and lock(hub)["csv-tools"]["requested"] == "^1"
    assert hub.cli("run", "csv-read").stdout.strip() == "csv-tools 1.5.0"


def test_a_version_may_come_from_another_repository_at_a_tag(hub, registry, tmp_path):
    other = tmp_path / "echo-repo"
    commit(other, {"echo.skill.py": code_skill("echo", "from the tag")}, tag="v1.0.0")
    commit(other, {"echo.skill.py": code_skill("echo", "later")})
    data = json.loads((registry / "index.json").read_text())
    data["packages"]["echo"] = {"versions": {"1.0.0": {"source": str(other), "ref": "v1.0.0"}}}
    commit(registry, {"index.json": json.dumps(data)})
    assert hub.cli("hub", "add", "echo@1.0.0").returncode == 0
    assert lock(hub)["echo"]["commit"] == git(other, "rev-parse", "v1.0.0")
    assert hub.cli("run", "echo").stdout.strip() == "from the tag"


def test_registries_also_come_from_the_environment(project, registry):
    done = project.cli("hub", "search", "csv", AGENTAPPS_HUB_REGISTRIES=str(registry))
    assert done.returncode == 0 and "csv-tools@2.0.0" in done.stdout


@pytest.mark.parametrize(("argv", "message"), [
    (["hub", "add", "nope"], "Unknown package 'nope': no configured registry lists it."),
    (["hub", "add", "csv-tools@^9"], ("No version of 'csv-tools' satisfies ^9 (by (requested)); the registry has "
                                     "2.1.0-beta.1, 2.0.0, 1.4.0, 1.0.0.")),
    (["hub", "add", "csv-tools@^abc"], "'^abc' is not a version range"),
    (["hub", "add", "broken"], "Unknown package 'ghost' (needed by 'broken@1.0.0')"),
    (["hub", "add", "Bad@1"], "Invalid package name 'Bad'"),
])
def test_bad_requests_are_one_line_and_exit_2(hub, argv, message):
    done = hub.cli(*argv)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr and done.stderr.count("\n") == 1
    assert not (hub.root / LOCK).exists()


def test_no_registry_configured_says_how_to_add_one(project):
    done = project.cli("hub", "add", "x")
    assert done.returncode == 2 and "No hub registry is configured" in done.stderr


@pytest.mark.parametrize(("text", "message"), [
    ('{"packages": {"a": ', "The registry index is not valid JSON: Expecting value (column 20)"),
    ('{"packages": []}', "needs a `packages` object"),
    ('{"packages": {"a": {"versions": {"one": {}}}}}', "Package 'a' version one: 'one' is not a semantic version"),
    ('{"packages": {"a": {"versions": {"1.0.0": {"dependencies": {"b": 1}}}}}}', "must map names to ranges"),
])
def test_a_broken_index_is_one_line_naming_the_file(hub, registry, text, message):
    commit(registry, {"index.json": text})
    done = hub.cli("hub", "search")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"{registry}/index.json" in done.stderr and message in done.stderr


@pytest.mark.parametrize(("registry", "source", "refused"), [
    ("https://example.com/registry.git", "/home/me/secrets", True),
    ("https://example.com/registry.git", "file:///home/me/secrets", True),
    ("github:acme/registry", "../elsewhere", True),
    ("https://example.com/registry.git", "https://example.com/pkg.git", False),
    ("https://example.com/registry.git", "github:acme/pkg", False),
    ("/srv/local-registry", "/srv/pkg", False),  # a registry on this machine may name its folders
])
def test_a_remote_registry_cannot_install_a_folder_of_this_machine(registry, source, refused):
    from agentapps.errors import PackageError
    from agentapps.hub.registry import parse_index

    index = json.dumps({"packages": {"innocent": {"versions": {"1.0.0": {"source": source}}}}})
    if refused:
        with pytest.raises(PackageError, match="may not name a local folder"):
            parse_index(index, registry)
    else:
        assert parse_index(index, registry)["innocent"][0].source == source
