#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 600
# Fault injection under a kernel consumer: an NVMe-oF connection (nvme-rdma, VM 1, to nvmet
# on VM 0) survives a burst of five lost packets on one of its I/O queues' QPs (debugfs
# rrxe/rrxe0/faults on the host): fio's crc32c verification passes, the rule hit 5 times,
# the controller stays live. The I/O queue is the QP that sends the most SENDs (the
# commands; 4 KiB writes go in the command capsule): counting rules that never act
# (every=1000000) on each of the host's RC QPs find it.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/nvmeof-common.sh"
DEV=rrxe0
setup_dev() { load_rrxe && rdma link add rrxe0 type rrxe netdev eth0; }
check "rrxe0 on eth0" setup_dev
retry 30 0.3 gid_index_v4 "$DEV" "$RRXE_MY_IP" >/dev/null

if [ "$RRXE_VM" = 0 ]; then
  check "nvmet target with an RDMA port on $RRXE_MY_IP:$PORT" nvmet_up
  peer_signal 17101
  check "the host finished (it signals)" peer_wait 17102 500
  check "rdma link delete $DEV" rdma link delete "$DEV"
  check "nvmet configuration removed, modules unloaded" nvmet_down
else
  mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
  F=/sys/kernel/debug/rrxe/$DEV/faults
  kmod nvme-rdma
  check "the target is up (it signals)" peer_wait 17101 300
  check "nvme connect -t rdma (2 I/O queues)" nvme_connect
  qpns=$(rdma resource show qp link "$DEV"/1 2>/dev/null | awk '/ type RC / {
    for (i = 1; i < NF; i++) if ($i == "lqpn") print $(i + 1) }')
  check "the host's RC QPs: $(echo $qpns)" test "$(echo $qpns | wc -w)" -ge 3
  rules=$(for q in $qpns; do echo "qp=$q dir=tx op=send every=1000000 action=drop"; done)
  check "a counting rule on each" sh -c "printf 'clear\n%s\n' \"\$1\" > $F" _ "$rules"
  check "fio randrw 4 KiB, qd 32, crc32c verify" fio_verify 4k 4m
  sed 's/^/# /' "$F"
  ioq=$(awk '{ for (i = 1; i <= NF; i++) { if ($i ~ /^qp=/) q = substr($i, 4); if ($i ~ /^seen=/) s = substr($i, 6) }
    if (s + 0 > best) { best = s + 0; bq = q } } END { print bq }' "$F")
  check "an I/O queue's QP sent the most commands (QP ${ioq:-none})" test -n "$ioq"
  check "five packets of QP $ioq lost in a row" sh -c "printf 'clear\nqp=%s dir=tx action=drop count=5\n' $ioq > $F"
  check "fio randrw 4 KiB, qd 32, crc32c verify, through the losses" fio_verify 4k 4m
  sed 's/^/# /' "$F"
  check "the rule hit 5 times and retired" grep -q ' hits=5 retired$' "$F"
  live() { [ "$(cat /sys/class/nvme/nvme*/state 2>/dev/null | head -n 1)" = live ]; }
  check "the controller is live" live
  check "clear" sh -c "echo clear > $F"
  check "nvme disconnect" timeout 120 nvme disconnect -n "$NQN"
  peer_signal 17102
  check "rdma link delete $DEV" rdma link delete "$DEV"
  check "rmmod nvme_rdma" rmmod nvme_rdma
fi
check "rmmod rrxe" rmmod rrxe
tap_done
