#!/usr/bin/env python3
"""Self-check of the committed model zoo, using only onnx + onnxruntime + numpy (no torch).

For every fixture in models/zoo/manifest.json (or --manifest, e.g. models/zoo-hf/manifest.json): check the file hashes, run onnx.checker on
graphs in standard domains, then replay the stored greedy generation with ONNX Runtime (teacher
forcing with the stored tokens, so a near-tie cannot derail the replay; session config entries
from the fixture's "reference_session_config", the graph optimization level from its
"reference_graph_optimization_level" and buffer reuse from its "reference_mem_reuse", if any) and compare
  * the prefill logits of every real (non-pad) prompt row and the logits of every step with the
    stored ones (|got - ref| <= ATOL + RTOL * |ref|),
  * the greedy token of every step with the stored one (skipped only where the stored top-1/top-2
    margin is below TIE_MARGIN).
Prints one line per fixture and ends with 'N passed, N failed'; exits 1 on any failure.

    python3 models/zoo/check_fixtures.py [--only NAME_SUBSTRING ...] [--threads N]
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import onnx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import refdriver as rd  # noqa: E402  (numpy-only helper shared with build_all.py)
from fixture_io import load_refs, sha256  # noqa: E402

ATOL = 1e-4
RTOL = 1e-4
TIE_MARGIN = 1e-3
STANDARD_DOMAINS = {"", "ai.onnx"}


def check_entry(entry, threads, root=HERE):
    """Paths in `entry` are relative to `root`, the manifest's folder."""
    problems = []
    path = root / entry["file"]
    files = [path] + [root / p for p in (entry.get("external_data") or [])]
    for f in files:
        if not f.exists():
            return [f"missing file {f}"], 0.0
    got_hash = sha256(files)
    if got_hash != entry["sha256_16"]:
        problems.append(f"sha256 {got_hash} != manifest {entry['sha256_16']}")

    model = onnx.load(str(path), load_external_data=False)
    domains = {o.domain for o in model.opset_import}
    if domains <= STANDARD_DOMAINS:
        try:
            onnx.checker.check_model(str(path), full_check=True)
        except Exception as e:  # noqa: BLE001
            problems.append(f"onnx.checker: {str(e).splitlines()[0][:200]}")
    names_in = [i.name for i in model.graph.input]
    if names_in != [i["name"] for i in entry["inputs"]]:
        problems.append(f"inputs {names_in} differ from manifest")

    run, io_ = rd.ort_runner(path, intra_threads=threads,
                             session_config=entry.get("reference_session_config"),
                             graph_optimization_level=entry.get("reference_graph_optimization_level"),
                             mem_reuse=entry.get("reference_mem_reuse", True))
    io_.dim_values = entry.get("dim_values", {})
    refs = load_refs(root / entry["reference"])
    if sorted(refs) != sorted(entry["cases"]):
        problems.append(f"reference cases {sorted(refs)} != manifest {sorted(entry['cases'])}")
    worst = 0.0
    for case, ref in sorted(refs.items()):
        prompts = []
        for ids, mask in zip(ref["input_ids"], ref["attention_mask"]):
            prompts.append(ids[mask.astype(bool)].tolist())
        res = rd.generate(run, io_, prompts, n_new=ref["tokens"].shape[1], forced_tokens=ref["tokens"])
        if not np.array_equal(res["input_ids"], ref["input_ids"]):
            problems.append(f"{case}: padded prompt differs from the stored one")
            continue
        valid = ref["attention_mask"].astype(bool)
        for name, got, want in [("prefill", res["prefill_logits"][valid], ref["prefill_logits"][valid]),
                                ("steps", res["step_logits"], ref["step_logits"])]:
            if got.shape != want.shape:
                problems.append(f"{case}/{name}: shape {got.shape} != {want.shape}")
                continue
            diff = np.abs(got - want)
            worst = max(worst, float(diff.max()))
            bad = diff > ATOL + RTOL * np.abs(want)
            if bad.any():
                problems.append(f"{case}/{name}: {int(bad.sum())} logits off, max |diff| {diff.max():.3e}")
        srt = np.sort(ref["step_logits"], axis=-1)
        margin = srt[..., -1] - srt[..., -2]
        mism = (res["tokens"] != ref["tokens"]) & (margin >= TIE_MARGIN)
        if mism.any():
            b, t = np.argwhere(mism)[0]
            problems.append(f"{case}: greedy token differs at batch {b} step {t}: "
                            f"{res['tokens'][b, t]} vs stored {ref['tokens'][b, t]}")
    return problems, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", default=str(HERE / "manifest.json"))
    ap.add_argument("--only", nargs="*", help="check only fixtures whose name contains one of these")
    ap.add_argument("--threads", type=int, default=1, help="ORT intra-op threads")
    args = ap.parse_args()
    manifest = json.loads(Path(args.manifest).read_text())
    import onnxruntime

    print(f"onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__}, numpy {np.__version__}; "
          f"references made with {manifest['versions']}")
    passed = failed = 0
    for entry in manifest["models"]:
        if args.only and not any(s in entry["name"] for s in args.only):
            continue
        t0 = time.time()
        try:
            problems, worst = check_entry(entry, args.threads, Path(args.manifest).resolve().parent)
        except Exception as e:  # noqa: BLE001
            problems, worst = [f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"], 0.0
        dt = time.time() - t0
        if problems:
            failed += 1
            print(f"FAIL {entry['name']} ({dt:.1f}s)")
            for p in problems:
                print(f"     {p}")
        else:
            passed += 1
            print(f"ok   {entry['name']}  max |diff| {worst:.2e}  ({dt:.1f}s)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
