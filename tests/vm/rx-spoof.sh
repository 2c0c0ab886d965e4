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
# rx_drop_dst_addr, rx_drop_pkey, rx_drop_dgid (exact deltas).
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
else
  check "a second address on eth0" ip addr add 10.77.0.102/24 dev eth0
  me=$RRXE_MY_IP tgt=$RRXE_PEER_IP
  me6=fd77::$((RRXE_VM + 1)) tgt6=fd77::1
  spoof="setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3"
  spoof+=" $RRXE_ROOT/tests/vm/lib/roce-spoof.py $ROUNDS"
  spoof+=" addr,10.77.0.102,$tgt addr,$me6,$tgt6 addr,$me,10.77.0.101 pkey,$me,$tgt"
  spoof+=" addr,10.77.0.102,10.77.0.255 --"
  out=$(SPOOF_CMD=$spoof timeout 200 "$bin" -d "$DEV" -g "$GID" -p 18970 "$tgt" 2>&1); rc=$?
  relay_tap spoof "$rc" "$out"
  ip addr del 10.77.0.102/24 dev eth0
fi
user_teardown
tap_done
