"""The commands of `agentapps`: one table for the top-level help (printed without importing typer)
and the typer commands' own help."""

from __future__ import annotations

SUMMARY = "Run AI skills (markdown prompts and Python code) through a middleware pipeline."

COMMANDS: dict[str, str] = {
    "run": "Run a skill: agentapps run [OPTIONS] SKILL [--param value ...].",
    "repl": "Talk to an agent on the terminal: agentapps repl [SKILL] [--task TEXT] (Ctrl-C cancels a turn).",
    "list": "List the skills on the search path (the winners; see 'which' for what they shadow).",
    "describe": "Show a skill's interface, cascaded metadata and middleware chain.",
    "which": "Show which file a skill name resolves to, and every definition it shadows.",
    "check": "Validate skills without running them; exit 2 when there are errors.",
    "test": "Run skills' test cases (<skill>.tests.yaml) offline; exit 1 when one fails (--junit FILE for CI).",
    "compile": "Compile markdown skills into code skills that shadow them, kept only when their tests pass.",
    "init": "Create a main skill, an example skill and .agent-apps/ (never overwrites a file).",
    "sessions": "Inspect the file session store (.agent-apps/sessions/).",
    "runs": "Read the run log: one record per 'agentapps run', with cost and tokens.",
    "mcp-server": "Serve the project's skills to MCP clients (Claude Code, Copilot, Cursor...).",
    "serve": "Serve the project's skills over HTTP: run, stream, approve, webhooks, schedules, a chat page.",
    "worker": "Handle a Redis topic's events in a consumer group with a handler skill, and/or run the "
              "project's stored schedules (--schedules), until stopped.",
    "add": "Install the skills of a git repository, pinned in agentapps-lock.json: agentapps add github:OWNER/REPO.",
    "install": "Install what agentapps-lock.json pins into .agent-apps/packages/ (--frozen: exit 5 on any mismatch).",
    "hub": "Skill packages from git registries: agentapps hub search|add|remove|update|list.",
    "completion": "Print a shell completion script: agentapps completion bash|zsh|fish (see docs/running.md).",
}


def top_help() -> str:
    width = max(len(name) for name in COMMANDS)
    rows = "\n".join(f"  {name:<{width}}  {text}" for name, text in COMMANDS.items())
    return (f"Usage: agentapps COMMAND [ARGS]...\n\n{SUMMARY}\n\nCommands:\n{rows}\n\n"
            "Options:\n  --version  Show the installed version.\n  -v         Show a traceback on an "
            "internal error (any command).\n  --help     Show this message; 'agentapps COMMAND --help' "
            "shows a command's.\n")
