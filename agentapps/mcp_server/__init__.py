"""`agentapps mcp-server`, a door: the project's skills offered to MCP clients as tools.

`command` starts the server (stdio or Streamable HTTP behind `agentapps.net.gate`), `server` answers
the protocol (tools/list, tools/call), `call` runs one tool call as a run of its own, and `messages`
steers or follows up a running agent call (the tool `agentapps_message`). The MCP
client side (`metadata.mcp` servers as skills) is `agentapps.mcp`, a lower layer this door uses.
"""
