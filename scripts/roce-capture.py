#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Capture RoCEv2 frames (UDP port 4791, both directions) of one netdev into a pcap file.

usage: roce-capture.py IFACE SECONDS FILE

A packet socket (AF_PACKET, every protocol) sees what the netdev receives and what it
sends; frames of IPv4 or IPv6 carrying UDP to or from port 4791 are written, whole, with
their time (classic pcap, microseconds, LINKTYPE_ETHERNET). For a machine without tcpdump;
`tcpdump -i IFACE -w FILE udp port 4791` writes the same.
"""
import select
import socket
import struct
import sys
import time

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)
if len(sys.argv) != 4:
    sys.exit(__doc__.strip())


def is_roce(f):
    et = struct.unpack_from("!H", f, 12)[0] if len(f) >= 14 else 0
    off = 14
    if et == 0x8100 and len(f) >= 18:
        et, off = struct.unpack_from("!H", f, 16)[0], 18
    if et == 0x0800 and len(f) >= off + 28 and f[off + 9] == 17:
        u = off + (f[off] & 0xF) * 4
    elif et == 0x86DD and len(f) >= off + 48 and f[off + 6] == 17:
        u = off + 40
    else:
        return False
    if len(f) < u + 4:
        return False
    sport, dport = struct.unpack_from("!HH", f, u)
    return 4791 in (sport, dport)


def main():
    iface, secs, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((iface, 0))
    end = time.time() + secs
    n = 0
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        while time.time() < end:
            r, _, _ = select.select([s], [], [], 0.2)
            if not r:
                continue
            f = s.recv(65535)
            if not is_roce(f):
                continue
            t = time.time()
            out.write(struct.pack("<IIII", int(t), int((t % 1) * 1e6), len(f), len(f)))
            out.write(f)
            n += 1
    print(f"{n} frames", file=sys.stderr)


if __name__ == "__main__":
    main()
