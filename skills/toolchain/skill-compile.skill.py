"""skill-compile: turn markdown skills into code skills that shadow them; `agentapps compile` calls it.

Shadow it (a `skill-compile` earlier on the search path) to change how a project compiles; what
it does and the report it returns are in docs/toolchain.md ("Compiling skills").
"""

from agentapps.skill import compile_skills

frontmatter = {
    "name": "skill-compile",
    "description": "Compile markdown skills into equivalent code skills, kept only when their test cases pass.",
    "allowed-tools": "agent",
    "metadata": {
        "visibility": "hidden",
        "tags": ["toolchain"],
        "params": {
            "type": "object",
            "properties": {
                "ref": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                        "description": "The markdown skills to compile (names or files); repeat --ref."},
            },
            "required": ["ref"],
            "additionalProperties": False,
        },
        "returns": {
            "type": "object",
            "properties": {"results": {"type": "array"}, "text": {"type": "string"}},
            "required": ["results", "text"],
        },
    },
}


async def run(ctx, args):
    return await compile_skills(ctx, args["ref"])
