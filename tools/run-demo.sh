#!/usr/bin/env bash
# Folio's main job, as far as it goes today: set up, build, compile a bundled
# model (the zoo's Llama-style decoder, exported by torch with a KV cache)
# from ONNX to a plan, and generate from two prompts at once as one ragged
# batch on the CPU through the paged KV cache. FOLIO_MODEL picks the .onnx
# file; FOLIO_SHOW_IR=1 also prints the compiled serving entry.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
model="${FOLIO_MODEL:-models/zoo/llama/cached.onnx}"
plan="build/$(basename "$(dirname "$model")")-$(basename "$model" .onnx).folio"
echo "== folioc $model -o $plan"
build/bin/folioc "$model" -o "$plan"
if [ "${FOLIO_SHOW_IR:-0}" = 1 ]; then
  # Weights print as hex resources; elide them to keep the IR readable.
  build/bin/folioc "$model" --mlir-elide-resource-strings-if-larger=16
fi
echo "== folio-run $plan (two prompts, one batch, greedy)"
build/bin/folio-run --model "$plan" --prompt-ids 1,2,3 \
  --prompt-ids 7,8,9,10,11 --max-new-tokens 12 --json
