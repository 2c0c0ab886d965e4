#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 1200
# append: kmemleak=on
# rrxe inside network namespaces (per-namespace operation). On each VM a "pod"
# namespace with a macvlan child of eth0: `rdma link add` inside it on its netdev, traffic
# between the two pods (ibv_rc_pingpong, rping, ib_write_bw run in the pods), link delete
# and re-add inside it. Then the namespace is deleted while a process in init_net holds
# verbs objects on the device (shared mode: it sees it, but cannot use the pod's GID): the
# device goes, the process is woken with an error and cleans up, nothing hangs; then a second
# pod's namespace is deleted right after its traffic's processes are killed. kmemleak finds
# no leak, with the module loaded and after rmmod (which closes every namespace's sockets).
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"
. "$RRXE_ROOT/tests/vm/lib/netns-common.sh"
. "$RRXE_ROOT/tests/vm/lib/kmemleak.sh"

kml_start
check "insmod rrxe.ko" load_rrxe
check "pod namespace with a macvlan of eth0 ($(pod_ip 1))" pod_add pod 1 macvlan
expect_fail "init_net cannot add a device on the pod's netdev (not in its namespace)" \
  rdma link add rrxe2 type rrxe netdev net0
check "rdma link add rrxe1 inside the pod, on its net0" \
  in_pod pod rdma link add rrxe1 type rrxe netdev net0
check "rdma link show in the pod: rrxe1 on net0, ACTIVE" \
  sh -c 'ip netns exec pod rdma link show rrxe1/1 | grep -q "state ACTIVE .*netdev net0"'
check "the pod's libibverbs lists rrxe1" sh -c 'ip netns exec pod ibv_devices | grep -qw rrxe1'
check "no GID of eth0's address ($RRXE_MY_IP) on rrxe1" \
  sh -c "! ip netns exec pod grep -rqs ':0a4d:000$((RRXE_VM + 1))\$' /sys/class/infiniband/rrxe1/ports/1/gids"
GID=$(pod_gid pod rrxe1 "$(pod_ip 1)") || GID=
if [ -n "$GID" ]; then ok "rrxe1 has the RoCE v2 GID of $(pod_ip 1) (index $GID)"
else not_ok "rrxe1 has the RoCE v2 GID of $(pod_ip 1)"; GID=1; fi

# Traffic between the pods, every process inside them.
DEV=rrxe1
p=19150
RRXE_PEER_IP=$(pod_peer_ip 1) pair "ibv_rc_pingpong in the pods, 4 KiB x100, checked" 180 -- \
  ip netns exec pod ibv_rc_pingpong -d rrxe1 -g "$GID" -p $((p + 1)) -n 100 -s 4096 -c -- \
  ip netns exec pod ibv_rc_pingpong -d rrxe1 -g "$GID" -p $((p + 1)) -n 100 -s 4096 -c @PEER
RRXE_PEER_IP=$(pod_peer_ip 1) pair "rping -V -C 20 in the pods (rdma_cm in the namespace)" 180 -- \
  ip netns exec pod "$RRXE_ROOT/tests/vm/lib/rping-run" -s -a "$(pod_ip 1)" -p $((p + 2)) -V -C 20 -- \
  ip netns exec pod "$RRXE_ROOT/tests/vm/lib/rping-run" -c -a @PEER -p $((p + 2)) -V -C 20
RRXE_PEER_IP=$(pod_peer_ip 1) pair "ib_write_bw in the pods, 64 KiB x200" 180 -- \
  ip netns exec pod ib_write_bw -d rrxe1 -x "$GID" -p $((p + 3)) -s 65536 -n 200 -F -- \
  ip netns exec pod ib_write_bw -d rrxe1 -x "$GID" -p $((p + 3)) -s 65536 -n 200 -F @PEER
check "traffic went through rrxe1 (sent and received packets)" traffic_flows rrxe1 100 pod

check "rdma link delete rrxe1 inside the pod" in_pod pod rdma link delete rrxe1
check "rrxe1 is gone" retry 20 0.3 dev_gone rrxe1 pod
check "re-add rrxe1 inside the pod" in_pod pod rdma link add rrxe1 type rrxe netdev net0
GID=$(pod_gid pod rrxe1 "$(pod_ip 1)") || GID=1

# The namespace deleted with a process of init_net holding a context, a CQ on a completion
# channel and a QP on rrxe1 (visible there in shared mode; its QP cannot use the pod's GID:
# ENODEV, the pod's netdev is in another namespace). Nothing inside keeps the pod alive, so
# its deletion unregisters the macvlan and rrxe1 with it: the process's context is
# disassociated, its channel woken with an error, IBV_EVENT_DEVICE_FATAL raised, its objects
# destroyed without error. Traffic through a namespace that goes is the second round's.
hold=$(mktemp)
"$RRXE_USER_BIN/hold_ctx" -d rrxe1 -g "$GID" -t 300 > "$hold" 2>&1 &
pid=$!
check "an init_net process holds a context, a CQ and a QP on rrxe1" \
  retry 60 0.5 grep -q '^# holding' "$hold"
check "ip netns del pod with that context open" ip netns del pod
check "rrxe1 goes away with the namespace (its macvlan unregistered)" retry 60 1 dev_gone rrxe1
check "the process ends, woken with an error (no hang on the removed device)" \
  retry 60 1 proc_gone "$pid"
wait "$pid"; rc=$?
relay_tap hold_ctx "$rc" "$(cat "$hold")"
rm -f "$hold"
check "no namespace left" sh -c '[ -z "$(ip netns list)" ]'
check "rdma link shows no device" sh -c '[ -z "$(rdma link show)" ]'

# A second round in a fresh namespace (sockets opened again in a new namespace).
check "second pod namespace" pod_add pod2 2 macvlan
check "rdma link add rrxe2 inside the second pod" in_pod pod2 rdma link add rrxe2 type rrxe netdev net0
GID=$(pod_gid pod2 rrxe2 "$(pod_ip 2)") || GID=1
RRXE_PEER_IP=$(pod_peer_ip 2) pair "ibv_rc_pingpong in the second pods, checked" 180 -- \
  ip netns exec pod2 ibv_rc_pingpong -d rrxe2 -g "$GID" -p $((p + 5)) -n 50 -s 4096 -c -- \
  ip netns exec pod2 ibv_rc_pingpong -d rrxe2 -g "$GID" -p $((p + 5)) -n 50 -s 4096 -c @PEER
# rping live inside the pod when the pod's processes are killed and the namespace deleted.
if [ "$RRXE_VM" = 0 ]; then
  in_pod pod2 timeout 300 rping -s -a "$(pod_ip 2)" -p $((p + 6)) -C 1000000 >/dev/null 2>&1 &
else
  (sleep 5; until_connected 60 in_pod pod2 timeout 300 rping -c -a "$(pod_peer_ip 2)" \
     -p $((p + 6)) -C 1000000) >/dev/null 2>&1 &
fi
pid=$!
check "rping traffic flows in the second pod" retry 90 1 traffic_flows rrxe2 300 pod2
ip netns pids pod2 | xargs -r kill -9
check "ip netns del pod2 with rping killed inside" ip netns del pod2
check "rrxe2 goes away with the namespace" retry 60 1 dev_gone rrxe2
check "the rping process is gone" retry 30 1 proc_gone "$pid"
wait "$pid" 2>/dev/null
kml_check "after the namespaces were deleted under traffic (rrxe loaded)"
check "rmmod rrxe" rmmod rrxe
kml_check "after rmmod rrxe"
tap_done
