#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds the tests/user programs for a guest root filesystem, with that root's compiler,
# headers and libibverbs, and prints the directory they are in.
#   scripts/build-user-tests.sh --root bookworm|trixie|sid
# The root (scripts/build-rootfs.sh) must be cached. The sources (tests/user and include/)
# are copied into a temporary directory inside the root, built there with `chroot ROOT make`
# and the programs copied to build/root-<suite>/user/ (scripts/env.sh: rrxe_root_user_dir),
# where the guests on that root find them (qemu/run-vms sets RRXE_USER_BIN).
set -euo pipefail
usage() { sed -n '3,9s/^# \{0,1\}//p' "$0"; }
suite=
while [ $# -gt 0 ]; do
  case "$1" in
    --root) [ $# -ge 2 ] || { usage >&2; exit 2; }; suite=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build-user-tests: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
. "$(dirname "$0")/env.sh"
[ -n "$suite" ] || { usage >&2; exit 2; }
RRXE_ROOTFS=$suite rrxe_rootfs_check build-user-tests || exit 2
root=$(rrxe_rootfs_dir "$suite")
[ -f "$root/.rrxe-done" ] || { echo "build-user-tests: no $suite root at $root (run scripts/build-rootfs.sh --root $suite)" >&2; exit 1; }
out=$(rrxe_root_user_dir "$suite")

work=$(mktemp -d "$root/tmp/rrxe-user.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tests"
cp -r "$RRXE_ROOT/include" "$work/"
cp -r "$RRXE_ROOT/tests/user" "$work/tests/"
make -s -C "$work/tests/user" clean >/dev/null
nice chroot "$root" make -s -C "${work#"$root"}/tests/user" >&2
progs=$(make -s -C "$work/tests/user" -pn 2>/dev/null | sed -n 's/^PROGS *:\{0,1\}= *//p' | head -n 1)
rm -rf "$out.tmp"; mkdir -p "$out.tmp"
for p in $progs; do cp "$work/tests/user/$p" "$out.tmp/"; done
rm -rf "$out"; mv "$out.tmp" "$out"
echo "$out"
