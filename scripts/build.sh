#!/usr/bin/env bash
# Configures and builds ladder into build/ (installs missing Debian packages first): everything, or only the
# targets named (scripts/build.sh ladder ladder-train: what `ladder demo` runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} >/dev/null
fi
# 2 cores and 24 GiB: LibTorch translation units need ~1.5 GiB each, two at a time is fine.
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" "${targets[@]}"
