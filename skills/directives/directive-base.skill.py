"""directive-base: the interface every directive skill inherits (`$inherit: directive-base`)."""

from agentapps import UsageError

frontmatter = {
    "name": "directive-base",
    "description": "Base for directive skills: declares the params {label, attrs, skill} they all take. Not a directive itself.",
    "metadata": {
        "tags": ["base"],  # not `directive`: it serves none, so it is never offered as one
        "visibility": "hidden",
        "params": {
            "type": "object",
            "properties": {
                "label": {"type": "string", "description": "The text between [ and ]."},
                "attrs": {"type": "object", "additionalProperties": {"type": "string"},
                          "description": "The {key=value} attributes."},
                "skill": {"type": "string", "description": "The skill whose prompt is being expanded."},
            },
            "additionalProperties": False,
        },
    },
}


def run(ctx, args):
    if ctx.envelope.target is not ctx:
        return  # activated as middleware by a metadata key of this name: nothing to do
    raise UsageError("'directive-base' only declares the params directive skills inherit; it serves no directive.")
