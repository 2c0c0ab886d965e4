#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 300
# Local loopback: both ends of every connection on one host over rrxe0 (the packets go from
# rrxe's transmit path straight to its receive path): RC and UD ping-pong with data checks,
# rping -V, the extended-verbs test, ib_write_bw and ib_read_bw. Then two rrxe devices on
# the two ends of a veth pair, over IPv6 addresses: the route from one device to the other's
# address is local (through lo), so the packet takes rrxe's local path, and it must reach the
# QPs of the device owning the destination (QP numbers are per device: both may hand out
# the same ones). (Over IPv4 the route bound to the sending device crosses the veth instead.)
# Then two devices on a veth pair whose far end is in another namespace, over IPv4: the
# packets an ib_write_bw sends in chains cross the veth one frame each, and the room a QP
# sees on the veth's four transmit queues counts a netem root's packets once.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
ip=$RRXE_MY_IP
both "loopback ibv_rc_pingpong 4 KiB x200, checked" -- \
  ibv_rc_pingpong -d "$DEV" -g "$GID" -p 18601 -n 200 -s 4096 -c -- \
  ibv_rc_pingpong -d "$DEV" -g "$GID" -p 18601 -n 200 -s 4096 -c "$ip"
both "loopback ibv_ud_pingpong 512 B x100, checked" -- \
  ibv_ud_pingpong -d "$DEV" -g "$GID" -p 18602 -n 100 -s 512 -c -- \
  ibv_ud_pingpong -d "$DEV" -g "$GID" -p 18602 -n 100 -s 512 -c "$ip"
both "loopback rping -V -C 50" -- \
  rping -s -a "$ip" -p 18603 -V -C 50 -- \
  rping -c -a "$ip" -p 18603 -V -C 50
both "loopback verbs_ex (extended verbs, threads)" -- \
  "$RRXE_USER_BIN/verbs_ex" -d "$DEV" -g "$GID" -p 18604 -- \
  "$RRXE_USER_BIN/verbs_ex" -d "$DEV" -g "$GID" -p 18604 "$ip"
both "loopback ib_write_bw 64 KiB x200" -- \
  ib_write_bw -d "$DEV" -x "$GID" -p 18605 -s 65536 -n 200 -F -- \
  ib_write_bw -d "$DEV" -x "$GID" -p 18605 -s 65536 -n 200 -F "$ip"
both "loopback ib_read_bw 64 KiB x200" -- \
  ib_read_bw -d "$DEV" -x "$GID" -p 18606 -s 65536 -n 200 -F -- \
  ib_read_bw -d "$DEV" -x "$GID" -p 18606 -s 65536 -n 200 -F "$ip"

# Two devices on one host.
check "a veth pair rrv0/rrv1 with fd88::1 and fd88::2" sh -c 'modprobe -d "$RRXE_MODROOT" veth &&
  ip link add rrv0 type veth peer name rrv1 && ip addr add fd88::1/64 dev rrv0 nodad &&
  ip addr add fd88::2/64 dev rrv1 nodad && ip link set rrv0 up && ip link set rrv1 up'
check "rdma link add rrxe1 (rrv0), rrxe2 (rrv1)" sh -c \
  'rdma link add rrxe1 type rrxe netdev rrv0 && rdma link add rrxe2 type rrxe netdev rrv1'
G1=$(retry 20 0.3 gid_index_v6 rrxe1 fd88::1) || G1=0
G2=$(retry 20 0.3 gid_index_v6 rrxe2 fd88::2) || G2=0
rcvd() { dev_counter rcvd_pkts "$1"; }
r1=$(rcvd rrxe1) r2=$(rcvd rrxe2)
both "two devices: ibv_rc_pingpong rrxe1 -> rrxe2 4 KiB x100, checked" -- \
  ibv_rc_pingpong -d rrxe2 -g "$G2" -p 18607 -n 100 -s 4096 -c -- \
  ibv_rc_pingpong -d rrxe1 -g "$G1" -p 18607 -n 100 -s 4096 -c "$ip"
both "two devices: ibv_ud_pingpong rrxe1 -> rrxe2 512 B x100, checked" -- \
  ibv_ud_pingpong -d rrxe2 -g "$G2" -p 18608 -n 100 -s 512 -c -- \
  ibv_ud_pingpong -d rrxe1 -g "$G1" -p 18608 -n 100 -s 512 -c "$ip"
d1=$(( $(rcvd rrxe1) - r1 )) d2=$(( $(rcvd rrxe2) - r2 ))
if [ "$d1" -ge 200 ] && [ "$d2" -ge 200 ]; then ok "both devices received their side's packets ($d1, $d2)"
else not_ok "both devices received their side's packets ($d1, $d2)"; fi
for d in rrxe1 rrxe2; do rdma statistic show link $d/1 | sed 's/^/# /'; done
check "rdma link delete rrxe1, rrxe2; the veth pair goes" sh -c \
  'rdma link delete rrxe1 && rdma link delete rrxe2 && ip link del rrv0'

