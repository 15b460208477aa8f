#!/usr/bin/env python3
"""Serves the bundled model from a model binary alone and compares it with
folio-serve.

Usage: model_binary.py BINARY FOLIO_SERVE MODEL TOKENIZER TEMPLATED TOKENIZER2

BINARY (written by folioc --emit=binary) must be the only file of its
directory; it runs from there with an empty environment, on an ephemeral
port of 127.0.0.1, next to FOLIO_SERVE serving MODEL with TOKENIZER. Checks
/health and /v1/models (the served name defaults to the binary's), that a
greedy completion and a chat completion equal folio-serve's, speculative
decoding with n-gram lookup, and that SIGTERM stops the binary. TEMPLATED is
a binary built with TOKENIZER2, which has a chat_template.jinja beside it:
it must render chat as folio-serve does with TOKENIZER2. Prints one
line per check; any failure raises and exits non-zero. Standard library
only.
"""
import http.client
import json
import os
import re
import signal
import subprocess
import sys


def check(cond, what):
    if not cond:
        raise AssertionError(what)


class Server:
    def __init__(self, argv, cwd=None, env=None):
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"serving '([^']+)' on http://127\.0\.0\.1:(\d+) ", line)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"{argv[0]} did not start: {line}" +
                               self.proc.stdout.read())
        self.name, self.port = m.group(1), int(m.group(2))
        self.banner = line

    def request(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.request(method, path,
                     body=None if body is None else json.dumps(body),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        text = resp.read().decode()
        conn.close()
        return resp.status, text

    def post(self, path, body):
        status, text = self.request("POST", path, body)
        check(status == 200, f"{path}: status {status}: {text}")
        return json.loads(text)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=30)
        return self.proc.returncode, out


def main():
    binary, folio_serve, model, tokenizer, templated, tokenizer2 = \
        sys.argv[1:7]
    here = os.path.dirname(os.path.abspath(binary))
    check(os.listdir(here) == [os.path.basename(binary)],
          f"{here} holds more than the binary: {os.listdir(here)}")
    name = os.path.basename(binary)
    alone = Server([os.path.join(".", name), "--port", "0"], cwd=here, env={})
    reference = Server([folio_serve, "--model", model, "--tokenizer",
                        tokenizer, "--port", "0", "--served-model-name", name])
    ngram = Server([os.path.join(".", name), "--port", "0",
                    "--speculative-method", "ngram"], cwd=here, env={})
    try:
        check(alone.name == name, f"served name {alone.name!r}")
        status, body = alone.request("GET", "/health")
        check(status == 200, f"health: {status} {body}")
        status, body = alone.request("GET", "/v1/models")
        ids = [m["id"] for m in json.loads(body)["data"]]
        check(ids == [name], f"models: {ids}")
        print("health and models")

        req = {"model": name, "prompt": "def read_config(path):",
               "max_tokens": 24, "temperature": 0, "ignore_eos": True}
        got = alone.post("/v1/completions", req)["choices"][0]["text"]
        want = reference.post("/v1/completions", req)["choices"][0]["text"]
        check(got and got == want, f"completion {got!r} != {want!r}")
        print("completion equals folio-serve's")

        chat = {"model": name, "max_tokens": 16, "temperature": 0,
                "messages": [{"role": "user", "content": "import os"}]}
        got = alone.post("/v1/chat/completions", chat)
        want = reference.post("/v1/chat/completions", chat)
        check(got["choices"][0]["message"] == want["choices"][0]["message"],
              f"chat {got} != {want}")
        print("chat equals folio-serve's")

        spec = ngram.post("/v1/completions", req)["choices"][0]["text"]
        check(spec == want_text(reference, req),
              f"ngram speculation changed the greedy text: {spec!r}")
        print("speculative decoding (ngram): same text")

        test_templated(templated, folio_serve, model, tokenizer2)

        rc, out = alone.stop()
        check(rc == 0 and f"{name}: stopped" in out, f"SIGTERM: {rc} {out}")
        print("SIGTERM stops it")
    finally:
        for s in (alone, reference, ngram):
            if s.proc.poll() is None:
                s.proc.kill()
    print("all checks passed")


def test_templated(binary, folio_serve, model, tokenizer):
    """The embedded chat template renders chat as folio-serve's does."""
    name = os.path.basename(binary)
    a = Server([binary, "--port", "0"], env={})
    b = Server([folio_serve, "--model", model, "--tokenizer", tokenizer,
                "--port", "0", "--served-model-name", name])
    try:
        check("chat template the chat_template.jinja embedded in" in a.banner,
              f"templated banner: {a.banner}")
        chat = {"model": name, "max_tokens": 12, "temperature": 0,
                "messages": [{"role": "user", "content": "import os"}]}
        got, want = (s.post("/v1/chat/completions", chat) for s in (a, b))
        check(got["choices"][0]["message"] == want["choices"][0]["message"] and
              got["usage"] == want["usage"], f"templated chat {got} != {want}")
        plain = {"model": name, "max_tokens": 12, "temperature": 0,
                 "prompt": "user: import os\nassistant: "}
        check(got["usage"]["prompt_tokens"] !=
              a.post("/v1/completions", plain)["usage"]["prompt_tokens"],
              "the template, not the default format, made the prompt")
        print("embedded chat template renders as folio-serve's")
    finally:
        for s in (a, b):
            if s.proc.poll() is None:
                s.proc.kill()


def want_text(server, req):
    return server.post("/v1/completions", req)["choices"][0]["text"]


if __name__ == "__main__":
    main()
