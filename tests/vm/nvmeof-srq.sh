#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 420
# NVMe over Fabrics on rrxe with nvmet-rdma's shared receive queues (use_srq=1): VM 0's
# target takes every queue's receives from SRQs; VM 1 connects, fio verifies (one short
# job), disconnects. Each target queue's teardown (ib_drain_qp, whose SRQ part waits up to
# 60 s for IB_EVENT_QP_LAST_WQE_REACHED since Linux 6.11) must have had the event: the
# target logs it once per queue (nvmet-rdma's pr_debug, enabled by dyndbg) and its QPs go.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/nvmeof-common.sh"
setup_dev() { load_rrxe && rdma link add rrxe0 type rrxe netdev eth0; }
check "rrxe0 on eth0" setup_dev
retry 30 0.3 gid_index_v4 rrxe0 "$RRXE_MY_IP" >/dev/null

# The target's RC QPs (nvmet-rdma's queues).
rc_qps() { rdma resource show qp link rrxe0/1 2>/dev/null | grep -c 'type RC'; }
LAST_WQE='received last WQE reached event for queue'
last_wqe_events() { dmesg --notime | sed -n "/$marker/,\$p" | grep -ac "$LAST_WQE"; }

if [ "$RRXE_VM" = 0 ]; then
  NVMET_RDMA_ARGS="use_srq=1 dyndbg=+p"
  check "nvmet target, nvmet-rdma with use_srq=1, on $RRXE_MY_IP:$PORT" nvmet_up
  srq_on() { [ "$(cat /sys/module/nvmet_rdma/parameters/use_srq)" = Y ]; }
  check "nvmet-rdma takes use_srq=1" srq_on
  peer_signal 17101
  check "the host connected and verified its data (it signals)" peer_wait 17102 300
  nq=$(rc_qps)
  # nvmet-rdma falls back to a receive queue per QP if the device offers no SRQ.
  srq_list=$(rdma resource show srq 2>&1)
  sed 's/^/# /' <<<"$srq_list"
  srqs=$(grep -c '^dev rrxe0 .*nvmet_rdma' <<<"$srq_list")
  [ "$nq" -ge 2 ] && [ "${srqs:-0}" -ge 1 ] &&
    ok "$nq queues (RC QPs) on nvmet-rdma's $srqs SRQ(s)" ||
    not_ok "nvmet-rdma's queues on SRQs ($nq RC QPs, ${srqs:-no} SRQs)"
  marker="nvmeof-srq-marker-$$-$(date +%s%N)"
  echo "$marker" > /dev/kmsg
  peer_signal 17103
  check "the host disconnected (it signals)" peer_wait 17104 300
  qps_gone() { [ "$(rc_qps)" = 0 ]; }
  check "nvmet-rdma destroyed its queues' QPs" retry 240 0.5 qps_gone
  n=$(last_wqe_events)
  [ "$n" = "$nq" ] && ok "IB_EVENT_QP_LAST_WQE_REACHED once for each of the $nq queues" ||
    not_ok "IB_EVENT_QP_LAST_WQE_REACHED once for each of the $nq queues (got $n)"
  # The link goes before the configfs teardown (nvmet_down says why).
  check "rdma link delete rrxe0" rdma link delete rrxe0
  check "nvmet configuration removed, modules unloaded" nvmet_down
  check "rmmod rrxe" rmmod rrxe
else
  kmod nvme-rdma
  check "the target is up (it signals)" peer_wait 17101 300
  check "nvme connect -t rdma (2 I/O queues)" nvme_connect
  check "fio randrw 4 KiB, qd 32, crc32c verify" fio_verify 4k 8m
  peer_signal 17102
  check "the target counted its queues (it signals)" peer_wait 17103 300
  check "nvme disconnect" timeout 120 nvme disconnect -n "$NQN"
  peer_signal 17104
  check "rdma link delete rrxe0" rdma link delete rrxe0
  check "rmmod nvme_rdma rrxe" rmmod nvme_rdma rrxe
fi
tap_done
