#!/bin/sh
# bench/extrapolation --quick replayed from the runs it measured (bench/data/extrapolation/quick.json.gz): every
# run the protocol asks for is among the saved ones (no trainer runs), and the fit reproduces the --quick figures
# that docs/BENCHMARKS.md reports. When the fit changes, re-measure and update both.
# Usage: extrapolation_replay_test.sh SOURCE_DIR LADDER_TRAIN LADDER_EXTRAPOLATION_FIT
set -u
src=$1 train=$2 fit=$3
out=$(/usr/bin/python3 "$src/bench/extrapolation" --quick --reuse-runs "$src/bench/data/extrapolation/quick.json.gz" \
      --bin "$train" --fit-bin "$fit") || { echo "$out"; echo "bench/extrapolation failed"; exit 1; }
echo "$out" | tail -3
echo "$out" | grep -q '136 saved runs reused' || { echo "FAIL: expected the 136 saved runs to be reused"; exit 1; }
echo "$out" | grep -q '; 0 trainer runs,' || { echo "FAIL: the saved runs do not cover the protocol (it ran the trainer)"; exit 1; }
expected='"log2_err": 0.2738, "regret": 0.0654, "regret_linear": 0.6619, "regret_sqrt": 3.6717'
echo "$out" | tail -1 | grep -qF "$expected" || { echo "FAIL: the last line differs from {$expected, ...}"; exit 1; }
echo "PASS"
