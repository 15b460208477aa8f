#!/usr/bin/env python3
"""Drives live folio-serve processes over HTTP, as an OpenAI client would.

Usage: openai_client.py FOLIO_SERVE MODEL TOKENIZER DRAFT_MODEL

Starts three servers on ephemeral 127.0.0.1 ports (one with an API key and
room for 64 streams, one admitting a single sequence, one speculating with
DRAFT_MODEL), checks completions
and chat (streaming and not), n > 1, stop strings, seeds, logprobs, every
error status, 64 concurrent streams, a client that disconnects mid-stream
(its blocks must come back, seen through /metrics), SIGTERM draining and
speculative decoding (the same greedy text; its acceptance on /metrics).
Prints one line per check; any failure raises and exits non-zero.
Standard library only.
"""
import http.client
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time

KEY = "sk-folio-test"
NAME = "bundled"


class Server:
    def __init__(self, binary, model, tokenizer, *flags):
        self.proc = subprocess.Popen(
            [binary, "--model", model, "--tokenizer", tokenizer, "--port", "0",
             "--served-model-name", NAME, *flags],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"on http://127\.0\.0\.1:(\d+) ", line)
        if not m:
            self.proc.kill()
            raise RuntimeError("folio-serve did not start: " + line +
                               self.proc.stdout.read())
        self.port = int(m.group(1))
        self.start_line = line
        self.key = KEY if "--api-key" in flags else None

    def connect(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port,
                                          timeout=timeout)

    def headers(self, key=True):
        h = {"Content-Type": "application/json"}
        if key and self.key:
            h["Authorization"] = "Bearer " + self.key
        return h

    def request(self, method, path, body=None, key=True, raw=None,
                content_type=None):
        conn = self.connect()
        data = raw if raw is not None else (
            None if body is None else json.dumps(body).encode())
        headers = self.headers(key)
        if content_type:
            headers["Content-Type"] = content_type
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        text = resp.read().decode()
        conn.close()
        return resp.status, text

    def post(self, path, body, **kw):
        status, text = self.request("POST", path, body, **kw)
        return status, json.loads(text)

    def stream(self, path, body):
        """The parsed SSE events of a streaming request, [DONE] last."""
        conn = self.connect()
        conn.request("POST", path, body=json.dumps(dict(body, stream=True)),
                     headers=self.headers())
        resp = conn.getresponse()
        check(resp.status == 200, f"stream status {resp.status}")
        check(resp.getheader("Content-Type", "").startswith(
            "text/event-stream"), "SSE content type")
        events = []
        for line in resp:
            line = line.decode().rstrip("\n")
            if not line:
                continue
            check(line.startswith("data: "), f"SSE line {line!r}")
            payload = line[len("data: "):]
            if payload == "[DONE]":
                events.append("[DONE]")
                break
            events.append(json.loads(payload))
        conn.close()
        check(events and events[-1] == "[DONE]", "stream ends with [DONE]")
        return events[:-1]

    def metrics(self):
        status, text = self.request("GET", "/metrics", key=False)
        check(status == 200, "metrics status")
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def expect_error(status, body, want_status, want_text, what):
    check(status == want_status,
          f"{what}: status {status}, want {want_status}: {body}")
    err = body.get("error") if isinstance(body, dict) else None
    check(isinstance(err, dict) and "message" in err and "type" in err,
          f"{what}: not OpenAI's error shape: {body}")
    check(want_text in err["message"],
          f"{what}: {err['message']!r} lacks {want_text!r}")
    print(f"error {want_status}: {what}")


def texts(events, key="text"):
    """Text per choice index, and finish reasons, from stream chunks."""
    out, finish = {}, {}
    for e in events:
        for c in e["choices"]:
            piece = c[key] if key == "text" else c["delta"].get("content", "")
            out[c["index"]] = out.get(c["index"], "") + piece
            if c["finish_reason"] is not None:
                finish[c["index"]] = c["finish_reason"]
    return out, finish


