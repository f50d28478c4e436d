"""skill: `:skill[name]` inserts another skill's name, description and params as a short markdown block."""

from agentapps import directive_target
from agentapps.skill import params_of

frontmatter = {
    "name": "skill",
    "description": "Directive :skill[name]: another skill's name, description and params, for the prompt.",
    "metadata": {
        "tags": ["directive"],
        "visibility": "hidden",  # served from prompts only; `agentapps list --all --tag directive`
        "$inherit": "directive-base",  # params {label, attrs, skill}
    },
}


def run(ctx, args):
    if directive_target(ctx) is None:
        return None  # running as a chain entry because a metadata key is named `skill`
    tool = ctx.globals.lookup.find(args.get("label", "").strip())  # unknown: error with close names
    lines = [f"`{tool.name}`: {tool.description or '(no description)'}"]
    params = params_of(tool, ctx.globals.lookup) or {}
    properties = params.get("properties") or {}
    required = set(params.get("required") or [])
    if not properties:
        lines.append("Takes no arguments." if not params else "Params: " + _schema_type(params) + ".")
    for name, schema in properties.items():
        schema = schema if isinstance(schema, dict) else {}
        kind = _schema_type(schema) + (", required" if name in required else "")
        about = f": {schema['description']}" if schema.get("description") else ""
        lines.append(f"- `{name}` ({kind}){about}")
    return "\n".join(lines)


def _schema_type(schema):
    kind = schema.get("type", "any")
    return "|".join(kind) if isinstance(kind, list) else str(kind)
