"""cites-the-diff: a test predicate (review-diff.tests.yaml) — every finding names a file the diff changes."""

frontmatter = {
    "name": "cites-the-diff",
    "description": "Test predicate: every finding of a review-diff result names a file of the reviewed diff.",
    "metadata": {
        "visibility": "hidden",
        "tags": ["example", "test"],
        "params": {
            "type": "object",
            "properties": {"result": {"type": "object"}, "args": {"type": "object"}},
            "required": ["result", "args"],
        },
    },
}


def run(ctx, args):
    diff = args["args"].get("input", "")
    changed = {line[6:].strip() for line in diff.splitlines() if line.startswith("+++ b/")}
    strays = [f["file"] for f in args["result"].get("findings", []) if f.get("file") not in changed]
    if strays:
        return {"ok": False, "reason": f"findings name files the diff does not change: {', '.join(strays)}"}
    return True