def test_basics(s):
    status, text = s.request("GET", "/health", key=False)
    check(status == 200, "health")
    status, body = s.request("GET", "/v1/models")
    models = json.loads(body)
    check(models["data"][0]["id"] == NAME, f"models: {models}")
    for path, body in (("/v1/models", None),
                       ("/v1/completions", {"model": NAME, "prompt": "x",
                                            "max_tokens": 1}),
                       ("/v1/completions", {"model": "nope", "prompt": "x"})):
        conn = s.connect()
        conn.request("POST" if body else "GET", path,
                     body=json.dumps(body) if body else None,
                     headers=s.headers())
        resp = conn.getresponse()
        resp.read()
        conn.close()
        check(resp.getheader("Content-Type") == "application/json",
              f"{path}: Content-Type {resp.getheader('Content-Type')!r}")
    status, body = s.request("GET", "/v1/models/" + NAME)
    check(status == 200 and json.loads(body)["id"] == NAME,
          f"one model: {status} {body}")
    status, body = s.request("GET", "/v1/models/nope")
    expect_error(status, json.loads(body), 404, "does not exist",
                 "retrieve an unknown model")
    status, body = s.request("GET", "/v1/completions")
    expect_error(status, json.loads(body), 405, "takes POST",
                 "GET on a POST endpoint")
    print("health and models")


def test_completions(s):
    req = {"model": NAME, "prompt": "def read_config(path):", "max_tokens": 24,
           "temperature": 0, "ignore_eos": True}
    status, body = s.post("/v1/completions", req)
    check(status == 200, f"completion: {body}")
    choice = body["choices"][0]
    check(body["object"] == "text_completion", "object")
    check(choice["finish_reason"] == "length", f"finish {choice}")
    check(body["usage"]["completion_tokens"] == 24, f"usage {body['usage']}")
    check(body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + 24,
          "usage total")
    text = choice["text"]
    check(len(text) > 0, "completion text")
    events = s.stream("/v1/completions", req)
    streamed, finish = texts(events)
    check(streamed[0] == text, f"streamed {streamed[0]!r} != {text!r}")
    check(finish == {0: "length"}, f"stream finish {finish}")
    check(len(events) > 2, "streamed in several chunks")
    print("completions: streaming equals non-streaming")

    status, body = s.post("/v1/completions", dict(req, echo=True))
    check(body["choices"][0]["text"] == req["prompt"] + text, "echo")
    events = s.stream("/v1/completions", dict(req, echo=True))
    check(texts(events)[0][0] == req["prompt"] + text, "streamed echo")
    print("echo")

    # Usage as a last chunk.
    events = s.stream("/v1/completions", dict(
        req, stream_options={"include_usage": True}))
    check(events[-1]["choices"] == [] and
          events[-1]["usage"]["completion_tokens"] == 24, "include_usage")
    check(all("usage" in e and e["usage"] is None for e in events[:-1]),
          "the other chunks carry usage: null")
    print("stream usage")
    return text


