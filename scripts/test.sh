#!/usr/bin/env bash
# Builds ladder and runs the whole test suite (unit, integration, system) through CTest, then the fuzz targets.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
summary=$(mktemp /tmp/ladder-ctest-XXXXXX)
trap 'rm -f "$summary"' EXIT
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 300) 2>&1 | tee "$summary"
# Then the libFuzzer targets, FUZZ_SECONDS each (default 45), all at once, in build-fuzz/: a crash, leak or
# timeout fails the run (scripts/fuzz.sh; about 2 minutes with its build; FUZZ_SECONDS=0 skips it).
if [[ ${FUZZ_SECONDS:-45} -gt 0 ]]; then
  bash scripts/fuzz.sh "${FUZZ_SECONDS:-45}"
fi
# The test runner's summary once more, last (the fuzzers' output came after it).
echo "ctest: $(grep -E '[0-9]+% tests passed' "$summary" | tail -n 1)"
