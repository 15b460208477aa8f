#!/usr/bin/env bash
# Builds one of Folio's libFuzzer targets (clang 14, ASan + UBSan, coverage on
# every Folio library it runs) and runs it for a bounded time, then prints
# the executions, the coverage and the findings. Not part of CI: run it by
# hand after changing what a target covers (docs/fuzzing.md).
#
# Usage: tools/fuzz/run-fuzz.sh <loader|onnx|plan> [seconds] [work-dir]
#   loader     bytes through the ONNX loader (compiler/Import/ONNX)
#   onnx       ONNX graphs, mutated node by node, through the whole compiler
#              (as folioc) and one step of the compiled plan
#   plan       .folio plans, mutated field by field with their checksums
#              resealed, through load, validation and one step
#   seconds    how long to fuzz (default 60)
#   work-dir   corpus, seeds, crash artifacts and logs (default
#              $FOLIO_FUZZ_DIR or /tmp/folio-fuzz-<target>); the corpus there
#              is kept, so later runs continue where earlier ones ended
# Environment: FOLIO_FUZZ_BUILD build directory (default <repo>/build-fuzz,
#              configured on first use), CC / CXX (default clang-14 /
#              clang++-14), FOLIOC the folioc that compiles the plan seeds
#              (default <repo>/build/bin/folioc), FUZZ_JOBS parallel fuzzing
#              processes (default 1), FUZZ_KEEP_GOING=1 to go on after a
#              finding (restarting libFuzzer), FUZZ_TIMEOUT seconds an
#              input may take (default 10), FUZZ_ARGS extra libFuzzer flags,
#              BUILD_JOBS ninja jobs (default 1).
# Exit status: 0 when nothing was found, 1 when something was, 2 on a usage
# or setup error.
set -euo pipefail

usage() {
  sed -n '7,26p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

root=$(cd "$(dirname "$0")/../.." && pwd)
target=${1:-}
case "$target" in
loader | onnx | plan) ;;
*) usage ;;
esac
seconds=${2:-60}
work=${3:-${FOLIO_FUZZ_DIR:-/tmp/folio-fuzz-$target}}
build=${FOLIO_FUZZ_BUILD:-$root/build-fuzz}
mkdir -p "$build" && build=$(cd "$build" && pwd)
jobs=${FUZZ_JOBS:-1}

fail() {
  echo "run-fuzz: $*" >&2
  exit 2
}

# --- Build ------------------------------------------------------------------
if [ ! -f "$build/build.ninja" ]; then
  for tool in "${CC:-clang-14}" "${CXX:-clang++-14}" cmake ninja; do
    command -v "$tool" >/dev/null || fail "'$tool' not found"
  done
  echo "run-fuzz: configuring $build"
  # Every Folio source gets coverage (fuzzer-no-link) and the sanitizers;
  # -O1 keeps ASan fast and the stacks readable, and without NDEBUG the
  # assertions are findings too. MLIR, LLVM, protobuf and oneDNN are the
  # system's uninstrumented libraries.
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_C_COMPILER="${CC:-clang-14}" -DCMAKE_CXX_COMPILER="${CXX:-clang++-14}" \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
    -DCMAKE_C_FLAGS_DEBUG="-O1 -g" -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link \
    -DFOLIO_SANITIZE='address;undefined' -DFOLIO_ENABLE_CUDA=OFF \
    -DFOLIO_FUZZ=ON >"$build/run-fuzz.configure.log" 2>&1 ||
    fail "configuring failed; see $build/run-fuzz.configure.log"
fi
binary=folio-fuzz-$target
targets=("$binary")
if [ "$target" != plan ]; then
  targets+=(folio-fuzz-onnx-seeds)
fi
echo "run-fuzz: building ${targets[*]} in $build"
ninja -C "$build" -j"${BUILD_JOBS:-1}" "${targets[@]}" >"$build/run-fuzz.ninja.log" 2>&1 || {
  tail -20 "$build/run-fuzz.ninja.log" >&2
  fail "the build failed; see $build/run-fuzz.ninja.log"
}

