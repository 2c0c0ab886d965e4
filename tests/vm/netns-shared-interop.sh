#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 1200
# Shared mode against the stock rdma_rxe: on VM 0 rrxe0 on eth0 and a pod with a
# macvlan child of eth0; on VM 1 rdma_rxe's rxe0 on eth0 in init_net (a plain host). The
# pod talks to the host over the pod's GID (ibv_rc_pingpong, rping -V, ib_write_bw -R), and
# VM 1's capture shows the pod's MAC and IP: the wire stays standard RoCEv2.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"
. "$RRXE_ROOT/tests/vm/lib/netns-common.sh"

p=19450
if [ "$RRXE_VM" = 0 ]; then
  user_setup
  check "pod1 namespace with a macvlan of eth0 ($(pod_ip 1))" pod_add pod1 1 macvlan
  G=$(pod_gid pod1 rrxe0 "$(pod_ip 1)") || G=1
  RUN=(ip netns exec pod1)
  ME=$(pod_ip 1)
else
  user_setup rxe
  G=$GID
  RUN=(env)
  ME=$RRXE_MY_IP
  CAP=$TMPDIR/netns-capture
  python3 "$RRXE_ROOT/tests/vm/lib/roce-capture.py" --addrs eth0 >"$CAP" 2>"$CAP.err" &
  cpid=$!
  retry 50 0.2 grep -q listening "$CAP.err"
fi
RRXE_PEER_IP=$(pod_ip 1 0) pair "pod (rrxe) to host (rdma_rxe): ibv_rc_pingpong, 4 KiB x100, checked" 180 -- \
  "${RUN[@]}" ibv_rc_pingpong -d "$DEV" -g "$G" -p $((p + 1)) -n 100 -s 4096 -c -- \
  "${RUN[@]}" ibv_rc_pingpong -d "$DEV" -g "$G" -p $((p + 1)) -n 100 -s 4096 -c @PEER
if [ "$RRXE_VM" = 1 ]; then
  kill -TERM "$cpid"; wait "$cpid"
  sed 's/^/#   /' "$CAP"
  want="smac=52:54:00:77:10:01 src=$(pod_ip 1 0) dst=$RRXE_MY_IP"
  check "capture on the rdma_rxe host: every RoCE packet from the pod's MAC and IP ($want)" \
    awk -v w="$want" '{ k = $1 " " $2 " " $3 } k != w { bad = 1 } END { exit bad || NR == 0 }' "$CAP"
fi
RRXE_PEER_IP=$(pod_ip 1 0) pair "pod (rrxe) to host (rdma_rxe): rping -V -C 20" 180 -- \
  "${RUN[@]}" "$RRXE_ROOT/tests/vm/lib/rping-run" -s -a "$ME" -p $((p + 2)) -V -C 20 -- \
  "${RUN[@]}" "$RRXE_ROOT/tests/vm/lib/rping-run" -c -a @PEER -p $((p + 2)) -V -C 20
RRXE_PEER_IP=$(pod_ip 1 0) pair "pod (rrxe) to host (rdma_rxe): ib_write_bw -R, 64 KiB x100" 180 -- \
  "${RUN[@]}" ib_write_bw -R -d "$DEV" -x "$G" -p $((p + 3)) -s 65536 -n 100 -F -- \
  "${RUN[@]}" ib_write_bw -R -d "$DEV" -x "$G" -p $((p + 3)) -s 65536 -n 100 -F @PEER
if [ "$RRXE_VM" = 0 ]; then check "ip netns del pod1" ip netns del pod1; fi
user_teardown
tap_done
