#!/usr/bin/env python3
"""Regenerate the whole model zoo: tiny decoders in the style of public architectures, exported
to ONNX in several forms, with ONNX Runtime reference outputs and a manifest.

    .venv/bin/python models/zoo/build_all.py            # everything
    .venv/bin/python models/zoo/build_all.py --only llama gpt2
    .venv/bin/python models/zoo/build_all.py --search-seeds   # re-pick SEEDS

Needs models/requirements-export.txt (torch, onnx, onnxruntime, numpy, pinned). Deterministic:
fixed seeds, fixed prompts, single-threaded ORT, fixed zip timestamps in the .npz files.
"""
import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402

import fused  # noqa: E402
import refdriver as rd  # noqa: E402
from fixture_io import cases_summary, graph_io, max_diff, op_summary, save_refs, sha256  # noqa: E402
from archs import CONFIGS  # noqa: E402
from export_torch import build_model, export, state_dict_numpy, torch_runner  # noqa: E402

torch.set_num_threads(1)

# Seeds picked by --search-seeds: the first seed whose greedy runs (all cases, cached form in
# torch) have a top-1/top-2 logit margin >= MIN_MARGIN at every step and at least MIN_DISTINCT
# different tokens among the 16 generated per sequence.
SEEDS = {
    "llama": 0, "mistral": 0, "qwen2": 0, "gpt2": 3,
    "phi2": 0, "gpt_neox": 0, "gptj": 0, "gemma": 131,
}
MIN_MARGIN = 0.01
MIN_DISTINCT = 4

TORCH_FORMS = ["cached", "cached_nopos", "nocache"]
FORM_DOC = {
    "cached": "torch.onnx.export (TorchScript, opset 17): input_ids, attention_mask, position_ids, "
              "past_key_values.{i}.key|value -> logits, present.{i}.key|value",
    "cached_nopos": "torch.onnx.export (TorchScript, opset 17): as cached but without position_ids; "
                    "positions = CumSum(attention_mask) - 1 inside the graph",
    "nocache": "torch.onnx.export (TorchScript, opset 17): input_ids, attention_mask -> logits "
               "(full recompute; positions from CumSum(attention_mask))",
    "cached_external": "the llama cached graph re-saved with its weights in an external data file",
    "fused_onnx23": "onnx.helper, opset 23: RMSNormalization, RotaryEmbedding, Attention (is_causal=1, "
                    "boolean padding mask, past/present) with the llama fixture's weights",
    "fused_ms": "onnx.helper, ORT contrib ops: SimplifiedLayerNormalization, com.microsoft "
                "SkipSimplifiedLayerNormalization, RotaryEmbedding, GroupQueryAttention with the llama "
                "fixture's weights",
}


def public_config(cfg):
    out = {}
    for k, v in cfg.items():
        if k == "cls":
            continue
        out[k] = v
    rot = cfg.get("rotary")
    out["rotary"] = None if rot is None else {
        "style": rot, "dim": cfg["rotary_dim"], "base": cfg["rope_base"],
        "partial": cfg["rotary_dim"] < cfg["head_dim"],
        "tables": cfg.get("rotary_tables", "computed_from_inv_freq"),
    }
    for k in ("rotary_dim", "rope_base", "rotary_tables"):
        out.pop(k, None)
    out["kv_heads"] = cfg["kv_heads"]
    out["window"] = cfg.get("window")
    out["layer_windows"] = list(cfg.get("layer_windows", [cfg.get("window")] * cfg["layers"]))
    out["attn_softcap"] = cfg.get("attn_softcap")
    out["final_softcap"] = cfg.get("final_softcap")
    out["tie"] = bool(cfg.get("tie"))
    return out


def run_cases(run, io_, cases):
    return {c: rd.generate(run, io_, rd.PROMPTS[c]) for c in cases}


def torch_io(cfg, form):
    ins = [("input_ids", ["b", "s"]), ("attention_mask", ["b", "t"])]
    if form == "cached":
        ins.append(("position_ids", ["b", "s"]))
    if form != "nocache":
        for i in range(cfg["layers"]):
            for k in ("key", "value"):
                ins.append((f"past_key_values.{i}.{k}", ["b", cfg["kv_heads"], "p", cfg["head_dim"]]))
    return rd.GraphIO(ins, [])


def seed_ok(arch, seed):
    m = build_model(arch, seed)
    res = run_cases(torch_runner(m, "cached"), torch_io(m.cfg, "cached"), list(rd.PROMPTS))
    margin = min(rd.top2_margin(r["step_logits"]) for r in res.values())
    distinct = min(len(set(t.tolist())) for r in res.values() for t in r["tokens"])
    return margin >= MIN_MARGIN and distinct >= MIN_DISTINCT, margin, distinct