# Across a veth into another namespace, over IPv4: rrxe hands a run's consecutive packets of
# one flow to the IP layer as one skb (a chain, tx_chains), which a veth would take whole
# (it has NETIF_F_FRAGLIST and fraglist GSO); rrxe has the first device split it, so the
# far end sees one frame per packet (a packet socket there, or an XDP or tc program that
# reads the frame), never one longer than the link's MTU.
check "a veth pair rrv2 (10.88.0.1, 4 queues, IPv4 only) / rrv3 (10.88.0.2, namespace rrvns)" sh -c '
  ip netns add rrvns && ip link add rrv2 numtxqueues 4 numrxqueues 4 type veth peer name rrv3 netns rrvns &&
  sysctl -qw net.ipv6.conf.rrv2.disable_ipv6=1 && ip addr add 10.88.0.1/24 dev rrv2 &&
  ip link set rrv2 up && ip -n rrvns addr add 10.88.0.2/24 dev rrv3 &&
  ip -n rrvns link set rrv3 up && ip -n rrvns link set lo up'
check "rdma link add rrxe3 (rrv2), rrxe4 (rrv3, from rrvns)" sh -c \
  'rdma link add rrxe3 type rrxe netdev rrv2 && ip netns exec rrvns rdma link add rrxe4 type rrxe netdev rrv3'
G3=$(retry 20 0.3 gid_index_v4 rrxe3 10.88.0.1) || G3=1
G4=$(ip netns exec rrvns bash -c '. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"; retry 20 0.3 gid_index_v4 rrxe4 10.88.0.2') || G4=1
VCAP=$(mktemp)
frames_start rrvns rrv3 "$VCAP"
c0=$(dev_counter tx_chains rrxe3)
both "across the veth: ib_write_bw rrxe3 -> rrxe4 64 KiB x100" -- \
  ip netns exec rrvns ib_write_bw -d rrxe4 -x "$G4" -p 18609 -s 65536 -n 100 -F -- \
  ib_write_bw -d rrxe3 -x "$G3" -p 18609 -s 65536 -n 100 -F 10.88.0.2
c1=$(dev_counter tx_chains rrxe3)
frames_stop "$VCAP"
vn=$frames_n vmax=$frames_max
if [ $((c1 - c0)) -gt 0 ] && [ "$vn" -ge 6400 ] && [ -n "$vmax" ] && [ "$vmax" -le 1514 ]; then
  ok "rrv3 got the chained packets one frame each ($((c1 - c0)) chains, $vn frames, the longest $vmax bytes)"
else
  not_ok "rrv3 got the chained packets one frame each ($((c1 - c0)) chains, $vn frames, the longest ${vmax:-?} bytes, at most 1514)"
fi
rm -f "$VCAP" "$VCAP.err"

# The room a QP's run sees on rrv2 (debugfs tx_room): half of its tx_queue_len, less what
# its queues hold. A root qdisc that is not multiqueue (netem here) is the qdisc of all four
# transmit queues and holds its packets once: tx_room counts them once, as tc does.
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
TXR=/sys/kernel/debug/rrxe/rrxe3/tx_room
txr() { awk -v k="$1" '$1 == k {print $2}' "$TXR"; }
if [ "$(txr netdev)" = rrv2 ] && [ "$(txr queues)" = 4 ] && [ "$(txr queued)" = 0 ] && [ "$(txr limit)" = 500 ] &&
  [ "$(txr room)" = 500 ]; then ok "tx_room of rrxe3: rrv2, 4 queues, none queued, room 500 (txqueuelen 1000)"
else not_ok "tx_room of rrxe3: rrv2, 4 queues, none queued, room 500: $(tr '\n' ' ' < "$TXR")"; fi
check "netem delay 5s at the root of rrv2, rrv3's address resolved for good" sh -c '
  modprobe -d "$RRXE_MODROOT" sch_netem && tc qdisc add dev rrv2 root netem delay 5s limit 1000 &&
  ip neigh replace 10.88.0.2 lladdr "$(ip -n rrvns -br link show rrv3 | awk "{print \$3}")" dev rrv2 nud permanent'
for _ in $(seq 40); do echo x > /dev/udp/10.88.0.2/9; done
tcq=$(tc -s qdisc show dev rrv2 | sed -n 's/.*backlog [^ ]* \([0-9]*\)p.*/\1/p' | head -1)
q=$(txr queued) room=$(txr room)
if [ "${tcq:-0}" -ge 40 ] && [ "$q" = "$tcq" ] && [ "$room" = $((500 - tcq)) ]; then
  ok "tx_room counts netem's $tcq held packets once over 4 queues (queued $q, room $room)"
else not_ok "tx_room counts netem's held packets once over 4 queues (tc ${tcq:-?}, queued ${q:-?}, room ${room:-?})"; fi
check "remove netem from rrv2" tc qdisc del dev rrv2 root
check "rdma link delete rrxe3, rrxe4; the veth pair and rrvns go" sh -c \
  'rdma link delete rrxe3 && rdma link delete rrxe4 && ip link del rrv2 && ip netns del rrvns'
user_teardown
tap_done
