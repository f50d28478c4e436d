"""shell: run a command in the project root (hidden: callers must name it in allowed-tools)."""

from pathlib import Path

from agentapps.process.shell import minimal_env, run_command, to_argv

frontmatter = {
    "name": "shell",
    "description": "Run a command in the project root with a timeout and a minimal environment; returns exitCode, stdout, stderr.",
    "metadata": {
        "visibility": "hidden",
        "tags": ["builtin", "dangerous"],
        "params": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "A command line, run by /bin/sh -c."},
                "argv": {"type": "array", "items": {"type": "string"}, "description": "Program and arguments, run without a shell."},
                "input": {"type": "string", "description": "Text sent to the command's stdin."},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600, "default": 60,
                            "description": "Seconds before the command's process group is killed."},
            },
            "additionalProperties": False,
        },
        "returns": {"type": "object", "required": ["exitCode", "stdout", "stderr"]},
    },
}


async def run(ctx, args):
    caller = ctx.envelope.parent
    declared = caller.meta.get("env") if caller is not None else None
    env = minimal_env([str(v) for v in declared] if isinstance(declared, list) else [])
    cfg = ctx.globals.config
    result = await run_command(
        to_argv(args.get("command"), args.get("argv")),
        cwd=Path(cfg.project or cfg.cwd), env=env, timeout=float(args.get("timeout", 60)), stdin=args.get("input"),
        children=ctx.globals.internals.setdefault("children", set()),
    )
    return result.to_dict()
