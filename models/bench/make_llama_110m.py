#!/usr/bin/env python3
"""A ~125M-parameter Llama-shaped model with random weights for folio-bench (docs/bench-cpu-roofline.md),
exported in the zoo's cached form (torch.onnx.export, TorchScript exporter, opset 17) with its weights
in one external data file next to the .onnx. Never commit the output.

    .venv/bin/python models/bench/make_llama_110m.py [OUTDIR]   # default /tmp/folio-llama-110m

Shape (issue 4's benchmark model): hidden 768, 12 layers, 12 heads, 4 KV heads, head_dim 64,
intermediate 2048 (SiLU-gated), vocab 32000, untied lm_head, rope base 10000, 2048 positions.
Parameters: 124.7M (75.5M in the layers, 24.6M embedding, 24.6M lm_head); 499 MB of fp32 weights.
Weights: torch's default init under a fixed seed (decode speed does not depend on the values).
Cost (2 shared cores): under a minute.
"""
import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "zoo"))

import onnx  # noqa: E402
import torch  # noqa: E402

from archs import CONFIGS  # noqa: E402
from export_torch import export  # noqa: E402

SEED = 1234

CFG_110M = dict(CONFIGS["llama"], arch="llama-110m", vocab=32000, hidden=768, layers=12, heads=12,
                kv_heads=4, head_dim=64, intermediate=2048, rope_base=10000.0, rotary_dim=64,
                max_positions=2048, tie=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", nargs="?", default="/tmp/folio-llama-110m")
    ap.add_argument("--name", default="model.onnx")
    args = ap.parse_args()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    onnx_path = out / args.name
    data_name = args.name + ".data"

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    t0 = time.perf_counter()
    torch.manual_seed(SEED)
    model = CFG_110M["cls"](CFG_110M).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"parameters: {n_params:,} ({n_params * 4 / 1e6:.0f} MB fp32)", flush=True)

    tmp = out / ("export-" + args.name)
    export(model, "cached", tmp)
    del model
    # One external data file, so folioc maps the weights instead of parsing a 500 MB protobuf.
    m = onnx.load(str(tmp))
    for f in (onnx_path, out / data_name):
        if f.exists():
            f.unlink()  # onnx appends to an existing data file
    onnx.save_model(m, str(onnx_path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data_name, size_threshold=1024, convert_attribute=False)
    tmp.unlink()
    for f in (onnx_path, out / data_name):
        print(f"{f}: {f.stat().st_size:,} bytes")
    print(f"total: {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