def search_seeds(archs):
    found = {}
    for arch in archs:
        for seed in range(200):
            ok, margin, distinct = seed_ok(arch, seed)
            if ok:
                print(f"{arch}: seed {seed} (min margin {margin:.4f}, min distinct {distinct})")
                found[arch] = seed
                break
    print("SEEDS =", json.dumps(found))
    return found


def rel(p):
    return str(Path(p).relative_to(HERE))


def file_bytes(paths):
    return sum(os.path.getsize(p) for p in paths)


def make_entry(arch, form, cfg, onnx_path, ref_path, results, extra_files=(), **extra):
    model = onnx.load(str(onnx_path), load_external_data=False)
    ins, outs = graph_io(model)
    files = [onnx_path, *extra_files]
    entry = {
        "name": f"{arch}/{form}",
        "architecture": arch,
        "form": form,
        "form_description": FORM_DOC[form],
        "file": rel(onnx_path),
        "external_data": [rel(p) for p in extra_files] or None,
        "bytes": file_bytes(files),
        "sha256_16": sha256(files),
        "opset_imports": {(o.domain or "ai.onnx"): o.version for o in model.opset_import},
        "ops": op_summary(model),
        "config": public_config(cfg),
        "inputs": ins,
        "outputs": outs,
        "cached": any(i["name"].startswith("past_key_values.") for i in ins),
        "has_position_ids": any(i["name"] == "position_ids" for i in ins),
        "reference": rel(ref_path),
        "reference_bytes": os.path.getsize(ref_path),
        "new_tokens": rd.N_NEW,
        "cases": cases_summary(results),
    }
    entry.update(extra)
    return entry


def build_arch(arch, seed):
    cfg = CONFIGS[arch]
    outdir = HERE / arch
    outdir.mkdir(exist_ok=True)
    model = build_model(arch, seed)
    cases = list(rd.PROMPTS)
    entries = []
    torch_refs = {}
    for form in TORCH_FORMS:
        path = outdir / f"{form}.onnx"
        export(model, form, path)
        onnx.checker.check_model(str(path), full_check=True)
        run, io_ = rd.ort_runner(path)
        res = run_cases(run, io_, cases)
        tres = run_cases(torch_runner(model, form), io_, cases)
        torch_refs[form] = tres
        ref = outdir / f"{form}.ref.npz"
        save_refs(ref, res)
        tok_eq = all((res[c]["tokens"] == tres[c]["tokens"]).all() for c in cases)
        entries.append(make_entry(
            arch, form, cfg, path, ref, res, seed=seed,
            producer=f"torch {torch.__version__.split('+')[0]} torch.onnx.export (TorchScript exporter, opset 17)",
            ort_vs_torch={"max_abs_diff_logits": max_diff(res, tres), "tokens_equal": bool(tok_eq)}))
        print(f"  {arch}/{form}: {entries[-1]['bytes']} B, ORT vs torch {max_diff(res, tres):.2e}, "
              f"tokens equal {tok_eq}", flush=True)
        if arch == "llama" and form == "cached":
            # same graph, weights in an external data file (the importer must mmap it)
            ext = outdir / "cached_external.onnx"
            data_name = "cached_external.onnx.data"
            m = onnx.load(str(path))
            if (outdir / data_name).exists():
                (outdir / data_name).unlink()  # onnx appends to an existing data file
            onnx.save_model(m, str(ext), save_as_external_data=True, all_tensors_to_one_file=True,
                            location=data_name, size_threshold=256, convert_attribute=False)
            os.chmod(outdir / data_name, 0o644)
            onnx.checker.check_model(str(ext), full_check=True)
            run, io_ = rd.ort_runner(ext)
            eres = run_cases(run, io_, cases)
            same = all(np.array_equal(eres[c][k], res[c][k]) for c in cases for k in res[c])
            eref = outdir / "cached_external.ref.npz"
            if same:  # identical graph and numbers: share llama/cached's reference file
                eref = ref
                if (outdir / "cached_external.ref.npz").exists():
                    (outdir / "cached_external.ref.npz").unlink()
            else:
                save_refs(eref, eres)
            entries.append(make_entry(
                arch, "cached_external", cfg, ext, eref, eres, extra_files=[outdir / data_name], seed=seed,
                producer="onnx.save_model(save_as_external_data=True) of llama/cached.onnx",
                ort_vs_torch={"max_abs_diff_logits": max_diff(eres, tres),
                              "tokens_equal": bool(all((eres[c]["tokens"] == tres[c]["tokens"]).all()
                                                       for c in cases))}))
            print(f"  {arch}/cached_external: {entries[-1]['bytes']} B", flush=True)
    if arch == "llama":
        sd = state_dict_numpy(model)
        tres = torch_refs["cached"]
        for form, builder, fcases, note in [
            ("fused_onnx23", fused.build_onnx23, cases, None),
            ("fused_ms", fused.build_ms, [c for c in cases if c != "batch2"],
             "GroupQueryAttention takes seqlens_k/total_sequence_length and assumes right padding; "
             "the left-padded batch case is not produced for this form"),
        ]:
            path = outdir / f"{form}.onnx"
            onnx.save_model(builder(cfg, sd), str(path))
            run, io_ = rd.ort_runner(path)
            res = run_cases(run, io_, fcases)
            ref = outdir / f"{form}.ref.npz"
            save_refs(ref, res)
            sub = {c: tres[c] for c in fcases}
            extra = dict(
                seed=seed, weights_from="llama/cached",
                producer=f"onnx {onnx.__version__} helper (models/zoo/fused.py)",
                ort_vs_torch={"max_abs_diff_logits": max_diff(res, sub),
                              "tokens_equal": bool(all((res[c]["tokens"] == sub[c]["tokens"]).all() for c in fcases))})
            if note:
                extra["notes"] = note
            if form == "fused_onnx23":
                extra["onnx_reference_evaluator"] = onnx23_vs_reference_evaluator(path, res)
            entries.append(make_entry(arch, form, cfg, path, ref, res, **extra))
            print(f"  {arch}/{form}: {entries[-1]['bytes']} B, ORT vs torch "
                  f"{extra['ort_vs_torch']['max_abs_diff_logits']:.2e}", flush=True)
    return entries


