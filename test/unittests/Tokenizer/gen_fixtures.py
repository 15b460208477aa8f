#!/usr/bin/env python3
"""Writes the Tokenizer unit tests' fixtures: expected ids and texts from Hugging Face `tokenizers`.

    .venv/bin/python test/unittests/Tokenizer/gen_fixtures.py

Outputs (all committed):
  mini-*.json     small byte-level BPE tokenizers (vocab 640, trained here on the corpus below)
                  covering the configurations the C++ reader supports: prefix space, a GPT-2
                  Split in a Sequence, Digits, legacy "a b" merges with ignore_merges, a vocabulary
                  without the full byte alphabet, and added tokens (special and not, lstrip,
                  rstrip, overlapping, non-ASCII, with a space)
  fixtures.json   for every tokenizer (the bundled models/bundled/tokenizer.json and the minis)
                  and every corpus text: encode ids, decode of those ids with and without special
                  tokens; plus random id sequences and their decodes (invalid UTF-8 repaired)

Deterministic: fixed seeds, single-threaded trainer.
"""
import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")

import json  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import tokenizers  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BUNDLED = ROOT / "models" / "bundled" / "tokenizer.json"
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

HANDWRITTEN = {
    "empty": "",
    "ascii": "Hello, world! The quick brown fox jumps over the lazy dog.",
    "python": 'def f(x, *args, **kw):\n    """Doc."""\n    return {"a": x[0] ** 2, \'b\': [i for i in range(10)]}\n',
    "cpp": "template <typename T>\nstd::vector<T> v{1, 2, 3};  // comment\nint main() { return 0x1F & ~0u; }\n",
    "json": '{"key": [1, 2.5e-3, true, null], "nested": {"x": "y\\n"}}',
    "indentation": "class A:\n    def m(self):\n        if x:\n            pass\n\n\n\tclass B:\n\t\tpass\n",
    "whitespace_runs": "a  b   c    d\t\te\n\n\nf \n \n g  \t \n",
    "only_spaces": "     ",
    "only_newlines": "\n\n\n",
    "trailing_space": "trailing space ",
    "leading_space": "  leading",
    "crlf": "line one\r\nline two\r\n\r\nend",
    "contractions": "I'm sure you're right, we'll see; don't, can't, it's, they've, I'd. SHOUT'S 'tis '",
    "quotes": "''' \"\"\" `backticks` 'single' \"double\" ''s",
    "numbers": "0 12 345 6789 3.14159 1e10 -42 1,000,000 0b1010 0o17 2024-06-11",
    "accents": "café naïve résumé Zürich Ångström crème brûlée façade",
    "combining": "e\u0301 a\u0308 n\u0303 \u1e9b\u0323 Z\u0351\u036b\u0343\u036a",
    "greek_cyrillic": "Ελληνικά γλώσσα — Русский язык, Україна, Беларусь",
    "arabic_hebrew": "العربية ١٢٣ עברית שלום",
    "devanagari_thai": "हिन्दी क्षत्रिय ภาษาไทย สวัสดี",
    "cjk": "漢字とひらがなとカタカナ。中文，标点！한국어 문장입니다.",
    "cjk_no_spaces": "東京都渋谷区神南一丁目２３番１０号",
    "fullwidth": "ＡＢＣ　１２３　ｘｙｚ",
    "emoji": "I ❤️ Python 🐍! 👍🏽 👨‍👩‍👧‍👦 🇯🇵🇫🇷 1️⃣ 😀😃😄",
    "emoji_only": "🔥🔥🔥",
    "math_symbols": "∀x∈ℝ: x² ≥ 0, ∑ᵢ aᵢ ≠ ∞, √2 ≈ 1.414, ½ + ¼ = ¾, Ⅻ ⅷ",
    "astral_letters": "𝐀𝐁𝐂 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𐍈 𝟙𝟚𝟛",
    "unicode_spaces": "a\u00a0b\u2009c\u3000d\u2028e\u2029f\u0085g\u000bh\u000ci\u200bj\ufeffk\u180el\u1680m\u202fn\u205fo",
    "control_chars": "a\x00b\x01c\x1bd\x1ce\x1ff\x7fg",
    "private_use": "\ue000\uf8ff\U000f0000\U0010fffd",
    "noncharacters": "\ufdd0\ufffe\uffff\U0001fffe\U0010ffff",
    "unassigned": "\u0378\u0380\U0001e7ff\U00030000\U0003134b\U00031350\U000e01f0",
    "replacement_char": "\ufffd\ufffd",
    "special_alone": "<|endoftext|>",
    "special_inline": "end of doc<|endoftext|>start of next",
    "special_adjacent": "<|endoftext|><|endoftext|>x<|endoftext|>",
    "special_spaced": "a <|endoftext|> b\n<|endoftext|>\n",
    "special_partial": "<|endoftext| <|endoftext <endoftext|> <|ENDOFTEXT|>",
    "special_overlap": "<|endoftext|>x <|endoftext|>xy",
    "chat_tokens": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "added_space": "call <tool call> now<tool call>",
    "added_strip": "left   [[l]] mid [[r]]   right\t[[l]][[r]]\n",
    "added_nonascii": "Der Löwe und die Löwen, LÖWE",
    "url_path": "https://example.com/a/b?c=d&e=f#g /usr/lib/python3.11/os.py C:\\Windows\\system32",
    "long_word": "supercalifragilisticexpialidocious" * 4,
    "long_digits": "3141592653589793238462643383279502884197169399375105820974944592",
    "long_spaces": " " * 300 + "x",
    "mixed_scripts": "abcабвαβγ123١٢٣一二三",
}

