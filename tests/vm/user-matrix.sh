#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 900
# The perftest matrix over rrxe between two VMs: every message size perftest's -a sweeps (2 B
# .. 8 MiB, 2 B .. MTU for UD) for bandwidth and latency of send, write and read; RC, UC and
# UD where perftest supports them (UC sweeps only write bandwidth, whose result does not
# depend on delivery; UC send and latency run at 64 KiB: UC has no retransmission, and an 8
# MiB UC message of 8192 packets can overflow the receiver's per-QP backlog under TCG, which
# loses it and leaves the receiving perftest waiting for it); -q 8; rdma_cm (-R) with several
# QPs; completion events (-e); atomic latency; udaddy. Each run is judged by both sides' exit
# status (perftest fails on any completion error, size mismatch or connection it could not
# make), and every failure names the exact command.
#
# About 230 s when it passes. Its -q 8 steps stalled or ended in RETRY_EXC until RC requests
# got a congestion window and retransmit timeouts a backoff (eight QPs' bursts overflowed
# the 1000-packet qdisc, and the queue drained slower than perftest's 67 ms timeout).
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
port=18800
while IFS= read -r t; do
  [ -n "$t" ] || continue
  port=$((port + 1))
  # shellcheck disable=SC2086
  pair "$t" 240 -- \
    $t -d @DEV -x @GID -p $port -F -- \
    $t -d @DEV -x @GID -p $port -F @PEER
done <<'EOF'
ib_send_bw -a -n 5
ib_write_bw -a -n 5
ib_read_bw -a -n 5
ib_send_lat -a -n 5
ib_write_lat -a -n 5
ib_read_lat -a -n 5
ib_atomic_lat -n 200
ib_send_bw -c UC -s 65536 -n 50
ib_write_bw -c UC -a -n 5
ib_send_lat -c UC -s 65536 -n 50
ib_write_lat -c UC -s 65536 -n 50
ib_send_bw -c UD -a -n 20
ib_send_lat -c UD -a -n 20
ib_send_bw -c UD -R -s 1024 -n 100
ib_write_bw -q 8 -s 65536 -n 50
ib_send_bw -q 8 -s 65536 -n 50
ib_read_bw -q 8 -s 65536 -n 50
ib_write_bw -R -q 4 -s 65536 -n 50
ib_send_bw -e -s 65536 -n 100
ib_send_lat -e -s 2 -n 200
ib_read_bw -e -s 65536 -n 100
EOF
pair "udaddy 4 connections" 120 -- \
  udaddy -c 4 -- \
  udaddy -s @PEER -c 4
user_teardown
tap_done
