"""One run, whatever door it came in by: what every run must get right, kept in one place.

A door (`run`, the REPL, `worker`, `serve`, `mcp-server`) turns its input into a run and the run's
outcome into its protocol. What a run promises lives here, once:

- `failure`: the error record (type, message, exit code, skill, file, line), built and redacted
  once. A message is redacted before it is made one line, so a secret that spans lines (a PEM key)
  is caught whole; every door prints, sends or logs this record, never its own.
- `streaming`: redaction of text that arrives in pieces (streamed model text, a skill's prints):
  the end of a piece that could begin a secret is held back until the next piece or the end.
- `outcome`: the object `run --json` prints, which `serve` answers and a worker or the MCP server
  logs, made and redacted once.
- `served`: one run inside a long-lived host (serve, worker, mcp-server): its own signal, usage,
  budgets and session key; its deadline, its cancellation, its error record and its run-log record
  through the host's one batched writer.
"""
