"""validate-allowed-tools: the immediate caller's allowed-tools must admit this call."""

from agentapps.pipeline import candidate, check_chain, policy_args, reads_args

frontmatter = {
    "name": "validate-allowed-tools",
    "description": "Middleware: refuse a call that the calling skill's allowed-tools (or the model's grant) does not admit.",
    "metadata": {"role": "middleware", "tags": ["pipeline"]},
}


def run(ctx, args):
    target = ctx.target
    policies = target.run.caller_policies
    if policies:
        # a grant without allowed-tools never looks at the args: no view is computed for it
        view = policy_args(target) if reads_args(policies) else {}
        check_chain(policies, candidate(target), view)
