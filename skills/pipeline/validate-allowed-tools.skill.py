"""validate-allowed-tools: the callers' allowed-tools must admit this call (no widening down the tree)."""

from agentapps.tools.policy import Candidate, check_chain

frontmatter = {
    "name": "validate-allowed-tools",
    "description": "Middleware: refuse a call that the allowed-tools of any caller above it does not admit.",
    "metadata": {"role": "middleware", "tags": ["pipeline"]},
}


def run(ctx, args):
    target = ctx.target
    tool = target.tool
    check_chain(target.run.caller_policies, Candidate(tool.name, tool.tags, tool.hidden), target.args)
