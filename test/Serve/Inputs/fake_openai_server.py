#!/usr/bin/env python3
"""A stand-in OpenAI server whose completion streams are broken on purpose.

Usage: fake_openai_server.py MODE GOOD

Answers /health, /v1/models (model "fake", max_model_len 64) and /metrics
like folio-serve, the first GOOD POST /v1/completions correctly (the
client's untimed warm-up run), and every later one according to MODE:
  ok         correctly too
  not-json   an SSE event whose data is not JSON
  no-done    a correct stream cut off before "data: [DONE]"
  http-500   status 500 with OpenAI's error body
Prints "listening on http://127.0.0.1:PORT" first; stops on SIGTERM.
"""
import http.server
import json
import signal
import sys
import threading


MODE = sys.argv[1]
GOOD = int(sys.argv[2])
COUNT = [0]
LOCK = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, content_type="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self.send(200, '{"status":"ok"}')
        elif self.path == "/v1/models":
            self.send(200, json.dumps({"object": "list", "data": [
                {"id": "fake", "object": "model", "max_model_len": 64}]}))
        elif self.path == "/metrics":
            self.send(200, "folio_num_preemptions_total 0\n", "text/plain")
        else:
            self.send(404, "{}")

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with LOCK:
            COUNT[0] += 1
            good = COUNT[0] <= GOOD
        n, p = body["max_tokens"], len(body["prompt"])
        events = [{"choices": [{"index": 0, "text": "x",
                                "finish_reason": "length" if i + 1 == n
                                else None}]} for i in range(n)]
        events.append({"choices": [], "usage": {
            "prompt_tokens": p, "completion_tokens": n,
            "total_tokens": p + n}})
        sse = "".join("data: " + json.dumps(e) + "\n\n" for e in events)
        if good or MODE == "ok":
            sse += "data: [DONE]\n\n"
        elif MODE == "not-json":
            sse = "data: {not json\n\n"
        elif MODE == "http-500":
            return self.send(500, json.dumps({"error": {
                "message": "the engine step failed", "type": "server_error"}}))
        # no-done: the stream as it is, without its last line.
        self.send(200, sse, "text/event-stream")


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(
        target=server.shutdown).start())
    print("listening on http://127.0.0.1:%d" % server.server_address[1],
          flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
