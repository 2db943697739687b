#!/bin/sh
# An install that moves (issue 40): `cmake --install BUILD --prefix P --strip`, the prefix moved elsewhere, then,
# as an unprivileged user (uid 65534) with a clean environment, Lmod loads the installed modulefile (the Lua one,
# then the Tcl one) and a small search runs to the end from the moved tree: its trials' ladder-train found beside
# the worker, the digits data found beside the trainer (PREFIX/share/ladder). Nothing in the tree names the build
# directory, the source directory or the first prefix (readelf -d: no RPATH/RUNPATH; strings; grep of the data).
# The install runs under umask 077 (an admin's hardened shell; the CI's too).
# Usage: install_test.sh BUILD_DIR SOURCE_DIR. Skips (77) when not root (it changes user) or without Lmod.
set -eu
build=$1 src=$2
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to run as uid 65534"; exit 77; }
lmod=/usr/share/lmod/lmod/init/bash
[ -r "$lmod" ] || { echo "SKIP: Lmod is not installed (scripts/bootstrap.sh installs it)"; exit 77; }
tmp=$(mktemp -d /tmp/ladder-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
# Installed as an admin with a restrictive umask would: the tree must still be open to the users it is for.
umask 077
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$tmp/first" --strip >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
mv "$tmp/first" "$tmp/moved"
p=$tmp/moved
for b in ladder ladder-server ladder-worker ladder-train ladder-stage ladder-detach; do
  [ -x "$p/bin/$b" ] || fail "$b not installed"
  if readelf -d "$p/bin/$b" | grep -qE 'RPATH|RUNPATH'; then fail "$b has an RPATH/RUNPATH: $(readelf -d "$p/bin/$b" | grep -E 'RPATH|RUNPATH')"; fi
  for d in "$build" "$src" "$tmp/first"; do
    if strings "$p/bin/$b" | grep -qF "$d"; then fail "$b names $d: $(strings "$p/bin/$b" | grep -F "$d" | head -3)"; fi
  done
done
for f in share/ladder/digits.csv.gz share/ladder/demo.yaml share/ladder/specs/scales-synthetic.yaml \
         share/doc/ladder/README.md share/doc/ladder/docs/guide/spec.md share/modulefiles/ladder/0.1.0.lua \
         share/modulefiles/ladder/0.1.0; do
  [ -r "$p/$f" ] || fail "$f not installed"
done
# The Charliecloud image builder, run from the prefix (docs/guide/containers.md; container_train_test runs it).
[ -x "$p/share/ladder/ch-image.sh" ] || fail "share/ladder/ch-image.sh not installed as a program"
# Every relative link of the installed pages leads to an installed file (the README's docs/guide/..., the
# guide's ../../README.md): a newcomer reading the docs of a site-wide install follows them.
dead=$(cd "$p/share/doc/ladder" && /usr/bin/python3 -c '
import os, re, sys
for root, _, files in os.walk("."):
    for f in files:
        if not f.endswith(".md"):
            continue
        page = os.path.join(root, f)
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", open(page, encoding="utf-8").read()):
            if "://" not in target and not target.startswith("mailto:") and \
                    not os.path.exists(os.path.normpath(os.path.join(root, target))):
                print(page, "->", target)
')
[ -z "$dead" ] || fail "installed docs with dead links: $dead"
# The data and the modulefiles (the docs are prose: a page may quote any path).
if grep -rlF -e "$build" -e "$tmp/first" "$p/share/ladder" "$p/share/modulefiles" >/dev/null; then
  fail "installed data names the build tree or the first prefix: $(grep -rlF -e "$build" -e "$tmp/first" "$p/share/ladder" "$p/share/modulefiles")"
fi

home=$tmp/home
mkdir "$home"
cat >"$home/check.yaml" <<'SPEC'
name: install-check
objective: {metric: val_accuracy, mode: max}
budget: {max_trials: 2, parallelism: 2}
sampler: {type: random, seed: 1}
command: [ladder-train, --lr, "{lr}", --epochs, "2", --seed, "{trial_number}"]
space:
  lr: {type: float, low: 0.01, high: 0.1, log: true}
SPEC
chown -R 65534:65534 "$home"
as_nobody() {
  setpriv --reuid=65534 --regid=65534 --clear-groups env -i HOME="$home" PATH=/usr/bin:/bin P="$p" LMOD="$lmod" \
    sh -c ". \"\$LMOD\"; module use \"\$P/share/modulefiles\"; module load ladder; $1"
}
out=$(as_nobody 'echo "root=$LADDER_ROOT"; command -v ladder; cd "$HOME" && ladder demo --spec check.yaml --slots 2 --http ""' 2>&1) ||
  { echo "$out"; fail "the search did not run as uid 65534 from the moved tree"; }
echo "$out" | tail -4
echo "$out" | grep -qxF "root=$p" || { echo "$out"; fail "the Lua modulefile did not set LADDER_ROOT to the moved prefix"; }
echo "$out" | grep -qxF "$p/bin/ladder" || { echo "$out"; fail "ladder on PATH is not the moved tree's"; }
echo "$out" | grep -qF "best configuration" || { echo "$out"; fail "the search did not end with a best trial"; }
[ "$(echo "$out" | grep -cE '^[0-9]+ +[0-9]+ +completed')" -eq 2 ] || { echo "$out"; fail "expected 2 completed trials"; }
# The Tcl modulefile (environment-modules' format, read by Lmod too), alone.
mv "$p/share/modulefiles/ladder/0.1.0.lua" "$tmp/aside.lua"
out=$(as_nobody 'echo "root=$LADDER_ROOT"; ladder --version' 2>&1) || { echo "$out"; fail "the Tcl modulefile"; }
echo "$out" | grep -qxF "root=$p" || { echo "$out"; fail "the Tcl modulefile did not set LADDER_ROOT to the moved prefix"; }
echo "PASS"
