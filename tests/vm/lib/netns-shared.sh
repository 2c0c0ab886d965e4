# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Shared mode, as the k8s shared device plugin uses it, for KIND (macvlan or
# ipvlan; set by netns-shared-KIND.sh): one rrxe0 on eth0 in init_net; two pods per VM, each
# with a KIND child of eth0 in its own namespace. The pods' addresses appear in rrxe0's GID
# table with their netdev; from inside the pods, over those GIDs: pod to pod across the VMs
# (ibv_rc_pingpong -g, rping -V, ib_write_bw -x and -R, ib_send_lat -x) and between the two
# pods of one VM (whose KIND device gets rrxe's packets one frame each); then, under a
# sending pod's traffic, its address is moved to a new GID index, and another's device is
# deleted. The far VM's capture shows the pod's MAC (macvlan: its own; ipvlan: eth0's, which
# all its pods share) and IP, never eth0's address.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"
. "$RRXE_ROOT/tests/vm/lib/netns-common.sh"

# pod_mac P VM: the source MAC of pod P of VM on the wire.
pod_mac() {
  if [ "$KIND" = macvlan ]; then echo "52:54:00:77:${1}0:0$(($2 + 1))"
  else echo "52:54:00:77:00:0$(($2 + 1))"; fi
}

check "rdma system show: shared (the default)" sh -c 'rdma system show | grep -q "netns shared"'
user_setup
check "pod1 namespace with a $KIND of eth0 ($(pod_ip 1))" pod_add pod1 1 "$KIND"
check "pod2 namespace with a $KIND of eth0 ($(pod_ip 2))" pod_add pod2 2 "$KIND"
G1=$(pod_gid pod1 rrxe0 "$(pod_ip 1)") || G1=
G2=$(pod_gid pod2 rrxe0 "$(pod_ip 2)") || G2=
if [ -n "$G1" ] && [ -n "$G2" ]; then ok "rrxe0 has RoCE v2 GIDs for the pods (pod1 index $G1, pod2 index $G2)"
else not_ok "rrxe0 has RoCE v2 GIDs for the pods ($G1, $G2)"; G1=${G1:-1} G2=${G2:-1}; fi
check "pod1's GID is on its own netdev (gid_attrs/ndevs: net0 in pod1)" sh -c \
  "[ \"\$(ip netns exec pod1 cat /sys/class/infiniband/rrxe0/ports/1/gid_attrs/ndevs/$G1)\" = net0 ]"
check "scripts/show-gids in pod1: index $G1, $(pod_ip 1), v2, net0" sh -c \
  "ip netns exec pod1 \"$RRXE_ROOT/scripts/show-gids\" rrxe0 | grep -Eq '^rrxe0 +1 +$G1 +[0-9a-f:]+ +$(pod_ip 1) +v2 +net0\$'"
check "rrxe0 is visible in the pod (ibv_devices)" sh -c 'ip netns exec pod1 ibv_devices | grep -qw rrxe0'

p=19350
CAP=$TMPDIR/netns-capture
python3 "$RRXE_ROOT/tests/vm/lib/roce-capture.py" --addrs eth0 >"$CAP" 2>"$CAP.err" &
cpid=$!
retry 50 0.2 grep -q listening "$CAP.err"
RRXE_PEER_IP=$(pod_peer_ip 1) pair "pod1 to pod1 across the VMs: ibv_rc_pingpong -g $G1, 4 KiB x100, checked" 180 -- \
  ip netns exec pod1 ibv_rc_pingpong -d rrxe0 -g "$G1" -p $((p + 1)) -n 100 -s 4096 -c -- \
  ip netns exec pod1 ibv_rc_pingpong -d rrxe0 -g "$G1" -p $((p + 1)) -n 100 -s 4096 -c @PEER
kill -TERM "$cpid"; wait "$cpid"
sed 's/^/#   /' "$CAP"
want="smac=$(pod_mac 1 $((1 - RRXE_VM))) src=$(pod_peer_ip 1) dst=$(pod_ip 1)"
check "capture: every RoCE packet received carries the peer pod's MAC and IP ($want)" \
  awk -v w="$want" '{ k = $1 " " $2 " " $3 } k != w { bad = 1 } END { exit bad || NR == 0 }' "$CAP"

RRXE_PEER_IP=$(pod_peer_ip 1) pair "pod1 to pod1: rping -V -C 20 (rdma_cm resolves the pod's GID)" 180 -- \
  ip netns exec pod1 "$RRXE_ROOT/tests/vm/lib/rping-run" -s -a "$(pod_ip 1)" -p $((p + 2)) -V -C 20 -- \
  ip netns exec pod1 "$RRXE_ROOT/tests/vm/lib/rping-run" -c -a @PEER -p $((p + 2)) -V -C 20
