#!/usr/bin/env bash
# Builds ladder and runs the whole test suite (unit, integration, system) through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 300
