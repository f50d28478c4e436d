"""agent-scripted: the offline provider — plays a scripted or recorded conversation, no network.

Select it with `model: {agent: agent-scripted, script: turns.json}` (path relative to the skill
file) or `agentapps run --replay FILE ...`. The script format is in `agentapps.agent.script`.
"""

from agentapps.pipeline import run_scripted

frontmatter = {
    "name": "agent-scripted",
    "description": "Agent provider that replays a script of model turns (tests, demos, CI).",
    "metadata": {
        "visibility": "hidden",
        "tags": ["agent-provider"],
        "$inherit": "agent-provider",  # params: the provider contract
    },
}


async def run(ctx, args):
    return await run_scripted(ctx, dict(args))
