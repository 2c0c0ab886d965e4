#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks the ICRC of every RoCEv2 frame (UDP port 4791, IPv4 or IPv6, Ethernet) of a
classic pcap file (tcpdump -w): CRC-32 over 8 bytes of 0xff and the masked IP, UDP and BTH
headers (the RoCEv2 annex's pseudo-header; drivers/rrxe/proto/src/icrc.rs), then the rest
of the packet up to the ICRC, stored little-endian. Prints "frames N good G bad B"."""
import struct
import sys
import zlib

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if len(sys.argv) == 2 else 2)

data = open(sys.argv[1], "rb").read()
magic = struct.unpack_from("<I", data, 0)[0]
end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
off, frames, good, bad = 24, 0, 0, 0
while off + 16 <= len(data):
    incl = struct.unpack_from(end + "IIII", data, off)[2]
    f = data[off + 16:off + 16 + incl]
    off += 16 + incl
    if len(f) < 14:
        continue
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
        continue
    pkt = ip_pkt[:tot]
    if len(pkt) < hl + 8 + 12 + 4 or 4791 not in struct.unpack_from("!HH", pkt, hl):
        continue
    frames += 1
    udp = bytearray(pkt[hl:hl + 8])
    udp[6] = udp[7] = 0xFF
    bth = bytearray(pkt[hl + 8:hl + 20])
    bth[4] = 0xFF
    want = struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) +
                                        pkt[hl + 20:-4]))
    if want == pkt[-4:]:
        good += 1
    else:
        bad += 1
print(f"frames {frames} good {good} bad {bad}")
