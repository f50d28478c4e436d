"""agent-provider: the contract every provider skill takes; providers inherit it (`$inherit: agent-provider`)."""

from agentapps import UsageError

frontmatter = {
    "name": "agent-provider",
    "description": "Base of agent provider skills: declares the args the agent passes them. Not a provider itself.",
    "metadata": {
        "visibility": "hidden",
        "tags": ["agent-provider"],
        "params": {
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The system prompt."},
                "config": {"type": "object", "description": "The cascaded `model` configuration."},
                "invokeRef": {"type": "string", "description": "Callback ref that runs the model's code."},
                "hookRef": {"type": "string", "description": "Callback ref for lifecycle events."},
                "userMessage": {"type": "string", "description": "The first user message."},
                "skillName": {"type": "string", "description": "The skill the agent serves."},
            },
            "required": ["prompt", "invokeRef", "hookRef"],
        },
    },
}


def run(ctx, args):
    if ctx.envelope.target is not ctx:
        return  # activated as middleware by a metadata key of this name: nothing to do
    raise UsageError("'agent-provider' only declares the provider contract; select a provider with "
                     "model.provider: bedrock, openai, anthropic or scripted.")
