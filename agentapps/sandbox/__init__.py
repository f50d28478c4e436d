"""Agent-code sandbox: model-written JavaScript in a V8 isolate, in its own process, whose only
exit is ctx.manager.

The host never imports mini-racer: creating a Sandbox starts the process that does (child.py).
"""

from agentapps.sandbox.isolate import Sandbox
from agentapps.sandbox.results import InvokeFn, SandboxLimits, SnippetResult
from agentapps.sandbox.snippet import NEXT

__all__ = ["NEXT", "InvokeFn", "Sandbox", "SandboxLimits", "SnippetResult"]
