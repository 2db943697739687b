#!/usr/bin/env bash
# bench/spec_validate: what `ladder search validate` costs on a spec with a categorical of N values (issue 22:
# 0.05 s at 5,000, 0.36 s at 20,000, 2.7 s at 50,000 and over 60 s at 500,000 before the fix, quadratic).
# Valid up to the 10,000-value limit; past it the spec is refused, and the refusal must cost no more.
# Prints one line per N (seconds: the best of 3 runs, peak RSS, exit code) and a JSON last line.
# Usage: bench/spec_validate/run.sh [--quick] [LADDER_BINARY]   (default build/bin/ladder; --quick: 1 run per N)
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=3
if [[ ${1:-} == --help ]]; then sed -n '2,6p' "$0"; exit 0; fi
if [[ ${1:-} == --quick ]]; then RUNS=1; shift; fi
LADDER=${1:-build/bin/ladder}
work=$(mktemp -d /tmp/ladder-bench-spec-XXXXXX)
trap 'rm -rf "$work"' EXIT
json="{"
for n in 1000 5000 10000 20000 50000 500000; do
  python3 - "$work/cat$n.yaml" "$n" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    f.write("name: t\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: 4}\ncommand: [echo, '{x}']\n")
    f.write("space:\n  x: {type: categorical, values: [" + ",".join("v%d" % i for i in range(n)) + "]}\n")
PY
  best=""
  for ((run = 0; run < RUNS; run++)); do
    set +e
    /usr/bin/time -o "$work/time" -f "%e %M" "$LADDER" search validate --no-command-check "$work/cat$n.yaml" \
      >/dev/null 2>&1
    rc=$?
    set -e
    read -r s kib < <(tail -n 1 "$work/time")
    if [[ -z $best ]] || awk "BEGIN{exit !($s < $best)}"; then best=$s; rss=$kib; fi
  done
  printf 'N=%-7d %6.2f s  %6d KiB  exit %d\n' "$n" "$best" "$rss" "$rc"
  json+="\"n$n\": {\"seconds\": $best, \"rss_kib\": $rss, \"exit\": $rc}, "
done
echo "${json%, }}"
