#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 300
# Harness check with the stock rdma_rxe: ibv_rc_pingpong between the two VMs over RoCEv2.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"

check "modprobe rdma_rxe" load_rxe
check "rdma link add rxe0 type rxe netdev eth0" rdma link add rxe0 type rxe netdev eth0
gid=$(retry 20 0.3 gid_index_v4 rxe0 "$RRXE_MY_IP") || gid=
[ -n "$gid" ] && ok "rxe0 has a RoCE v2 GID for $RRXE_MY_IP (index $gid)" || not_ok "rxe0 has a RoCE v2 GID for $RRXE_MY_IP"
if [ "$RRXE_VM" = 0 ]; then
  check "ibv_rc_pingpong server over rdma_rxe" timeout 120 ibv_rc_pingpong -d rxe0 -g "$gid" -n 200 -s 4096 -c
else
  check "ibv_rc_pingpong client over rdma_rxe" \
    retry 30 1 timeout 60 ibv_rc_pingpong -d rxe0 -g "$gid" -n 200 -s 4096 -c "$RRXE_PEER_IP"
fi
check "rdma link delete rxe0" rdma link delete rxe0
tap_done