def test_batch(s, reference):
    """A list of prompts: prompt i's samples are choices i*n .. i*n+n-1."""
    prompts = ["def read_config(path):", "import os\n", [65, 66, 67]]
    req = {"model": NAME, "prompt": prompts, "max_tokens": 24,
           "temperature": 0, "ignore_eos": True}
    status, body = s.post("/v1/completions", req)
    check(status == 200, f"batch: {body}")
    choices = sorted(body["choices"], key=lambda c: c["index"])
    check([c["index"] for c in choices] == [0, 1, 2], f"batch indexes {choices}")
    check(choices[0]["text"] == reference, "batch: prompt 0 as alone")
    single_tokens = 0
    for i, prompt in enumerate(prompts):
        alone = s.post("/v1/completions", dict(req, prompt=prompt))[1]
        check(choices[i]["text"] == alone["choices"][0]["text"],
              f"batch: prompt {i} as alone")
        single_tokens += alone["usage"]["prompt_tokens"]
    check(body["usage"]["prompt_tokens"] == single_tokens and
          body["usage"]["completion_tokens"] == 72, f"batch usage {body['usage']}")
    streamed, finish = texts(s.stream("/v1/completions", req))
    check(streamed == {i: c["text"] for i, c in enumerate(choices)},
          "batch: streamed equals non-streamed")
    check(finish == {0: "length", 1: "length", 2: "length"}, "batch finish")
    sampled = s.post("/v1/completions", dict(
        req, prompt=prompts[:2], n=2, temperature=0.9, seed=5, echo=True))[1]
    idx = sorted(c["index"] for c in sampled["choices"])
    check(idx == [0, 1, 2, 3], f"batch with n=2: {idx}")
    for c in sampled["choices"]:
        check(c["text"].startswith(prompts[c["index"] // 2]),
              f"batch echo of choice {c['index']}")
    print("batched prompts")


def test_stop(s, reference):
    req = {"model": NAME, "prompt": "def read_config(path):", "max_tokens": 24,
           "temperature": 0, "ignore_eos": True, "logprobs": 0}
    status, body = s.post("/v1/completions", req)
    tokens = body["choices"][0]["logprobs"]["tokens"]
    check("".join(tokens) == reference, "tokens join to the text")
    # A stop string across a token boundary: the end of one token and the
    # start of the next.
    k = next(i for i in range(2, len(tokens) - 1)
             if len(tokens[i]) >= 2 and len(tokens[i + 1]) >= 1)
    stop = tokens[k][-2:] + tokens[k + 1][:1]
    cut = reference[:reference.index(stop)]
    req = {"model": NAME, "prompt": "def read_config(path):", "max_tokens": 24,
           "temperature": 0, "ignore_eos": True, "stop": ["@@never@@", stop]}
    status, body = s.post("/v1/completions", req)
    check(body["choices"][0]["text"] == cut,
          f"stop {stop!r}: {body['choices'][0]['text']!r} != {cut!r}")
    check(body["choices"][0]["finish_reason"] == "stop", "stop reason")
    streamed, finish = texts(s.stream("/v1/completions", req))
    check(streamed[0] == cut and finish[0] == "stop", f"streamed stop "
          f"{streamed!r}")
    print("stop strings across tokens")


def test_seeds_and_n(s):
    req = {"model": NAME, "prompt": "import os\n", "max_tokens": 24,
           "temperature": 0.9, "seed": 42, "ignore_eos": True}
    a = s.post("/v1/completions", req)[1]["choices"][0]["text"]
    b = s.post("/v1/completions", req)[1]["choices"][0]["text"]
    c = s.post("/v1/completions", dict(req, seed=43))[1]["choices"][0]["text"]
    check(a == b, "same seed, same text")
    check(a != c, "another seed, another text")
    print("seeds reproducible")
    status, body = s.post("/v1/completions", dict(req, n=3))
    check(status == 200, f"n=3: {body}")
    choices = sorted(body["choices"], key=lambda c: c["index"])
    check([c["index"] for c in choices] == [0, 1, 2], "n=3 indices")
    check(len({c["text"] for c in choices}) > 1, "n=3 samples differ")
    check(choices[0]["text"] == a, "sample 0 uses the seed itself")
    check(body["usage"]["completion_tokens"] == 72, "n=3 usage")
    streamed, finish = texts(s.stream("/v1/completions", dict(req, n=3)))
    check(streamed == {i: choices[i]["text"] for i in range(3)},
          "streamed n=3 equals non-streamed")
    check(finish == {0: "length", 1: "length", 2: "length"}, "n=3 finish")
    print("n > 1")


def test_logprobs(s):
    req = {"model": NAME, "prompt": "class Config:", "max_tokens": 8,
           "temperature": 0, "ignore_eos": True, "logprobs": 3}
    body = s.post("/v1/completions", req)[1]
    lp = body["choices"][0]["logprobs"]
    check(len(lp["tokens"]) == 8 and len(lp["token_logprobs"]) == 8,
          f"logprobs per token: {lp}")
    for chosen, top in zip(lp["token_logprobs"], lp["top_logprobs"]):
        check(len(top) == 3 or len(set(top)) < 3, f"top 3: {top}")
        check(chosen <= 0, "logprob <= 0")
        # Greedy: the chosen token is the most likely one.
        check(abs(chosen - max(top.values())) < 1e-5, f"greedy {chosen} {top}")
    check(lp["text_offset"][0] == 0 and lp["text_offset"] ==
          sorted(lp["text_offset"]), "text offsets")
    # The sampled token is always among top_logprobs, even at logprobs 0
    # and when sampling picks a token outside the top ones.
    for n in (0, 1):
        body = s.post("/v1/completions", dict(
            req, logprobs=n, temperature=1.5, seed=3))[1]
        lp = body["choices"][0]["logprobs"]
        for token, chosen, top in zip(lp["tokens"], lp["token_logprobs"],
                                      lp["top_logprobs"]):
            check(token in top and abs(top[token] - chosen) < 1e-5 and
                  len(top) <= n + 1,
                  f"logprobs {n}: sampled {token!r} {chosen} in {top}")
    chat = {"model": NAME, "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 6, "temperature": 0, "ignore_eos": True,
            "logprobs": True, "top_logprobs": 2}
    body = s.post("/v1/chat/completions", chat)[1]
    content = body["choices"][0]["logprobs"]["content"]
    check(len(content) == 6 and all(len(c["top_logprobs"]) == 2
                                    for c in content), f"chat logprobs {content}")
    check("".join(c["token"] for c in content) ==
          body["choices"][0]["message"]["content"], "chat logprob tokens")
    print("logprobs")


def test_chat(s):
    req = {"model": NAME, "max_tokens": 16, "temperature": 0,
           "ignore_eos": True,
           "messages": [{"role": "system", "content": "You write Python."},
                        {"role": "user", "content": "def add(a, b):"}]}
    status, body = s.post("/v1/chat/completions", req)
    check(status == 200, f"chat: {body}")
    check(body["object"] == "chat.completion", "chat object")
    msg = body["choices"][0]["message"]
    check(msg["role"] == "assistant" and msg["content"], f"chat message {msg}")
    events = s.stream("/v1/chat/completions", req)
    check(events[0]["object"] == "chat.completion.chunk", "chunk object")
    check(events[0]["choices"][0]["delta"].get("role") == "assistant",
          "first delta has the role")
    streamed, finish = texts(events, key="delta")
    check(streamed[0] == msg["content"], "chat streamed equals non-streamed")
    check(finish == {0: "length"}, "chat finish")
    # The default chat format is "<role>: <content>\n" lines + "assistant: ".
    prompt = "system: You write Python.\nuser: def add(a, b):\nassistant: "
    plain = s.post("/v1/completions", {
        "model": NAME, "prompt": prompt, "max_tokens": 16, "temperature": 0,
        "ignore_eos": True})[1]
    check(plain["choices"][0]["text"] == msg["content"], "default chat format")
    print("chat: streaming equals non-streaming, default format")


def test_errors(s, limit):
    ok = {"model": NAME, "prompt": "x", "max_tokens": 2}
    st, body = s.request("POST", "/v1/completions", raw=b"{\"model\": ")
    expect_error(st, json.loads(body), 400, "not valid JSON", "bad JSON")
    expect_error(*s.post("/v1/completions", dict(ok, model="gpt-4")), 404,
                 "does not exist", "unknown model")
    big = dict(ok, prompt="a" * 70000)
    expect_error(*s.post("/v1/completions", big), 413, "larger than",
                 "oversize body")
    expect_error(*s.post("/v1/completions", ok, key=False), 401, "API key",
                 "missing key")
    conn = s.connect()
    conn.request("POST", "/v1/completions", body=json.dumps(ok),
                  headers={"Authorization": "Bearer wrong"})
    resp = conn.getresponse()
    expect_error(resp.status, json.loads(resp.read()), 401, "API key",
                 "wrong key")
    expect_error(*s.post("/v1/completions", dict(ok, logit_bias={"1": 5})),
                 400, "'logit_bias' is not supported", "unsupported field")
    long_prompt = dict(ok, prompt=[5] * (limit + 10))
    expect_error(*s.post("/v1/completions", long_prompt), 400,
                 f"(max-model-len) is {limit}", "prompt over max-model-len")
    expect_error(*s.post("/v1/completions", dict(ok, temperature=-1)), 400,
                 "temperature", "bad temperature")
    expect_error(*s.post("/v1/chat/completions", dict(ok)), 400,
                 "'prompt' is not supported", "prompt on chat")
    # curl -d's default type: cpp-httplib reads such bodies only to 8 KiB.
    form = json.dumps(dict(ok, prompt="a" * 9000)).encode()
    st, body = s.request("POST", "/v1/completions", raw=form,
                         content_type="application/x-www-form-urlencoded")
    expect_error(st, json.loads(body), 413, "Content-Type: application/json",
                 "form-encoded body")
    # Out of the vocabulary: refused by the field, before the engine.
    st, body = s.post("/v1/completions", dict(ok, stop_token_ids=[5000]))
    expect_error(st, body, 400, "stop_token_ids: 5000 is outside the "
                 "vocabulary", "stop token outside the vocabulary")
    check(body["error"]["param"] == "stop_token_ids", f"param: {body}")
    # 16 running + 64 queued: more than 80 sequences can never be admitted.
    expect_error(*s.post("/v1/completions", dict(ok, n=81, temperature=1)),
                 400, "needs 81 sequences at once", "n over the capacity")
    expect_error(*s.post("/v1/completions", dict(ok, prompt=["a", "b", "c"],
                                                 n=30, temperature=1)),
                 400, "batch of 3 prompts needs 90 sequences",
                 "batch over the capacity")
    # max_completion_tokens wins over max_tokens, the larger or the smaller.
    chat = {"model": NAME, "messages": [{"role": "user", "content": "x"}],
            "temperature": 0, "ignore_eos": True}
    for first, second in ((4, 8), (8, 4)):
        body = s.post("/v1/chat/completions", dict(
            chat, max_completion_tokens=4 if first == 4 else 8,
            max_tokens=8 if first == 4 else 4))[1]
        want = 4 if first == 4 else 8
        check(body["usage"]["completion_tokens"] == want,
              f"max_completion_tokens {want}: {body['usage']}")
    # The length error names the field the value came from.
    st, body = s.post("/v1/chat/completions",
                      dict(chat, max_completion_tokens=limit))
    expect_error(st, body, 400, f"max_completion_tokens is {limit}",
                 "max_completion_tokens over the context")
    check(body["error"]["param"] == "max_completion_tokens", f"param: {body}")
    print("max_completion_tokens wins")


def test_concurrent(s, count=64):
    results = [None] * count

    def one(i):
        try:
            events = s.stream("/v1/completions", {
                "model": NAME, "prompt": f"def f{i}(x):", "max_tokens": 8,
                "temperature": 0.8, "seed": i, "ignore_eos": True})
            results[i] = texts(events)[1].get(0)
        except Exception as e:  # reported below
            results[i] = repr(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    check(results == ["length"] * count, f"concurrent streams: {results}")
    print(f"{count} concurrent streams complete")


def wait_metrics(s, cond, what, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = s.metrics()
        if cond(m):
            return m
        time.sleep(0.05)
    raise AssertionError(f"{what}: {m}")


def test_disconnect(s):
    aborted = 'folio_requests_finished_total{finish_reason="abort"}'
    before = s.metrics()[aborted]
    conn = s.connect()
    conn.request("POST", "/v1/completions", body=json.dumps({
        "model": NAME, "prompt": "import sys\n" * 20, "max_tokens": 900,
        "ignore_eos": True, "stream": True, "n": 2, "temperature": 1}),
        headers=s.headers())
    sock = conn.sock
    resp = conn.getresponse()
    seen = 0
    for line in resp:
        if line.startswith(b"data: "):
            seen += 1
            if seen == 3:
                break
    m = s.metrics()
    check(m["folio_kv_cache_blocks_used"] > 0, "the stream holds blocks")
    # Gone mid-stream.
    sock.shutdown(socket.SHUT_RDWR)
    sock.close()
    resp.close()
    m = wait_metrics(
        s, lambda m: m["folio_kv_cache_blocks_used"] == 0 and
        m["folio_num_requests_running"] == 0 and
        m["folio_num_requests_waiting"] == 0, "blocks after disconnect")
    check(m[aborted] == before + 2, f"both samples aborted: {m[aborted]}")
    check(m["folio_kv_cache_blocks_free"] > 0, "free blocks")
    print("disconnect mid-stream returns every block")


def test_queue_and_drain(s):
    # One sequence at most: a batch of two prompts could never run, so it
    # is refused (400) without any of it being admitted.
    expect_error(*s.post("/v1/completions", {"model": NAME,
                                             "prompt": ["a", "b"],
                                             "max_tokens": 2}),
                 400, "needs 2 sequences at once", "batch never admissible")
    aborted = s.metrics().get(
        'folio_requests_finished_total{finish_reason="abort"}', 0)
    check(aborted == 0, f"nothing of the refused batch ran: {aborted}")
    # A second request while one runs gets 429.
    conn = s.connect()
    conn.request("POST", "/v1/completions", body=json.dumps({
        "model": NAME, "prompt": "x = 1\n", "max_tokens": 200,
        "ignore_eos": True, "stream": True, "temperature": 0}),
        headers=s.headers())
    resp = conn.getresponse()
    first = resp.readline()
    check(first.startswith(b"data: "), "the long stream runs")
    expect_error(*s.post("/v1/completions", {"model": NAME, "prompt": "y",
                                             "max_tokens": 2}),
                 429, "retry later", "queue full")
    # SIGTERM: the stream in flight still finishes, then the process exits.
    s.proc.send_signal(signal.SIGTERM)
    rest = resp.read().decode()
    check(rest.rstrip().endswith("data: [DONE]"), "drained stream completes")
    check('"finish_reason":"length"' in rest, "drained stream finish")
    check(s.proc.wait(timeout=30) == 0, "exit status after SIGTERM")
    print("429 when full; SIGTERM drains then exits")


def test_speculative(s, reference):
    req = {"model": NAME, "prompt": "def read_config(path):", "max_tokens": 24,
           "temperature": 0, "ignore_eos": True}
    status, body = s.post("/v1/completions", req)
    check(body["choices"][0]["text"] == reference,
          "greedy speculative text equals the target's alone")
    # This server writes each step's tokens at once (--stream-interval-ms 0):
    # a chunk per step, several tokens when drafts were kept.
    events = s.stream("/v1/completions", req)
    streamed, finish = texts(events)
    check(streamed[0] == reference and finish[0] == "length",
          f"speculative stream {streamed!r}")
    check(len(events) > 3, "one chunk per step")
    check("speculative decoding: draft model" in s.start_line and
          "3 drafts per step" in s.start_line,
          f"the start line says how it speculates: {s.start_line!r}")
    m = s.metrics()
    check(m["folio_spec_decode_num_draft_tokens_total"] > 0, "drafts verified")
    check(0 <= m["folio_spec_decode_draft_acceptance_rate"] <= 1,
          "acceptance rate")
    print("speculative decoding: same text, acceptance on /metrics")


def main():
    binary, model, tokenizer, draft = sys.argv[1:5]
    limit = 1024
    a = Server(binary, model, tokenizer, "--api-key", KEY, "--max-model-len",
               str(limit), "--max-num-seqs", "16", "--max-queued-requests",
               "64", "--max-request-bytes", "65536")
    b = Server(binary, model, tokenizer, "--max-num-seqs", "1",
               "--max-queued-requests", "0", "--max-model-len", "256")
    # Each step's tokens written at once (--stream-interval-ms 0) here.
    c = Server(binary, model, tokenizer, "--stream-interval-ms", "0",
               "--speculative-model", draft,
               "--num-speculative-tokens", "3", "--no-adaptive-speculation")
    try:
        test_basics(a)
        reference = test_completions(a)
        test_batch(a, reference)
        test_stop(a, reference)
        test_seeds_and_n(a)
        test_logprobs(a)
        test_chat(a)
        test_errors(a, limit)
        test_concurrent(a)
        test_disconnect(a)
        test_queue_and_drain(b)
        test_speculative(c, reference)
        m = a.metrics()
        check(m["folio_time_to_first_token_seconds_count"] > 0, "ttft")
        check(m["folio_inter_token_latency_seconds_count"] > 0, "itl")
        check(m["folio_prefix_cache_hits_total"] > 0, "prefix cache hits")
        print("metrics")
    finally:
        for s in (a, b, c):
            if s.proc.poll() is None:
                s.proc.kill()
    print("all checks passed")


if __name__ == "__main__":
    main()
