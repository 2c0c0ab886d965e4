#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds (once) a Debian root filesystem for the test guests and prints its path.
#   scripts/build-rootfs.sh --root bookworm|trixie|sid
# mmdebstrap (variant essential plus $RRXE_ROOTFS_PACKAGES from scripts/env.sh: rdma-core,
# the verbs and rdma_cm tools, perftest, the compiler and headers tests/user builds with,
# and what the guest scripts call) from deb.debian.org into
# $RRXE_CACHE/rootfs-<suite>-<key>, <key> hashing the suite, the packages, the recipe and
# qemu/rootfs-init (the guest's first PID 1). Built in <dir>.tmp, renamed when complete; a
# later call with the same key returns at once. qemu/run-vms --root SUITE boots it.
set -euo pipefail
usage() { sed -n '3,10s/^# \{0,1\}//p' "$0"; }
suite=
while [ $# -gt 0 ]; do
  case "$1" in
    --root) [ $# -ge 2 ] || { usage >&2; exit 2; }; suite=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build-rootfs: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
. "$(dirname "$0")/env.sh"
[ -n "$suite" ] || { usage >&2; exit 2; }
RRXE_ROOTFS=$suite rrxe_rootfs_check build-rootfs || exit 2
command -v mmdebstrap >/dev/null || { echo "build-rootfs: mmdebstrap missing: apt-get install mmdebstrap (scripts/setup.sh does)" >&2; exit 1; }

dir=$(rrxe_rootfs_dir "$suite")
if [ -f "$dir/.rrxe-done" ]; then echo "$dir"; exit 0; fi
mkdir -p "$RRXE_CACHE"
rm -rf "$dir.tmp"
start=$(date +%s)
echo "build-rootfs: $suite into $dir" >&2
# Signatures are checked, but not the Release file's Valid-Until: sid's expires a week after
# it is published, and a mirror that lags (or an archive snapshot) would make it unusable.
# shellcheck disable=SC2086
nice mmdebstrap --variant=essential --mode=root --quiet \
  --include="$(echo $RRXE_ROOTFS_PACKAGES | tr ' ' ,)" \
  --aptopt='Acquire::Check-Valid-Until "false"' \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --customize-hook="install -m 755 '$RRXE_ROOT/qemu/rootfs-init' \"\$1/usr/local/sbin/rrxe-init\"" \
  --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
  "$suite" "$dir.tmp" http://deb.debian.org/debian >&2
secs=$(( $(date +%s) - start ))
mb=$(du -sm "$dir.tmp" | cut -f1)
{
  echo "suite $suite"
  echo "rdma-core $(chroot "$dir.tmp" dpkg-query -W -f='${Version}' rdma-core)"
  echo "seconds $secs"
  echo "mb $mb"
} > "$dir.tmp/.rrxe-info"
touch "$dir.tmp/.rrxe-done"
mv "$dir.tmp" "$dir"
echo "build-rootfs: $suite: $mb MB in $secs s ($(sed -n 's/^rdma-core /rdma-core /p' "$dir/.rrxe-info"))" >&2
echo "$dir"
