#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/, clang, -fsanitize=fuzzer,address,undefined) in build-fuzz/ and runs
# each for SECONDS (default 60), all at once, from its checked-in seeds (tests/fuzz/TARGET/) plus the corpus the
# earlier runs grew (build-fuzz/corpus/TARGET/). Fails on any crash, leak, sanitizer report, timeout (an input
# that takes over FUZZ_TIMEOUT seconds, default 10) or out-of-memory (2 GiB); the input that did it is saved under build-fuzz/artifacts/.
#
#   scripts/fuzz.sh              # 60 s per target (CI: scripts/test.sh runs it after ctest)
#   scripts/fuzz.sh 3600         # an hour each (docs/FUZZING.md has the last such run)
#   scripts/fuzz.sh 30 spec      # only fuzz_spec
#
# Targets: spec (the YAML spec reader and validator), metrics_line, inventory (node inventory + hostlists),
# http_request (the dashboard's request parsing and its query/route helpers).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-60}
shift || true
TARGETS=("$@")
[[ ${#TARGETS[@]} -gt 0 ]] || TARGETS=(spec metrics_line inventory http_request)
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}

for t in "${TARGETS[@]}"; do
  [[ -d tests/fuzz/$t ]] || { echo "fuzz: no target '$t' (tests/fuzz/$t/ holds its seeds)" >&2; exit 2; }
done
command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (scripts/bootstrap.sh installs it)" >&2; exit 1; }

CXX=clang++ cmake -S tests/fuzz -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" --target "${TARGETS[@]/#/fuzz_}"

# Per target: the longest input worth trying (the spec reader refuses more than 256 KiB itself; a metrics line
# over 64 KiB is refused by length).
declare -A MAX_LEN=([spec]=16384 [metrics_line]=70000 [inventory]=16384 [http_request]=20000)
declare -A DICT=([spec]=tests/fuzz/spec.dict)

pids=()
for t in "${TARGETS[@]}"; do
  mkdir -p "$BUILD/corpus/$t" "$BUILD/artifacts/$t" "$BUILD/logs"
  args=(-max_total_time="$SECONDS_PER_TARGET" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -max_len="${MAX_LEN[$t]}"
        -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t/")
  [[ -n ${DICT[$t]:-} ]] && args+=(-dict="${DICT[$t]}")
  # New inputs go to the first directory (the grown corpus); the seeds are read, never written.
  "$BUILD/fuzz_$t" "${args[@]}" "$BUILD/corpus/$t" "tests/fuzz/$t" >"$BUILD/logs/$t.log" 2>&1 &
  pids+=($!)
done

failed=0
for i in "${!TARGETS[@]}"; do
  t=${TARGETS[$i]}
  if wait "${pids[$i]}"; then
    stats=$(grep -E '^stat::(number_of_executed_units|peak_rss_mb):' "$BUILD/logs/$t.log" | tr '\n' ' ')
    echo "fuzz $t: ok in ${SECONDS_PER_TARGET}s; $stats; corpus $(ls "$BUILD/corpus/$t" | wc -l) inputs"
  else
    failed=1
    echo "fuzz $t: FAILED (log: $BUILD/logs/$t.log; input: $(ls "$BUILD/artifacts/$t" | head -n 3 | tr '\n' ' '))" >&2
    grep -E 'ERROR|SUMMARY|runtime error|ALARM|out-of-memory' "$BUILD/logs/$t.log" | head -n 20 >&2 || true
  fi
done
exit $failed
