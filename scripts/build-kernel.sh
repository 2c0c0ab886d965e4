#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds (once) a Rust-enabled guest kernel and caches it.
#   scripts/build-kernel.sh [--kernel 6.12|7.3] [--cc clang|gcc]
# The source is Debian's linux-source-<series> (scripts/kernel-source.sh), configured with
# tinyconfig + qemu/kernel.config (+ qemu/kernel-<series>.config if present), built into
# $RRXE_CACHE/kernel-<series>-<key>, where <key> hashes the series, the source version,
# the fragments, the recipe and the toolchain versions (scripts/env.sh). A finished build
# leaves a stamp file; a later call with the same key returns at once. The default series
# is 6.12, or $RRXE_KERNEL.
# --cc (or $RRXE_CC): the compiler, clang-19 with ld.lld-19 (the default) or the host's
# gcc and binutils; a gcc tree is cached apart, in kernel-<series>-gcc-<key>.
set -euo pipefail
usage() { sed -n '3,12s/^# \{0,1\}//p' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --kernel) [ $# -ge 2 ] || { usage >&2; exit 2; }; export RRXE_KERNEL=$2; shift 2 ;;
    --cc) [ $# -ge 2 ] || { usage >&2; exit 2; }; export RRXE_CC=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build-kernel: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
given_kbuild=${RRXE_KBUILD:-}
. "$(dirname "$0")/env.sh"
rrxe_kernel_check build-kernel || exit 2
rrxe_cc_check build-kernel || exit 2
# The source first: its package version is part of the cache key, and on a new machine
# 7.3's is known only once kernel-source.sh has fetched it.
tarball=$(bash "$RRXE_ROOT/scripts/kernel-source.sh")
if [ -z "$given_kbuild" ]; then
  unset RRXE_KBUILD KDIR RRXE_MODROOT
  . "$RRXE_ROOT/scripts/env.sh"
fi

stamp=$RRXE_KBUILD/.done
if [ -f "$stamp" ]; then
  echo "kernel $RRXE_KERNEL ($RRXE_CC): cached at $RRXE_KBUILD"
  exit 0
fi
mkdir -p "$RRXE_CACHE"
rm -rf "$RRXE_KBUILD.tmp"
mkdir -p "$RRXE_KBUILD.tmp"
start=$(date +%s)
echo "kernel $RRXE_KERNEL: unpacking $tarball"
tar -xJf "$tarball" -C "$RRXE_KBUILD.tmp"
mv "$RRXE_KBUILD.tmp"/linux-source-* "$RRXE_KBUILD.tmp/linux"
cd "$RRXE_KBUILD.tmp/linux"
make "${KMAKE_FLAGS[@]}" tinyconfig >/dev/null
mapfile -t frags < <(rrxe_kernel_fragments)
scripts/kconfig/merge_config.sh -m .config "${frags[@]}" >/dev/null
make "${KMAKE_FLAGS[@]}" olddefconfig >/dev/null
# Every option the fragments ask for must survive olddefconfig (a later fragment's line
# for an option overrides an earlier one's).
bad=0
while IFS= read -r line; do
  case "$line" in
    CONFIG_*=*)
      opt=${line%%=*}; want=${line#*=}
      [ "$want" = n ] && { grep -q "^$opt=" .config && { echo "kernel: $opt should be off"; bad=1; }; continue; }
      grep -qx "$opt=$want" .config || { echo "kernel: $opt=$want did not survive olddefconfig: $(grep "^$opt=" .config || echo unset)"; bad=1; } ;;
    "# CONFIG_"*" is not set")
      opt=${line#\# }; opt=${opt%% *}
      grep -q "^$opt=" .config && { echo "kernel: $opt should be off"; bad=1; } ;;
  esac
done < <(cat "${frags[@]}" | awk '{ o = $0; sub(/^# /, "", o); sub(/[= ].*/, "", o); if (o ~ /^CONFIG_/) last[o] = $0; else print } END { for (o in last) print last[o] }')
[ "$bad" = 0 ] || { echo "kernel: config fragment not honoured"; exit 1; }
make "${KMAKE_FLAGS[@]}" rustavailable
echo "kernel $RRXE_KERNEL ($RRXE_CC): building bzImage and modules (7 to 11 min on 2 cores; log: $RRXE_KBUILD.tmp/linux/build.log)"
make "${KMAKE_FLAGS[@]}" -j"$(( $(nproc) + 1 ))" bzImage modules > build.log 2>&1 &
mk=$!
# A progress line every 30 s: how long, how many objects so far, the last step.
while kill -0 "$mk" 2>/dev/null; do
  for _ in $(seq 30); do kill -0 "$mk" 2>/dev/null || break; sleep 1; done
  kill -0 "$mk" 2>/dev/null || break
  echo "kernel $RRXE_KERNEL: $(( $(date +%s) - start )) s, $(grep -c '^  [A-Z]' build.log) steps, at: $(grep '^  [A-Z]' build.log | tail -n 1 | sed 's/^ *//')"
done
wait "$mk" || { tail -n 60 build.log; echo "kernel $RRXE_KERNEL: build failed (log: $PWD/build.log)"; exit 1; }
make "${KMAKE_FLAGS[@]}" INSTALL_MOD_PATH="$RRXE_KBUILD.tmp/modroot" modules_install > /dev/null
cd /
rm -rf "$RRXE_KBUILD"
mv "$RRXE_KBUILD.tmp" "$RRXE_KBUILD"
end=$(date +%s)
echo "$((end - start))" > "$RRXE_KBUILD/build-seconds"
touch "$stamp"
echo "kernel $RRXE_KERNEL ($RRXE_CC): built in $((end - start)) s at $RRXE_KBUILD"
