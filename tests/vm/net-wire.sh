#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 600
# What rrxe puts on the wire, seen from the receiving VM: RC, UD and rdma_cm traffic over
# IPv6 GIDs (fd77::1 <-> fd77::2) with data checks; the traffic class (DSCP and ECN) of
# every packet taken from the QP's address (perftest --tclass, and rdma_cm's TOS with -T)
# over IPv4 and IPv6; and the UDP source port: one per QP, different QPs on different
# ports (flow entropy for ECMP/RSS). Each side captures the RoCEv2 packets it receives
# (tests/vm/lib/roce-capture.py, an AF_PACKET socket) and checks them.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
MY6=fd77::$((RRXE_VM + 1))
PEER6=fd77::$((2 - RRXE_VM))
G4=$GID
G6=$(retry 20 0.3 gid_index_v6 "$DEV" "$MY6") || G6=
if [ -n "$G6" ]; then ok "$DEV has a RoCE v2 GID for $MY6 (index $G6)"
else not_ok "$DEV has a RoCE v2 GID for $MY6"; G6=0; fi

GID=$G6
pair "IPv6: ibv_rc_pingpong 4 KiB x200, checked" 120 -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18801 -n 200 -s 4096 -c -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18801 -n 200 -s 4096 -c @PEER
pair "IPv6: ibv_ud_pingpong 512 B x100, checked" 120 -- \
  ibv_ud_pingpong -d @DEV -g @GID -p 18802 -n 100 -s 512 -c -- \
  ibv_ud_pingpong -d @DEV -g @GID -p 18802 -n 100 -s 512 -c @PEER
pair "IPv6: rping -V -C 50 (rdma_cm over fd77::)" 120 -- \
  rping -s -a "$MY6" -p 18803 -V -C 50 -- \
  rping -c -a "$PEER6" -p 18803 -V -C 50

CAP=$TMPDIR/roce-capture
# PORTS_CHECK FILE N: N destination QPs, each seen with a single source port, no two QPs
# sharing one, every port in 0xC000-0xFFFF.
PORTS_CHECK='
import sys
port, bad = {}, False
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split()[1:])
    s, q = int(f["sport"]), int(f["dqp"])
    bad |= not 0xC000 <= s <= 0xFFFF or port.setdefault(q, s) != s
print("QP -> source port:", port)
sys.exit(bad or len(port) != int(sys.argv[2]) or len(set(port.values())) != len(port))
'
# The captured steps move little data (20 messages of 64 KiB per QP): Python in a TCG guest
# takes every packet one at a time, and a socket buffer that overflows loses packets in
# bursts, whole QPs at a time.
# captured DESCRIPTION VER TC NQPS -- pair arguments: runs the pair while capturing, then
# checks the packets this VM received (other than the CM's, to QP 1; with MAIN_QP_ONLY set,
# only those of the QP that received the most): IP version VER,
# traffic class TC on every one, and NQPS destination QPs each fed from one UDP source
# port, a different one per QP, all in RoCEv2's 0xC000-0xFFFF range.
captured() {
  local desc=$1 ver=$2 tc=$3 nqps=$4 pid; shift 5
  python3 "$RRXE_ROOT/tests/vm/lib/roce-capture.py" "${RRXE_NETDEV:-eth0}" >"$CAP" 2>"$CAP.err" &
  pid=$!
  retry 50 0.2 grep -q listening "$CAP.err"
  pair "$desc" 180 -- "$@"
  kill -TERM "$pid"; wait "$pid"
  grep -v ' dqp=1 ' "$CAP" >"$CAP.all"
  if [ -n "$MAIN_QP_ONLY" ]; then
    # Only the QP that carried the most packets (perftest -R also connects a QP of its own
    # for its handshake, without the TOS).
    awk '{ split($5, q, "="); split($6, c, "="); n[q[2]] += c[2] }
         END { for (k in n) if (n[k] > best) { best = n[k]; m = k }; print "dqp=" m }' "$CAP.all" |
      { read -r m; grep " $m " "$CAP.all"; } >"$CAP.data"
  else cp "$CAP.all" "$CAP.data"; fi
  sed 's/^/#   /' "$CAP.data"
  check "$desc: received packets are all IP$ver" \
    awk -v v="$ver" '$1 != v {bad = 1} END {exit bad || NR == 0}' "$CAP.data"
  check "$desc: traffic class $tc (DSCP $((tc >> 2)), ECN $((tc & 3))) on every packet" \
    awk -v t="tc=$tc" '$2 != t {bad = 1} END {exit bad || NR == 0}' "$CAP.data"
  check "$desc: $nqps QPs, each on its own UDP source port in 0xC000-0xFFFF" \
    python3 -c "$PORTS_CHECK" "$CAP.data" "$nqps"
}

captured "IPv6: ib_write_bw -q 4 --tclass 106" v6 106 4 -- \
  ib_write_bw -d @DEV -x @GID -p 18804 -q 4 -s 65536 -n 20 --tclass 106 -F -- \
  ib_write_bw -d @DEV -x @GID -p 18804 -q 4 -s 65536 -n 20 --tclass 106 -F @PEER
GID=$G4
captured "IPv4: ib_send_bw -q 4 --tclass 106" v4 106 4 -- \
  ib_send_bw -d @DEV -x @GID -p 18805 -q 4 -s 65536 -n 20 --tclass 106 -F -- \
  ib_send_bw -d @DEV -x @GID -p 18805 -q 4 -s 65536 -n 20 --tclass 106 -F @PEER
captured "IPv4: ib_read_bw -q 2 --tclass 185 (DSCP EF, ECN ECT(1))" v4 185 2 -- \
  ib_read_bw -d @DEV -x @GID -p 18806 -q 2 -s 65536 -n 20 --tclass 185 -F -- \
  ib_read_bw -d @DEV -x @GID -p 18806 -q 2 -s 65536 -n 20 --tclass 185 -F @PEER
# 8 KiB messages: the client sees only ACKs of its data QP, one a message (the requester
# asks every 64 packets and at a message's end), and must see more of them than of
# perftest's handshake QP (about 30 packets), or the data QP is not the one picked.
MAIN_QP_ONLY=1 captured "IPv4: ib_write_bw -R -T 96 (rdma_cm TOS), its data QP" v4 96 1 -- \
  ib_write_bw -d @DEV -x @GID -p 18807 -R -T 96 -s 8192 -n 100 -F -- \
  ib_write_bw -d @DEV -x @GID -p 18807 -R -T 96 -s 8192 -n 100 -F @PEER
rm -f "$CAP" "$CAP.err" "$CAP.all" "$CAP.data"

user_teardown
tap_done
