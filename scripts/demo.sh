#!/usr/bin/env bash
# The main job on the embedded default: build, then `ladder demo` (a local coordinator + worker, 8 LibTorch
# trials on the digits data, 2 at a time, leaderboard and best configuration; everything lands in ./ladder.db).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# Only what the demo runs: the CLI (its in-process coordinator and worker) and the trainer its trials run; the
# tests and benchmarks are built by scripts/test.sh.
bash "$here/scripts/build.sh" ladder ladder-train
exec "$here/${BUILD_DIR:-build}/bin/ladder" demo "$@"
