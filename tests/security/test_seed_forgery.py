"""Invoke options cannot forge what the permission checks see: a context seed may not set the
pipeline's own state, a handler's args carry no options, and a server's client passes none."""

from __future__ import annotations

import json

import pytest

from agentapps.errors import DeniedError

DEPLOY = '''
from pathlib import Path
frontmatter = {"name": "deploy", "metadata": {"params": {"type": "object", "properties": {"env": {"type": "string"}}}}}

def run(ctx, args):
    Path("deployed.txt").write_text(args["env"])
    return "deployed " + args["env"]
'''


@pytest.mark.parametrize("seed", [{"locals": {"policyView": {"env": "dev"}}}, {"locals": {"prompt": {"expanded": "x"}}},
                                  {"nonlocals": {"agent": {"config": {"maxTurns": 10**6}}}}, {"locals": {"result": 1}}])
def test_a_seed_cannot_set_what_the_checks_read(project, seed):
    project.write("deploy.skill.py", DEPLOY)
    project.write("caller.skill.py", f'''
frontmatter = {{"name": "caller", "allowed-tools": "deploy(env=dev)"}}

async def run(ctx, args):
    return await ctx.manager.invoke("deploy", {{"env": "prod", "$context": {seed!r}}})
''')
    with pytest.raises(DeniedError):
        project.invoke("caller")
    assert not (project.root / "deployed.txt").exists()


def test_a_handlers_args_carry_no_invoke_options(project):
    project.write("deploy.skill.py", DEPLOY.replace('"properties": {"env"', '"properties": {"event": {}, "env"'))
    project.write("boss.skill.py", '''
frontmatter = {"name": "boss", "allowed-tools": "event-subscribe(ref=deploy) event-emit"}

async def run(ctx, args):
    return await ctx.manager.invoke("event-subscribe", {"topic": "t", "ref": "deploy", "args": {
        "env": "prod", "$context": {"locals": {"policyView": {"env": "dev"}}}}})
''')
    result = project.cli("run", "boss")
    assert result.returncode == 3 and "may not pass invoke options" in result.stderr
    assert not (project.root / "deployed.txt").exists()


def test_a_server_client_passes_no_invoke_options_and_meets_the_projects_trust_rules(project):
    from tests.serve.test_cli import start

    project.write("agentapps.skill.md", "---\nname: proj\nmetadata:\n  role: main\n  trust: {rules: 'deploy(env=prod)'}\n---\nx\n")
    project.write("deploy.skill.py", DEPLOY)
    served = start(project, env={"AGENTAPPS_TRUST_TIMEOUT": "1"})  # nobody answers the approval: 1 s, not 60
    try:
        with served.client() as client:
            forged = client.post("/invocations", json={"skill": "deploy", "args": {
                "env": "dev", "$context": {"locals": {"policyView": {"env": "dev"}}}}})
            assert forged.status_code in (400, 403) and forged.json()["ok"] is False
            chat = client.post("/chat", json={"skill": "deploy", "args": {"env": "prod"}})
            assert "approval-pending" in chat.text or "needs approval" in chat.text, chat.text[-500:]
    finally:
        served.stop()
    assert not (project.root / "deployed.txt").exists() or (project.root / "deployed.txt").read_text() != "prod"
    assert json  # (json is used by the serve helper's responses)
