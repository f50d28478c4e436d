"""shell: run a command in the project root (hidden: callers must name it in allowed-tools)."""

from pathlib import Path

from agentapps.io import command_sandbox, command_view, effective_command, minimal_env, run_command
from agentapps.skill import caller_skill

frontmatter = {
    "name": "shell",
    "description": ("Run a command in the project root with a timeout and a minimal environment; "
                    "returns exitCode, stdout, stderr."),
    "metadata": {
        "visibility": "hidden",
        "tags": ["builtin", "dangerous"],
        # a constraint must say which commands (and which stdin: `sh` reads its script from it)
        "action-args": ["command", "input"],
        "params": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "A command line, run by /bin/sh -c."},
                "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                         "description": "Program and arguments (quoted for you; give this or `command`)."},
                "input": {"type": "string", "description": "Text sent to the command's stdin."},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600, "default": 60,
                            "description": "Seconds before the command and everything it started are killed."},
            },
            "not": {"required": ["command", "argv"]},
            "additionalProperties": False,
        },
        "returns": {"type": "object", "required": ["exitCode", "stdout", "stderr"]},
    },
}


def policy_view(ctx, args):
    """`command` as the simple commands that really run (see docs/shell-rules.md): the line /bin/sh
    runs split by a shell grammar (or `argv` as words), wrappers unwrapped, programs resolved, git's
    global options folded. What cannot be reduced to plain words is said in `unreduced`: it makes
    every trust rule on `command` ask, and no grant on `command` admit it."""
    cfg = ctx.globals.config
    argv = args.get("argv")
    line = effective_command(args.get("command"), argv)
    view = {k: v for k, v in args.items() if k != "argv"}
    view["command"] = command_view(line if argv is None else None, argv, str(cfg.project or cfg.cwd))
    if view["command"].problem is not None:
        view["unreduced"] = view["command"].problem
    return view


def _declared_env(ctx):
    """The variables the calling skill declares (for agent code: the skill the agent serves)."""
    caller = caller_skill(ctx)
    declared = caller.meta.get("env") if caller is not None else None
    if isinstance(declared, str):
        declared = [declared]
    return [str(v) for v in declared] if isinstance(declared, list) else []


async def run(ctx, args):
    cfg = ctx.globals.config
    result = await run_command(
        effective_command(args.get("command"), args.get("argv")),
        cwd=Path(cfg.project or cfg.cwd), env=minimal_env(_declared_env(ctx)), timeout=float(args.get("timeout", 60)),
        stdin=args.get("input"), children=ctx.globals.internals.children, sandbox=await command_sandbox(ctx),
    )
    return result.to_dict()
