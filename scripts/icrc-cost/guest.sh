#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of scripts/icrc-cost.sh: load the measuring module (its load fails on purpose
# after it printed) and show its lines.
#   scripts/icrc-cost/guest.sh [MIB]   (in a guest, run by qemu/run-vms)
case "${1:-}" in -h|--help) sed -n '3,5s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
insmod "$(dirname "$0")/build-$(uname -r)/icrc_cost.ko" mib="${1:-64}" 2>/dev/null
dmesg | grep 'icrc_cost:' | sed 's/^\[[^]]*\] //'
grep -m1 -o -w 'pclmulqdq' /proc/cpuinfo | sed 's/^/cpu flag: /'
