#!/usr/bin/env bash
# bench/gpu --quick, the GPU check's CPU run, keeps working: it exits 0 and its last line is one JSON object that
# says it ran on the CPU, with every workload's samples/s for ladder-train and torch eager and the 2-rank step.
# Exit 77 (skipped) where bench/gpu skips: /usr/bin/python3 has no torch.
# usage: gpu_quick_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
out=$(mktemp); trap 'rm -f "$out"' EXIT
LADDER_BUILD_DIR="$build" "$src/bench/gpu" --quick >"$out" 2>&1
rc=$?
if [ $rc = 77 ]; then tail -1 "$out"; exit 77; fi
if [ $rc != 0 ]; then echo "bench/gpu --quick exited $rc:"; tail -40 "$out"; exit 1; fi
tail -1 "$out" | /usr/bin/python3 -c '
import json, sys
line = sys.stdin.read()
r = json.loads(line)
assert r["device"] == "cpu", r["device"]
assert "untested" in r["note"], r.get("note")
want = ["mlp", "cnn", "unet", "transformer", "cosmo", "torchscript"]
assert sorted(r["workloads"]) == sorted(want), sorted(r["workloads"])
for w, v in r["workloads"].items():
    assert v["ladder_samples_per_s"] > 0 and v["eager_samples_per_s"] > 0, (w, v)
    assert v["ladder_mfu"] > 0, (w, v)
assert r["allreduce"]["ranks"] == 2 and r["allreduce"]["ladder_samples_per_s"] > 0, r["allreduce"]
assert set(r["stage_s"]) == {"detect", "build", "describe", "workloads", "allreduce"}, r["stage_s"]
print("bench/gpu --quick: ok:", line.strip()[:200])
' || { echo "bench/gpu --quick: its last line is not what it should be:"; tail -40 "$out"; exit 1; }
