#!/usr/bin/env python3
"""Runs zoo fixtures through Folio and compares with their ONNX Runtime references. Standard
library only (the test suite has no numpy).

For a fixture the manifest marks "supported": `folioc --kv-cache-dtype=f32 --weight-dtype=f32`
(full-precision cache and weights, so the tolerance measures the import, not storage rounding)
compiles it, then `folio-run` generates 16 greedy tokens for the single-prompt cases (p1, p5, p11,
p16) run together as one ragged batch. Tokens must equal the reference's and each case's logits must lie within
1e-3 * max|reference logit| (the tolerance of test/unittests/Core/ParityTest.cpp).
For any other fixture the manifest's "folio" entry is the compile error it is expected to give:
folioc must fail with a message containing it and without crashing.

    run_check.py --folioc build/bin/folioc --folio-run build/bin/folio-run [--manifest M] NAME ... | --all
Prints one line per fixture and ends with 'N passed, N failed'; exits 1 on any failure.
"""
import argparse
import ast
import json
import os
import struct
import subprocess
import sys
import tempfile
import zipfile
from array import array
from pathlib import Path

CASES = ["p1", "p5", "p11", "p16"]
REL_TOL = 1e-3
FOLIOC_FLAGS = ["--kv-cache-dtype=f32", "--weight-dtype=f32"]
CRASH_MARKS = ("Stack dump", "PLEASE submit", "Assertion", "LLVM ERROR", "Segmentation")


def read_npy(data):
    """(shape, flat array) of a little-endian .npy (f4 or i8)."""
    if data[:6] != b"\x93NUMPY":
        raise ValueError("not an .npy file")
    major = data[6]
    if major == 1:
        (hlen,), start = struct.unpack("<H", data[8:10]), 10
    else:
        (hlen,), start = struct.unpack("<I", data[8:12]), 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    if header["fortran_order"]:
        raise ValueError("Fortran-ordered arrays are not read here")
    codes = {"<f4": "f", "<i8": "q", "<i4": "i"}
    arr = array(codes[header["descr"]])
    arr.frombytes(data[start + hlen:])
    if sys.byteorder != "little":
        arr.byteswap()
    return tuple(header["shape"]), arr


def read_npz(path):
    out = {}
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            out[name[:-4] if name.endswith(".npy") else name] = read_npy(zf.read(name))
    return out


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def check_supported(root, entry, tools, tmp):
    refs = read_npz(root / entry["reference"])
    prompts, want_tokens, want_logits = [], [], []
    for case in CASES:
        (_, length), ids = refs[f"{case}/input_ids"]
        prompts.append([int(x) for x in ids])
        _, toks = refs[f"{case}/tokens"]
        want_tokens.append([int(x) for x in toks])
        (_, steps, vocab), logits = refs[f"{case}/step_logits"]
        want_logits.append(logits)
    plan = os.path.join(tmp, "model.folio")
    dump = os.path.join(tmp, "logits.npy")
    rc, _, err = run([tools["folioc"], str(root / entry["file"]), *FOLIOC_FLAGS, "-o", plan])
    if rc != 0:
        return [f"folioc failed: {err.strip().splitlines()[-1] if err.strip() else rc}"], 0.0
    cmd = [tools["folio-run"], "--model", plan, "--max-new-tokens", str(steps),
           "--temperature", "0", "--json", "--threads", "1", "--dump-logits", dump]
    for p in prompts:
        cmd += ["--prompt-ids", ",".join(map(str, p))]
    rc, out, err = run(cmd)
    if rc != 0:
        return [f"folio-run failed: {err.strip().splitlines()[-1] if err.strip() else rc}"], 0.0
    got_tokens = [o["token_ids"] for o in json.loads(out)["outputs"]]
    shape, got = read_npy(Path(dump).read_bytes())
    problems = []
    if shape != (len(CASES), steps, vocab):
        return [f"logits shape {shape}, expected {(len(CASES), steps, vocab)}"], 0.0
    worst = 0.0
    n = steps * vocab
    for c, case in enumerate(CASES):
        if got_tokens[c] != want_tokens[c]:
            problems.append(f"{case}: tokens {got_tokens[c]} != reference {want_tokens[c]}")
        ref = want_logits[c]
        scale = max(abs(x) for x in ref)
        diff = max(abs(got[c * n + i] - ref[i]) for i in range(n))
        rel = diff / scale
        worst = max(worst, rel)
        if not rel <= REL_TOL:
            problems.append(f"{case}: max |logit diff| {diff:.3e} is {rel:.2e} of max |ref|")
    return problems, worst


def check_refused(root, entry, tools, tmp):
    expected = entry["folio"]
    rc, _, err = run([tools["folioc"], str(root / entry["file"]), *FOLIOC_FLAGS,
                      "-o", os.path.join(tmp, "model.folio")])
    if rc == 0:
        return [f"compiles, but the manifest expects the error '{expected}'"]
    if rc < 0 or any(m in err for m in CRASH_MARKS):
        return [f"folioc crashed (exit {rc}): {err.strip()[-300:]}"]
    if expected not in err:
        return [f"error '{err.strip()[:400]}' does not contain '{expected}'"]
    return []


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folioc", required=True, help="the folioc binary")
    ap.add_argument("--folio-run", required=True, help="the folio-run binary")
    ap.add_argument("--manifest", default=str(Path(__file__).resolve().parent / "manifest.json"))
    ap.add_argument("--all", action="store_true", help="every fixture in the manifest")
    ap.add_argument("--form", nargs="+",
                    help="with --all: only fixtures of these forms (e.g. sdpa_cached)")
    ap.add_argument("--survey", action="store_true",
                    help="treat every fixture as supported (to measure what Folio does with each)")
    ap.add_argument("names", nargs="*", help="fixtures, e.g. llama/sdpa_cached")
    args = ap.parse_args()
    root = Path(args.manifest).resolve().parent
    entries = {e["name"]: e for e in json.loads(Path(args.manifest).read_text())["models"]}
    tools = {"folioc": args.folioc, "folio-run": args.folio_run}
    names = [n for n, e in entries.items() if not args.form or e["form"] in args.form] \
        if args.all else args.names
    if not names:
        ap.error("name fixtures or pass --all")
    passed = failed = 0
    for name in names:
        if name not in entries:
            print(f"FAIL {name}: not in {args.manifest}")
            failed += 1
            continue
        entry = entries[name]
        with tempfile.TemporaryDirectory() as tmp:
            if entry["folio"] == "supported" or args.survey:
                problems, worst = check_supported(root, entry, tools, tmp)
                what = f"matches ONNX Runtime (max rel diff {worst:.1e})"
            else:
                problems = check_refused(root, entry, tools, tmp)
                what = f"refused as expected: {entry['folio']}"
        if problems:
            failed += 1
            print(f"FAIL {name}: " + "; ".join(problems))
        else:
            passed += 1
            print(f"PASS {name}: {what}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
