#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Capture the RoCEv2 packets (UDP to 4791) that arrive on an interface, until SIGTERM or
SIGINT, then print one line per (IP version, traffic class, UDP source port, BTH dest QP):

    v4 tc=106 ecn=2 sport=50123 dqp=17 n=812

The traffic class is the whole IPv4 TOS / IPv6 Traffic Class byte (DSCP << 2 | ECN).
With --addrs, one line per (source MAC, source IP, destination IP) instead:

    smac=52:54:00:77:10:02 src=10.77.0.12 dst=10.77.0.11 n=812

At the end, on standard error: max_frame=N, the longest RoCEv2 frame seen (Ethernet header
included): one longer than the link's MTU allows is several packets passed on as one skb.

Usage: roce-capture.py [--addrs] IFACE
"""
import collections
import signal
import socket
import struct
import sys

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
SO_RCVBUFFORCE = 33
counts = collections.Counter()
max_frame = 0
stop = False
ADDRS = "--addrs" in sys.argv[1:]
IFACE = [a for a in sys.argv[1:] if a != "--addrs"][0]


def on_signal(_sig, _frm):
    global stop
    stop = True


def parse(frame):
    if len(frame) < 14:
        return None
    etype = struct.unpack_from(">H", frame, 12)[0]
    p = frame[14:]
    smac = ":".join(f"{b:02x}" for b in frame[6:12])
    if etype == 0x0800 and len(p) >= 20:
        ihl = (p[0] & 0xF) * 4
        if p[9] != 17 or len(p) < ihl + 8 + 12:
            return None
        ver, tc, udp = "v4", p[1], p[ihl:]
        src, dst = socket.inet_ntop(socket.AF_INET, p[12:16]), socket.inet_ntop(socket.AF_INET, p[16:20])
    elif etype == 0x86DD and len(p) >= 40 + 8 + 12:
        if p[6] != 17:
            return None
        ver = "v6"
        tc = ((p[0] & 0xF) << 4) | (p[1] >> 4)
        udp = p[40:]
        src, dst = socket.inet_ntop(socket.AF_INET6, p[8:24]), socket.inet_ntop(socket.AF_INET6, p[24:40])
    else:
        return None
    sport, dport = struct.unpack_from(">HH", udp, 0)
    if dport != 4791:
        return None
    dqp = struct.unpack_from(">I", udp, 8 + 4)[0] & 0xFFFFFF
    if ADDRS:
        return smac, src, dst
    return ver, tc, sport, dqp


def count(frame, addr):
    global max_frame
    if addr[2] == socket.PACKET_OUTGOING:
        return
    k = parse(frame)
    if k:
        counts[k] += 1
        max_frame = max(max_frame, len(frame))


def main():
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    # Only what arrives, and room for bursts: a READ responder sends thousands of packets
    # for the few requests it receives, and a socket fed both directions overflowed and
    # lost those requests.
    s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
    s.bind((IFACE, 0))
    s.settimeout(0.2)
    print("listening", flush=True, file=sys.stderr)
    while not stop:
        try:
            frame, addr = s.recvfrom(65535)
        except (socket.timeout, InterruptedError):
            continue
        count(frame, addr)
    # Asked to stop once the traffic is over: what is still queued arrived before that.
    s.setblocking(False)
    while True:
        try:
            frame, addr = s.recvfrom(65535)
        except (BlockingIOError, InterruptedError):
            break
        count(frame, addr)
    for k, n in sorted(counts.items()):
        if ADDRS:
            print(f"smac={k[0]} src={k[1]} dst={k[2]} n={n}")
        else:
            ver, tc, sport, dqp = k
            print(f"{ver} tc={tc} ecn={tc & 3} sport={sport} dqp={dqp} n={n}")
    print(f"max_frame={max_frame}", file=sys.stderr, flush=True)


main()