POOLS = [
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
    list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    [" ", " ", " ", "\t", "\n", "\r", "\v", "\f", "\x1c", "\x85", "\xa0", "\u2028", "\u3000",
     "\u200b", "\ufeff", "  ", "\n    "],
    list("éüñçøåßÆŒĳΩπДжЖعبשאकि्षำ漢字かナ한글") + ["\u0301", "\u0308", "\u093f"],
    list("٠١٢٣٤٥٦٧٨٩０１２３²³¹¼½¾ⅠⅫⅷ①⑳"),
    ["😀", "👍", "🏽", "\u200d", "👩", "🇯", "🇵", "❤", "\ufe0f", "🐍", "𝐀", "𐍈", "𝟙"],
    ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'x", "''"],
    ["<|endoftext|>", "<|endoftext|", "<|im_start|>", "<|im_end|>", "<tool call>", "[[l]]",
     "[[r]]", "Löwe", " <|endoftext|> "],
]


SKIP_RANDOM = ("mini-legacy", "mini-noalpha")


def random_code_point(rng):
    while True:
        cp = rng.randrange(0x80, 0x110000)
        if not 0xD800 <= cp <= 0xDFFF:
            return chr(cp)


def random_texts(seed=20260611, count=48):
    rng = random.Random(seed)
    out = {}
    for i in range(count):
        n = rng.randrange(20, 100)
        parts = []
        for _ in range(n):
            r = rng.random()
            if r < 0.1:
                parts.append(random_code_point(rng))
            else:
                parts.append(rng.choice(rng.choice(POOLS)))
        out[f"random_{i:02d}"] = "".join(parts)
    return out


def stdlib_excerpts():
    # Real code for the agreement test; the texts are stored in fixtures.json, so the test does
    # not depend on the machine's Python.
    sys.path.insert(0, str(ROOT / "models" / "train"))
    import corpus

    root = corpus.stdlib_root()
    out = {}
    for rel in ("getopt.py", "html/__init__.py", "asyncio/trsock.py"):
        out["stdlib_" + rel.replace("/", "_").replace(".py", "")] = corpus.read_text(root, rel)[:2000]
    return out


def mini_base(texts):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=640, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    add_extra_tokens(tok)
    return json.loads(tok.to_str())


