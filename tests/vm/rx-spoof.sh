#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 300
# Forged packets for a live RC QP from the peer VM, sent by an unprivileged user through
# ordinary UDP sockets with correct ICRCs (tests/vm/lib/roce-spoof.py): SEND, RDMA WRITE,
# READ response, ACK and NAK, each with exactly the PSN the target QP would accept, while
# tests/user/spoof holds the connection still at that point. They come from a second address
# of the peer, over IPv6 (the QP's path is IPv4), to a second address of the target, with a
# P_Key not the port's, and to the broadcast address. None may complete a WR, change memory
# or break the connection, and the target counts each under its reason: rx_drop_src_addr,
# rx_drop_dst_addr, rx_drop_pkey, rx_drop_dgid (exact deltas). Then an address that stops
# being a GID (moved from eth0 to lo): packets to it counted under rx_drop_no_qp before the
# move, rx_drop_dgid after.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

counter() { rdma statistic show link "$DEV"/1 | tr ' ' '\n' | awk -v n="$1" 'f {print; exit} $0 == n {f=1}'; }
bin=$RRXE_USER_BIN/spoof
ROUNDS=3 # each: one packet of each of the 5 kinds from each source
COUNTERS="rx_drop_src_addr rx_drop_dst_addr rx_drop_pkey rx_drop_dgid"

user_setup
if [ "$RRXE_VM" = 0 ]; then
  check "a second address on eth0" ip addr add 10.77.0.101/24 dev eth0
  check "$DEV has a GID for it" retry 20 0.3 gid_index_v4 "$DEV" 10.77.0.101
  declare -A before
  for c in $COUNTERS; do before[$c]=$(counter $c); done
  out=$(timeout 200 "$bin" -d "$DEV" -g "$GID" -p 18970 -s 2>&1); rc=$?
  relay_tap spoof "$rc" "$out"
  # 5 kinds x ROUNDS from each source: two sources for the wrong origin (another address
  # of the peer; IPv6), one each for the others.
  declare -A want=([rx_drop_src_addr]=$((2 * 5 * ROUNDS)) [rx_drop_dst_addr]=$((5 * ROUNDS))
                   [rx_drop_pkey]=$((5 * ROUNDS)) [rx_drop_dgid]=$((5 * ROUNDS)))
  for c in $COUNTERS; do
    after=$(counter $c)
    d=$(( ${after:-0} - ${before[$c]:-0} ))
    if [ -n "$after" ] && [ "$d" = "${want[$c]}" ]; then ok "$c counted exactly the ${want[$c]} forged packets"
    else not_ok "$c counted the ${want[$c]} forged packets (delta $d, now ${after:-missing})"; fi
  done
  ip addr del 10.77.0.101/24 dev eth0
  # A destination address that stops being a GID of the device: packets to 10.77.0.103
  # (to no QP) while it is on eth0 pass the destination GID check and are refused for
  # their QP (rx_drop_no_qp); moved to lo, where Linux still takes them in on eth0 but the
  # device has no GID for it, the same packets must be refused for their destination
  # (rx_drop_dgid): the receive path keeps the GIDs it found only while the GID table is
  # unchanged.
  dgid_phase() { # PHASE COUNTER: 5 packets to 10.77.0.103, all counted under COUNTER
    local b a
    b=$(counter "$2")
    peer_signal $((18980 + 2 * $1))
    peer_wait $((18981 + 2 * $1)) 60 || { not_ok "the peer sent phase $1's packets"; return; }
    sleep 1
    a=$(counter "$2")
    if [ "$(( ${a:-0} - ${b:-0} ))" = 5 ]; then ok "phase $1: 5 packets to 10.77.0.103 counted under $2"
    else not_ok "phase $1: 5 packets to 10.77.0.103 counted under $2 (delta $(( ${a:-0} - ${b:-0} )))"; fi
  }
  check "10.77.0.103 on eth0" ip addr add 10.77.0.103/24 dev eth0
  check "$DEV has a GID for it" retry 20 0.3 gid_index_v4 "$DEV" 10.77.0.103
  dgid_phase 0 rx_drop_no_qp
  ip addr del 10.77.0.103/24 dev eth0
  check "10.77.0.103 moved to lo" ip addr add 10.77.0.103/32 dev lo
  no_gid() { ! gid_index_v4 "$@"; }
  check "$DEV has no GID for it any more" retry 20 0.3 no_gid "$DEV" 10.77.0.103
  dgid_phase 1 rx_drop_dgid
  ip addr del 10.77.0.103/32 dev lo
else
  check "a second address on eth0" ip addr add 10.77.0.102/24 dev eth0
  me=$RRXE_MY_IP tgt=$RRXE_PEER_IP
  me6=fd77::$((RRXE_VM + 1)) tgt6=fd77::1
  spoof_cmd="setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3"
  spoof_cmd+=" $RRXE_ROOT/tests/vm/lib/roce-spoof.py"
  spoof="$spoof_cmd $ROUNDS"
  spoof+=" addr,10.77.0.102,$tgt addr,$me6,$tgt6 addr,$me,10.77.0.101 pkey,$me,$tgt"
  spoof+=" addr,10.77.0.102,10.77.0.255 --"
  out=$(SPOOF_CMD=$spoof timeout 200 "$bin" -d "$DEV" -g "$GID" -p 18970 "$tgt" 2>&1); rc=$?
  relay_tap spoof "$rc" "$out"
  # The packets of the destination GID phases above: one round of the 5 kinds to a QPN no
  # QP has, each phase when VM 0 says.
  for phase in 0 1; do
    peer_wait $((18980 + 2 * phase)) 120 || break
    check "phase $phase: 5 packets to 10.77.0.103" $spoof_cmd 1 addr,$me,10.77.0.103 -- 0xfff 0 0 0 0 0
    peer_signal $((18981 + 2 * phase))
  done
  ip addr del 10.77.0.102/24 dev eth0
fi
user_teardown
tap_done
