"""Greedy generation from text prompts with the bundled ONNX models (ONNX Runtime + tokenizers).

    python models/train/sample.py                       # both models, the default prompts
    python models/train/sample.py --model target --new 64 "def parse_args(argv):"

Uses the zoo's protocol driver (models/zoo/refdriver.py): cached form, left padding, positions
from the mask, greedy argmax.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "zoo"))
import refdriver  # noqa: E402

BUNDLED = HERE.parent / "bundled"
PROMPTS = [
    "import os\nimport sys\n\n\ndef ",
    "class Queue:\n    def __init__(self, maxsize=0):\n        ",
    "    for i in range(len(",
    "def read_config(path):\n    \"\"\"",
]


def load_tokenizer(path=BUNDLED / "tokenizer.json"):
    from tokenizers import Tokenizer
    return Tokenizer.from_file(str(path))


def generate_text(run, io, tok, prompts, n_new):
    """Greedy continuation of each prompt (one batch, left-padded); returns (texts, result)."""
    ids = [tok.encode(p).ids for p in prompts]
    res = refdriver.generate(run, io, ids, n_new=n_new)
    texts = [tok.decode(res["tokens"][b].tolist(), skip_special_tokens=False) for b in range(len(ids))]
    return texts, res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prompts", nargs="*", help="text prompts (default: a few Python snippets)")
    ap.add_argument("--model", choices=["target", "draft", "both"], default="both")
    ap.add_argument("--new", type=int, default=48, help="tokens to generate")
    ap.add_argument("--dir", type=Path, default=BUNDLED)
    args = ap.parse_args()
    tok = load_tokenizer(args.dir / "tokenizer.json")
    prompts = args.prompts or PROMPTS
    for name in (["target", "draft"] if args.model == "both" else [args.model]):
        run, io = refdriver.ort_runner(args.dir / f"{name}.onnx")
        texts, _ = generate_text(run, io, tok, prompts, args.new)
        for p, t in zip(prompts, texts):
            print(f"=== {name} | prompt {p!r}\n{p}{t}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