RRXE_PEER_IP=$(pod_peer_ip 1) pair "pod1 to pod1: ib_write_bw -x $G1, 64 KiB x200" 180 -- \
  ip netns exec pod1 ib_write_bw -d rrxe0 -x "$G1" -p $((p + 3)) -s 65536 -n 200 -F -- \
  ip netns exec pod1 ib_write_bw -d rrxe0 -x "$G1" -p $((p + 3)) -s 65536 -n 200 -F @PEER
RRXE_PEER_IP=$(pod_peer_ip 1) pair "pod1 to pod1: ib_write_bw -R (rdma_cm), 64 KiB x200" 180 -- \
  ip netns exec pod1 ib_write_bw -R -d rrxe0 -x "$G1" -p $((p + 4)) -s 65536 -n 200 -F -- \
  ip netns exec pod1 ib_write_bw -R -d rrxe0 -x "$G1" -p $((p + 4)) -s 65536 -n 200 -F @PEER
RRXE_PEER_IP=$(pod_peer_ip 2) pair "pod2 to pod2: ib_send_lat -x $G2, x200" 180 -- \
  ip netns exec pod2 ib_send_lat -d rrxe0 -x "$G2" -p $((p + 5)) -n 200 -F -- \
  ip netns exec pod2 ib_send_lat -d rrxe0 -x "$G2" -p $((p + 5)) -n 200 -F @PEER

# The two pods of one VM (the KIND device delivers between them on the host). A 4 KiB
# SEND is four packets that rrxe hands down as one skb (a chain, tx_chains): the pod's
# device must get them as the packets they are, never as one frame longer than the link's
# MTU (rrxe has the first device split it; a KIND device whose lower device can take
# fraglist skbs, a veth's, would pass it on whole: user-loopback checks a veth).
PCAP=$TMPDIR/netns-pod2-capture
frames_start pod2 net0 "$PCAP"
both "pod1 to pod2 on this VM: ibv_rc_pingpong, checked" -- \
  ip netns exec pod2 ibv_rc_pingpong -d rrxe0 -g "$G2" -p $((p + 6 + RRXE_VM * 10)) -n 50 -s 4096 -c -- \
  ip netns exec pod1 ibv_rc_pingpong -d rrxe0 -g "$G1" -p $((p + 6 + RRXE_VM * 10)) -n 50 -s 4096 -c "$(pod_ip 2)"
frames_stop "$PCAP"
pn=$frames_n pmax=$frames_max
if [ "$pn" -ge 200 ] && [ -n "$pmax" ] && [ "$pmax" -le 1514 ]; then
  ok "pod2's net0 got pod1's packets one frame each ($pn frames, the longest $pmax bytes)"
else not_ok "pod2's net0 got pod1's packets one frame each ($pn frames, the longest ${pmax:-?} bytes, at most 1514)"; fi
both "pod1 to pod2 on this VM: rping -V -C 10" -- \
  ip netns exec pod2 "$RRXE_ROOT/tests/vm/lib/rping-run" -s -a "$(pod_ip 2)" -p $((p + 7 + RRXE_VM * 10)) -V -C 10 -- \
  ip netns exec pod1 "$RRXE_ROOT/tests/vm/lib/rping-run" -c -a "$(pod_ip 2)" -p $((p + 7 + RRXE_VM * 10)) -V -C 10
check "no packet dropped for an unknown destination GID" \
  sh -c "[ \"\$(rdma statistic show link rrxe0/1 | tr ' ' '\n' | grep -A1 -x rx_drop_dgid | tail -n 1)\" = 0 ]"

