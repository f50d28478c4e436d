"""A tiny stand-in for an OpenAI-compatible server: it replays recorded chat completion responses.

    python3 fake-openai-server.py recorded-chat.json [--port 8765] [--log requests.jsonl]

Listens on 127.0.0.1 only. Each POST to .../chat/completions gets the next recorded response (the
`responses` list of the recording); when they run out it answers HTTP 500. With --log, every request
body is appended to FILE as one JSON line, so you can see exactly what the provider sent. The first
line on stdout says where it listens (--port 0 picks a free port). Stop it with Ctrl-C.
"""

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    server_version = "fake-openai/1"

    def log_message(self, format, *args):
        pass  # keep stderr quiet; use --log to see requests

    def answer(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.answer(404, {"error": {"message": f"no route {self.path}"}})
            return
        state = self.server.state
        with state["lock"]:
            if state["log"]:
                with open(state["log"], "a", encoding="utf-8") as out:
                    out.write(json.dumps(json.loads(body or b"{}"), ensure_ascii=False) + "\n")
            reply = state["responses"].pop(0) if state["responses"] else None
        if reply is None:
            self.answer(500, {"error": {"message": "the recording has no more responses"}})
        else:
            self.answer(200, reply)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Replay recorded chat completions on 127.0.0.1.")
    parser.add_argument("recording")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--log", help="append each request body to this file (JSON lines)")
    opts = parser.parse_args(argv)
    with open(opts.recording, encoding="utf-8") as f:
        responses = json.load(f)["responses"]
    server = ThreadingHTTPServer(("127.0.0.1", opts.port), Handler)
    server.state = {"responses": list(responses), "log": opts.log, "lock": threading.Lock()}
    print(f"Serving {len(responses)} recorded responses on http://127.0.0.1:{server.server_address[1]}/v1",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
