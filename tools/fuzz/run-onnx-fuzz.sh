#!/usr/bin/env bash
# Builds the ONNX loader fuzzer (libFuzzer + ASan + UBSan, clang 14) and runs
# it. Not part of CI: run it by hand after changing compiler/Import/ONNX.
#
# Usage: tools/fuzz/run-onnx-fuzz.sh [seconds] [work-dir]
#   seconds    how long to fuzz (default 60)
#   work-dir   build outputs, corpus and crash artifacts
#              (default $FOLIO_FUZZ_DIR or /tmp/folio-onnx-fuzz); the corpus
#              there is kept, so later runs continue where earlier ones ended
# Environment: CXX (default clang++-14), LLVM_CONFIG (default llvm-config-19),
#              FUZZ_JOBS parallel fuzzing processes (default 1),
#              FUZZ_ARGS extra libFuzzer flags.
# Exit status: 0 when no crash was found, 1 otherwise.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-60}
work=${2:-${FOLIO_FUZZ_DIR:-/tmp/folio-onnx-fuzz}}
cxx=${CXX:-clang++-14}
llvm_config=${LLVM_CONFIG:-llvm-config-19}
jobs=${FUZZ_JOBS:-1}

for tool in "$cxx" "$llvm_config" protoc; do
  command -v "$tool" >/dev/null || {
    echo "run-onnx-fuzz: '$tool' not found" >&2
    exit 2
  }
done

mkdir -p "$work"/{gen,obj,corpus,artifacts}
loader="$root/compiler/Import/ONNX"
# Regenerate into a scratch folder and keep the old files when nothing
# changed, so that the generated parser is not recompiled on every run.
rm -rf "$work/gen.new" && mkdir -p "$work/gen.new"
protoc --proto_path="$loader" --cpp_out="$work/gen.new" \
  "$loader/folio_onnx.proto"
for f in "$work/gen.new"/*; do
  cmp -s "$f" "$work/gen/$(basename "$f")" || cp "$f" "$work/gen/"
done
rm -rf "$work/gen.new"

# shellcheck disable=SC2054 # The commas are inside compiler flags.
common=(-std=c++17 -g -O1 -fno-omit-frame-pointer
  -fsanitize=address,undefined -fno-sanitize-recover=undefined
  -I"$root/compiler" -I"$work/gen" -I"$root/test/unittests/Import"
  -isystem "$($llvm_config --includedir)")
# shellcheck disable=SC2054
libs=(-L"$($llvm_config --libdir)" -Wl,-rpath,"$($llvm_config --libdir)"
  "$($llvm_config --libs support)" -lprotobuf-lite -lpthread)

# compile <source> <object> <extra flags...>: skipped when the object is
# newer than the source and every loader header.
compile() {
  local src=$1 obj=$2
  shift 2
  if [ -f "$obj" ] && [ "$obj" -nt "$src" ] &&
    [ -z "$(find "$loader" -name '*.h' -newer "$obj" -print -quit)" ]; then
    return
  fi
  echo "  CXX $(basename "$src")"
  "$cxx" "${common[@]}" "$@" -c "$src" -o "$obj"
}

echo "run-onnx-fuzz: building in $work"
# Everything the fuzzer runs is coverage-instrumented (fuzzer-no-link),
# including the generated parser, whose branches guide the mutations.
objs=()
for src in "$loader"/*.cpp "$work/gen/folio_onnx.pb.cc" \
  "$root/tools/fuzz/onnx-loader-fuzz.cpp"; do
  obj="$work/obj/$(basename "$src").o"
  compile "$src" "$obj" -fsanitize=fuzzer-no-link
  objs+=("$obj")
done
compile "$root/test/unittests/Import/ModelBuilder.cpp" \
  "$work/obj/ModelBuilder.o"
compile "$root/tools/fuzz/make-onnx-seeds.cpp" "$work/obj/make-onnx-seeds.o"

"$cxx" "${common[@]}" -fsanitize=fuzzer "${objs[@]}" "${libs[@]}" \
  -o "$work/onnx-loader-fuzz"
"$cxx" "${common[@]}" -fsanitize=fuzzer-no-link "$work/obj/ModelBuilder.o" \
  "$work/obj/make-onnx-seeds.o" "$work/obj/folio_onnx.pb.cc.o" "${libs[@]}" \
  -o "$work/make-onnx-seeds"

mkdir -p "$work/seeds"
"$work/make-onnx-seeds" "$work/seeds"
cp -n "$work/seeds"/*.onnx "$work/corpus/" 2>/dev/null || true

log="$work/fuzz.log"
echo "run-onnx-fuzz: fuzzing for ${seconds}s with $jobs job(s); log in $log"
status=0
cd "$work"
rm -f fuzz-*.log
parallel=()
if [ "$jobs" -gt 1 ]; then
  parallel=(-jobs="$jobs" -workers="$jobs")
fi
# shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags.
"$work/onnx-loader-fuzz" -max_total_time="$seconds" -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" -max_len=65536 -rss_limit_mb=4096 \
  -timeout=10 "${parallel[@]}" ${FUZZ_ARGS:-} \
  "$work/corpus" >"$log" 2>&1 || status=$?
# With -jobs, each worker logs to fuzz-<n>.log in the current directory
# instead (and the main log only echoes them).
logs=("$log")
if [ "$jobs" -gt 1 ]; then
  logs=(fuzz-*.log)
fi

execs=$(grep -ho 'stat::number_of_executed_units: [0-9]*' "${logs[@]}" |
  awk '{s += $2} END {print s + 0}')
crashes=$(find "$work/artifacts" -type f \
  \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' -o -name 'timeout-*' \
  -o -name 'slow-unit-*' \) | wc -l)
corpus=$(find "$work/corpus" -type f | wc -l)
echo "run-onnx-fuzz: ${seconds}s, executions: $execs," \
  "corpus: $corpus inputs, crash artifacts: $crashes (exit status $status)"
grep -h 'ERROR: \|SUMMARY: \|Test unit written' "${logs[@]}" || true
if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
  echo "run-onnx-fuzz: FAILED; reproduce with $work/onnx-loader-fuzz <artifact>"
  exit 1
fi
