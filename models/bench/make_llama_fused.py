#!/usr/bin/env python3
"""A Llama-shaped model with random weights in ONNX Runtime GenAI's fused form (SimplifiedLayerNormalization,
com.microsoft RotaryEmbedding and GroupQueryAttention; models/zoo/fused.py writes the graph), built with
onnx.helper and numpy only: no torch, so it runs where the TorchScript exporter is not installed. Weights in
one external data file next to the .onnx. For folio-bench on models larger than the last-level cache (the 1B
shape: 2.1 GB of bf16 linears). Never commit the output.

    pip install -r models/requirements-check.txt
    python3 models/bench/make_llama_fused.py --shape 1b [OUTDIR]    # default /tmp/folio-llama-fused-1b

Shapes: `1b` is make_llama_1b.py's (hidden 2048, 16 layers, 32 heads, 8 KV heads, head_dim 64,
intermediate 8192, vocab 32000, rope base 500000, untied lm_head); `110m` is make_llama_110m.py's;
`qwen2-0.5b-tied` has Qwen2-0.5B's sizes and its tied lm_head (the same matrix as the table).
Weights: normal, standard deviation 0.02, fixed seed; norms 1 (decode speed does not depend on the values).
Cost (2 shared cores, 1b): about 2 minutes and 13 GB of memory at peak, 4.4 GB on disk.
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "zoo"))
from fused import build_ms  # noqa: E402

SHAPES = {
    "1b": dict(vocab=32000, hidden=2048, layers=16, heads=32, kv_heads=8, head_dim=64, intermediate=8192,
               rope_base=500000.0, rotary_dim=64, max_positions=8192, eps=1e-5),
    "110m": dict(vocab=32000, hidden=768, layers=12, heads=12, kv_heads=4, head_dim=64, intermediate=2048,
                 rope_base=10000.0, rotary_dim=64, max_positions=2048, eps=1e-5),
    # Qwen2-0.5B's sizes (its q/k/v biases left out) with its tied lm_head: for the plan size of a model
    # whose table is a quarter of its parameters.
    "qwen2-0.5b-tied": dict(vocab=151936, hidden=896, layers=24, heads=14, kv_heads=2, head_dim=64,
                            intermediate=4864, rope_base=1000000.0, rotary_dim=64, max_positions=32768,
                            eps=1e-6, tied=True),
}


def state_dict(cfg, seed=1234):
    """Random weights under the torch Llama's names, [out, in] as torch stores them."""
    rng = np.random.default_rng(seed)
    hidden, ffn, vocab = cfg["hidden"], cfg["intermediate"], cfg["vocab"]
    q, kv = cfg["heads"] * cfg["head_dim"], cfg["kv_heads"] * cfg["head_dim"]

    def w(rows, cols):
        return rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(0.02)

    table = w(vocab, hidden)
    sd = {"embed_tokens.weight": table, "norm.weight": np.ones(hidden, np.float32),
          "lm_head.weight": table if cfg.get("tied") else w(vocab, hidden)}
    for i in range(cfg["layers"]):
        p = f"layers.{i}"
        sd[f"{p}.input_layernorm.weight"] = np.ones(hidden, np.float32)
        sd[f"{p}.post_attention_layernorm.weight"] = np.ones(hidden, np.float32)
        sd[f"{p}.self_attn.q_proj.weight"] = w(q, hidden)
        sd[f"{p}.self_attn.k_proj.weight"] = w(kv, hidden)
        sd[f"{p}.self_attn.v_proj.weight"] = w(kv, hidden)
        sd[f"{p}.self_attn.o_proj.weight"] = w(hidden, q)
        sd[f"{p}.mlp.gate_proj.weight"] = w(ffn, hidden)
        sd[f"{p}.mlp.up_proj.weight"] = w(ffn, hidden)
        sd[f"{p}.mlp.down_proj.weight"] = w(hidden, ffn)
    return sd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="1b")
    args = ap.parse_args()
    out = Path(args.outdir or f"/tmp/folio-llama-fused-{args.shape}")
    out.mkdir(parents=True, exist_ok=True)
    cfg = SHAPES[args.shape]
    model = build_ms(cfg, state_dict(cfg))
    onnx.save(model, str(out / "model.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="model.onnx.data")
    print(out / "model.onnx")


if __name__ == "__main__":
    main()
