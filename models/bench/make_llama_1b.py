#!/usr/bin/env python3
"""A ~1.1B-parameter Llama-shaped model with random weights, exported in the zoo's cached form
(input_ids, attention_mask, position_ids, past_key_values.{i}.key|value -> logits,
present.{i}.key|value; torch.onnx.export, TorchScript exporter, opset 17) with every weight in
one external data file next to the .onnx. Used to measure folioc's compile time on a model of
realistic size (docs/bench-compile-1b.md). Never commit the output.

    .venv/bin/python models/bench/make_llama_1b.py [OUTDIR]   # default /tmp/folio-llama-1b

--tiled-weights makes every weight matrix one period of 1021 of its random values repeated, so a
plan compiled from it compresses to under 1 MB (xz -3, from 2.2 GB): how a 1B plan reaches a GPU machine
that has no compiler, for tools/gpu-check.sh --plan, where speed is what is measured. 1021 is prime,
so rows of 2048 or 8192 values are not all alike.

Shape: hidden 2048, 16 layers, 32 heads, 8 KV heads, head_dim 64, intermediate 8192, vocab 32000,
rope base 500000, untied lm_head (about 1.10e9 parameters, 4.4 GB of fp32 weights).
Weights: torch's default init under a fixed seed (values don't matter for compile time).
Cost (2 shared cores): about 1 minute, peak RSS about 5.5 GB; 4.4 GB in OUTDIR plus the same again
transiently (torch writes one file per initializer for a model over 2 GB; those are merged into
<name>.onnx.data after the torch model is freed, then removed).
"""
import argparse
import gc
import os
import resource
import shutil
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
TILE_PERIOD = 1021  # --tiled-weights: prime, so that no row length is a multiple of it

CFG_1B = dict(CONFIGS["llama"], arch="llama-1b", vocab=32000, hidden=2048, layers=16, heads=32,
              kv_heads=8, head_dim=64, intermediate=8192, rope_base=500000.0, rotary_dim=64,
              max_positions=8192, tie=False)


def peak_rss_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", nargs="?", default="/tmp/folio-llama-1b")
    ap.add_argument("--name", default="model.onnx")
    ap.add_argument("--tiled-weights", action="store_true",
                    help="repeat one period of 1021 values through each weight matrix")
    args = ap.parse_args()

    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    onnx_path = out / args.name
    data_name = args.name + ".data"
    stage = out / "torch-export"  # torch writes one file per initializer for models over 2 GB
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    t0 = time.perf_counter()
    torch.manual_seed(SEED)
    model = CFG_1B["cls"](CFG_1B).eval()  # default init: uniform/normal, RMSNorm weights = 1
    for p in model.parameters():
        p.requires_grad_(False)
        if args.tiled_weights and p.dim() == 2:
            flat = p.view(-1)
            period = flat[:TILE_PERIOD].clone()
            reps = -(-flat.numel() // TILE_PERIOD)
            flat.copy_(period.repeat(reps)[:flat.numel()])
    n_params = sum(p.numel() for p in model.parameters())
    t_build = time.perf_counter() - t0
    print(f"parameters: {n_params:,} ({n_params * 4 / 1e9:.2f} GB fp32); built in {t_build:.1f} s, "
          f"peak RSS {peak_rss_gb():.1f} GB", flush=True)

    t0 = time.perf_counter()
    export(model, "cached", stage / args.name)
    t_export = time.perf_counter() - t0
    print(f"torch.onnx.export: {t_export:.1f} s, peak RSS {peak_rss_gb():.1f} GB", flush=True)
    del model
    gc.collect()

    # re-save with all weights in one external data file next to the .onnx
    t0 = time.perf_counter()
    m = onnx.load(str(stage / args.name))
    for f in (onnx_path, out / data_name):
        if f.exists():
            f.unlink()  # onnx appends to an existing data file
    onnx.save_model(m, str(onnx_path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data_name, size_threshold=1024, convert_attribute=False)
    del m
    shutil.rmtree(stage)
    t_save = time.perf_counter() - t0
    print(f"onnx re-save (one data file): {t_save:.1f} s, peak RSS {peak_rss_gb():.1f} GB", flush=True)

    g = onnx.load(str(onnx_path), load_external_data=False).graph
    n_ext = sum(1 for t in g.initializer if t.data_location == onnx.TensorProto.EXTERNAL)
    print(f"graph: {len(g.node)} nodes, {len(g.initializer)} initializers ({n_ext} external), "
          f"{len(g.input)} inputs, {len(g.output)} outputs")
    for f in (onnx_path, out / data_name):
        print(f"{f}: {f.stat().st_size:,} bytes")
    print(f"total export time: {t_build + t_export + t_save:.1f} s; peak RSS {peak_rss_gb():.1f} GB")


if __name__ == "__main__":
    main()
