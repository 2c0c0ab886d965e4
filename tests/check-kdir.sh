#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The module build's early refusals (scripts/check-kdir.sh, run by `make`): against fake
# kernel trees that each lack one thing, `make KDIR=...` stops within seconds with the one
# line that names it. Prints TAP.
#   tests/check-kdir.sh [--help]
set -uo pipefail
case "${1:-}" in -h|--help) sed -n '3,6s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."
n=0 bad=0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
rustc_v=$(/usr/bin/rustc --version)
# fake NAME CONFIG-LINES...: a "built" tree with that .config.
fake() {
  local d=$t/$1; shift
  mkdir -p "$d/rust"; : > "$d/Module.symvers"; : > "$d/rust/libkernel.rmeta"
  printf '%s\n' "$@" > "$d/.config"
  echo "$d"
}
good=(CONFIG_RUST=y CONFIG_INFINIBAND=y CONFIG_INFINIBAND_USER_ACCESS=y CONFIG_NET_UDP_TUNNEL=m "CONFIG_RUSTC_VERSION_TEXT=\"$rustc_v\"")
# refuses NAME KDIR PATTERN: make stops, in under 10 s, saying PATTERN.
refuses() {
  local out rc; n=$((n + 1))
  out=$(timeout 10 make -s KDIR="$2" RUSTC=/usr/bin/rustc modules 2>&1); rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "$3" <<<"$out"; then
    echo "ok $n - check-kdir: $1"
  else
    bad=$((bad + 1)); echo "not ok $n - check-kdir: $1 (exit $rc)"; echo "$out" | tail -n 5 | sed 's/^/# /'
  fi
}
refuses "no tree at KDIR" "$t/none" "no kernel tree at KDIR"
d=$(fake unconfigured); rm "$d/.config"
refuses "a tree without .config" "$d" "not a configured kernel tree"
d=$(fake unbuilt "${good[@]}"); rm "$d/Module.symvers"
refuses "a tree not built (no Module.symvers)" "$d" "is not built"
refuses "no CONFIG_RUST" "$(fake norust "${good[@]:1}")" "no Rust support (CONFIG_RUST=y)"
refuses "no CONFIG_INFINIBAND" "$(fake noib CONFIG_RUST=y CONFIG_INFINIBAND_USER_ACCESS=y CONFIG_NET_UDP_TUNNEL=y)" "no RDMA core (CONFIG_INFINIBAND"
refuses "no CONFIG_INFINIBAND_USER_ACCESS" "$(fake nouverbs CONFIG_RUST=y CONFIG_INFINIBAND=m CONFIG_NET_UDP_TUNNEL=y)" "no user verbs"
refuses "no CONFIG_NET_UDP_TUNNEL" "$(fake nudp CONFIG_RUST=y CONFIG_INFINIBAND=m CONFIG_INFINIBAND_USER_ACCESS=m)" "no UDP tunnel sockets"
d=$(fake nometa "${good[@]}"); rm "$d/rust/libkernel.rmeta"
refuses "no Rust build metadata" "$d" "no Rust build metadata"
refuses "another rustc than the kernel's (names the one needed)" \
  "$(fake oldrustc "${good[@]:0:4}" 'CONFIG_RUSTC_VERSION_TEXT="rustc 1.85.1 (4eb161250 2025-03-15)"')" \
  "was built with 'rustc 1.85.1 (4eb161250 2025-03-15)'"
echo "1..$n"
[ "$bad" = 0 ]
