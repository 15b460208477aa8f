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

A manifest entry may carry "folioc_flags" (a list of folioc arguments replacing the two above) and
"logits_rel_tol" (replacing 1e-3); --folioc-flags and --rel-tol replace both for every fixture
named, to run a fixture again under other settings (e.g. weights kept in their source
quantization). With --tokens=margin a case's greedy tokens may part from the reference's at a
step whose reference top-1/top-2 logit margin is below twice the logit tolerance (a near tie that
rounding within the tolerance may flip): the logits of that step are still compared, the later
steps (other contexts) are not.

    run_check.py --folioc build/bin/folioc --folio-run build/bin/folio-run [--manifest M]
                 [--folioc-flags='--kv-cache-dtype=f32'] [--rel-tol 2e-2] [--tokens exact|margin]
                 NAME ... | --all [--form FORM ...]
Prints one line per fixture and ends with 'N passed, N failed'; exits 1 on any failure.
"""
import argparse
import ast
import json
import os
import shlex
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


class Settings:
    """How one fixture is compiled and compared: the defaults, then the manifest entry's
    "folioc_flags" / "logits_rel_tol", then the command line's overrides."""

    def __init__(self, entry, args):
        self.flags = FOLIOC_FLAGS
        self.rel_tol = REL_TOL
        flags = entry.get("folioc_flags")
        if flags is not None:
            if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
                raise ValueError(f"{entry['name']}: 'folioc_flags' must be a list of strings, "
                                 f"not {flags!r}")
            self.flags = flags
        tol = entry.get("logits_rel_tol")
        if tol is not None:
            if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol > 0:
                raise ValueError(f"{entry['name']}: 'logits_rel_tol' must be a positive number, "
                                 f"not {tol!r}")
            self.rel_tol = float(tol)
        if args.folioc_flags is not None:
            self.flags = shlex.split(args.folioc_flags)
        if args.rel_tol is not None:
            self.rel_tol = args.rel_tol
        self.token_margin = args.tokens == "margin"


def top2_margins(logits, steps, vocab):
    """Per step: top-1 minus top-2 of a [steps, vocab] row-major array."""
    out = []
    for t in range(steps):
        row = sorted(logits[t * vocab:(t + 1) * vocab], reverse=True)
        out.append(row[0] - row[1])
    return out


def check_supported(root, entry, tools, tmp, settings):
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
    rc, _, err = run([tools["folioc"], str(root / entry["file"]), *settings.flags, "-o", plan])
    if rc != 0:
        return [f"folioc failed: {err.strip().splitlines()[-1] if err.strip() else rc}"], 0.0, []
    cmd = [tools["folio-run"], "--model", plan, "--max-new-tokens", str(steps),
           "--temperature", "0", "--json", "--threads", "1", "--dump-logits", dump]
    for p in prompts:
        cmd += ["--prompt-ids", ",".join(map(str, p))]
    rc, out, err = run(cmd)
    if rc != 0:
        return [f"folio-run failed: {err.strip().splitlines()[-1] if err.strip() else rc}"], 0.0, []
    got_tokens = [o["token_ids"] for o in json.loads(out)["outputs"]]
    shape, got = read_npy(Path(dump).read_bytes())
    problems = []
    if shape != (len(CASES), steps, vocab):
        return [f"logits shape {shape}, expected {(len(CASES), steps, vocab)}"], 0.0, []
    worst = 0.0
    n = steps * vocab
    partings = []
    for c, case in enumerate(CASES):
        ref = want_logits[c]
        scale = max(abs(x) for x in ref)
        compared = steps
        if got_tokens[c] != want_tokens[c]:
            first = next(t for t in range(steps) if got_tokens[c][t] != want_tokens[c][t])
            margin = top2_margins(ref, steps, vocab)[first]
            if settings.token_margin and margin < 2 * settings.rel_tol * scale:
                compared = first + 1
                partings.append(f"{case} parts at step {first} (reference margin {margin:.2e})")
            else:
                problems.append(f"{case}: tokens {got_tokens[c]} != reference {want_tokens[c]}")
        diff = max(abs(got[c * n + i] - ref[i]) for i in range(compared * vocab))
        rel = diff / scale
        worst = max(worst, rel)
        if not rel <= settings.rel_tol:
            problems.append(f"{case}: max |logit diff| {diff:.3e} is {rel:.2e} of max |ref|")
    return problems, worst, partings


def check_refused(root, entry, tools, tmp, settings):
    expected = entry["folio"]
    rc, _, err = run([tools["folioc"], str(root / entry["file"]), *settings.flags,
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
    ap.add_argument("--folioc-flags", metavar="FLAGS",
                    help="folioc arguments for every fixture, one string split as a shell does "
                         "(write --folioc-flags='--kv-cache-dtype=f32'; '' for none); replaces "
                         f"the default {' '.join(FOLIOC_FLAGS)} and the manifest's folioc_flags")
    ap.add_argument("--rel-tol", type=float, metavar="X",
                    help=f"logit tolerance as a fraction of max |reference logit| (default "
                         f"{REL_TOL}, or the manifest's logits_rel_tol)")
    ap.add_argument("--tokens", choices=["exact", "margin"], default="exact",
                    help="exact: greedy tokens must equal the reference's (default); margin: they "
                         "may part at a step whose reference top-2 margin is below twice the "
                         "logit tolerance, later steps are then not compared")
    ap.add_argument("names", nargs="*", help="fixtures, e.g. llama/sdpa_cached")
    args = ap.parse_args()
    if args.rel_tol is not None and not args.rel_tol > 0:
        ap.error(f"--rel-tol must be positive, not {args.rel_tol}")
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
        try:
            settings = Settings(entry, args)
        except ValueError as e:
            print(f"FAIL {name}: {args.manifest}: {e}")
            failed += 1
            continue
        with tempfile.TemporaryDirectory() as tmp:
            if entry["folio"] == "supported" or args.survey:
                problems, worst, partings = check_supported(root, entry, tools, tmp, settings)
                what = f"matches ONNX Runtime (max rel diff {worst:.1e})"
                if partings:
                    what += "; tokens: " + ", ".join(partings)
            else:
                problems = check_refused(root, entry, tools, tmp, settings)
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
