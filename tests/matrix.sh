#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A set of VM tests on every kernel x root filesystem cell this machine has cached: kernels
# built by scripts/build-kernel.sh under the current key (scripts/env.sh), roots built by
# scripts/build-rootfs.sh. One line per cell, then "N passed, N failed" over all of them.
#   tests/matrix.sh [--quick] [--kernel K]... [--root SUITE]...
# The set is tests/vm/sets/root, or tests/vm/sets/root-quick with --quick. --kernel and
# --root keep only those kernels and roots (each may repeat). Each cell is one
# `tests/run-all.sh --skip-setup --kernel K --root SUITE TESTS...` (rrxe.ko for K,
# tests/user and the provider for SUITE), its log in qemu/out/matrix-K-SUITE.log (named,
# with the cell's time, under its line).
set -uo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '3,11s/^# \{0,1\}//p' "$0"; }
set_file=tests/vm/sets/root only_k= only_r=
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) set_file=tests/vm/sets/root-quick; shift ;;
    --kernel) [ $# -ge 2 ] || { usage >&2; exit 2; }; only_k+=" $2"; shift 2 ;;
    --root) [ $# -ge 2 ] || { usage >&2; exit 2; }; only_r+=" $2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "matrix: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
. scripts/env.sh
mapfile -t tests < <(grep -v '^#' "$set_file" | xargs -n1)

kernels=() roots=()
for k in ${only_k:-$RRXE_KERNELS}; do
  RRXE_KERNEL=$k rrxe_kernel_check matrix || exit 2
  kb=$(unset RRXE_KBUILD KDIR RRXE_MODROOT; RRXE_KERNEL=$k; . scripts/env.sh; echo "$RRXE_KBUILD")
  if [ -f "$kb/.done" ]; then kernels+=("$k"); else echo "matrix: kernel $k not cached ($kb): skipped"; fi
done
for s in ${only_r:-$RRXE_ROOTFS_SUITES}; do
  RRXE_ROOTFS=$s rrxe_rootfs_check matrix || exit 2
  d=$(rrxe_rootfs_dir "$s")
  if [ -f "$d/.rrxe-done" ]; then roots+=("$s"); else echo "matrix: root $s not cached ($d): skipped"; fi
done
[ ${#kernels[@]} -gt 0 ] && [ ${#roots[@]} -gt 0 ] || { echo "matrix: no cell to run"; echo "0 passed, 0 failed"; exit 1; }

mkdir -p qemu/out
passed=0 failed=0 lines=()
for k in "${kernels[@]}"; do
  for s in "${roots[@]}"; do
    # rdma-core's upstream version in that root (44.0-2 -> 44, 56.1-1 -> 56.1).
    v=$(sed -n 's/^rdma-core //p' "$(rrxe_rootfs_dir "$s")/.rrxe-info" | sed 's/-[^-]*$//; s/\.0$//')
    log=qemu/out/matrix-$k-$s.log
    t=$SECONDS
    bash tests/run-all.sh --skip-setup --kernel "$k" --root "$s" "${tests[@]}" >"$log" 2>&1
    t=$((SECONDS - t))
    sum=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    p=${sum%% passed*}; f=${sum#*passed, }; f=${f%% failed}
    [ -n "$sum" ] || { p=0; f=1; }
    passed=$((passed + p)) failed=$((failed + f))
    line="matrix: kernel $k / rdma-core $v ($s): $p passed, $f failed"
    lines+=("$line")
    echo "$line"
    echo "  ${tests[*]}: $t s, log $log"
    grep '^  failed: ' "$log" | head -n 20
  done
done
echo
printf '%s\n' "${lines[@]}"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
