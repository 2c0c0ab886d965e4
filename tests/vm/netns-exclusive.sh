#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 1200
# Exclusive mode, as rdma-cni uses it: `rdma system set netns exclusive`, rrxe0 on
# eth0, then eth0 and rrxe0 moved into a pod namespace (netdev first, as sriov-cni then
# rdma-cni do). Inside the pod the device works (ibv_rc_pingpong, rping, ib_write_bw between
# the two VMs' pods); outside it is invisible (rdma dev, ibv_devices, sysfs). A second device,
# added with `rdma link add` inside another pod (on a macvlan of eth0), lives there at the
# same time. Moving the device without its netdev is refused (EINVAL and one log line), and
# the device can be brought back. Deleting the pod brings rrxe0 (and eth0) back to init_net,
# where it works again.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"
. "$RRXE_ROOT/tests/vm/lib/netns-common.sh"

check "rdma system set netns exclusive" rdma system set netns exclusive
check "rdma system show: exclusive" sh -c 'rdma system show | grep -q "netns exclusive"'
check "insmod rrxe.ko" load_rrxe
check "rdma link add rrxe0 type rrxe netdev eth0 (init_net)" rdma link add rrxe0 type rrxe netdev eth0
check "pod namespace" ip netns add pod
check "a name for init_net (to move devices back)" ip netns attach init 1
in_init_rdma() { rdma dev show "$1" >/dev/null 2>&1; }
listed() { ibv_devices | grep -qw "$1"; }
pod_listed() { in_pod "$2" ibv_devices | grep -qw "$1"; }
pod_rdma() { in_pod "$2" rdma dev show "$1" >/dev/null 2>&1; }

# The device cannot go where its netdev is not.
dmesg -c >/dev/null
expect_fail "rdma dev set rrxe0 netns pod, eth0 still in init_net: refused" rdma dev set rrxe0 netns pod
check "one log line says why" \
  sh -c 'dmesg | grep -q "rrxe: rrxe0 cannot work in a network namespace without its netdev eth0"'
check "the refused device is not usable in the pod (no verbs device)" sh -c '! ip netns exec pod ibv_devices | grep -qw rrxe0'
check "it can be moved back to init_net from the pod" in_pod pod rdma dev set rrxe0 netns init
check "back in init_net: rdma dev shows rrxe0" retry 20 0.3 in_init_rdma rrxe0
check "back in init_net: ibv_devices lists rrxe0" retry 20 0.3 listed rrxe0

# The rdma-cni order: netdev, then device.
check "ip link set eth0 netns pod" ip link set eth0 netns pod
check "rrxe0 follows eth0 (still registered, in init_net until moved)" in_init_rdma rrxe0
check "rdma dev set rrxe0 netns pod" rdma dev set rrxe0 netns pod
check "eth0 in the pod: address and up" sh -c \
  "ip netns exec pod ip addr add $RRXE_MY_IP/24 dev eth0 && ip netns exec pod ip link set eth0 up && ip netns exec pod ip link set lo up"
check "rrxe0 invisible in init_net: rdma dev" sh -c '! rdma dev show rrxe0 >/dev/null 2>&1'
check "rrxe0 invisible in init_net: ibv_devices" sh -c '! ibv_devices | grep -qw rrxe0'
check "rrxe0 invisible in init_net: sysfs" dev_gone rrxe0
check "rrxe0 visible in the pod: rdma dev" pod_rdma rrxe0 pod
check "rrxe0 visible in the pod: ibv_devices" retry 20 0.3 pod_listed rrxe0 pod
check "rrxe0 in the pod: port ACTIVE on eth0" retry 30 0.3 \
  sh -c 'ip netns exec pod rdma link show rrxe0/1 | grep -q "state ACTIVE .*netdev eth0"'

