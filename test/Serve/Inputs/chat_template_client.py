#!/usr/bin/env python3
"""Chat requests rendered with the model's own chat template.

Usage: chat_template_client.py FOLIO_SERVE MODEL TOKENIZER

Copies TOKENIZER into temporary model directories next to a
tokenizer_config.json holding a chat template (and, in one, a template that
does not parse), starts folio-serve on each, and checks: the chat prompt is
the template's render (the greedy answer and the prompt token count equal
those of /v1/completions on the text rendered here by hand); the template's
raise_exception becomes a 400 carrying its message; a template that does
not parse leaves completions working and refuses chat with the line and
column. Standard library only.
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from openai_client import NAME, Server, check, expect_error  # noqa: E402

TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' %}"
    "{%- set system = messages[0]['content'] | trim %}"
    "{%- set messages = messages[1:] %}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{- raise_exception('roles must alternate user/assistant') }}"
    "{%- endif %}"
    "{%- if loop.first and system is defined %}# {{ system }}\n{% endif %}"
    "{{- '### ' ~ message['role'] | capitalize ~ ':\\n' ~ message['content'] ~ '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}### Assistant:\n{% endif %}"
)


def model_dir(root, name, tokenizer, config):
    d = os.path.join(root, name)
    os.makedirs(d)
    shutil.copy(tokenizer, os.path.join(d, "tokenizer.json"))
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(config, f)
    return os.path.join(d, "tokenizer.json")


def main():
    binary, model, tokenizer = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as root:
        good = model_dir(root, "good", tokenizer,
                         {"bos_token": "", "chat_template": TEMPLATE})
        s = Server(binary, model, good)
        try:
            messages = [{"role": "system", "content": "  You write Python. "},
                        {"role": "user", "content": "def add(a, b):"}]
            status, chat = s.post("/v1/chat/completions",
                                  {"model": NAME, "messages": messages,
                                   "max_tokens": 12, "temperature": 0})
            check(status == 200, f"chat: {chat}")
            rendered = ("# You write Python.\n### User:\ndef add(a, b):\n"
                        "### Assistant:\n")
            status, plain = s.post("/v1/completions",
                                   {"model": NAME, "prompt": rendered,
                                    "max_tokens": 12, "temperature": 0})
            check(status == 200, f"completion: {plain}")
            check(chat["usage"]["prompt_tokens"] ==
                  plain["usage"]["prompt_tokens"],
                  f"prompt tokens {chat['usage']} vs {plain['usage']}")
            check(chat["choices"][0]["message"]["content"] ==
                  plain["choices"][0]["text"], "chat answer is the render's")
            print("chat template: rendered as the model's template")

            two_users = [{"role": "user", "content": "a"},
                         {"role": "user", "content": "b"}]
            expect_error(*s.post("/v1/chat/completions",
                                 {"model": NAME, "messages": two_users}),
                         400, "roles must alternate user/assistant",
                         "raise_exception")
            print("chat template: raise_exception is a 400 with its message")
        finally:
            s.stop()

        broken = model_dir(root, "broken", tokenizer,
                           {"chat_template": "{% for m in messages %}{{ m }}"})
        s = Server(binary, model, broken)
        try:
            status, plain = s.post("/v1/completions",
                                   {"model": NAME, "prompt": "x",
                                    "max_tokens": 2})
            check(status == 200, f"completions with a broken template: {plain}")
            expect_error(*s.post("/v1/chat/completions",
                                 {"model": NAME, "messages": two_users}),
                         400, "chat template line 1, column 31: missing "
                         "'else' or 'endfor'", "broken template")
            print("chat template: a broken template refuses chat only")
        finally:
            s.stop()
    print("all checks passed")


if __name__ == "__main__":
    main()
