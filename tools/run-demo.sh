#!/usr/bin/env bash
# Folio's main job, as far as it goes today: set up, build, then compile an
# example decoder layer (written in the serving contract) for a target and
# print the result. Later milestones turn this into compiling and serving the
# bundled model. FOLIO_TARGET picks the target (default sm_90a).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
target="${FOLIO_TARGET:-sm_90a}"
echo "== folio-opt --folio-compile=target=$target test/Examples/paged-decoder-layer.mlir"
build/bin/folio-opt test/Examples/paged-decoder-layer.mlir \
  --folio-compile="target=$target"
