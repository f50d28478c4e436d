"""Bedrock prompt caching: billed input over a 30-turn agent run, with and without cache points.

A markdown skill with a realistic prompt (a reviewer's instructions, about 6 kB, and six
documented skills) runs 30 model turns against the fake Bedrock (tests/fakes/bedrock.py) through
the real CLI and boto3. Each turn's code returns about 1 kB. The fake meters every request as
Bedrock does (tests/fakes/bedrock_meter.py): tokens counted from the request, `inputTokens` only
for input not read from or written to the cache, a prefix of at least 1 024 tokens written once
and read back by later requests that start with it (Claude Sonnet 4.5's minimum).

Three runs, the same script each time, model `us.anthropic.claude-sonnet-4-5-20250929-v1:0`:
- `cache: false` (the baseline: no cache point);
- the default: a cache point after the system prompt and tool docs;
- `cache: "conversation"`: also one after the latest message.

For each: plain input, cache read and cache write tokens summed over the run, the input billed
in full-price tokens (plain + 0.1 x read + 1.25 x write, Claude's cache prices) and the run's cost
from `--json`. The ratios are to the baseline measured in the same run.

    .venv/bin/python benchmarks/caching.py [--turns N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import REPO, clean_env, footer, header, table, verdict

sys.path.insert(0, str(REPO))
from tests.fakes.bedrock import FakeBedrock, Reply
from tests.fakes.bedrock_meter import Meter

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
RULES = "\n".join(f"{n}. " + "Check that every changed function keeps its documented contract, that error "
                  "paths are tested, and that names say what the code does; report each finding with "
                  "the file, the line and a one-sentence fix." for n in range(1, 31))
TOOLS = "file-read file-list state-get state-set skill-list skill-describe"


def skill(cache: object) -> str:
    model = {"id": MODEL, "maxTurns": 100, "maxSteps": 100}
    if cache is not None:
        model["cache"] = cache
    return (f"---\nname: review\ndescription: Review a change.\nallowed-tools: {TOOLS}\n"
            f"metadata: {json.dumps({'model': model})}\n---\nReview the change like this:\n\n{RULES}\n")


def script(turns: int) -> list[Reply]:
    code = "// turn {n}\nreturn 'finding {n}: ' + 'the loop in parse() reads past the end; '.repeat(24)"
    return [Reply(tool_uses=[{"toolUseId": f"t{n}", "name": "invoke", "input": {"code": code.format(n=n)}}])
            for n in range(1, turns + 1)] + [Reply(text="Reviewed.")]


def run(cache: object, turns: int, folder: Path) -> dict[str, object]:
    project = folder / f"p-{cache}"
    (project / ".agent-apps").mkdir(parents=True)
    (project / "review.skill.md").write_text(skill(cache))
    (folder / "aws").mkdir(exist_ok=True)
    with FakeBedrock(script(turns), meter=Meter(cache_min=1024)) as fake:
        env = clean_env(folder, AWS_ENDPOINT_URL_BEDROCK_RUNTIME=fake.endpoint_url, AWS_REGION="us-east-1",
                        AWS_ACCESS_KEY_ID="AKIDEXAMPLEFAKEKEY00", AWS_SECRET_ACCESS_KEY="fake",
                        AWS_CONFIG_FILE=str(folder / "aws" / "none"), AWS_EC2_METADATA_DISABLED="true",
                        AGENTAPPS_RUN_LOG="off")
        proc = subprocess.run([sys.executable, "-m", "agentapps", "run", "--json", "-q", "review"], cwd=project,
                              env=env, capture_output=True, text=True, timeout=300, check=False)
        if proc.returncode != 0:
            sys.exit(f"error: the run with cache={cache!r} failed: {proc.stderr[-1000:]}")
        system_tokens = fake.meter.tokens({"system": fake.requests[0].body["system"],
                                           "toolConfig": fake.requests[0].body["toolConfig"]})
    out = json.loads(proc.stdout)
    usage = out["usage"]
    billed = usage["inputTokens"] + 0.1 * usage["cacheReadInputTokens"] + 1.25 * usage["cacheWriteInputTokens"]
    return {"usage": usage, "billed": billed, "cost": out["cost"], "turns": out["turns"], "prefix": system_tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=30, help="code turns in the run (default 30)")
    parser.add_argument("--quick", action="store_true",
                        help="accepted for run_all.py; the run is the same (it takes about 2 s)")
    options = parser.parse_args()
    header("Bedrock prompt caching: billed input tokens over one agent run")
    with tempfile.TemporaryDirectory() as tmp:
        results = {label: run(cache, options.turns, Path(tmp))
                   for label, cache in (("no cache point", False), ("system + tools (default)", None),
                                        ("system + tools + conversation", "conversation"))}
    base = results["no cache point"]
    print(f"# {options.turns} code turns + 1 answer; system prompt and tool docs: {base['prefix']} tokens")
    rows = []
    for label, r in results.items():
        u = r["usage"]
        rows.append([label, u["inputTokens"], u["cacheReadInputTokens"], u["cacheWriteInputTokens"],
                     f"{r['billed']:.0f}", f"{r['billed'] / base['billed']:.2f}x", f"${r['cost']:.4f}",
                     f"{r['cost'] / base['cost']:.2f}x"])
    table(["run", "input", "cache read", "cache write", "billed input", "ratio", "cost", "ratio"], rows)
    footer()
    default = results["system + tools (default)"]
    ratio = default["billed"] / base["billed"]
    verdict(None, f"billed input with the default cache point: {ratio:.2f}x of no cache point; with the "
                  f"conversation cache point: {results['system + tools + conversation']['billed'] / base['billed']:.2f}x "
                  "(no numeric target in issue 12)")


if __name__ == "__main__":
    main()
