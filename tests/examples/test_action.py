"""The agentapps GitHub Action (action.yml) and the CI recipe built on it
(examples/ci/github-actions.yml), run by a small local runner: each `run:` step of the composite
action is executed with bash as GitHub runs it (`bash -e -o pipefail`), its `env:` and
`working-directory` filled from the inputs, `$GITHUB_OUTPUT` and `$RUNNER_TEMP` provided. The
`actions/setup-python` step is GitHub's own and is not run here: the test's Python stands in."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
RECIPE_TEXT = (REPO / "examples" / "ci" / "github-actions.yml").read_text(encoding="utf-8")
RECIPE = yaml.safe_load(RECIPE_TEXT)
EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


class Ran:
    def __init__(self, status: int, outputs: dict[str, str], log: str) -> None:
        self.status, self.outputs, self.log = status, outputs, log


def run_action(with_: dict[str, str], workspace: Path, path: str, *, skip_install: bool = False) -> Ran:
    """The action's steps in `workspace` with inputs `with_`, `path` as the PATH its steps see."""
    unknown = set(with_) - set(ACTION["inputs"])
    assert not unknown, f"not inputs of the action: {unknown}"
    inputs = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    inputs.update(with_)
    missing = [n for n, spec in ACTION["inputs"].items() if spec.get("required") and not inputs[n]]
    assert not missing, missing
    temp = workspace.parent / "runner-temp"
    temp.mkdir(exist_ok=True)
    known = {"github.action_path": str(REPO), "runner.temp": str(temp),
             **{f"inputs.{name}": value for name, value in inputs.items()}}

    def fill(text: str) -> str:
        return EXPRESSION.sub(lambda m: known[m.group(1)], text)  # an unknown expression fails here

    outputs: dict[str, str] = {}
    log = []
    for step in ACTION["runs"]["steps"]:
        if "uses" in step:
            assert step["uses"].startswith("actions/setup-python@")
            continue
        if skip_install and step["name"] == "Install agentapps":
            continue
        output_file = temp / "github-output"
        output_file.write_text("")
        env = {"PATH": path, "HOME": str(workspace.parent / "home"), "RUNNER_TEMP": str(temp),
               "GITHUB_OUTPUT": str(output_file), "NO_COLOR": "1", "LC_ALL": "C.UTF-8",
               **{key: fill(str(value)) for key, value in step.get("env", {}).items()}}
        cwd = workspace / fill(step.get("working-directory", "."))
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", step["run"]], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=300, check=False)
        log.append(f"== {step['name']}\n{done.stdout}{done.stderr}")
        for line in output_file.read_text().splitlines():
            key, _, value = line.partition("=")
            outputs[key] = value
        if done.returncode != 0:
            return Ran(done.returncode, outputs, "\n".join(log))
    return Ran(0, outputs, "\n".join(log))


def shim_path(tmp_path: Path) -> str:
    """A PATH whose `agentapps` is this checkout under the test's Python."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "agentapps"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m agentapps "$@"\n')
    shim.chmod(0o755)
    (tmp_path / "home").mkdir()
    return f"{bin_dir}:/usr/bin:/bin"


def test_inputs_are_data_never_shell_and_the_result_and_exit_code_are_outputs(tmp_path):
    workspace = tmp_path / "repo"
    workspace.mkdir()
    name = '$(touch pwned) `touch pwned` "Ada"; exit 9'
    ran = run_action({"skill": "hello", "args": json.dumps({"name": name})}, workspace, shim_path(tmp_path),
                     skip_install=True)
    assert ran.status == 0, ran.log
    assert not (workspace / "pwned").exists()
    result = json.loads(Path(ran.outputs["result-file"]).read_text())
    assert result["ok"] is True and result["result"] == f"Hello, {name}!" and ran.outputs["exit-code"] == "0"


def test_a_failing_run_fails_the_step_with_its_exit_code(tmp_path):
    workspace = tmp_path / "repo"
    workspace.mkdir()
    ran = run_action({"skill": "hello", "args": '{"nmae": "Ada"}'}, workspace, shim_path(tmp_path), skip_install=True)
    assert ran.status == 2 and ran.outputs["exit-code"] == "2", ran.log
    result = json.loads(Path(ran.outputs["result-file"]).read_text())
    assert result["ok"] is False and result["error"]["exit_code"] == 2


def copied_files() -> list[tuple[str, str]]:
    """What the recipe's header tells a user to copy: (from this repository, to their repository)."""
    found = re.findall(r"^#\s+(\S+)\s+->\s+(\S+)$", RECIPE_TEXT.split("\nname:")[0], re.MULTILINE)
    assert found
    return found


def test_the_recipe_runs_agentapps_only_through_the_action_from_the_agentapps_checkout():
    for job in RECIPE["jobs"].values():
        steps = job["steps"]
        ours = [s for s in steps if s.get("with", {}).get("repository") == "${{ vars.AGENTAPPS_REPO }}"]
        assert len(ours) == 1 and ours[0]["with"]["path"] == ".agentapps-src"
        guard = next(s for s in steps if "AGENTAPPS_REPO" in s.get("if", ""))
        uses = [s for s in steps if s.get("uses") == "./.agentapps-src"]
        assert uses and all(steps.index(guard) < steps.index(ours[0]) < steps.index(u) for u in uses)
        assert steps.index(steps[0]) < steps.index(ours[0]) and steps[0]["uses"].startswith("actions/checkout@")
        assert not [s for s in steps if "agentapps run" in s.get("run", "") or "pip install" in s.get("run", "")]
        for step in uses:
            assert step["with"]["skill"] == "review-diff" and set(step["with"]) <= set(ACTION["inputs"])
    assert ("examples/review-diff/review-diff.skill.md", ".agent-apps/skills/review-diff.skill.md") in copied_files()


@pytest.mark.slow
def test_the_recipes_offline_job_passes_in_a_repository_holding_only_the_files_it_says_to_copy(tmp_path):
    """The action's every step, its install included (into a fresh venv), in a user repository laid out
    as the recipe's header says: the offline job may use nothing else of this repository."""
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (tmp_path / "home").mkdir()
    for source, target in copied_files():
        (workspace / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / source, workspace / target)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # the dependencies are this test run's own (pip finds them installed), so nothing is downloaded
    # but the build backend
    Path(site, "test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    step = next(s for s in RECIPE["jobs"]["skills-offline"]["steps"] if s.get("uses") == "./.agentapps-src")
    ran = run_action(dict(step["with"]), workspace, f"{venv / 'bin'}:/usr/bin:/bin")
    assert ran.status == 0, ran.log
    result: dict[str, Any] = json.loads(Path(ran.outputs["result-file"]).read_text())
    assert result["ok"] is True and result["skill"] == "review-diff" and result["result"]["findings"]
    which = subprocess.run([str(venv / "bin" / "agentapps"), "which", "hello"], check=False, cwd=workspace,
                           capture_output=True, text=True, env={"HOME": str(tmp_path / "home")})
    assert str(venv) in which.stdout, which.stderr  # the action installed agentapps into the job's Python
