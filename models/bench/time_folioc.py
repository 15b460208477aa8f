#!/usr/bin/env python3
"""Times folioc runs: wall time, peak RSS (wait4's ru_maxrss, what /usr/bin/time -v reports) and,
from folioc's --progress=always lines on stderr, when loading, importing and the pipeline ended,
so the time spent writing the output IR can be told apart from compiling.

    python3 models/bench/time_folioc.py [--runs 3] -- folioc MODEL.onnx --stop-after=import -o /dev/null ...

Prints one line per run and the min/median of each figure. --progress=always is added if absent.
Phase marks (seconds since start): load = "load: ..." printed (process start-up done),
import = "import: N/N nodes" printed (model loaded and imported), compile = "compile: ..." printed
(pipeline starts; only with --stop-after later than import), passes = --mlir-timing's report
printed (folioc prints it when the pipeline has run, before writing the output; only with
--mlir-timing), end = process exit. At the import
mark /proc/PID/status is read: VmHWM there is the peak RSS of loading and importing, before the
output is written, and again at the passes mark (MLIR's text printer hex-encodes every weight blob, even ones it then elides).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time


def proc_status(pid):
    """VmHWM (peak RSS so far) and the RSS split of a running process, in bytes."""
    try:
        with open(f"/proc/{pid}/status") as f:
            kv = dict(line.split(":", 1) for line in f if ":" in line)
        return {k: int(kv[k].split()[0]) * 1024 for k in ("VmHWM", "RssAnon", "RssFile") if k in kv}
    except OSError:
        return None


def run_once(cmd):
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    marks, buf, tail, hwm, hwm_passes = {}, b"", [], None, None
    fd = proc.stderr.fileno()
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        now = time.perf_counter() - t0
        buf += chunk
        # progress lines are "\r"-rewritten; split on both
        parts = re.split(rb"[\r\n]", buf)
        buf = parts.pop()
        for p in parts:
            line = p.decode(errors="replace")
            if line.startswith("load: "):
                marks.setdefault("load", now)
            m = re.match(r"import: (\d+)/(\d+) nodes", line)
            if m and m.group(1) == m.group(2) and "import" not in marks:
                marks["import"] = now
                hwm = proc_status(proc.pid)
            if line.startswith("compile: "):
                marks.setdefault("compile", now)
            if "Execution time report" in line and "passes" not in marks:
                marks["passes"] = now
                hwm_passes = proc_status(proc.pid)
            if line and not line.startswith(("load: ", "import: ", "compile: ")):
                tail.append(line)
    _, status, ru = os.wait4(proc.pid, 0)
    marks["end"] = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    return rc, marks, ru.ru_maxrss * 1024, ru.ru_utime, ru.ru_stime, tail, hwm, hwm_passes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not any(c.startswith("--progress") for c in cmd):
        cmd.append("--progress=always")
    print("$ " + " ".join(cmd))
    rows = []
    for i in range(a.runs):
        rc, marks, rss, ut, st, tail, hwm, hwm_passes = run_once(cmd)
        for line in tail:
            print("  | " + line)
        if rc != 0:
            print(f"run {i + 1}: exit status {rc}")
            sys.exit(1)
        rows.append((marks, rss, hwm))
        ms = "  ".join(f"{k} {v:6.2f}s" for k, v in marks.items())
        print(f"run {i + 1}: {ms}  user {ut:.2f}s sys {st:.2f}s  peak RSS {rss / 2**20:.0f} MiB")
        if hwm:
            print("        at the import mark: " + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in hwm.items()))
        if hwm_passes:
            print("        at the passes mark: " + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in hwm_passes.items()))
    keys = [k for k in ("load", "import", "compile", "passes", "end") if all(k in m for m, _, _ in rows)]
    for k in keys:
        v = [m[k] for m, _, _ in rows]
        print(f"{k:>8}: min {min(v):.2f}s  median {statistics.median(v):.2f}s")
    r = [x for _, x, _ in rows]
    h = [x["VmHWM"] for _, _, x in rows if x]
    if h:
        print(f"peak RSS at the import mark: min {min(h) / 2**20:.0f} MiB  median {statistics.median(h) / 2**20:.0f} MiB")
    print(f"peak RSS: min {min(r) / 2**20:.0f} MiB  median {statistics.median(r) / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
