"""Converts the zoo's ONNX Runtime references (.ref.npz) into files the
C++ parity tests read without numpy.

For every fixture in manifest.json and every single-prompt case (p1, p5,
p11, p16) it writes, into this directory:
  <arch>.<form>.txt   one line per case: name, prompt ids, reference tokens
  <arch>.<form>.f32   step logits, little-endian float32 [cases, 16, vocab]

Run with the export venv (numpy):
  .venv/bin/python models/zoo/fixtures-for-run/convert_refs.py
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.dirname(HERE)
CASES = ["p1", "p5", "p11", "p16"]


def main():
    manifest = json.load(open(os.path.join(ZOO, "manifest.json")))
    written = 0
    for fx in manifest["models"]:
        arch, form = fx["architecture"], fx["form"]
        ref = np.load(os.path.join(ZOO, fx["reference"]))
        lines, logits = [], []
        for case in CASES:
            ids = ref[f"{case}/input_ids"][0]
            tokens = ref[f"{case}/tokens"][0]
            lines.append("%s %s %s" % (case, ",".join(map(str, ids)),
                                       ",".join(map(str, tokens))))
            logits.append(ref[f"{case}/step_logits"][0].astype("<f4"))
        base = os.path.join(HERE, f"{arch}.{form}")
        with open(base + ".txt", "w") as f:
            f.write("\n".join(lines) + "\n")
        np.stack(logits).tofile(base + ".f32")
        written += 1
    print(f"wrote {written} fixtures")


if __name__ == "__main__":
    main()
