#!/usr/bin/env bash
# One command on a machine with an NVIDIA GPU: builds Folio with CUDA, runs
# the generated kernels on the GPU against the CPU kernels
# (FolioCUDADeviceTests with FOLIO_GPU_TESTS=1), then prints
# folio-gpu-bench's JSON (copy bandwidth; paged decode attention per cache
# dtype and the linear kernel per weight dtype, as fractions of it) on
# stdout. Progress goes to stderr.
#
#   bash tools/gpu-check.sh [--build-dir DIR] [--no-build] [--quick]
#
# --build-dir: the build to use (default: build, configured with CUDA if it
# is not yet); --no-build: use it as it is; --quick: smaller benchmark
# shapes. Exit status: 0 when everything ran and passed, 77 when there is no
# GPU (or no driver) to run on (it says why), anything else on a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
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
  *)
    echo "gpu-check: unknown argument '$1'" >&2
    echo "usage: bash tools/gpu-check.sh [--build-dir DIR] [--no-build] [--quick]" >&2
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
  echo "gpu-check: configuring and building $build with CUDA" >&2
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DFOLIO_ENABLE_CUDA=ON "${launcher[@]}" >&2
  ninja -C "$build" -j"$(nproc)" folio-gpu-bench FolioCUDADeviceTests >&2
fi

bench="$build/bin/folio-gpu-bench"
tests="$build/unittests/FolioCUDADeviceTests"
for f in "$bench" "$tests"; do
  if [ ! -x "$f" ]; then
    echo "gpu-check: $f is missing (a build without CUDA? run without --no-build)" >&2
    exit 2
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

echo "gpu-check: the generated kernels on the GPU against the CPU kernels" >&2
FOLIO_GPU_TESTS=1 "$tests" >&2
echo "gpu-check: benchmarks" >&2
"$bench" "${bench_flags[@]}"
