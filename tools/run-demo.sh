#!/usr/bin/env bash
# Folio's main job on a fresh machine: set up, build, compile the bundled
# model (a small Llama-architecture model trained on Python's standard
# library, models/bundled) from ONNX to a plan, and serve a batch of text
# prompts through the continuous-batching engine on the CPU, printing the
# continuations and a summary (tokens/s, time to first token, KV cache
# utilization). FOLIO_SHOW_IR=1 also prints the compiled serving entry.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
model=models/bundled/target.onnx
plan=build/bundled-target.folio
echo "== folioc $model -o $plan"
build/bin/folioc "$model" -o "$plan"
if [ "${FOLIO_SHOW_IR:-0}" = 1 ]; then
  # Weights print as hex resources; elide them to keep the IR readable.
  build/bin/folioc "$model" --mlir-elide-resource-strings-if-larger=16
fi
echo "== folio-generate $plan (4 prompts, continuous batching, seeded sampling)"
build/bin/folio-generate --model "$plan" \
  --tokenizer models/bundled/tokenizer.json --max-new-tokens 48 --seed 0 \
  --prompt $'def read_config(path):\n    """' \
  --prompt $'class Queue:\n    def __init__(self, maxsize=0):\n        ' \
  --prompt $'import os\nimport sys\n\n' \
  --prompt $'    for i in range(len('
