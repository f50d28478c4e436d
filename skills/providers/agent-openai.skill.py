"""agent-openai: the OpenAI Chat Completions API, streamed — OpenAI itself or any compatible server
(Azure OpenAI's v1 API, OpenRouter, vLLM, Ollama, LM Studio, llama.cpp's server).

Select it with `model.provider: openai`. Reads `id`, `api` (`chat` or `responses`), `baseUrl`,
`apiKeyEnv`, `temperature`,
`maxOutputTokens`, `maxAttempts`, `fallback`, `requestTimeout` and `contextEdit` from the model
config; OPENAI_BASE_URL and OPENAI_API_KEY are the standard variables. The `openai` SDK
(`pip install 'agentapps[openai]'`) is imported only when this skill runs.
"""

from agentapps.pipeline import run_openai

frontmatter = {
    "name": "agent-openai",
    "description": "Agent provider for the OpenAI Chat Completions API and compatible servers (streaming).",
    "metadata": {
        "visibility": "hidden",
        "tags": ["agent-provider"],
        "$inherit": "agent-provider",  # params: the provider contract
    },
}


async def run(ctx, args):
    return await run_openai(ctx, dict(args))
