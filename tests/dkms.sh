#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# DKMS end to end against a built kernel tree, in private DKMS trees (nothing on this
# machine's /usr/src, /var/lib/dkms or /lib/modules changes):
#   tests/dkms.sh [KDIR]          (default: the cached tree of $RRXE_KERNEL)
# dkms add (a copy of the checkout's tracked and new files), dkms build against KDIR with
# --kernelsourcedir, dkms install into a private install tree; checks the module lands in
# updates/dkms and carries dkms.conf's version, then dkms remove. Prints TAP.
set -uo pipefail
case "${1:-}" in -h|--help) sed -n '3,8s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."
. scripts/env.sh
kdir=${1:-$KDIR}
n=0 bad=0
ok() { n=$((n + 1)); echo "ok $n - dkms: $*"; }
not_ok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - dkms: $*"; }
check() { local d=$1 out; shift; if out=$("$@" 2>&1); then ok "$d"; else not_ok "$d"; echo "$out" | tail -n 25 | sed 's/^/# /'; fi; }
command -v dkms >/dev/null || { not_ok "dkms is installed (scripts/setup.sh installs it)"; echo "1..$n"; exit 1; }
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
rel=$(cat "$kdir/include/config/kernel.release")
t=$(mktemp -d /var/tmp/rrxe-dkms.XXXXXX)
trap '[ "$bad" = 0 ] && rm -rf "$t"' EXIT
opts=(--dkmstree "$t/dkms" --sourcetree "$t/src" --installtree "$t/install")
mkdir -p "$t/dkms" "$t/src/rrxe-$ver" "$t/install/$rel"
check "dkms.conf's version is the crate's ($ver)" \
  grep -qx "version = \"$ver\"" Cargo.toml
git ls-files -co --exclude-standard -z | cpio -0pdm --quiet "$t/src/rrxe-$ver"
check "dkms add rrxe/$ver" dkms add -m rrxe -v "$ver" "${opts[@]}"
check "dkms build rrxe/$ver -k $rel (KDIR $kdir)" \
  dkms build -m rrxe -v "$ver" -k "$rel" --kernelsourcedir "$kdir" "${opts[@]}"
check "dkms install rrxe/$ver -k $rel (private tree, no depmod)" \
  dkms install -m rrxe -v "$ver" -k "$rel" --kernelsourcedir "$kdir" --no-depmod "${opts[@]}"
ko=$(find "$t/install" -name 'rrxe.ko*' | head -n 1)
check "installed under $rel/updates/dkms" sh -c "echo '$ko' | grep -q '/$rel/updates/dkms/rrxe.ko'"
check "the installed module's version is $ver" sh -c "modinfo -F version '$ko' | grep -qx '$ver'"
check "dkms status shows it installed" sh -c "dkms status -m rrxe -v '$ver' -k '$rel' ${opts[*]} | grep -q installed"
check "dkms remove rrxe/$ver --all" dkms remove -m rrxe -v "$ver" --all --no-depmod "${opts[@]}"
echo "1..$n"
[ "$bad" = 0 ]
