#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 600
# append: kmemleak=on
# Leak check: with kmemleak on, both VMs run user-level traffic over rrxe (RC/UD ping-pong,
# rping, perftest with rdma_cm, XRC: ibv_xsrq_pingpong and tests/user/xrc), the hostile-ring
# test (error paths: QPs and CQs killed by garbage), dma-buf MRs (tests/user/dmabuf),
# on-demand-paging MRs (tests/user/odp) and link delete, then rmmod. kmemleak must report no
# unreferenced object from after the boot (its report is cleared once the VM is up),
# neither with the module loaded nor after it is gone.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"
. "$RRXE_ROOT/tests/vm/lib/kmemleak.sh"

kml_start || { tap_done; exit; }

user_setup
p=18950
pair "ibv_rc_pingpong 4 KiB x50, checked" 120 -- \
  ibv_rc_pingpong -d @DEV -g @GID -p $((p + 1)) -n 50 -s 4096 -c -- \
  ibv_rc_pingpong -d @DEV -g @GID -p $((p + 1)) -n 50 -s 4096 -c @PEER
pair "ibv_ud_pingpong 512 B x50, checked" 120 -- \
  ibv_ud_pingpong -d @DEV -g @GID -p $((p + 2)) -n 50 -s 512 -c -- \
  ibv_ud_pingpong -d @DEV -g @GID -p $((p + 2)) -n 50 -s 512 -c @PEER
pair "rping -V -C 20" 120 -- \
  rping -s -a "$RRXE_MY_IP" -p $((p + 3)) -V -C 20 -- \
  rping -c -a @PEER -p $((p + 3)) -V -C 20
pair "ib_read_bw -R 64 KiB x50" 120 -- \
  ib_read_bw -R -d @DEV -x @GID -p $((p + 4)) -s 65536 -n 50 -F -- \
  ib_read_bw -R -d @DEV -x @GID -p $((p + 4)) -s 65536 -n 50 -F @PEER
pair "ibv_xsrq_pingpong 4 KiB x50 (XRC)" 120 -- \
  ibv_xsrq_pingpong -d @DEV -g @GID -p $((p + 5)) -n 50 -s 4096 -- \
  ibv_xsrq_pingpong -d @DEV -g @GID -p $((p + 5)) -n 50 -s 4096 @PEER
# local_prog PROG: one of tests/user's local programs on this VM's device; on failure its
# output's tail (check shows it) and its exit status (124: the 200 s timeout).
local_prog() {
  local prog=$1 rc
  timeout 200 "$RRXE_USER_BIN/$prog" -d "$DEV" -g "$GID"; rc=$?
  [ "$rc" = 0 ] || echo "$prog: exit $rc (124: the 200 s timeout)"
  return "$rc"
}
check "xrc (local, XRC domains, SRQs, QPs and their refusals)" local_prog xrc
check "ring_garbage (local, error paths)" local_prog ring_garbage
check "dmabuf (local, dma-buf MRs and their refusals)" local_prog dmabuf
check "odp (local, on-demand-paging MRs: faults, invalidations, implicit ODP)" local_prog odp
check "rdma link delete $DEV" rdma link delete "$DEV"
kml_check "after the traffic and link delete (rrxe loaded)"
check "rmmod rrxe" rmmod rrxe
kml_check "after rmmod rrxe"
tap_done
