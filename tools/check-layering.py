#!/usr/bin/env python3
"""Checks Folio's include layering (STYLE.md): dependencies point down only.

Every quoted include is written from the repository root (or names a
third-party header), and each top-level part includes only the parts below
it: dialects/ nothing of compiler/, compiler/ nothing of tools/, the runtime
and the kernels nothing of MLIR. Prints one line per violation (file:line,
the include, the rule) and exits 1 if there is any.

Usage: check-layering.py [REPO_ROOT]
"""
import os
import re
import subprocess
import sys

# Quoted includes that name third-party headers rather than Folio's.
EXTERNAL = ("mlir/", "llvm/", "gtest/", "gmock/", "benchmark/", "oneapi/")
PARTS = ("dialects/", "compiler/", "runtime/", "codegen/", "tools/", "bench/",
         "test/")

# What each part may include of Folio's own headers (by path prefix).
ALLOWED = {
    "dialects/": ("dialects/",),
    "compiler/": ("compiler/", "dialects/", "runtime/Plan/",
                  "runtime/Support/", "codegen/CPU/WeightPack.h",
                  "codegen/CPU/DType.h", "codegen/CUDA/Emitter.h",
                  "codegen/CUDA/KernelSpec.h", "codegen/CUDA/Cache/",
                  "codegen/CUDA/NVRTC/Nvrtc.h",
                  "runtime/Device/PlanLaunches.h"),
    "runtime/": ("runtime/", "codegen/"),
    "codegen/": ("codegen/",),
    "bench/": ("bench/", "codegen/", "runtime/", "tools/folio-bench/"),
    "tools/": PARTS,
    "test/": PARTS,
}
# Parts that must build without MLIR or LLVM.
NO_MLIR = ("runtime/", "codegen/")

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def sources(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "*.cpp", "*.h"],
                         check=True, capture_output=True, text=True).stdout
    return [f for f in out.split() if f.startswith(PARTS)]


def check(root):
    errors = []
    for path in sources(root):
        part = next(p for p in PARTS if path.startswith(p))
        with open(os.path.join(root, path), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                quote, header = m.groups()
                where = f"{path}:{lineno}: {quote}{header}"
                if part in NO_MLIR and header.startswith(("mlir/", "llvm/")):
                    errors.append(f"{where}: {part} never includes MLIR/LLVM")
                    continue
                if quote == "<" or header.startswith(EXTERNAL):
                    continue
                if not header.startswith(PARTS):
                    errors.append(f"{where}: write the include from the "
                                  f"repository root ({', '.join(PARTS)})")
                    continue
                if not header.startswith(ALLOWED[part]):
                    errors.append(f"{where}: {part} may include only "
                                  f"{', '.join(ALLOWED[part])}")
    return errors


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    errors = check(root)
    for e in errors:
        print(e)
    print(f"check-layering: {len(errors)} violation(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
