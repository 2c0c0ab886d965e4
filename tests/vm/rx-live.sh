#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 300
# Hostile packets against a live RC connection. While ibv_rc_pingpong (data checked) runs
# between the VMs, the client VM also sends, from its own IPv6 address with correct ICRCs,
# packets for the server's real QP number: SENDs and RDMA WRITEs far ahead of the expected
# PSN (out of sequence) and far behind it (duplicates, one with a bad rkey), duplicate RDMA
# READ requests with a bad rkey, ACKs and NAKs for PSNs the server never sent, and
# truncated packets. The connection must survive with correct data, the server's counters
# must show the out-of-sequence, duplicate and truncated packets, and no splat. The
# connection runs over the IPv6 GIDs: packets for an RC QP are taken only from its path
# (rx-spoof checks the others are refused).
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

counter() { rdma statistic show link rrxe0/1 | tr ' ' '\n' | awk -v n="$1" 'f {print; exit} $0 == n {f=1}'; }
ITERS=20000

user_setup
GID6=$(retry 20 0.3 gid_index_v6 "$DEV" "fd77::$((RRXE_VM + 1))") || GID6=
if [ -n "$GID6" ]; then ok "$DEV has a RoCE v2 GID for fd77::$((RRXE_VM + 1)) (index $GID6)"
else not_ok "$DEV has a RoCE v2 GID for fd77::$((RRXE_VM + 1))"; GID6=0; fi
if [ "$RRXE_VM" = 0 ]; then
  check "ibv_rc_pingpong server completes with checked data under injection" \
    timeout 240 ibv_rc_pingpong -d "$DEV" -g "$GID6" -p 18950 -n $ITERS -s 64 -c
  for c in out_of_seq_request duplicate_request rx_drop_truncated; do
    v=$(counter $c)
    if [ "${v:-0}" -ge 5 ]; then ok "server counted $c ($v)"; else not_ok "server counted $c (${v:-none})"; fi
  done
  rdma statistic show link rrxe0/1 | sed 's/^/# /'
  # The device still takes a new connection afterwards.
  pair "a new RC connection after the injection (pingpong 100, checked)" 120 -- \
    ibv_rc_pingpong -d @DEV -g @GID -p 18951 -n 100 -s 4096 -c -- \
    ibv_rc_pingpong -d @DEV -g @GID -p 18951 -n 100 -s 4096 -c @PEER
else
  log=$(mktemp)
  retry 60 1 timeout 240 ibv_rc_pingpong -d "$DEV" -g "$GID6" -p 18950 -n $ITERS -s 64 -c \
    "$RRXE_PEER_IP" > "$log" 2>&1 &
  cli=$!
  # The client's RC QP names the server's QP number and the PSNs the two sides started with.
  qp_line() { rdma resource show qp link "$DEV"/1 2>/dev/null | grep -m1 ' type RC .*state RTS'; }
  line=$(retry 100 0.2 qp_line && qp_line)
  field() { echo "$line" | tr ' ' '\n' | awk -v n="$1" 'f {print; exit} $0 == n {f=1}'; }
  rqpn=$(field rqpn) sqpsn=$(field sq-psn) rqpsn=$(field rq-psn)
  if [ -n "$rqpn" ] && [ -n "$sqpsn" ]; then ok "found the live QP (server QPN $rqpn, PSNs $sqpsn/$rqpsn)"
  else not_ok "found the live QP ($line)"; fi
  check "inject hostile packets for the live QP" python3 - "${rqpn:-0}" "${sqpsn:-0}" "${rqpsn:-0}" <<'PY'
import socket, struct, sys, time, zlib
qpn, sq_psn, rq_psn = (int(a) for a in sys.argv[1:4])
src6, dst6, sport = "fd77::2", "fd77::1", 50001
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s6.bind((src6, sport))

def bth(opcode, psn, pad=0, ack_req=False):
    return struct.pack(">BBHII", opcode, pad << 4, 0xffff, qpn & 0xffffff,
                       (0x80000000 if ack_req else 0) | (psn & 0xffffff))

def icrc(ib):
    udp_len = 8 + len(ib) + 4
    ip = bytes([0x6f, 0xff, 0xff, 0xff]) + struct.pack(">HBB", udp_len, 17, 0xff)
    ip += socket.inet_pton(socket.AF_INET6, src6) + socket.inet_pton(socket.AF_INET6, dst6)
    udp = struct.pack(">HHHH", sport, 4791, udp_len, 0xffff)
    masked = bytearray(ib)
    masked[4] = 0xff
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + ip + udp + bytes(masked)))

def send(ib):
    s6.sendto(ib + icrc(ib), (dst6, 4791))

def reth(va, rkey, n):
    return struct.pack(">QII", va, rkey, n)

ahead, behind = sq_psn + 0x400000, sq_psn - 0x400000     # what the server's responder expects
ghost = rq_psn + 0x400000                                 # PSNs the server's requester never sent
for i in range(40):
    send(bth(0x04, ahead + i, ack_req=True) + b"hostile SEND")          # SEND_ONLY ahead
    send(bth(0x04, behind + i, ack_req=True) + b"hostile SEND")         # SEND_ONLY behind
    send(bth(0x0a, ahead + i) + reth(0x1000, 0xdeadbe00, 8) + b"12345678")   # WRITE_ONLY ahead
    send(bth(0x0a, behind + i) + reth(0x1000, 0xdeadbe00, 8) + b"12345678")  # WRITE_ONLY behind
    send(bth(0x0c, behind + i) + reth(0x1000, 0xdeadbe00, 64))          # READ request behind
    send(bth(0x11, ghost + i) + struct.pack(">I", 0x1f000000 | i))      # ACK, ghost PSN
    send(bth(0x11, ghost + i) + struct.pack(">I", 0x60000000 | i))      # NAK seq err, ghost
    send(bth(0x11, ghost + i) + struct.pack(">I", 0x62000000 | i))      # NAK remote access
    send(bth(0x0a, ahead + i)[:8])                                      # truncated BTH
    send(bth(0x0a, ahead + i))                                          # WRITE without its RETH
    time.sleep(0.2)
PY
  if wait $cli; then ok "ibv_rc_pingpong client completes with checked data under injection"
  else not_ok "ibv_rc_pingpong client completes with checked data under injection"; sed 's/^/# /' "$log"; fi
  pair "a new RC connection after the injection (pingpong 100, checked)" 120 -- \
    ibv_rc_pingpong -d @DEV -g @GID -p 18951 -n 100 -s 4096 -c -- \
    ibv_rc_pingpong -d @DEV -g @GID -p 18951 -n 100 -s 4096 -c @PEER
fi
user_teardown
tap_done
