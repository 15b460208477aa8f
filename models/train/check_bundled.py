"""Checks the committed models/bundled/ without torch (onnx, onnxruntime, numpy only):

  * file sizes and sha256 match bundled.json;
  * both graphs pass onnx.checker and have the cached-form inputs/outputs;
  * ONNX Runtime's perplexity on heldout_slice.i32 equals bundled.json's slice_perplexity
    (relative difference <= 1e-4; the recorded figure is torch's);
  * a prefill of 6 + 10 tokens through the KV cache gives the logits of a one-shot prefill.

    python3 models/train/check_bundled.py        # prints 'N passed, N failed', exits 1 on failure
"""
import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

BUNDLED = Path(__file__).resolve().parent.parent / "bundled"


def session(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def run(sess, cfg, ids, past=None, start=0):
    b, s = ids.shape
    feeds = {"input_ids": ids.astype(np.int64),
             "attention_mask": np.ones((b, start + s), dtype=np.int64),
             "position_ids": np.broadcast_to(np.arange(start, start + s), (b, s)).astype(np.int64)}
    for i in range(cfg["layers"]):
        for kv in ("key", "value"):
            name = f"past_key_values.{i}.{kv}"
            feeds[name] = past[name] if past else np.zeros((b, cfg["kv_heads"], 0, cfg["head_dim"]),
                                                           dtype=np.float32)
    names = [o.name for o in sess.get_outputs()]
    out = dict(zip(names, sess.run(names, feeds)))
    present = {n.replace("present.", "past_key_values."): v for n, v in out.items() if n.startswith("present.")}
    return out["logits"], present


def slice_perplexity(sess, cfg, windows):
    total, count = 0.0, 0
    for w in windows:
        logits, _ = run(sess, cfg, w[None, :-1])
        lg = logits[0].astype(np.float64)
        lse = np.log(np.exp(lg - lg.max(-1, keepdims=True)).sum(-1)) + lg.max(-1)
        total += float((lse - lg[np.arange(len(w) - 1), w[1:]]).sum())
        count += len(w) - 1
    return math.exp(total / count)


def main():
    meta = json.loads((BUNDLED / "bundled.json").read_text())
    results = []

    def check(name, ok, detail=""):
        results.append(ok)
        print(f"{'PASS' if ok else 'FAIL'} {name} {detail}")

    for f, info in meta["files"].items():
        data = (BUNDLED / f).read_bytes()
        check(f"{f} hash", len(data) == info["bytes"] and hashlib.sha256(data).hexdigest() == info["sha256"])

    seq = int(meta["models"]["target"]["seq"])
    windows = np.fromfile(BUNDLED / "heldout_slice.i32", dtype="<i4").reshape(-1, seq).astype(np.int64)
    for name, m in meta["models"].items():
        cfg = m["config"]
        path = BUNDLED / m["file"]
        model = onnx.load(str(path))
        onnx.checker.check_model(model)
        ins = [i.name for i in model.graph.input]
        want = ["input_ids", "attention_mask", "position_ids"] + [
            f"past_key_values.{i}.{kv}" for i in range(cfg["layers"]) for kv in ("key", "value")]
        check(f"{name} graph", ins == want, f"opset {model.opset_import[0].version}")
        sess = session(path)
        ppl = slice_perplexity(sess, cfg, windows)
        rel = abs(ppl - m["slice_perplexity"]) / m["slice_perplexity"]
        check(f"{name} slice perplexity", rel <= 1e-4, f"ORT {ppl:.4f} vs recorded {m['slice_perplexity']:.4f}")
        ids = windows[0][None, :16]
        full, _ = run(sess, cfg, ids)
        head, past = run(sess, cfg, ids[:, :6])
        tail, _ = run(sess, cfg, ids[:, 6:], past, start=6)
        diff = float(np.max(np.abs(np.concatenate([head, tail], axis=1) - full)))
        check(f"{name} chunked prefill", diff <= 1e-4, f"max abs diff {diff:.1e}")

    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
