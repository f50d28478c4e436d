"""skill-test: run skills' test cases (`<skill>.tests.yaml`) through the pipeline; `agentapps test` calls it.

Shadow it (a `skill-test` earlier on the search path) to change how a project runs its tests; the
format and the report are in docs/toolchain.md.
"""

from agentapps.skill import run_skill_tests

frontmatter = {
    "name": "skill-test",
    "description": "Run skills' test cases (<skill>.tests.yaml) with their recorded model turns; report each case.",
    "metadata": {
        "visibility": "hidden",
        "tags": ["toolchain"],
        "params": {
            "type": "object",
            "properties": {
                "targets": {"type": "array", "items": {"type": "string"},
                            "description": "Skill names, skill or tests files, folders (none: the whole project)."},
                "jobs": {"type": "integer", "minimum": 1, "maximum": 64, "default": 4,
                         "description": "Cases run at once."},
                "record": {"type": "boolean", "default": False,
                           "description": "Record each case's model turns again from the live model."},
                "model": {"type": "string", "description": "The model to record from (as --model)."},
            },
            "additionalProperties": False,
        },
        "returns": {
            "type": "object",
            "properties": {"cases": {"type": "array"}, "summary": {"type": "object"}},
            "required": ["cases", "summary"],
        },
    },
}


async def run(ctx, args):
    return await run_skill_tests(ctx.globals, args.get("targets") or [], jobs=args.get("jobs", 4),
                                 record=bool(args.get("record")), model=args.get("model"))