# A second device in another pod at the same time, added from inside it. Its macvlan is
# made once eth0 is in the pod (a namespace move flushes eth0's unicast filter, which would
# drop the frames of a macvlan made before), from there.
pod2_add() {
  kmod macvlan 2>/dev/null
  ip netns add pod2 &&
  ip -n pod link add pod2-net0 link eth0 type macvlan mode bridge &&
  ip -n pod link set pod2-net0 address "52:54:00:77:20:0$((RRXE_VM + 1))" &&
  ip -n pod link set pod2-net0 netns pod2 &&
  ip -n pod2 link set pod2-net0 name net0 &&
  ip -n pod2 addr add "$(pod_ip 2)/24" dev net0 &&
  ip -n pod2 link set lo up && ip -n pod2 link set net0 up
}
check "pod2 namespace with a macvlan of the pod's eth0 ($(pod_ip 2))" pod2_add
check "rdma link add rrxe2 inside pod2 (on its macvlan)" in_pod pod2 rdma link add rrxe2 type rrxe netdev net0
check "rrxe2 visible in pod2 only: ibv_devices in pod2" retry 20 0.3 pod_listed rrxe2 pod2
check "rrxe2 invisible in init_net" sh -c '! rdma dev show rrxe2 >/dev/null 2>&1 && ! ibv_devices | grep -qw rrxe2'
check "rrxe2 invisible in the pod" sh -c '! ip netns exec pod rdma dev show rrxe2 >/dev/null 2>&1'
check "rrxe0 invisible in pod2" sh -c '! ip netns exec pod2 rdma dev show rrxe0 >/dev/null 2>&1'

GID=$(pod_gid pod rrxe0 "$RRXE_MY_IP") || GID=
if [ -n "$GID" ]; then ok "rrxe0 has the GID of $RRXE_MY_IP in the pod (index $GID)"
else not_ok "rrxe0 has the GID of $RRXE_MY_IP in the pod"; GID=1; fi
DEV=rrxe0
p=19250
pair "ibv_rc_pingpong between the pods, 4 KiB x100, checked" 180 -- \
  ip netns exec pod ibv_rc_pingpong -d rrxe0 -g "$GID" -p $((p + 1)) -n 100 -s 4096 -c -- \
  ip netns exec pod ibv_rc_pingpong -d rrxe0 -g "$GID" -p $((p + 1)) -n 100 -s 4096 -c @PEER
pair "rping -V -C 20 between the pods" 180 -- \
  ip netns exec pod "$RRXE_ROOT/tests/vm/lib/rping-run" -s -a "$RRXE_MY_IP" -p $((p + 2)) -V -C 20 -- \
  ip netns exec pod "$RRXE_ROOT/tests/vm/lib/rping-run" -c -a @PEER -p $((p + 2)) -V -C 20
pair "ib_write_bw between the pods, 64 KiB x200" 180 -- \
  ip netns exec pod ib_write_bw -d rrxe0 -x "$GID" -p $((p + 3)) -s 65536 -n 200 -F -- \
  ip netns exec pod ib_write_bw -d rrxe0 -x "$GID" -p $((p + 3)) -s 65536 -n 200 -F @PEER
G2=$(pod_gid pod2 rrxe2 "$(pod_ip 2)") || G2=1
RRXE_PEER_IP=$(pod_peer_ip 2) pair "ibv_rc_pingpong between the pod2s on rrxe2, checked" 180 -- \
  ip netns exec pod2 ibv_rc_pingpong -d rrxe2 -g "$G2" -p $((p + 4)) -n 50 -s 4096 -c -- \
  ip netns exec pod2 ibv_rc_pingpong -d rrxe2 -g "$G2" -p $((p + 4)) -n 50 -s 4096 -c @PEER

# The pod dies: the core sends rrxe0 back to init_net, then eth0 comes back too.
check "ip netns del pod" ip netns del pod
check "rrxe0 back in init_net: rdma dev" retry 60 1 in_init_rdma rrxe0
check "eth0 back in init_net" retry 60 1 ip link show eth0
ip addr add "$RRXE_MY_IP/24" dev eth0 2>/dev/null
ip link set eth0 up
check "rrxe0 back in init_net: ibv_devices" retry 30 0.5 listed rrxe0
check "rrxe0 ACTIVE on eth0 in init_net" retry 30 0.5 \
  sh -c 'rdma link show rrxe0/1 | grep -q "state ACTIVE .*netdev eth0"'
GID=$(retry 30 0.3 gid_index_v4 rrxe0 "$RRXE_MY_IP") || GID=1
pair "ibv_rc_pingpong in init_net after the return, checked" 180 -- \
  ibv_rc_pingpong -d rrxe0 -g "$GID" -p $((p + 5)) -n 50 -s 4096 -c -- \
  ibv_rc_pingpong -d rrxe0 -g "$GID" -p $((p + 5)) -n 50 -s 4096 -c @PEER
check "ip netns del pod2: rrxe2 goes with its macvlan" sh -c 'ip netns del pod2'
check "rrxe2 is gone" retry 60 1 sh -c '! rdma dev show rrxe2 >/dev/null 2>&1'
ip netns del init 2>/dev/null
check "rdma link delete rrxe0" rdma link delete rrxe0
check "rdma system set netns shared" rdma system set netns shared
check "rmmod rrxe" rmmod rrxe
tap_done
