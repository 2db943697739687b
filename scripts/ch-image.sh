#!/bin/sh
# Builds a Charliecloud image directory from an installed ladder (`cmake --install build --prefix PREFIX`), for a
# spec's `container: {runtime: charliecloud, image: IMAGE}` (docs/guide/containers.md):
#
#   IMAGE/usr/...         the install prefix, whole (bin/, share/ladder, the docs): /usr/bin/ladder-train, on
#                         every PATH (the ranks get the host's; the trainer finds its data in ../share/ladder)
#   IMAGE/usr/lib/...     every shared library the prefix's programs load (the closure ldd finds: LibTorch,
#                         libgomp, BLAS, Gloo, ...), each at the path the host's loader found it, so the image needs
#                         no ld.so.cache; and the loader itself
#   IMAGE/usr/bin/sh ...  a minimal shell and tools (sh, env, cat, ls, mkdir) for `sh -c` commands
#   IMAGE/etc/...         passwd, group, hosts, resolv.conf (ch-run binds the host's over them), and the mount
#                         points ch-run needs (dev, proc, sys, tmp, home, mnt, run), with /mnt/0-9 as Charliecloud's
#                         ch-image makes them: ladder binds each trial's directory (LADDER_TRIAL_DIR) at /mnt/9
#
# The host's merged /usr layout is kept (bin -> usr/bin, lib -> usr/lib, lib64 -> usr/lib64 as relative links).
# The image is made readable by every user whatever the umask (ch-run runs as the user who starts it: the
# trials' user), then checked with `ch-run IMAGE -- ladder-train --version` where ch-run is installed.
#
# Usage: scripts/ch-image.sh [--dir PATH]... PREFIX IMAGE
#   --dir PATH   also create PATH (absolute) in the image: a bind's destination outside /tmp, such as the
#                coordinator's checkpoint root (ch-run mounts the image read-only: a destination must exist)
# IMAGE must not exist yet, or be an empty directory. The libraries are the host's: build the image on a machine
# like the nodes (the same distribution), as the install itself. GPUs: `ch-fromhost --nvidia IMAGE` afterwards.
set -eu
usage() { echo "usage: $0 [--dir PATH]... PREFIX IMAGE" >&2; exit 2; }
fail() { echo "ch-image.sh: $*" >&2; exit 1; }
dirs=""
while [ $# -gt 0 ]; do
  case $1 in
    --dir) [ $# -ge 2 ] || usage
           case $2 in */..|*/../*) fail "--dir $2: no '..' (it would leave the image)";; /*) ;;
                      *) fail "--dir $2: an absolute path inside the image";; esac
           dirs="$dirs
$2"; shift 2;;
    --help|-h) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0;;
    --) shift; break;;
    -*) usage;;
    *) break;;
  esac
done
[ $# -eq 2 ] || usage
prefix=$1 image=$2
[ -x "$prefix/bin/ladder-train" ] || fail "$prefix/bin/ladder-train not found: PREFIX is a \`cmake --install\` prefix"
if [ -e "$image" ] && [ -n "$(ls -A "$image")" ]; then fail "$image exists and is not empty"; fi
umask 022  # an image for every user: its directories open whatever the caller's umask
mkdir -p "$image"
image=$(cd "$image" && pwd -P) prefix=$(cd "$prefix" && pwd -P)
case $image/ in "$prefix"/*) rmdir "$image" 2>/dev/null; fail "$image is inside $prefix: it would copy itself";; esac

# The top-level layout, merged /usr as on the host (relative links only: an absolute one would lead a copy
# below it out of the image onto the host's own /usr).
mkdir -p "$image/usr/bin" "$image/usr/lib"
for d in bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$d" ]; then
    target=$(readlink "/$d")
    case $target in /*) mkdir -p "$image/$d";; *) mkdir -p "$image/$target"; ln -s "$target" "$image/$d";; esac
  elif [ -d "/$d" ]; then
    mkdir -p "$image/$d"
  fi
done
for d in dev proc sys tmp home mnt run etc; do mkdir -p "$image/$d"; done
for n in 0 1 2 3 4 5 6 7 8 9; do mkdir -p "$image/mnt/$n"; done  # /mnt/9: the trial's directory
chmod 1777 "$image/tmp"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$image/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$image/etc/group"
: >"$image/etc/hosts"
: >"$image/etc/resolv.conf"
printf '%s\n' "$dirs" | while IFS= read -r d; do [ -z "$d" ] || mkdir -p "$image$d"; done

# The prefix, whole, at /usr: its programs on any PATH the ranks bring from the host.
cp -R "$prefix/." "$image/usr/"

# The shared libraries: ldd's closure of every program in the prefix and of the shell tools, each copied (its
# content, links followed) to the path ldd names.
tools=""
for t in sh env cat ls mkdir; do
  p=$(command -v "$t") || fail "$t not found on PATH"
  tools="$tools $p"
  cp -L "$p" "$image/usr/bin/$t"
done
libs=$(mktemp)
trap 'rm -f "$libs"' EXIT
for f in "$prefix"/bin/* $tools; do
  [ -f "$f" ] || continue
  out=$(ldd "$f" 2>/dev/null) || continue  # not a dynamic executable (a script)
  if echo "$out" | grep -q 'not found'; then fail "$f: $(echo "$out" | grep 'not found' | head -3)"; fi
  echo "$out" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' >>"$libs"
done
sort -u "$libs" | while IFS= read -r lib; do
  mkdir -p "$image$(dirname "$lib")"
  cp -L "$lib" "$image$lib"
done

# Readable and searchable by all (ch-run runs as the trial's user); nothing setuid.
chmod -R go+rX,go-w,ug-s "$image"
chmod 1777 "$image/tmp"
echo "ch-image.sh: $image: $(du -sh "$image" | cut -f1), $(sort -u "$libs" | wc -l) libraries"
if command -v ch-run >/dev/null 2>&1; then
  USER=${USER:-$(id -un)} ch-run "$image" -- /usr/bin/ladder-train --version >/dev/null ||
    fail "the image is built, but ch-run $image -- /usr/bin/ladder-train --version failed (above)"
  echo "ch-image.sh: checked: ch-run $image -- /usr/bin/ladder-train --version"
fi
