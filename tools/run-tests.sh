#!/usr/bin/env bash
# Sets up, builds, then runs the whole test suite (lit + GoogleTest via ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
ctest --test-dir build --output-on-failure -j"${FOLIO_JOBS:-$(nproc)}"
