#!/usr/bin/env bash
# Refreshes the web dashboard's vendored files (server/http/web/vendor/) from the npm registry, exactly as
# server/http/web/package-lock.json pins them (npm ci checks the integrity hashes). Run it after changing
# package.json; the build itself never touches the network.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
web="$here/server/http/web"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp "$web/package.json" "$web/package-lock.json" "$tmp/"
(cd "$tmp" && npm ci --no-audit --no-fund --ignore-scripts >/dev/null)
cp "$tmp/node_modules/uplot/dist/uPlot.iife.min.js" "$tmp/node_modules/uplot/dist/uPlot.min.css" "$web/vendor/"
cp "$tmp/node_modules/uplot/LICENSE" "$web/vendor/uPlot.LICENSE"
echo "vendor_web: uplot $(node -p "require('$tmp/node_modules/uplot/package.json').version") -> $web/vendor/"
