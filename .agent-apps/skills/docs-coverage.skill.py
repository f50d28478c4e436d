"""docs-coverage: check that every bundled skill is documented in README.md or docs/.

    agentapps run docs-coverage            # the report, exit 0
    agentapps run docs-coverage --strict   # exit 1 when a bundled skill is not documented (CI)

A skill counts as documented when the docs show its name as code: in inline code or a fenced
block, as a whole word (`file-read`, `:env[NAME]`, `agentapps run hello`) or as its file name
(`hello.skill.py`, `name/SKILL.md`). Prose does not count: "the agent" is not the `agent` skill.
Bundled skills are the ones `skill-list` reports from the bundled root, so a bundled skill this
project shadows is not checked.
"""

import re

from agentapps.errors import SkillError

frontmatter = {
    "name": "docs-coverage",
    "description": "Check that every bundled skill is mentioned (as code) in README.md or docs/; --strict fails when one is not.",
    "allowed-tools": "skill-list file-list file-read",
    "metadata": {
        "tags": ["maintenance", "docs"],
        "params": {
            "type": "object",
            "properties": {
                "strict": {"type": "boolean", "description": "Fail (exit 1) when a skill is undocumented."},
                "docs": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                         "description": "Globs of the docs to search (default README.md and docs/*.md)."},
            },
            "additionalProperties": False,
        },
        "returns": {
            "type": "object",
            "properties": {
                "docs": {"type": "array", "items": {"type": "string"}},
                "checked": {"type": "integer"},
                "documented": {"type": "integer"},
                "missing": {"type": "array", "items": {
                    "type": "object", "properties": {"name": {"type": "string"}, "path": {"type": "string"}},
                    "required": ["name", "path"]}},
            },
            "required": ["docs", "checked", "documented", "missing"],
        },
    },
}

DEFAULT_DOCS = ["README.md", "docs/*.md"]
FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n(.*?)^ {0,3}\1", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
TOKEN = re.compile(r"[A-Za-z0-9_.:/$-]+")


def code_tokens(markdown):
    """Every word-like token inside inline code and fenced blocks."""
    blocks = [m.group(2) for m in FENCED.finditer(markdown)]
    prose = FENCED.sub("", markdown)
    blocks += [m.group(2) for m in INLINE.finditer(prose)]
    return {token.strip(":.,;") for block in blocks for token in TOKEN.findall(block)}


def documented(name, tokens):
    files = (f"{name}.skill.py", f"{name}.skill.md", f"{name}/SKILL.md")
    return any(t == name or t.lstrip(":") == name or t.endswith(files) for t in tokens)


def relative(path, project):
    return path[len(project) + 1:] if project and path.startswith(project + "/") else path


async def run(ctx, args):
    listed = await ctx.manager.invoke("skill-list", {"includeHidden": True})
    bundled = [s for s in listed if s["source"] == "bundled"]
    docs = []
    for pattern in args.get("docs") or DEFAULT_DOCS:
        docs += [f for f in await ctx.manager.invoke("file-list", {"glob": pattern}) if f not in docs]
    tokens = set()
    for path in docs:
        tokens |= code_tokens(await ctx.manager.invoke("file-read", {"path": path}))
    project = str(ctx.globals.config.project or "")
    missing = [{"name": s["name"], "path": relative(str(s["path"]), project)}
               for s in bundled if not documented(s["name"], tokens)]
    if args.get("strict") and missing:
        names = ", ".join(m["name"] for m in missing)
        raise SkillError(f"{len(missing)} of {len(bundled)} bundled skills are not documented in "
                         f"{', '.join(docs) or 'any doc'}: {names}. Mention each as code, e.g. `name`.")
    return {"docs": docs, "checked": len(bundled), "documented": len(bundled) - len(missing),
            "missing": missing}
