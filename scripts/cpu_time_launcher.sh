#!/usr/bin/env bash
# A compiler/linker launcher that records each step's CPU time: appends "USER SYS WALL OUTPUT" (seconds, the
# file after -o) to $CPUTIME_LOG. Per-unit CPU seconds hold on a loaded machine, where .ninja_log's wall times do
# not. Use (docs/BENCHMARKS.md, "The demo on a fresh clone"):
#   cmake -S . -B B -G Ninja -DCMAKE_CXX_COMPILER_LAUNCHER=$PWD/scripts/cpu_time_launcher.sh \
#     -DCMAKE_CXX_LINKER_LAUNCHER=$PWD/scripts/cpu_time_launcher.sh
#   CPUTIME_LOG=$PWD/B/cpu.log cmake --build B -j2 --target ladder ladder-train
#   scripts/build_schedule.py B B/cpu.log ladder ladder-train
out="" prev=""
for a in "$@"; do
  [[ $prev == -o ]] && out=$a
  prev=$a
done
times=$(mktemp)
trap 'rm -f "$times"' EXIT
/usr/bin/time -f "%U %S %e" -o "$times" "$@"
rc=$?
echo "$(tail -n 1 "$times") $out" >>"${CPUTIME_LOG:?set CPUTIME_LOG to the log file}"
exit $rc
