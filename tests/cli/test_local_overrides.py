"""Config overrides for CI: --local, --local-json and AGENTAPPS_LOCAL_* change the main skill's metadata."""

from __future__ import annotations

import json

import pytest

from agentapps.cascade.local import Override, apply, from_environment, parse_option
from agentapps.errors import UsageError
from agentapps.types import ToolDef

MAIN = """
---
name: app
metadata:
  role: main
  model: {id: base-model, region: us-east-1, maxTurns: 5, persistent: false, fallback: [a, b]}
  webhook: {routes: [{path: /hook, secret: from-file}]}
---
The app.
"""
SHOW = '''
frontmatter = {"name": "show", "metadata": {"params": {"type": "object"}}}

def run(ctx, args):
    return {"model": ctx.meta.get("model"), "webhook": ctx.meta.get("webhook")}
'''


@pytest.fixture
def app(project):
    project.write("app.skill.md", MAIN)
    project.write("show.skill.py", SHOW)
    return project


def _shown(project, *argv, **env):
    result = project.cli("run", *argv, "show", **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_without_overrides_the_file_is_what_counts(app):
    assert _shown(app)["model"]["region"] == "us-east-1"


def test_local_and_local_json_override_the_authority_for_project_skills(app):
    shown = _shown(app, "--local", "model.region=eu-west-1", "--local-json", 'model.fallback.2="c"',
                   "--local", "model.maxTurns=12", "--local", "model.persistent=true")
    model = shown["model"]
    assert model["region"] == "eu-west-1" and model["fallback"] == ["a", "b", "c"]
    assert model["maxTurns"] == 12 and model["persistent"] is True  # typed like the value replaced
    assert model["id"] == "base-model"


def test_environment_variables_use_double_underscores_and_list_indices(app):
    shown = _shown(app, AGENTAPPS_LOCAL_MODEL__REGION="eu-west-1",
                   AGENTAPPS_LOCAL_MODEL__MAX_TURNS="7",
                   AGENTAPPS_LOCAL_WEBHOOK__ROUTES__0__SECRET="whsec_from_env_123")
    assert shown["model"]["region"] == "eu-west-1" and shown["model"]["maxTurns"] == 7
    assert shown["webhook"]["routes"][0] == {"path": "/hook", "secret": "[redacted:AGENTAPPS_LOCAL_WEBHOOK__ROUTES__0__SECRET]"}


def test_precedence_is_file_then_environment_then_options_in_order(app):
    shown = _shown(app, "--local", "model.region=from-option", "--local", "model.region=last-option",
                   AGENTAPPS_LOCAL_MODEL__REGION="from-env", AGENTAPPS_LOCAL_MODEL__ID="env-model")
    assert shown["model"]["region"] == "last-option" and shown["model"]["id"] == "env-model"


def test_a_skills_own_metadata_still_wins_over_the_authority(app):
    app.write("own.skill.py", SHOW.replace('"show"', '"own"').replace(
        '"params": {"type": "object"}', '"params": {"type": "object"}, "model": {"region": "ap-south-1"}'))
    result = app.cli("run", "--local", "model.region=eu-west-1", "own")
    assert json.loads(result.stdout)["model"]["region"] == "ap-south-1"


def test_the_main_skill_itself_runs_with_the_overrides(app):
    result = app.cli("run", "--json", "--dry-run", "--local", "model.id=ci-model",
                     "--local", "model.agent=agent-scripted", "app")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["result"]["model"] == "ci-model"


@pytest.mark.parametrize(("argv", "env", "message"), [
    (["--local", "model.maxTurns=many"], {}, "expects a number"),
    (["--local", "model.persistent=maybe"], {}, "expects true or false"),
    (["--local", "model.id.name=x"], {}, "`model.id` is str"),
    (["--local", "model.fallback.9=x"], {}, "is a list of 2"),
    (["--local", "model.fallback.x=1"], {}, "is a list of 2"),
    (["--local", "model=x"], {}, "replaces an object"),
    (["--local", "params.type=array"], {}, "not configuration"),
    (["--local", "model.$merge=x"], {}, "not configuration"),
    (["--local", "model..id=x"], {}, "empty path segment"),
    (["--local", "model.id"], {}, "expects KEY.PATH=VALUE"),
    (["--local-json", "model.id={nope"], {}, "not JSON"),
    ([], {"AGENTAPPS_LOCAL_MODEL__MAX_TURNS": "lots"}, "expects a number"),
    ([], {"AGENTAPPS_LOCAL_": "x"}, "name a metadata path"),
    ([], {"AGENTAPPS_LOCAL_ROLE": "main"}, "not configuration"),
    (["--local", "model.stop.9=zz"], {}, "`model.stop` does not exist; `9` would index a new list"),
    ([], {"AGENTAPPS_LOCAL_MODEL__STOP__9": "zz"}, "`model.stop` does not exist; `9` would index a new list"),
    (["--local-json", 'model.stop.-1="zz"'], {}, "`-1` would index a new list, which can only start at 0"),
    (["--local", "model.fallback.01=x"], {}, "`01` is not an index in it (0 to 2)"),
    (["--local", "model.fallback.\u00b2=x"], {}, "is not an index in it (0 to 2)"),  # a digit to isdigit(), not to int()
])
def test_bad_paths_and_values_are_usage_errors(app, argv, env, message):
    result = app.cli("run", *argv, "show", **env)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1


def test_overrides_without_a_main_skill_are_refused(project):
    project.write("show.skill.py", SHOW)
    result = project.cli("run", "--local", "model.id=x", "show")
    assert result.returncode == 2 and "no main skill" in result.stderr


def test_describe_shows_the_overrides_in_effect_and_hides_secrets(app):
    env = {"AGENTAPPS_LOCAL_MODEL__REGION": "eu-west-1",
           "AGENTAPPS_LOCAL_WEBHOOK__ROUTES__0__SECRET": "whsec_do_not_show"}
    out = app.cli("describe", "show", **env).stdout
    assert "model.region = \"eu-west-1\"  (AGENTAPPS_LOCAL_MODEL__REGION)" in out
    assert "applied to this skill" in out and "whsec_do_not_show" not in out
    data = json.loads(app.cli("describe", "--json", "hello", **env).stdout)
    assert data["localOverrides"]["applies"] is False  # a bundled skill has no authority
    assert {"path": "webhook.routes.0.secret", "value": "[redacted]",
            "source": "AGENTAPPS_LOCAL_WEBHOOK__ROUTES__0__SECRET"} in data["localOverrides"]["overrides"]


def test_run_help_lists_the_override_options(project):
    out = project.cli("run", "--help").stdout
    assert "--local KEY.PATH=VALUE" in out and "--local-json KEY.PATH=JSON" in out


def test_environment_segments_match_existing_keys_or_become_camel_case():
    main = ToolDef("app", "markdown", {"name": "app", "metadata": {"model": {"maxTurns": 1}}})
    env = {"AGENTAPPS_LOCAL_MODEL__MAXTURNS": "2", "AGENTAPPS_LOCAL_MODEL__SNIPPET_TIMEOUT": "3",
           "AGENTAPPS_LOCAL_MODEL": "{}", "OTHER": "x"}
    with pytest.raises(UsageError, match="replaces an object"):
        apply(main, from_environment(env))
    del env["AGENTAPPS_LOCAL_MODEL"]
    patched, applied = apply(main, from_environment(env))
    assert patched is not None and patched.metadata["model"] == {"maxTurns": 2, "snippetTimeout": 3}
    assert [o.path for o in applied] == ["model.maxTurns", "model.snippetTimeout"]
    assert main.metadata["model"] == {"maxTurns": 1}  # the loaded skill is never changed


def test_an_override_can_create_objects_and_append_to_lists():
    main = ToolDef("app", "markdown", {"name": "app", "metadata": {"tags-like": []}})
    patched, _ = apply(main, [Override("--local", "mcp.github.url", "https://x", True),
                              Override("--local-json", "tags-like.0", {"a": 1}, False)])
    assert patched is not None
    assert patched.metadata["mcp"] == {"github": {"url": "https://x"}}
    assert patched.metadata["tags-like"] == [{"a": 1}]


@pytest.mark.parametrize(("text", "value"), [("50", 50), ("-2", -2), ("0.5", 0.5), ("true", True), ("false", False),
                                             ("050", "050"), ("1e3", "1e3"), ("us.model-1", "us.model-1"),
                                             ("True", "True"), ("", "")])
def test_a_new_keys_text_becomes_a_number_or_boolean_only_when_it_is_exactly_one(text, value):
    main = ToolDef("app", "markdown", {"name": "app", "metadata": {}})
    patched, _ = apply(main, [parse_option(f"model.maxTurns={text}", as_json=False)])
    assert patched is not None and patched.metadata["model"]["maxTurns"] == value


def test_a_new_secret_looking_key_stays_text_even_when_it_is_digits():
    main = ToolDef("app", "markdown", {"name": "app", "metadata": {}})
    patched, _ = apply(main, [parse_option("webhook.apiKey=12345", as_json=False)])
    assert patched is not None and patched.metadata["webhook"]["apiKey"] == "12345"


def test_local_max_turns_works_in_a_project_whose_main_skill_never_set_it(project):
    project.write("main.skill.md", "---\nname: main\nmetadata:\n  role: main\n---\n")
    project.write("ask.skill.md", "---\nname: ask\n---\nSay hi.\n")
    project.write("run.json", '{"turns": [{"text": "hi"}]}')
    result = project.cli("run", "--local", "model.maxTurns=50", "--replay", "run.json", "ask")
    assert (result.returncode, result.stdout.strip()) == (0, "hi"), result.stderr


@pytest.mark.parametrize(("argv", "env"), [
    (["--local", "model.stop.0=zz", "--local", "model.stop.1=yy"], {}),
    ([], {"AGENTAPPS_LOCAL_MODEL__STOP__0": "zz", "AGENTAPPS_LOCAL_MODEL__STOP__1": "yy"}),
])
def test_index_0_on_a_missing_key_starts_a_list_from_options_and_variables_alike(app, argv, env):
    assert _shown(app, *argv, **env)["model"]["stop"] == ["zz", "yy"]


def test_variables_fill_a_new_list_in_numeric_order():
    main = ToolDef("app", "markdown", {"name": "app", "metadata": {}})
    env = {f"AGENTAPPS_LOCAL_MODEL__STOP__{i}": f"s{i}" for i in range(12)}  # __10 sorts before __2 by name
    patched, _ = apply(main, from_environment(env))
    assert patched is not None and patched.metadata["model"]["stop"] == [f"s{i}" for i in range(12)]


def test_variables_fill_a_list_of_objects_item_by_item():
    main = ToolDef("app", "markdown", {"name": "app", "metadata": {}})
    env = {"AGENTAPPS_LOCAL_ROUTES__1": "b", "AGENTAPPS_LOCAL_ROUTES__0__HOST": "a.example",
           "AGENTAPPS_LOCAL_ROUTES__0__PORT": "8080"}  # item 0's children before item 1
    patched, _ = apply(main, from_environment(env))
    assert patched is not None and patched.metadata["routes"] == [{"host": "a.example", "port": 8080}, "b"]


def test_a_number_under_an_existing_object_is_a_key_and_a_new_list_can_hold_objects():
    main = ToolDef("app", "markdown", {"name": "app", "metadata": {"codes": {"404": "a"}}})
    patched, _ = apply(main, [Override("--local", "codes.500", "b", True),
                              Override("--local", "routes.0.hosts.0", "h", True)])
    assert patched is not None and patched.metadata["codes"] == {"404": "a", "500": "b"}
    assert patched.metadata["routes"] == [{"hosts": ["h"]}]


@pytest.mark.parametrize(("env", "expected"), [
    ({"AGENTAPPS_LOCAL_PARAMS": "x"}, ("error: AGENTAPPS_LOCAL_PARAMS: `params` is not configuration "
                                       "(interface keys and $ annotations cannot be overridden).")),
    ({"AGENTAPPS_LOCAL_MODEL__MAX_TURNS": "lots"},
     "error: AGENTAPPS_LOCAL_MODEL__MAX_TURNS: expects a number (it replaces one), got 'lots'."),
])
def test_a_variables_error_names_the_variable_once(app, env, expected):
    result = app.cli("run", "show", **env)
    assert (result.returncode, result.stderr.strip()) == (2, expected)


@pytest.mark.parametrize(("key", "secret"), [
    ("model.maxTokens", False), ("model.max_tokens", False), ("model.tokenBudgetRatio", True),
    ("webhook.routes.0.secret", True), ("github.apiKey", True), ("github.api_key", True), ("GITHUB_TOKEN", True),
    ("db.password", True), ("tls.privateKey", True), ("model.keyboard", False), ("auth.credentials", True),
    ("mcp.servers.gh.headers.Authorization", True), ("api.headers.Proxy-Authorization", True),
    ("api.headers.X-Api-Key", True), ("api.headers.X-Goog-Api-Key", True), ("api.headers.Cookie", True),
    ("api.headers.Ocp-Apim-Subscription-Key", True), ("api.basicAuth", True), ("aws.accessKeyId", True),
    ("docs.author", False), ("tls.authority", False), ("model.monkey", False),
])
def test_a_key_is_a_secret_when_one_of_its_words_names_a_credential(key, secret):
    assert parse_option(f"{key}=x", as_json=False).secret is secret


@pytest.mark.parametrize("key", ["aws.secretkey", "AWS_SECRETACCESSKEY", "github.accessTokens", "gh.apikeys",
                                 "api.inputTokenValue", "db.dbpasswords", "tls.privatekeyfile", "x.maxTokensecret"])
def test_a_credential_spelled_as_one_word_or_in_the_plural_is_still_a_secret(key):
    # the count exception (maxTokens) must not let a credential's value be printed
    assert parse_option(f"{key}=x", as_json=False).secret is True


def test_a_token_count_set_from_the_command_line_or_environment_is_a_number(app):
    assert _shown(app, "--local", "model.maxTokens=4000")["model"]["maxTokens"] == 4000
    assert _shown(app, AGENTAPPS_LOCAL_MODEL__MAX_TOKENS="4000")["model"]["maxTokens"] == 4000


HEADERS = ["Authorization", "Proxy-Authorization", "X-Api-Key", "X-Auth-Token", "Cookie"]
HEADERS_SKILL = '''
frontmatter = {"name": "headers", "metadata": {"params": {"type": "object"}}}

def run(ctx, args):
    return ctx.meta.get("api")
'''


@pytest.mark.parametrize("door", ["--local", "env", "--local-json object"])
def test_credential_headers_set_by_an_override_are_redacted_everywhere_shown(app, door):
    app.write("headers.skill.py", HEADERS_SKILL)
    values = {h: f"cred-{n}-{h.lower()}-value" for n, h in enumerate(HEADERS)}
    argv: list[str] = []
    env: dict[str, str] = {}
    if door == "--local":
        for header, value in values.items():
            argv += ["--local", f"api.headers.{header}={value}"]
    elif door == "env":
        env = {f"AGENTAPPS_LOCAL_API__HEADERS__{h.upper().replace('-', '_')}": v for h, v in values.items()}
    else:
        argv = ["--local-json", "api=" + json.dumps({"headers": {**values, "Accept": "text/plain"}})]
    run = app.cli("run", *argv, "headers", **env)
    assert run.returncode == 0, run.stderr
    headers = json.loads(run.stdout)["headers"]
    assert len(headers) >= len(HEADERS) and all(v.startswith("[redacted") for k, v in headers.items() if k != "Accept")
    if door == "--local-json object":
        assert headers["Accept"] == "text/plain"  # only what sits under a credential's key is hidden
    described = app.cli("describe", "headers", **env) if door == "env" else None
    for text in (run.stdout + run.stderr, described.stdout if described else ""):
        assert not any(value in text for value in values.values()), text
