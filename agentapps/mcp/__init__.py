"""MCP both ways: `metadata.mcp` servers become skills, and `agentapps mcp-server` serves skills.

Nothing here imports the `mcp` SDK at module level: declaring servers, naming their tools and
reading cached tool lists stay cheap; the SDK loads when a server is first reached or served.
"""
