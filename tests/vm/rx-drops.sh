#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 240
# Datagrams to UDP 4791 from the peer VM: truncated ones, ones with a bad ICRC, ones with a
# correct ICRC (computed independently here, with Python's zlib over the IBTA pseudo-header)
# but a reserved opcode, and valid requests for a QP that does not exist. Each kind is
# counted under its own drop reason in `rdma statistic`, with no splat.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"

counter() { rdma statistic show link rrxe0/1 | tr ' ' '\n' | awk -v n="$1" 'f {print; exit} $0 == n {f=1}'; }
at_least() { local v; v=$(counter "$1"); [ -n "$v" ] && [ "$v" -ge "$2" ]; }
ROUNDS=20

if [ "$RRXE_VM" = 0 ]; then
  check "insmod rrxe.ko" load_rrxe
  check "rdma link add rrxe0" rdma link add rrxe0 type rrxe netdev eth0
  check "rdma statistic lists the rrxe counters" sh -c 'rdma statistic show link rrxe0/1 | grep -q rx_drop_truncated'
  # The peer sends ROUNDS rounds; we count whatever arrives once our device exists.
  check "truncated datagrams counted (rx_drop_truncated)" retry 60 0.5 at_least rx_drop_truncated 10
  check "bad ICRC counted (rx_icrc_errors)" retry 60 0.5 at_least rx_icrc_errors 5
  check "good ICRC, reserved opcode counted (rx_drop_malformed)" retry 60 0.5 at_least rx_drop_malformed 5
  check "good ICRC, valid SEND to a missing QP counted (rx_drop_no_qp)" retry 60 0.5 at_least rx_drop_no_qp 5
  rdma statistic show link rrxe0/1 | sed 's/^/# /'
  check "rmmod rrxe" sh -c 'rdma link delete rrxe0 && rmmod rrxe'
else
  check "send malformed datagrams to 4791 (IPv4 and IPv6)" python3 - "$RRXE_PEER_IP" <<PY
import socket, struct, sys, time, zlib
v4 = sys.argv[1]
src6, dst6, sport = "fd77::2", "fd77::1", 50000
s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s6.bind((src6, sport))

def bth(opcode, qpn, psn):
    # opcode, SE/M/pad/tver=0, pkey ffff, resv8a, dest QP, A/resv7, PSN
    return struct.pack(">BBHI I", opcode, 0, 0xffff, qpn & 0xffffff, psn & 0xffffff)

def icrc_v6(ib):
    udp_len = 8 + len(ib) + 4
    ip = bytes([0x6f, 0xff, 0xff, 0xff]) + struct.pack(">HBB", udp_len, 17, 0xff)
    ip += socket.inet_pton(socket.AF_INET6, src6) + socket.inet_pton(socket.AF_INET6, dst6)
    udp = struct.pack(">HHHH", sport, 4791, udp_len, 0xffff)
    masked = bytearray(ib)
    masked[4] = 0xff  # resv8a
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + ip + udp + bytes(masked)))

send_only = bth(0x04, 0x11, 1) + b"hello rrxe!!"   # RC SEND_ONLY, 12 bytes payload
reserved = bth(0x1f, 0x11, 1)                        # reserved RC opcode
for _ in range($ROUNDS):
    for s, a in ((s4, v4), (s6, dst6)):
        for payload in (b"\x00", b"short"):
            s.sendto(payload, (a, 4791))
    s6.sendto(send_only + b"\x00\x00\x00\x00", (dst6, 4791))
    s6.sendto(send_only + icrc_v6(send_only), (dst6, 4791))
    s6.sendto(reserved + icrc_v6(reserved), (dst6, 4791))
    time.sleep(1)
PY
fi
tap_done
