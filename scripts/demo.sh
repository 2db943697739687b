#!/usr/bin/env bash
# The main job on the embedded default: build, then `ladder demo` (a local coordinator + worker, 8 LibTorch
# trials on the digits data, 2 at a time, leaderboard and best configuration; everything lands in ./ladder.db).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bash "$here/scripts/build.sh"
exec "$here/build/bin/ladder" demo "$@"
