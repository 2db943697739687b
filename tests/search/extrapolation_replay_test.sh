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
echo "$out" | grep -q '153 saved runs reused' || { echo "FAIL: expected the 153 saved runs to be reused"; exit 1; }
echo "$out" | grep -q '; 0 trainer runs,' ||
  { echo "FAIL: the saved runs do not cover the protocol (it ran the trainer)"; exit 1; }
expected='"log2_err": 0.1017, "regret": 0.0005, "regret_linear": 0.0011, "regret_sqrt": 0.3198'
echo "$out" | tail -1 | grep -qF "$expected" || { echo "FAIL: the last line differs from {$expected, ...}"; exit 1; }
echo "$out" | tail -1 | grep -qF '"digits_regret": 0.0654' ||
  { echo "FAIL: digits (reported, not gated) expected at 6.54% regret"; exit 1; }
echo "$out" | tail -1 | grep -qF '"interval_coverage": 1.0' ||
  { echo "FAIL: the plan's stated intervals should hold the oracle's LR and loss at every --quick target"; exit 1; }
echo "$out" | tail -1 | grep -qF '"regret_interval": [0.0002, 0.0009]' ||
  { echo "FAIL: the fit's worst regret has no interval [0.0002, 0.0009] (the oracle's own noise)"; exit 1; }
# the climb (issue 38): one probe of 3 LRs at 1,024 within the 10% budget (the last it affords: it spans the laws);
# both targets flagged before it
echo "$out" | grep -qF 'climb: probe at batch 1024 (16 micro-batches of the sweep'"'"'s largest), seed 100, lrs 0.3373, 0.4779, 0.6771' ||
  { echo "FAIL: the climb's probe on the synthetic task: expected batch 1024, LRs 0.3373, 0.4779, 0.6771"; exit 1; }
expected='"climb_log2_err": 0.2254, "climb_log2_err_median": 0.1794, "climb_regret": 0.0026, "climb_within_goal": 2, "coverage_80": 1.0, "coverage_90": 1.0, "coverage_instances": 2, "confident_misses": 0, "probe_cost_fraction": 0.0789'
echo "$out" | tail -1 | grep -qF "$expected" || { echo "FAIL: the climb's figures differ from {$expected, ...}"; exit 1; }
# digits at 10 epochs (bench/data/extrapolation/digits-10-epochs-quick.json.gz): the oracle at batch 1,024 has a
# cliff inside its window; its curve must stay a curve of the runs (no negative loss, its best LR 0.88)
out=$(/usr/bin/python3 "$src/bench/extrapolation" --quick --tasks digits --epochs 10 \
      --reuse-runs "$src/bench/data/extrapolation/digits-10-epochs-quick.json.gz" --bin "$train" --fit-bin "$fit") ||
  { echo "$out"; echo "bench/extrapolation failed (digits, 10 epochs)"; exit 1; }
echo "$out" | grep -q '; 0 trainer runs,' ||
  { echo "FAIL: digits-10-epochs-quick.json.gz does not cover the protocol (it ran the trainer)"; exit 1; }
echo "$out" | grep -E '^ +1024 +0.8798 +0.1715 \| +fit' ||
  { echo "FAIL: digits at 10 epochs, batch 1,024: expected the oracle LR 0.8798 at loss 0.1715"; exit 1; }
echo "$out" | grep -qE '^ +[0-9]+ +[0-9.e-]+ +-' && { echo "FAIL: a negative oracle loss"; exit 1; }
echo "$out" | grep -qF 'chosen WITH the oracle curves has worst-case regret 3.58%' ||
  { echo "FAIL: digits at 10 epochs: expected the hindsight bound 3.58%"; exit 1; }
echo "PASS"