# --- Seeds ------------------------------------------------------------------
mkdir -p "$work"/{seeds,corpus,artifacts}
case "$target" in
loader | onnx)
  "$build/bin/folio-fuzz-onnx-seeds" "$work/seeds" >/dev/null
  ;;
esac
case "$target" in
onnx)
  # The zoo's models (the external-data one finds its weights in the
  # target's scratch directory).
  for model in "$root"/models/zoo/*/*.onnx; do
    arch=$(basename "$(dirname "$model")")
    cp "$model" "$work/seeds/$arch-$(basename "$model")"
  done
  # Weights that arrive quantized (MatMulNBits, QDQ DequantizeLinear).
  for model in "$root"/models/zoo-hf/llama/{genai_int4,genai_int4_asym,genai_int4_gather_asym,qdq_int8,qdq_int4,qdq_uint4}.onnx; do
    [ -f "$model" ] && cp "$model" "$work/seeds/hf-llama-$(basename "$model")"
  done
  # f16 graphs with MultiHeadAttention (with and without the past as its
  # inputs) and the dynamo exports (three-dim key transpose, opset-23
  # Attention on repeated KV, GatherND).
  for model in "$root"/models/zoo-hf/{llama,phi}/genai_fp16.onnx \
    "$root"/models/zoo-hf/{llama,falcon}/dynamo.onnx \
    "$root"/models/zoo-hf/llama/dynamo_o23.onnx; do
    [ -f "$model" ] && cp "$model" "$work/seeds/hf-$(basename "$(dirname "$model")")-$(basename "$model")"
  done
  ;;
plan)
  folioc=${FOLIOC:-$root/build/bin/folioc}
  # Every architecture with each cache dtype the CPU executor runs, where
  # the model allows it; compiled again only when folioc changed.
  if [ -x "$folioc" ]; then
    for model in "$root"/models/zoo/*/cached.onnx; do
      arch=$(basename "$(dirname "$model")")
      for dtype in f32 bf16 int8 int4 int2 fp8_e4m3; do
        seed="$work/seeds/$arch-$dtype.folio"
        [ -f "$seed" ] && [ "$seed" -nt "$folioc" ] && continue
        "$folioc" "$model" --kv-cache-dtype="$dtype" -o "$seed" \
          >"$work/folioc.log" 2>&1 || rm -f "$seed"
      done
      # Every stored weight dtype, and the device kernels of a GPU target
      # (only where folioc was built with CUDA), once per architecture.
      for flags in --weight-dtype=f32 --weight-dtype=int8 \
        --weight-dtype=fp8_e4m3 --weight-dtype=int4 --target=sm_90a; do
        seed="$work/seeds/$arch-${flags#--}.folio"
        seed=${seed//=/-}
        [ -f "$seed" ] && [ "$seed" -nt "$folioc" ] && continue
        "$folioc" "$model" "$flags" -o "$seed" \
          >"$work/folioc.log" 2>&1 || rm -f "$seed"
      done
    done
    # A model's own int4 codes kept (folioc's default for MatMulNBits).
    model="$root/models/zoo-hf/llama/genai_int4_asym.onnx"
    seed="$work/seeds/hf-llama-genai-int4-asym.folio"
    if [ -f "$model" ] && ! { [ -f "$seed" ] && [ "$seed" -nt "$folioc" ]; }; then
      "$folioc" "$model" -o "$seed" >"$work/folioc.log" 2>&1 || rm -f "$seed"
    fi
  else
    echo "run-fuzz: no folioc at $folioc (build it: ninja -C build folioc;" \
      "or set FOLIOC); using the seed plans already in $work/seeds" >&2
  fi
  ls "$work"/seeds/*.folio >/dev/null 2>&1 ||
    fail "no seed plans in $work/seeds (see $work/folioc.log)"
  ;;
esac
# The regression corpus: inputs that once crashed.
if [ -d "$root/tools/fuzz/corpus/$target" ]; then
  cp "$root/tools/fuzz/corpus/$target"/* "$work/seeds/" 2>/dev/null || true
fi

# --- Fuzz -------------------------------------------------------------------
case "$target" in
loader) max_len=65536 ;;
*) max_len=1048576 ;;
esac
log="$work/fuzz.log"
echo "run-fuzz: fuzzing $target for ${seconds}s with $jobs job(s); log in $log"
status=0
cd "$work"
touch "$work/.started" # artifacts newer than this are this run's
rm -f fuzz-*.log "$work"/fuzz.log.*
parallel=()
if [ "$jobs" -gt 1 ]; then
  parallel=(-jobs="$jobs" -workers="$jobs")
fi
# Memory a run may not exceed is a finding (-rss_limit_mb, and one malloc
# over it); allocator_may_return_null lets an impossible malloc return null
# as it would outside ASan, where the code must handle it. (The targets'
# built-in default allow_user_poisoning=0 stays: AsanDefaultOptions.cpp.)
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# fuzz <seconds> <log>
fuzz() {
  # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags.
  "$build/bin/$binary" -max_total_time="$1" -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" -max_len="$max_len" -rss_limit_mb=4096 \
    -timeout="${FUZZ_TIMEOUT:-10}" -detect_leaks=0 "${parallel[@]}" ${FUZZ_ARGS:-} \
    "$work/corpus" "$work/seeds" >"$2" 2>&1
}
if [ "${FUZZ_KEEP_GOING:-0}" = 1 ]; then
  # libFuzzer stops at a finding: start it again for the time left, without
  # the input that crashed (so that a crashing seed does not stop every
  # restart), and keep each segment's log with its full report.
  end=$((SECONDS + seconds))
  segment=0
  while [ $((end - SECONDS)) -gt 0 ]; do
    segment=$((segment + 1))
    touch "$work/.segment"
    fuzz $((end - SECONDS)) "$log.$segment" || status=$?
    for artifact in $(find "$work/artifacts" -type f -newer "$work/.segment"); do
      sum=$(sha1sum <"$artifact" | cut -d' ' -f1)
      rm -f "$work/corpus/$sum"
      for f in "$work"/seeds/*; do
        [ "$(sha1sum <"$f" | cut -d' ' -f1)" = "$sum" ] && rm -f "$f"
      done
    done
  done
  cat "$work"/fuzz.log.* >"$log"
  logs=("$work"/fuzz.log.*)
else
  fuzz "$seconds" "$log" || status=$?
  logs=("$log")
fi
# With -jobs, each worker logs to fuzz-<n>.log in the current directory
# (the main log only echoes them).
if [ "$jobs" -gt 1 ]; then
  logs=(fuzz-*.log)
fi

# --- Report -----------------------------------------------------------------
execs=$( (grep -ho 'stat::number_of_executed_units: [0-9]*' "${logs[@]}" ||
  true) | awk '{s += $2} END {print s + 0}')
coverage=$( (grep -ho 'cov: [0-9]* ft: [0-9]*' "${logs[@]}" || true) | tail -1)
crashes=$(find "$work/artifacts" -type f -newer "$work/.started" \
  \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' -o -name 'timeout-*' \) |
  wc -l)
# Inputs that took over 10 s but finished within the timeout (libFuzzer's
# -report_slow_units): findings when FUZZ_TIMEOUT is raised above 10 on a
# loaded machine; compare their time with a Release build's.
slow=$(find "$work/artifacts" -type f -newer "$work/.started" \
  -name 'slow-unit-*' | wc -l)
corpus=$(find "$work/corpus" -type f | wc -l)
echo "run-fuzz: $target, ${seconds}s, executions: $execs, ${coverage:-cov: ?}," \
  "corpus: $corpus inputs, crash artifacts: $crashes, slow inputs: $slow" \
  "(exit status $status)"
grep -h 'ERROR: \|SUMMARY: \|Test unit written' "${logs[@]}" || true
if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ] || [ "$slow" -ne 0 ]; then
  echo "run-fuzz: FOUND; replay with FOLIO_FUZZ_VERBOSE=1" \
    "$build/bin/$binary <artifact> (artifacts in $work/artifacts)"
  exit 1
fi
