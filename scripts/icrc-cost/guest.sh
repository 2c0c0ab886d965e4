#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of scripts/icrc-cost.sh: load the measuring module (its load fails on purpose
# after it printed) and show its lines.
insmod "$(dirname "$0")/build-$(uname -r)/icrc_cost.ko" mib="${1:-64}" 2>/dev/null
dmesg | grep 'icrc_cost:' | sed 's/^\[[^]]*\] //'
grep -m1 -o -w 'pclmulqdq' /proc/cpuinfo | sed 's/^/cpu flag: /'