# A sending QP keeps its source GID's netdev between packets, without a reference, and
# trusts it only while the GID table is unchanged (glue::IbDev::with_gid_netdev). Two
# steps, each with VM 1 sending from a pod to the same pod of VM 0 (ib_write_bw -D 60):
# 1. pod2's address is deleted and added back: the netdev and the route stay, the address
#    gets a new GID index, and the QP's index stays deleted. Every packet of the QP must
#    now be refused (a kept netdev trusted past the change would send them), and the sender
#    must give up.
# 2. pod1's device is deleted: it must go at once (nothing holds it), its GID with it, the
#    QP's next packets must be refused, and the sender must give up.
sent_over() { [ "$(counter rrxe0 sent_pkts)" -gt "$1" ]; }
drops_over() { [ "$(counter rrxe0 tx_drops)" -gt "$1" ]; }
pod1_gid_gone() { ! gid_index_v4 rrxe0 "$(pod_ip 1)"; }
pod2_gid_moved() { local g; g=$(gid_index_v4 rrxe0 "$(pod_ip 2)") && [ "$g" != "$G2" ]; }
# sent_still: no packet sent in 3 s.
sent_still() { local a; a=$(counter rrxe0 sent_pkts); sleep 3; [ "$(counter rrxe0 sent_pkts)" = "$a" ]; }
# receiver POD GID PORT [stop]: VM 0's side of a cut-off sender. Without `stop`, a reader
# that must end by itself once its sender is cut off (pod2: the sender's address comes back,
# so its exit resets perftest's TCP connection). With `stop` (pod1: the sender's device is
# deleted, so its TCP connection vanishes without a FIN or a reset, and an RDMA WRITE
# target sees nothing of its QP: nothing can end the reader), it is stopped once VM 1
# signals that its sender gave up.
receiver() {
  # perftest's TCP connection may lose its far end without a FIN: the closed socket would
  # retransmit its own FIN for about two minutes and keep the pod's namespace (so its GID)
  # alive after `ip netns del` below. One retry lets it go in seconds.
  ip netns exec "$1" sysctl -qw net.ipv4.tcp_orphan_retries=1
  ip netns exec "$1" timeout 150 ib_write_bw -d rrxe0 -x "$2" -p "$3" -s 65536 -D 60 -F \
    >/dev/null 2>&1 &
  local spid=$!
  retry 100 0.2 ip netns exec "$1" bash -c "$(declare -f listening); listening $3"
  peer_signal $(($3 + 1000))
  if [ "${4:-}" = stop ]; then
    check "$1: the other VM's sender gave up (it signals)" peer_wait $(($3 + 2000)) 150
    kill "$spid" 2>/dev/null
    check "$1: the receiving ib_write_bw, stopped, exits" retry 30 1 proc_gone "$spid"
  else
    check "$1: the receiving ib_write_bw ends once its sender is cut off" retry 160 1 proc_gone "$spid"
  fi
}
# sender POD GID PORT PEER_IP: VM 1's side; starts the writer (pid in $cpid) and waits for
# its traffic.
sender() {
  peer_wait $(($3 + 1000)) 60 || echo "# (no signal from VM 0)"
  ip netns exec "$1" timeout 150 ib_write_bw -d rrxe0 -x "$2" -p "$3" -s 65536 -D 60 -F "$4" \
    >"$TMPDIR/$1-cut.out" 2>&1 &
  cpid=$!
  local s0
  s0=$(counter rrxe0 sent_pkts)
  check "$1 writes to the other VM's $1 (ib_write_bw -D 60)" retry 120 0.5 sent_over $((s0 + 500))
}
if [ "$RRXE_VM" = 0 ]; then
  receiver pod2 "$G2" $((p + 9))
  receiver pod1 "$G1" $((p + 8)) stop
else
  sender pod2 "$G2" $((p + 9)) "$(pod_peer_ip 2)"
  d0=$(counter rrxe0 tx_drops)
  check "pod2's address deleted and added back under that traffic" sh -c \
    "ip -n pod2 addr del $(pod_ip 2)/24 dev net0 && ip -n pod2 addr add $(pod_ip 2)/24 dev net0"
  check "pod2's address is back under a new GID index (the QP's index $G2 stays deleted)" \
    retry 30 1 pod2_gid_moved
  check "the QP's packets are refused (tx_drops rises from $d0)" retry 60 0.5 drops_over "$d0"
  check "none is sent any more, though the address, its netdev and the route are back" sent_still
  check "the pod2 sender gives up (ib_write_bw ends)" retry 160 1 proc_gone "$cpid"
  tail -n 3 "$TMPDIR/pod2-cut.out" | sed 's/^/#   /'

  sender pod1 "$G1" $((p + 8)) "$(pod_peer_ip 1)"
  d0=$(counter rrxe0 tx_drops)
  check "ip link del net0 in pod1 under that traffic (the QP's source netdev): done at once" \
    timeout 60 ip -n pod1 link del net0
  check "pod1's GID leaves rrxe0 with its device" retry 30 1 pod1_gid_gone
  check "the QP's next packets are refused (tx_drops rises from $d0)" retry 60 0.5 drops_over "$d0"
  check "the pod1 sender gives up (ib_write_bw ends)" retry 160 1 proc_gone "$cpid"
  tail -n 3 "$TMPDIR/pod1-cut.out" | sed 's/^/#   /'
  peer_signal $((p + 8 + 2000))
fi

check "ip netns del pod1 pod2" sh -c 'ip netns del pod1 && ip netns del pod2'
pods_gids_gone() { ! gid_index_v4 rrxe0 "$(pod_ip 1)" && ! gid_index_v4 rrxe0 "$(pod_ip 2)"; }
check "the pods' GIDs leave rrxe0 with their namespaces" retry 30 1 pods_gids_gone
user_teardown
tap_done
