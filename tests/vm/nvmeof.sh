#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 1200
# NVMe over Fabrics on rrxe. VM 0 is the target: nvmet exports a memory-backed null_blk
# namespace on an RDMA port. VM 1 is the host: `nvme discover` and `nvme connect -t rdma`
# (a read/default and a write I/O queue: the guests have one CPU), fio with crc32c
# verification (mixed random read/write at 4 KiB and 128 KiB, queue depth 32), a disconnect under I/O and a reconnect that verifies again, and
# last the target deletes its RDMA link under I/O: the host's reconnect fails (its CM REQ
# times out after its retries, about 80 s here, as with any RoCE peer that stopped
# answering), the 1 s controller-loss timeout ends the retries, the I/O fails instead of
# hanging and the controller goes away cleanly on both sides.
# Steps across the VMs are ordered with peer_wait/peer_signal (guest-lib.sh); the target's
# and host's steps are in lib/nvmeof-common.sh (kmemleak-ulp.sh uses them too).
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/nvmeof-common.sh"
# nvmeof-interop(-swap).sh run this script with one side on the stock rdma_rxe and stop
# after the reconnect (NVMEOF_INTEROP=1): NVMEOF_TARGET=rxe or NVMEOF_HOST=rxe.
if [ "$RRXE_VM" = 0 ]; then STACK=${NVMEOF_TARGET:-rrxe}; else STACK=${NVMEOF_HOST:-rrxe}; fi
if [ "$STACK" = rxe ]; then DEV=rxe0 MOD=rdma_rxe; else DEV=rrxe0 MOD=rrxe; fi
setup_dev() {
  if [ "$STACK" = rxe ]; then load_rxe && rdma link add rxe0 type rxe netdev eth0
  else load_rrxe && rdma link add rrxe0 type rrxe netdev eth0; fi
}
check "$DEV ($STACK) on eth0" setup_dev
retry 30 0.3 gid_index_v4 "$DEV" "$RRXE_MY_IP" >/dev/null

# fio_load SECONDS: time-based random I/O on the namespace, unchecked (the load under which
# the controller goes away; fio may see errors), at most SECONDS + 100.
fio_load() {
  timeout $(($1 + 100)) fio --name=load --filename="$(ns_dev)" --ioengine=libaio --direct=1 \
    --rw=randrw --bs=16k --iodepth=32 --time_based --runtime="$1" >/dev/null 2>&1
}

if [ "$RRXE_VM" = 0 ]; then
  check "nvmet target with an RDMA port on $RRXE_MY_IP:$PORT" nvmet_up
  peer_signal 17001
  check "the host finished its I/O checks (it signals)" peer_wait 17002 600
  if [ -z "$NVMEOF_INTEROP" ]; then
    check "rdma link delete $DEV under the host's I/O" timeout 120 rdma link delete "$DEV"
    peer_signal 17003
    check "the host's controller is gone (it signals)" peer_wait 17004 600
  else
    # The link goes before the configfs teardown, as in the full test (nvmet_down says why).
    check "rdma link delete $DEV" rdma link delete "$DEV"
  fi
  check "nvmet configuration removed, modules unloaded" nvmet_down
  check "rmmod $MOD" rmmod "$MOD"
else
  kmod nvme-rdma
  check "the target is up (it signals)" peer_wait 17001 300
  out=$(timeout 60 nvme discover -t rdma -a "$RRXE_PEER_IP" -s "$PORT" 2>&1)
  if grep -q "subnqn: *$NQN" <<<"$out" && grep -q "trtype: *rdma" <<<"$out"; then
    ok "nvme discover over $STACK lists $NQN on an rdma port"
  else not_ok "nvme discover over $STACK lists $NQN"; sed 's/^/# /' <<<"$out" | tail -n 20; fi
  check "nvme connect -t rdma (2 I/O queues)" nvme_connect
  qc() { [ "$(cat /sys/class/nvme/nvme*/queue_count 2>/dev/null | head -n 1)" = 3 ]; }
  check "the controller has the admin queue and 2 I/O queues" qc
  q=$(ls -d /sys/class/nvme/nvme*/ 2>/dev/null | head -n 1)
  echo "# controller ${q}: $(cat "$q/transport" "$q/state" "$q/queue_count" 2>/dev/null | paste -sd' ')"
  check "fio randrw 4 KiB, qd 32, crc32c verify" fio_verify 4k 8m
  check "fio randrw 128 KiB, qd 32, crc32c verify" fio_verify 128k 32m
  # A disconnect while I/O runs: fio may see errors; nothing may hang.
  fio_load 30 &
  bg=$!
  sleep 3
  check "nvme disconnect under I/O" timeout 120 nvme disconnect -n "$NQN"
  wait "$bg"; rc=$?
  [ "$rc" != 124 ] && ok "fio returned after the disconnect (exit $rc)" ||
    not_ok "fio hung after the disconnect"
  check "nvme connect again" nvme_connect
  check "fio randrw 4 KiB verify after the reconnect" fio_verify 4k 8m
  if [ -n "$NVMEOF_INTEROP" ]; then
    check "nvme disconnect" timeout 120 nvme disconnect -n "$NQN"
    peer_signal 17002
    check "rdma link delete $DEV" rdma link delete "$DEV"
    check "rmmod nvme_rdma $MOD" rmmod nvme_rdma "$MOD"
    tap_done
    exit
  fi
  # The target's RDMA device goes away under I/O: after one failed reconnect the host gives
  # up (controller-loss timeout 1 s), fails the I/O and removes the controller.
  check "nvme disconnect" timeout 120 nvme disconnect -n "$NQN"
  check "nvme connect with ctrl-loss-tmo 1" nvme_connect --ctrl-loss-tmo=1 --reconnect-delay=1
  fio_load 300 &
  bg=$!
  sleep 3
  peer_signal 17002
  check "the target deleted its link (it signals)" peer_wait 17003 300
  wait "$bg"; rc=$?
  [ "$rc" != 124 ] && ok "fio ended without a hang after the target's device went (exit $rc)" ||
    not_ok "fio hung after the target's device went"
  gone() { ! ns_dev >/dev/null; }
  check "the controller was removed after the loss timeout" retry 240 0.5 gone
  peer_signal 17004
  check "rdma link delete $DEV" rdma link delete "$DEV"
  check "rmmod nvme_rdma $MOD" rmmod nvme_rdma "$MOD"
fi
tap_done
