#!/usr/bin/env bash
# One command on a machine with an NVIDIA GPU: builds what the GPU check
# needs, runs every kind of generated kernel on the GPU against the CPU
# kernels, and prints folio-gpu-bench's JSON on stdout (each kernel's
# bandwidth as a fraction of a device-to-device copy, prefill TFLOP/s; each
# after its result matched the CPU's). Progress goes to stderr.
#
#   bash tools/gpu-check.sh [--build-dir DIR] [--no-build] [--quick]
#                           [--profile] [--plan M.folio]...
#
# The default build, build-gpu, is runtime-only (FOLIO_RUNTIME_ONLY): it
# needs CMake, ninja, a C++17 compiler and the CUDA toolkit, not MLIR,
# protobuf or GoogleTest, which GPU machines often lack. Given a full build
# (--build-dir build), the device unit tests (FolioCUDADeviceTests with
# FOLIO_GPU_TESTS=1: edge cases such as empty batches) run first.
# --no-build uses the build as it is; --quick takes smaller shapes;
# --profile adds each plan's launch kinds' device and host time per step. Each
# --plan (compiled by folioc --target=sm_XX, e.g. of
# models/bench/make_llama_1b.py once with --kv-cache-dtype fp8_e4m3 and once
# with bf16) also runs whole on the CUDA executor: prefill and decode
# tokens/s in the JSON's "model".
# Exit status: 0 when everything ran and passed, 77 when there is no GPU
# (or no driver) to run on (it says why), anything else on a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-gpu
do_build=1
bench_flags=()
while [ $# -gt 0 ]; do
  case "$1" in
  --build-dir)
    [ $# -ge 2 ] || { echo "gpu-check: --build-dir needs a directory" >&2; exit 2; }
    build=$2
    shift 2
    ;;
  --no-build) do_build=0; shift ;;
  --quick) bench_flags+=(--quick); shift ;;
  --profile) bench_flags+=(--profile); shift ;;
  --plan)
    [ $# -ge 2 ] || { echo "gpu-check: --plan needs a file" >&2; exit 2; }
    [ -f "$2" ] || { echo "gpu-check: --plan $2: no such file" >&2; exit 2; }
    bench_flags+=(--plan "$2")
    shift 2
    ;;
  *)
    echo "gpu-check: unknown argument '$1'" >&2
    echo "usage: bash tools/gpu-check.sh [--build-dir DIR] [--no-build] [--quick] [--profile] [--plan M.folio]..." >&2
    exit 2
    ;;
  esac
done

if [ "$do_build" = 1 ]; then
  if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
    echo "gpu-check: no CUDA toolkit (nvcc): the GPU build needs one" >&2
    exit 2
  fi
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  configure=()
  # A new build directory is runtime-only; an existing one keeps its kind.
  [ -f "$build/CMakeCache.txt" ] || configure=(-DFOLIO_RUNTIME_ONLY=ON)
  echo "gpu-check: configuring and building $build with CUDA" >&2
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DFOLIO_ENABLE_CUDA=ON "${configure[@]}" "${launcher[@]}" >&2
  targets=(folio-gpu-bench)
  grep -q '^FOLIO_RUNTIME_ONLY:BOOL=ON' "$build/CMakeCache.txt" ||
    targets+=(FolioCUDADeviceTests)
  ninja -C "$build" -j"$(nproc)" "${targets[@]}" >&2
fi

bench="$build/bin/folio-gpu-bench"
tests="$build/unittests/FolioCUDADeviceTests"
if [ ! -x "$bench" ]; then
  echo "gpu-check: $bench is missing (a build without CUDA? run without --no-build)" >&2
  exit 2
fi

# cuBLASLt is loaded at run time: where the toolkit's libraries are not on
# the loader's path, add its lib64.
for d in "${CUDA_HOME:-/usr/local/cuda}/lib64" "$(dirname "$(command -v nvcc 2>/dev/null || echo /nonexistent/bin/nvcc)")/../lib64"; do
  if [ -e "$d/libcublasLt.so.13" ]; then
    export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    break
  fi
done

# No GPU: folio-gpu-bench says why and exits 77; so does this script.
set +e
"$bench" --probe >/dev/null
rc=$?
set -e
if [ "$rc" = 77 ]; then
  echo "gpu-check: skipped: no GPU to run on" >&2
  exit 77
elif [ "$rc" != 0 ]; then
  exit "$rc"
fi

if [ -x "$tests" ]; then
  echo "gpu-check: the device unit tests on the GPU" >&2
  FOLIO_GPU_TESTS=1 "$tests" >&2
else
  echo "gpu-check: no device unit tests in $build (runtime-only); the bench checks every kernel it times" >&2
fi
echo "gpu-check: the generated kernels on the GPU, checked against the CPU, then timed" >&2
"$bench" "${bench_flags[@]}"
