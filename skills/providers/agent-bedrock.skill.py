"""agent-bedrock: the default provider — Amazon Bedrock's Converse API, streamed.

Reads `id`, `region`, `temperature`, `maxOutputTokens`, `maxAttempts`, `cache`, `fallback`,
`contextEdit` (and `endpointUrl`) from the model config;
credentials, profiles, AWS_REGION and AWS_ENDPOINT_URL_BEDROCK_RUNTIME come from the standard
AWS configuration. boto3 is imported only when this skill runs.
"""

from agentapps.pipeline import run_bedrock

frontmatter = {
    "name": "agent-bedrock",
    "description": "Agent provider for Amazon Bedrock (Converse streaming API).",
    "metadata": {
        "visibility": "hidden",
        "tags": ["agent-provider"],
        "$inherit": "agent-provider",  # params: the provider contract
    },
}


async def run(ctx, args):
    return await run_bedrock(ctx, dict(args))
