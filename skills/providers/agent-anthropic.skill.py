"""agent-anthropic: the Anthropic Messages API, streamed, with prompt caching.

Select it with `model.provider: anthropic`. Reads `id`, `baseUrl`, `apiKeyEnv`, `temperature`,
`maxOutputTokens`, `maxAttempts`, `fallback`, `cache`, `requestTimeout` and `contextEdit` from the
model config; ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL are the standard variables. The `anthropic`
SDK (`pip install 'agentapps[anthropic]'`) is imported only when this skill runs.
"""

from agentapps.pipeline import run_anthropic

frontmatter = {
    "name": "agent-anthropic",
    "description": "Agent provider for the Anthropic Messages API (streaming, prompt caching).",
    "metadata": {
        "visibility": "hidden",
        "tags": ["agent-provider"],
        "$inherit": "agent-provider",  # params: the provider contract
    },
}


async def run(ctx, args):
    return await run_anthropic(ctx, dict(args))
