"""scale-out.md's worked example runs as written: its four files, and the CI jobs' commands, on Redis."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.redis_server import drop_namespace, namespace, redis_url  # noqa: F401 - fixture

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "docs" / "scale-out.md").read_text()
FILES = ("review-queue.skill.md", "enqueue.skill.py", "review-file.skill.py", "collect.skill.py")
# "your markdown skill doing the review": the offline provider plays one review per event
REVIEW = """---
name: review
description: Review one file.
allowed-tools: file-read
metadata:
  params: { type: object, properties: { path: { type: string } }, required: [path] }
  model: { agent: agent-scripted, script: review.turns.json }
---
Review :arg[path].
"""
TURN = {"text": "Reviewed.", "code": "ctx.manager.finish({findings: ['looked at ' + memory.args.path]})"}


def example_file(name: str) -> str:
    """The block that follows the paragraph starting with `NAME`."""
    found = re.search(rf"^`{re.escape(name)}`[^\n]*\n(?:[^\n]+\n)*\n```(?:markdown|python)\n(.*?)```", PAGE,
                      re.DOTALL | re.MULTILINE)
    assert found, f"scale-out.md has no block for {name}"
    return found.group(1)


def jobs() -> dict[str, str]:
    """The CI pipeline's jobs, by the name in their `# job "NAME"` comment."""
    block = re.search(r"The CI pipeline.*?```sh\n(.*?)```", PAGE, re.DOTALL)
    assert block
    parts = re.split(r'^# jobs? "([^"]+)".*\n', block.group(1), flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_worked_example_reviews_every_file_once_across_two_workers(project, redis_url, tmp_path):  # noqa: F811
    ns = namespace()
    for name in FILES:
        text = example_file(name)
        if name.endswith(".skill.md"):  # the same main skill, under keys of this test's own
            text = text.replace("stores: {default: redis,", f"stores: {{default: redis, namespace: {ns},")
            assert ns in text
        project.write(name, text)
    project.write("review.skill.md", REVIEW)
    project.write("review.turns.json", json.dumps({"turns": [TURN] * 3}))
    files = ["a.py", "b.py", "c.py"]
    for path in files:
        project.write(path, f"print({path!r})\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "agentapps").write_text(f'#!/bin/sh\nexec {sys.executable} -m agentapps "$@"\n')
    (bindir / "agentapps").chmod(0o755)
    env = project.env(AGENTAPPS_REDIS_URL=redis_url, CI_PIPELINE_ID="p1", PATH=f"{bindir}:/usr/bin:/bin")
    try:
        checked = project.cli("check")
        assert checked.returncode == 0 and "0 errors, 0 warnings" in checked.stdout, checked.stdout + checked.stderr

        # job "enqueue", with the changed files given as `git diff` would list them
        queued = project.cli("run", "enqueue", "--run", "p1", *[a for f in files for a in ("--files", f)],
                             AGENTAPPS_REDIS_URL=redis_url)
        assert queued.returncode == 0 and json.loads(queued.stdout) == {"queued": 3}, queued.stderr

        steps = jobs()
        assert set(steps) == {"enqueue", "review-1", "collect"}
        reviewers = []
        for i in (1, 2):  # two review jobs started together, each on a runner (a checkout) of its own
            work = tmp_path / f"runner-{i}"
            shutil.copytree(project.root, work)
            reviewers.append(subprocess.Popen(["bash", "-c", steps["review-1"]], cwd=work, env=env,
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for job in reviewers:
            out, err = job.communicate(timeout=90)
            assert job.returncode == 0, out + err
        summaries = [json.loads((tmp_path / f"runner-{i}" / "worker-summary.json").read_text()) for i in (1, 2)]
        assert sum(s["handled"] for s in summaries) == 3 and all(s["failed"] == 0 for s in summaries), summaries
        assert all(s["stoppedBy"] == "SIGTERM" for s in summaries), summaries

        collected = subprocess.run(["bash", "-c", steps["collect"]], cwd=project.root, env=env, capture_output=True,
                                   text=True, timeout=60, check=False)
        assert collected.returncode == 0, collected.stderr
        reviews = json.loads((project.root / "reviews.json").read_text())
        assert reviews["result"] == {f: {"findings": [f"looked at {f}"]} for f in files}
    finally:
        drop_namespace(ns, redis_url)
