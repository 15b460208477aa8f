"""Renders chat templates with Hugging Face transformers' own Jinja environment.

Writes fixtures.json next to this script: every template below rendered on
every conversation below, the way `tokenizer.apply_chat_template(...,
tokenize=False)` renders it (transformers' compiled environment: trim_blocks,
lstrip_blocks, loop controls, raise_exception, tojson, the immutable
sandbox). JinjaTemplateTest compares Folio's renderer with these texts.

The templates follow the prompt formats of common model families, written
for this test, plus templates that exercise one language feature each.

Run with the transformers venv (models/zoo-hf/requirements.txt):
  models/zoo-hf/.venv/bin/python \
      test/unittests/Server/Inputs/chat-templates/make_fixtures.py
"""

import json
import os

from transformers.utils.chat_template_utils import _compile_jinja_template

TEMPLATES = {
    "chatml-default-system": (
        "{% for message in messages %}"
        "{% if loop.first and messages[0]['role'] != 'system' %}"
        "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
        "{% endif %}"
        "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
        "{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    ),
    "header-ids": (
        "{% set loop_messages = messages %}"
        "{% for message in loop_messages %}"
        "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
        " + message['content'] | trim + '<|eot_id|>' %}"
        "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
        "{{ content }}"
        "{% endfor %}"
        "{% if add_generation_prompt %}"
        "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
        "{% endif %}"
    ),
    "inst-alternating": """{{ bos_token }}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.first and system_message is defined %}
            {{- ' [INST] ' + system_message + '\\n\\n' + message['content'] + ' [/INST]' }}
        {%- else %}
            {{- ' [INST] ' + message['content'] + ' [/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'] + eos_token}}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') }}
    {%- endif %}
{%- endfor %}
""",
    "model-role": (
        "{{ bos_token }}"
        "{% if messages[0]['role'] == 'system' %}"
        "{{ raise_exception('System role not supported') }}"
        "{% endif %}"
        "{% for message in messages %}"
        "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}"
        "{% else %}{% set role = message['role'] %}{% endif %}"
        "{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
        "{% endfor %}"
        "{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}"
    ),
    "tagged-roles": """{% for message in messages %}
{% if message['role'] == 'user' %}
{{ '<|user|>\\n' + message['content'] + eos_token }}
{% elif message['role'] == 'system' %}
{{ '<|system|>\\n' + message['content'] + eos_token }}
{% elif message['role'] == 'assistant' %}
{{ '<|assistant|>\\n'  + message['content'] + eos_token }}
{% endif %}
{% if loop.last and add_generation_prompt %}
{{ '<|assistant|>' }}
{% endif %}
{% endfor %}""",
    "end-markers": (
        "{% for message in messages %}"
        "{% if message['role'] == 'system' %}{{'<|system|>\\n' + message['content'] + '<|end|>\\n'}}"
        "{% elif message['role'] == 'user' %}{{'<|user|>\\n' + message['content'] + '<|end|>\\n'}}"
        "{% elif message['role'] == 'assistant' %}{{'<|assistant|>\\n' + message['content'] + '<|end|>\\n'}}"
        "{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}"
    ),
    "system-in-first-turn": """{% if messages[0]['role'] == 'system' %}
    {% set loop_messages = messages[1:] %}
    {% set system_message = messages[0]['content'] %}
{% else %}
    {% set loop_messages = messages %}
    {% set system_message = false %}
{% endif %}
{% for message in loop_messages %}
    {% if loop.index0 == 0 and system_message != false %}
        {% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}
    {% else %}
        {% set content = message['content'] %}
    {% endif %}
    {% if message['role'] == 'user' %}
        {{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}
    {% elif message['role'] == 'assistant' %}
        {{ ' '  + content.strip() + ' ' + eos_token }}
    {% endif %}
{% endfor %}""",
    "namespace-state": """{%- set ns = namespace(found_system=false, turns=0, last_role='') -%}
{%- for message in messages -%}
  {%- if message.role == 'system' -%}{%- set ns.found_system = true -%}{%- endif -%}
  {%- if message.role == 'user' -%}{%- set ns.turns = ns.turns + 1 -%}{%- endif -%}
  {%- set ns.last_role = message.role -%}
{%- endfor -%}
{%- if not ns.found_system -%}<|system|>default<|end|>{%- endif -%}
{%- for message in messages -%}
<|{{ message.role }}|>{{ message.content }}<|end|>
{%- endfor -%}
[turns={{ ns.turns }} last={{ ns.last_role }}]
{%- if add_generation_prompt and ns.last_role != 'assistant' %}<|assistant|>{% endif -%}
""",
    "filters": """{#- A template that uses many filters and tests; the output lists them. -#}
roles={{ messages | map(attribute='role') | join(',') }}
users={{ messages | selectattr('role', 'equalto', 'user') | list | length }}
others={{ messages | rejectattr('role', 'eq', 'user') | map(attribute='role') | list }}
first={{ (messages | first).role }} last={{ (messages | last)['role'] | upper }}
json={{ messages[-1] | tojson }}
indented={{ {'a': [1, 2.5, none, true], 'b': {}} | tojson(indent=2) }}
sorted={{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}
dictsort={% for k, v in {'b': 1, 'a': 2, 'C': 3} | dictsort %}{{ k }}={{ v }};{% endfor %}
items={% for k, v in messages[0].items() %}{{ k }}:{{ v | length }} {% endfor %}
default={{ missing | default('fallback') }} {{ '' | default('empty', true) }} {{ none | default('x') }}
strings={{ '  padded  ' | trim }}|{{ 'a-b-c'.split('-') }}|{{ 'Hello World'.replace('o', '0') }}|{{ 'abc' | reverse }}
case={{ 'mixed Case' | title }} {{ 'mixed Case' | capitalize }} {{ 'x'.upper() }}{{ 'Y'.lower() }}
numbers={{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 7 / 2 }} {{ 1.5 + 1 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1e-5 }} {{ 3.0 }}
round={{ 2.5 | round }} {{ 3.14159 | round(2) }} {{ 2.7 | round(0, 'floor') }} {{ -3 | abs }} {{ '42' | int + 1 }} {{ '1.5' | float }}
tests={{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ none is none }} {{ 'x' is string }} {{ [] is iterable }} {{ {} is mapping }} {{ 1 is number }} {{ missing is defined }} {{ messages is sequence }}
compare={{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ 1 < 2 < 3 }} {{ 'ell' in 'hello' }} {{ 'x' not in ['y'] }} {{ 'role' in messages[0] }}
logic={{ none or 'alt' }} {{ 'first' and 'second' }} {{ not 0 }} {{ 'yes' if messages else 'no' }} {{ 'unused' if false }}
values={{ none }} {{ true }} {{ [1, 'two', none, (3,)] }} {{ {'k': 'v'} }} {{ "it's" }} {{ ('a', 'b') }}
slices={{ 'abcdef'[1:4] }} {{ 'abcdef'[::-1] }} {{ 'abcdef'[-2:] }} {{ [1, 2, 3, 4][::2] }} {{ messages[:1] | length }}
range={% for i in range(3) %}{{ i }}{% endfor %} {% for i in range(10, 0, -3) %}{{ i }},{% endfor %}
loop={% for m in messages %}{{ loop.index }}/{{ loop.length }}{{ '' if loop.last else ',' }}{% endfor %}
loopvars={% for x in ['a', 'b', 'c'] %}[{{ loop.revindex }}{{ loop.previtem | default('-') }}{{ loop.nextitem | default('-') }}{{ loop.cycle('o', 'e') }}]{% endfor %}
filtered={% for m in messages if m.role != 'system' %}{{ m.role[0] }}{% else %}none{% endfor %}
control={% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}
unicode={{ 'héllo wörld ✓' | length }} {{ 'héllo'[1] }} {{ 'naïve' | upper }}
concat={{ 1 ~ 2 ~ none ~ missing }} {{ [1] + [2] }} {{ 'ab' * 3 }}
{% set block %}captured {{ messages | length }}{% endset %}{{ block }}
{% macro wrap(text, tag='b') %}<{{ tag }}>{{ text }}</{{ tag }}>{% endmacro %}{{ wrap('x') }}{{ wrap('y', tag='i') }}
{% raw %}{{ not rendered }}{% endraw %}
{%- if add_generation_prompt %}

{{ 'prompt' }}
{%- endif %}
""",
    "whitespace": """<start>
  {% if true %}
    indented-in-block
  {% endif %}
  {{ 'expr' }}   {# a comment #}
  {%+ if true %}kept-lstrip{% endif %}
{%- for m in messages %}
  [{{ m.role -}}
  ]
{% endfor -%}
   trailing
""",
    "strings-and-methods": (
        "{% for message in messages %}"
        "{% set c = message['content'] %}"
        "{{ c.strip() }}|{{ c.lstrip() }}|{{ c.rstrip('.!') }}|{{ c.startswith('Hi') }}|{{ c.endswith(('?', '!')) }}"
        "|{{ c.split() | length }}|{{ c.split(' ', 1) }}|{{ c.find('o') }}|{{ c.count('o') }}|{{ c | wordcount }}"
        "|{{ c.splitlines() }}|{{ '-'.join(['a', 'b']) }}|{{ message.get('name', 'anon') }}|{{ message.keys() | list }}\n"
        "{% endfor %}"
    ),
}

CONVERSATIONS = {
    "user": [{"role": "user", "content": "Hello, who are you?"}],
    "system-user": [
        {"role": "system", "content": "You answer briefly."},
        {"role": "user", "content": "What is 2 + 2?"},
    ],
    "multi-turn": [
        {"role": "user", "content": "Hi there!"},
        {"role": "assistant", "content": "  Hello! How can I help?  "},
        {"role": "user", "content": "Tell me a joke.\nA short one."},
    ],
    "system-multi-turn": [
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Quotes: 'single' \"double\" \\backslash, unicode: café ✓ 日本"},
    ],
    "two-users": [
        {"role": "user", "content": "first"},
        {"role": "user", "content": "second"},
    ],
}

SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


def main():
    fixtures = []
    for name, source in TEMPLATES.items():
        compiled = _compile_jinja_template(source)
        cases = []
        for conversation, messages in CONVERSATIONS.items():
            for add_generation_prompt in (True, False):
                case = {
                    "conversation": conversation,
                    "add_generation_prompt": add_generation_prompt,
                }
                try:
                    case["expected"] = compiled.render(
                        messages=messages,
                        add_generation_prompt=add_generation_prompt,
                        **SPECIAL_TOKENS,
                    )
                except Exception as error:  # raise_exception and misuse
                    case["error"] = str(error)
                cases.append(case)
        fixtures.append({"name": name, "template": source, "cases": cases})
    out = {
        "special_tokens": SPECIAL_TOKENS,
        "conversations": CONVERSATIONS,
        "templates": fixtures,
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {path}: {len(fixtures)} templates, "
          f"{sum(len(t['cases']) for t in fixtures)} renders")


if __name__ == "__main__":
    main()
