#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks the ICRC of every RoCEv2 frame (UDP port 4791, IPv4 or IPv6, Ethernet) of a
classic pcap file (tcpdump -w): CRC-32 over 8 bytes of 0xff and the masked IP, UDP and BTH
headers (the RoCEv2 annex's pseudo-header; drivers/rrxe/proto/src/icrc.rs), then the rest
of the packet up to the ICRC, stored little-endian. Prints "frames N good G bad B".

usage: pcap-icrc.py FILE [FRAMES]
With FRAMES, a file still being written (tcpdump -U) is read again, up to 80 times a
quarter of a second apart, until it holds that many RoCEv2 frames."""
import struct
import sys
import time
import zlib

if len(sys.argv) not in (2, 3) or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if len(sys.argv) == 2 else 2)


def check(data):
    magic = struct.unpack_from("<I", data, 0)[0] if len(data) >= 24 else 0
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off, frames, good, bad = 24, 0, 0, 0
    while off + 16 <= len(data):
        incl = struct.unpack_from(end + "IIII", data, off)[2]
        f = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(f) < incl:
            break  # the last record is being written
        r = frame(f)
        if r is None:
            continue
        frames += 1
        good += r
        bad += not r
    return frames, good, bad


def frame(f):
    """True or False for a RoCEv2 frame's ICRC, None for another frame."""
    if len(f) < 14:
        return None
    et = struct.unpack_from("!H", f, 12)[0]
    ip_pkt = f[14:]
    if et == 0x0800 and len(ip_pkt) >= 20 and ip_pkt[9] == 17:
        hl = (ip_pkt[0] & 0xF) * 4
        ip = bytearray(ip_pkt[:hl])
        ip[1] = ip[8] = ip[10] = ip[11] = 0xFF
        tot = struct.unpack_from("!H", ip_pkt, 2)[0]
    elif et == 0x86DD and len(ip_pkt) >= 40 and ip_pkt[6] == 17:
        hl = 40
        ip = bytearray(ip_pkt[:40])
        ip[0] |= 0x0F
        ip[1] = ip[2] = ip[3] = ip[7] = 0xFF
        tot = 40 + struct.unpack_from("!H", ip_pkt, 4)[0]
    else:
        return None
    pkt = ip_pkt[:tot]
    if len(pkt) < hl + 8 + 12 + 4 or 4791 not in struct.unpack_from("!HH", pkt, hl):
        return None
    udp = bytearray(pkt[hl:hl + 8])
    udp[6] = udp[7] = 0xFF
    bth = bytearray(pkt[hl + 8:hl + 20])
    bth[4] = 0xFF
    want = struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) +
                                        pkt[hl + 20:-4]))
    return want == pkt[-4:]


want = int(sys.argv[2]) if len(sys.argv) == 3 else None
for _ in range(80 if want is not None else 1):
    with open(sys.argv[1], "rb") as fh:
        frames, good, bad = check(fh.read())
    if frames == want:
        break
    if want is not None:
        time.sleep(0.25)
print(f"frames {frames} good {good} bad {bad}")
