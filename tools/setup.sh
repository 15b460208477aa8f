#!/usr/bin/env bash
# Installs what Folio's build needs on Debian 12 (as root, or through sudo),
# then configures and builds everything into build/ (binaries in build/bin/).
#
# Environment knobs:
#   FOLIO_BUILD_TYPE   Release (default) or Debug
#   FOLIO_CMAKE_ARGS   extra configure flags, e.g. -DFOLIO_SANITIZE='address;undefined'
#   FOLIO_JOBS         parallel build jobs (default: the number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build ccache g++ python3
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  libgtest-dev libbenchmark-dev libdnnl-dev
  libprotobuf-dev protobuf-compiler
  # folio-serve (HTTP and JSON); without them the build skips it.
  libcpp-httplib-dev nlohmann-json3-dev pkgconf
)
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$pkg")
done
if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || {
      echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
      exit 1
    }
    sudo=sudo
  fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}"
fi

# shellcheck disable=SC2086 # FOLIO_CMAKE_ARGS is a list of flags.
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE="${FOLIO_BUILD_TYPE:-Release}" \
  ${FOLIO_CMAKE_ARGS:-}
ninja -C build -j"${FOLIO_JOBS:-$(nproc)}"
