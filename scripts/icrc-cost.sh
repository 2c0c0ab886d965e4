#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# What the ICRC's CRC-32 costs on each cached kernel: builds scripts/icrc-cost/icrc_cost.ko
# (crc32_le over 64-, 1024- and 4096-byte chunks, timed with ktime; then five rounds of a
# transmit's copy and CRC, memcpy and crc32_le against one loop as rrxe_glue_copy_crc, and
# of a receive's check, crc32_le against that loop's tables without the copy) against each
# kernel's tree, boots one TCG guest of that kernel and prints its figures. Linux 6.12's
# crc32_le is the generic slice-by-8 table; 7.3's, as built here (no CONFIG_CRC_OPTIMIZATIONS),
# the CRC library's byte-at-a-time code. A measurement, not a test: TCG's figures are relative.
# --kbuild DIR measures on the kernel built in that cache directory instead of the test
# kernel of each series (the benchmark kernel's: ~/.cache/rrxe/kernel-6.12-<key>).
#   scripts/icrc-cost.sh [--kernel 6.12|7.3]... [--kbuild DIR] [--mib N]
set -euo pipefail
cd "$(dirname "$0")/.."
kernels=() mib=64 kbuild=
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '3,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
    --kernel) kernels+=("${2:?--kernel needs a series}"); shift 2 ;;
    --kbuild) kbuild=$(realpath "${2:?--kbuild needs a directory}"); [ -d "$kbuild/linux" ] || { echo "icrc-cost: no kernel tree in $kbuild/linux" >&2; exit 2; }; shift 2 ;;
    --mib) mib=${2:?--mib needs a number}; [[ $mib =~ ^[1-9][0-9]{0,3}$ ]] || { echo "icrc-cost: --mib takes 1..9999" >&2; exit 2; }; shift 2 ;;
    *) echo "icrc-cost: unknown argument '$1'" >&2; sed -n '12s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
  esac
done
[ ${#kernels[@]} -gt 0 ] || kernels=(6.12 7.3)
for k in "${kernels[@]}"; do
  (
    export RRXE_KERNEL=$k
    unset RRXE_KBUILD KDIR RRXE_MODROOT
    [ -z "$kbuild" ] || export RRXE_KBUILD=$kbuild
    . scripts/env.sh
    rrxe_kernel_check icrc-cost || exit 2
    [ -f "$KDIR/include/config/kernel.release" ] || { echo "icrc-cost: kernel $k is not built (scripts/build-kernel.sh --kernel $k)" >&2; exit 1; }
    rel=$(cat "$KDIR/include/config/kernel.release")
    b=scripts/icrc-cost/build-$rel
    mkdir -p "$b" && cp scripts/icrc-cost/icrc_cost.c scripts/icrc-cost/Kbuild "$b/"
    llvm=$(grep -q '^CONFIG_CC_IS_CLANG=y' "$KDIR/.config" && echo -19 || true)
    make -s -C "$KDIR" M="$PWD/$b" ${llvm:+LLVM=$llvm CC=clang$llvm LD=ld.lld$llvm} modules >/dev/null
    echo "== kernel $k ($rel)"
    qemu/run-vms --vms 1 --timeout 600 --name "icrc-cost-$k" scripts/icrc-cost/guest.sh "$mib" >/dev/null || true
    sed -n '/^RRXE-BOOTED/,$p' "qemu/out/icrc-cost-$k-vm0.out" | grep -v '^RRXE-'
  )
done
