#!/usr/bin/env bash
# The bad-spec corpus: `ladder search validate` on every tests/specs/bad/*.yaml and on large inputs generated
# here (not checked in). Each must exit 2 with exactly one line on stderr that names the file and a line number
# and holds the fragment its first line promises (`# expect: ...`, usually the field and the message), contains
# only printable UTF-8 (no raw bytes echoed), and finishes in bounded time (timeout) and memory (ulimit -v).
# Usage: bad_specs_test.sh LADDER_BINARY SOURCE_DIR
set -uo pipefail
LADDER=$1
SRC=$2
TIME_LIMIT_S=10
MEM_LIMIT_KB=$((1024 * 1024))  # virtual memory: the binary and its libraries take ~400 MiB of it
# Under AddressSanitizer (scripts/sanitize.sh sets ASAN_OPTIONS) a binary cannot start with ulimit -v: it reserves
# terabytes of address space for its shadow memory. There the same number bounds its resident memory instead
# (ASan's hard_rss_limit_mb: past it the process dies and ASan writes a report).
if [[ -n ${ASAN_OPTIONS:-} ]]; then
  export ASAN_OPTIONS="$ASAN_OPTIONS:hard_rss_limit_mb=$((MEM_LIMIT_KB / 1024))"
  limit_memory() { :; }
else
  limit_memory() { ulimit -v $MEM_LIMIT_KB; }
fi

work=$(mktemp -d /tmp/ladder-bad-specs-XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
checked=0

# check FILE EXPECTED_FRAGMENT
check() {
  local file=$1 expect=$2 name err rc lines
  name=$(basename "$file")
  err=$( (limit_memory; exec timeout $TIME_LIMIT_S "$LADDER" search validate --no-command-check "$file") 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s\n' "$err" | wc -l)
  checked=$((checked + 1))
  local why=""
  if [[ $rc -eq 124 ]]; then why="timed out after ${TIME_LIMIT_S}s"
  elif [[ $rc -ne 2 ]]; then why="exit code $rc, expected 2"
  elif [[ $lines -ne 1 ]]; then why="$lines lines on stderr, expected 1"
  elif ! [[ $err =~ $name:[0-9]+: ]]; then why="no '$name:LINE:' in the error"
  elif [[ $err != *"$expect"* ]]; then why="the error lacks '$expect'"
  elif ! printf '%s' "$err" | iconv -f UTF-8 -t UTF-8 >/dev/null 2>&1; then why="the error is not valid UTF-8"
  elif printf '%s' "$err" | LC_ALL=C grep -q '[[:cntrl:]]'; then why="the error holds a control character"
  fi
  if [[ -n $why ]]; then
    echo "FAIL $name: $why" >&2
    printf '  stderr: %s\n' "$(printf '%s' "$err" | head -c 400 | cat -v)" >&2
    failures=$((failures + 1))
  fi
}

for f in "$SRC"/tests/specs/bad/*.yaml; do
  check "$f" "$(head -n 1 "$f" | sed -n 's/^# expect: //p')"
done

# Generated: too large to check in, or large on purpose.
python3 - "$work" <<'PY'
import os, random, sys
w = sys.argv[1]
head = "name: t\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: 4}\ncommand: [echo]\n"
def put(name, text):
    with open(os.path.join(w, name), "wb") as f:
        f.write(text if isinstance(text, bytes) else text.encode())
put("list_500000.yaml", head + "space:\n  x: {type: categorical, values: [" + ",".join("v%d" % i for i in range(500000)) + "]}\n")
put("list_10001.yaml", head + "space:\n  x: {type: categorical, values: [" + ",".join("v%d" % i for i in range(10001)) + "]}\n")
put("block_list_10001.yaml", head + "space:\n  x:\n    type: categorical\n    values:\n" + "".join("      - v%d\n" % i for i in range(10001)))
put("env_10001.yaml", head + "env:\n" + "".join("  V%d: x\n" % i for i in range(10001)) + "space:\n  x: {type: float, low: 0, high: 1}\n")
put("params_10001.yaml", head + "space:\n" + "".join("  p%d: 0\n" % i for i in range(10001)))
put("long_scalar.yaml", head + "description: " + "x" * 70000 + "\nspace:\n  x: {type: float, low: 0, high: 1}\n")
put("deep_flow_100000.yaml", head + "space:\n  x: {type: categorical, values: " + "[" * 100000 + "]" * 100000 + "}\n")
put("deep_flow_2000.yaml", head + "space:\n  x: {type: categorical, values: " + "[" * 2000 + "]" * 2000 + "}\n")
block = head + "space:\n  x:\n"
for d in range(400):
    block += "  " * (d + 2) + "k%d:\n" % d
put("deep_block_400.yaml", block + "  " * 402 + "v: 1\n")
bomb = head + "space:\n  x: {type: float, low: 0, high: 1}\n"
bomb += "lol0: &l0 [" + ", ".join(["lol"] * 100) + "]\n"
for i in range(1, 12):
    bomb += "lol%d: &l%d [" % (i, i) + ", ".join(["*l%d" % (i - 1)] * 100) + "]\n"
put("alias_bomb_100_12.yaml", bomb)
rng = random.Random(22)
put("binary_10MB.yaml", bytes(rng.getrandbits(8) for _ in range(10 * 1024 * 1024)))
put("binary_200KB.yaml", b"name: " + bytes(rng.getrandbits(8) for _ in range(200 * 1024)))
put("nodes_50001.yaml", head + "space:\n" + "".join("  p%d: {type: categorical, values: [%s]}\n" % (i, ",".join(["1"] * 9000)) for i in range(6)))
PY
check "$work/list_500000.yaml" "bytes; the limit is 262144"
check "$work/list_10001.yaml" "space.x.values: more than 10000 items; the limit is 10000"
check "$work/block_list_10001.yaml" "space.x.values: more than 10000 items"
check "$work/env_10001.yaml" "env: more than 10000 entries"
check "$work/params_10001.yaml" "space: more than 10000 entries"
check "$work/long_scalar.yaml" "description: a value of 70000 bytes; the limit is 65536"
check "$work/deep_flow_100000.yaml" "nested deeper than 32 levels"
check "$work/deep_flow_2000.yaml" "nested deeper than 32 levels"
check "$work/deep_block_400.yaml" "space.x.k0.k1"
check "$work/alias_bomb_100_12.yaml" "(an alias counts at each use); refused"
check "$work/binary_10MB.yaml" "bytes; the limit is 262144"
check "$work/binary_200KB.yaml" "a spec is UTF-8 text"
check "$work/nodes_50001.yaml" "the spec has more than 50000 values"

echo "bad specs: $checked checked, $failures failed"
[[ $failures -eq 0 ]]
