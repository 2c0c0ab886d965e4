#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Forged RoCEv2 packets for a live RC QP, through ordinary UDP sockets (no privileges).

roce-spoof.py ROUNDS SOURCES... -- QPN RESP_PSN SEND_PSN READ_PSN WRITE_VA RKEY

Each SOURCE is KIND,SRC,DST (SRC is bound with a free port; DST gets the packets on 4791):
  addr   correct P_Key: to be refused for where it comes from or goes to
  pkey   P_Key 0x1234 (not the port's 0xffff)
For every round and source, one packet of each of: SEND_ONLY at RESP_PSN (64 bytes),
RDMA_WRITE_ONLY at RESP_PSN + 1 (64 bytes to WRITE_VA/RKEY), RDMA_READ_RESPONSE_ONLY at
READ_PSN (256 bytes), ACK of SEND_PSN, NAK (remote access error) of SEND_PSN: the PSNs the
target QP would accept from its peer. Payload bytes are 'H'. The ICRC is computed here
(roce.py). Prints how many packets it sent per kind.
"""
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from roce import IP_MTU_DISCOVER, IP_PMTUDISC_DO, bth, icrc  # noqa: E402

KINDS = ("SEND", "WRITE", "READ_RESP", "ACK", "NAK")


def packets(qpn, resp_psn, send_psn, read_psn, va, rkey, pkey):
    h = b"H"
    return (
        ("SEND", bth(0x04, qpn, resp_psn, pkey, True) + h * 64),
        ("WRITE", bth(0x0A, qpn, resp_psn + 1, pkey, True)
         + struct.pack(">QII", va, rkey, 64) + h * 64),
        ("READ_RESP", bth(0x10, qpn, read_psn, pkey) + struct.pack(">I", 0x1F000002) + h * 256),
        ("ACK", bth(0x11, qpn, send_psn, pkey) + struct.pack(">I", 0x1F000002)),
        ("NAK", bth(0x11, qpn, send_psn, pkey) + struct.pack(">I", 0x62000002)),
    )


def main():
    args = sys.argv[1:]
    cut = args.index("--")
    rounds, sources = int(args[0]), args[1:cut]
    qpn, resp_psn, send_psn, read_psn = (int(a, 0) for a in args[cut + 1:cut + 5])
    va, rkey = int(args[cut + 5], 0), int(args[cut + 6], 0)
    socks = []
    for spec in sources:
        kind, src, dst = spec.split(",")
        v6 = ":" in src
        s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
        if not v6:
            s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
            # A broadcast is not looped back to this host's own RoCE socket.
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
        s.bind((src, 0))
        pkey = 0x1234 if kind == "pkey" else 0xFFFF
        socks.append((spec, s, src, dst, s.getsockname()[1], pkey))
    sent = {}
    for _ in range(rounds):
        for spec, s, src, dst, sport, pkey in socks:
            for name, ib in packets(qpn, resp_psn, send_psn, read_psn, va, rkey, pkey):
                s.sendto(ib + icrc(ib, src, dst, sport), (dst, 4791))
                sent[spec] = sent.get(spec, 0) + 1
            time.sleep(0.05)
    for spec, n in sent.items():
        print(f"sent {n} packets from {spec}")


main()
