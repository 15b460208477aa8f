"""Fixture files shared by the zoo generators (models/zoo/build_all.py, models/zoo-hf/build.py,
models/zoo-hf/quantize.py): byte-reproducible reference archives, graph summaries for the
manifests, and the comparisons they record. numpy and onnx only (no torch), so generators that
need no exporter can use it.
"""
import hashlib
import io
import zipfile
from pathlib import Path

import numpy as np
import onnx


def write_npz(path, arrays):
    """np.savez_compressed, but byte-reproducible (fixed member order and timestamps)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[key]), allow_pickle=False)
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())


def save_refs(path, results):
    arrays = {}
    for c, r in results.items():
        for k in ("input_ids", "attention_mask", "tokens", "prefill_logits", "step_logits"):
            arr = r[k]
            if arr.dtype.kind == "f":
                arr = arr.astype(np.float32)
            arrays[f"{c}/{k}"] = arr
    write_npz(path, arrays)


def load_refs(path):
    res = {}
    with np.load(path) as z:
        for key in z.files:
            case, k = key.split("/")
            res.setdefault(case, {})[k] = z[key]
    return res


def graph_io(model):
    def desc(vi):
        t = vi.type.tensor_type
        dims = [d.dim_param if d.dim_param else d.dim_value for d in t.shape.dim]
        return {"name": vi.name, "dtype": onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name, "shape": dims}

    return [desc(v) for v in model.graph.input], [desc(v) for v in model.graph.output]


def op_summary(model):
    ops = {}
    for n in model.graph.node:
        key = (n.domain or "ai.onnx") + "::" + n.op_type
        ops[key] = ops.get(key, 0) + 1
    return dict(sorted(ops.items()))


def max_diff(a, b):
    """max |a-b| over step logits and the prefill rows of real (non-pad) tokens, all cases."""
    m = 0.0
    for case in a:
        x, y = a[case], b[case]
        m = max(m, float(np.abs(x["step_logits"] - y["step_logits"]).max()))
        valid = x["attention_mask"].astype(bool)
        m = max(m, float(np.abs(x["prefill_logits"] - y["prefill_logits"])[valid].max()))
    return m


def sha256(paths):
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()[:16]


def cases_summary(results):
    """The manifest's "cases": per prompt case its batch, prompt lengths, smallest top-1/top-2
    margin of the step logits, and greedy tokens."""
    from refdriver import top2_margin
    return {c: {"batch": int(r["input_ids"].shape[0]),
                "prompt_lengths": [int(x) for x in r["attention_mask"].sum(1)],
                "min_top2_margin": round(top2_margin(r["step_logits"]), 6),
                "tokens": r["tokens"].tolist()} for c, r in results.items()}
