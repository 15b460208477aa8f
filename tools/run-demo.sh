#!/usr/bin/env bash
# Folio's main job, as far as it goes today: set up, build, then compile a
# bundled model (the zoo's Llama-style decoder, exported by torch with a KV
# cache) from ONNX to the paged serving entry for a target, and print it.
# Later milestones run and serve it. FOLIO_TARGET picks the target
# (default sm_90a), FOLIO_MODEL the .onnx file.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
target="${FOLIO_TARGET:-sm_90a}"
model="${FOLIO_MODEL:-models/zoo/llama/cached.onnx}"
echo "== folioc $model --target=$target"
# Weights print as hex resources; elide them to keep the IR readable.
build/bin/folioc "$model" --target="$target" \
  --mlir-elide-resource-strings-if-larger=16
