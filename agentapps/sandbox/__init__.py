"""Agent-code sandbox: model-written JavaScript in a V8 isolate whose only exit is ctx.manager.

Importing this package does not import mini-racer; creating a Sandbox does.
"""

from agentapps.sandbox.isolate import Sandbox
from agentapps.sandbox.results import InvokeFn, SandboxLimits, SnippetResult

__all__ = ["InvokeFn", "Sandbox", "SandboxLimits", "SnippetResult"]
