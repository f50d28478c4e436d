"""agent: the policy layer — discover skills, build the prompt, run agent code, enforce limits.

The LLM loop itself belongs to a provider skill (`model.provider`: `bedrock`, the default,
`openai`, `anthropic`, `scripted`, or a provider skill's name). When
called by agent-execute, the served markdown skill is `ctx.envelope.parent.target`; its
`locals.agent` gets the trace. Logic lives in `agentapps.agent`.
"""

from agentapps.pipeline import run_agent

frontmatter = {
    "name": "agent",
    "description": "Run an AI agent on a prompt: it calls skills by writing JavaScript that runs in a sandbox.",
    "metadata": {
        "visibility": "hidden",
        "tags": ["agent"],
        "params": {
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The task: instructions for the model."},
                "config": {"type": "object", "description": "Model config (id, region, agent, maxTurns, ...)."},
                "allowedTools": {"type": ["string", "null"], "description": "Skills agent code may call (allowed-tools syntax)."},
                "returns": {"type": ["object", "null"], "description": "JSON Schema the result must match (via finish)."},
                "events": {"type": "string", "description": "Event topic for agent-* events."},
                "name": {"type": "string", "description": "Display name of this agent run."},
                "memory": {"type": "object", "description": "Seed for the sandbox's `memory` global."},
                "args": {"type": "object", "description": "The served skill's args (become the user message)."},
                "userMessage": {"type": "string", "description": "The first user message (instead of args)."},
                "skillName": {"type": "string", "description": "The skill this agent serves."},
                "dryRun": {"type": "boolean", "description": "Return the system prompt; call no model."},
            },
            "required": ["prompt"],
            "additionalProperties": False,
        },
    },
}


async def run(ctx, args):
    return await run_agent(ctx, dict(args))