def add_extra_tokens(tok):
    tok.add_special_tokens([AddedToken("<|im_start|>", special=True, normalized=False),
                            AddedToken("<|im_end|>", special=True, normalized=False)])
    tok.add_tokens([AddedToken("<tool call>", normalized=False),
                    AddedToken("[[l]]", lstrip=True, normalized=False),
                    AddedToken("[[r]]", rstrip=True, normalized=False),
                    AddedToken("Löwe", normalized=True),
                    AddedToken("<|endoftext|>x", normalized=False)])


def variants(texts):
    base = mini_base(texts)
    out = {"mini": base}

    v = json.loads(json.dumps(base))
    v["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    out["mini-prefix"] = v

    v = json.loads(json.dumps(base))
    v["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": GPT2_PATTERN}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]}
    out["mini-split"] = v

    v = json.loads(json.dumps(base))
    v["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}]}
    out["mini-digits"] = v

    v = json.loads(json.dumps(base))
    v["model"]["merges"] = [" ".join(m) for m in v["model"]["merges"]]
    v["model"]["ignore_merges"] = True
    v["post_processor"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True}
    out["mini-legacy"] = v

    # Without the full byte alphabet some characters have no token: tokenizers drops them.
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([t for t in texts if t.isascii()],
                            trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                                show_progress=False))
    out["mini-noalpha"] = json.loads(tok.to_str())
    return out


def main():
    corpus_texts = dict(HANDWRITTEN)
    corpus_texts.update(stdlib_excerpts())
    corpus_texts.update(random_texts())
    texts = list(corpus_texts.values())

    files = {"bundled": BUNDLED.relative_to(ROOT).as_posix()}
    toks = {"bundled": Tokenizer.from_file(str(BUNDLED))}
    for name, spec in variants(texts).items():
        path = HERE / f"{name}.json"
        path.write_text(json.dumps(spec, ensure_ascii=False, separators=(",", ":")) + "\n")
        files[name] = path.relative_to(ROOT).as_posix()
        toks[name] = Tokenizer.from_file(str(path))

    cases = []
    for tname, tok in toks.items():
        for cname, text in corpus_texts.items():
            if cname.startswith("random_") and tname in SKIP_RANDOM:
                continue  # keeps the fixture small; these differ from "mini" outside the regex
            ids = tok.encode(text).ids
            dec = tok.decode(ids, skip_special_tokens=False)
            dec_skip = tok.decode(ids, skip_special_tokens=True)
            # The bundled tokenizer round-trips everything. The minis do not always: characters
            # without a token are dropped (mini-noalpha), lstrip/rstrip added tokens absorb
            # whitespace, and the added token "Löwe" decodes byte-level ('ö' is the character
            # of byte 0xF6), which is what tokenizers does.
            assert tname != "bundled" or dec == text, (tname, cname)
            case = {"tokenizer": tname, "text": cname, "ids": ids}
            # Decodes are stored only where they differ from the text.
            if dec != text:
                case["decoded"] = dec
            if dec_skip != text:
                case["decoded_skip_special"] = dec_skip
            cases.append(case)

    rng = random.Random(7)
    decode_cases = []
    for tname, tok in toks.items():
        n = tok.get_vocab_size(with_added_tokens=True)
        for i in range(25):
            ids = [rng.randrange(n) for _ in range(rng.randrange(1, 24))]
            decode_cases.append({"tokenizer": tname, "ids": ids,
                                 "decoded": tok.decode(ids, skip_special_tokens=False),
                                 "decoded_skip_special": tok.decode(ids, skip_special_tokens=True)})

    fixture = {
        "generator": "test/unittests/Tokenizer/gen_fixtures.py",
        "tokenizers_version": tokenizers.__version__,
        "tokenizers": files,
        "vocab_sizes": {k: t.get_vocab_size(with_added_tokens=True) for k, t in toks.items()},
        "texts": corpus_texts,
        "cases": cases,
        "decode_cases": decode_cases,
    }
    out = HERE / "fixtures.json"
    out.write_text(json.dumps(fixture, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"{out.name}: {len(cases)} encode cases, {len(decode_cases)} decode cases, "
          f"{out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