def onnx23_vs_reference_evaluator(path, res):
    """Independent check of ORT's opset-23 kernels against onnx's own reference implementation:
    prefill + first decode step of the 11-token prompt and of the padded batch."""
    from onnx.reference import ReferenceEvaluator

    ev = ReferenceEvaluator(str(path))
    names = [o.name for o in onnx.load(str(path)).graph.output]
    io_ = rd.GraphIO([(i.name, [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim])
                      for i in onnx.load(str(path)).graph.input], [])

    def run(feeds):
        return dict(zip(names, ev.run(None, feeds)))

    worst = 0.0
    for c in ("p11", "batch2"):
        r = rd.generate(run, io_, rd.PROMPTS[c], n_new=2, forced_tokens=res[c]["tokens"])
        valid = r["attention_mask"].astype(bool)
        worst = max(worst, float(np.abs(r["prefill_logits"] - res[c]["prefill_logits"])[valid].max()),
                    float(np.abs(r["step_logits"] - res[c]["step_logits"][:, :2]).max()))
    return {"cases": ["p11", "batch2"], "steps": 2, "max_abs_diff_logits": worst}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="architectures to rebuild (manifest entries of the others are kept)")
    ap.add_argument("--search-seeds", action="store_true", help="search seeds meeting MIN_MARGIN/MIN_DISTINCT and exit")
    args = ap.parse_args()
    archs = args.only or list(CONFIGS)
    if args.search_seeds:
        search_seeds(archs)
        return
    manifest_path = HERE / "manifest.json"
    old = []
    if args.only and manifest_path.exists():
        old = [e for e in json.loads(manifest_path.read_text())["models"] if e["architecture"] not in archs]
    entries = list(old)
    for arch in archs:
        print(f"{arch} (seed {SEEDS[arch]})", flush=True)
        entries.extend(build_arch(arch, SEEDS[arch]))
    order = {a: i for i, a in enumerate(CONFIGS)}
    forms = TORCH_FORMS + ["cached_external", "fused_onnx23", "fused_ms"]
    entries.sort(key=lambda e: (order[e["architecture"]], forms.index(e["form"])))
    paths = set()
    for e in entries:
        paths.update([e["file"], e["reference"], *(e["external_data"] or [])])
    total = sum(os.path.getsize(HERE / p) for p in paths)
    manifest = {
        "description": "Folio model zoo: tiny decoder-only models in the style of public architectures, "
                       "exported to ONNX, with ONNX Runtime greedy-generation references. See models/README.md.",
        "generator": "models/zoo/build_all.py",
        "versions": {"torch": torch.__version__.split("+")[0], "onnx": onnx.__version__,
                     "onnxruntime": onnxruntime.__version__, "numpy": np.__version__},
        "protocol": {
            "new_tokens": rd.N_NEW,
            "greedy": "argmax of the last row's logits, first index on ties",
            "padding": "left, pad token 0, attention_mask 0",
            "position_ids": "cumsum(attention_mask) - 1, pad slots 1, last seq columns",
            "cached": "step 0: whole prompt with empty past (past_sequence_length 0); then one token per step "
                      "with present.* fed back as past_key_values.*",
            "nocache": "every step recomputes prompt + generated tokens",
            "reference_arrays": "<case>/input_ids [B,L], <case>/attention_mask [B,L], <case>/tokens [B,16], "
                                "<case>/prefill_logits [B,L,V] (pad rows meaningless), <case>/step_logits [B,16,V] "
                                "(last row at each step; step 0 = prefill)",
            "prompts": {c: p for c, p in rd.PROMPTS.items()},
        },
        "total_bytes": total,
        "models": entries,
    }
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(entries)} fixtures, {total} bytes in total (onnx + external data + references)")


if __name__ == "__main__":
    main()
