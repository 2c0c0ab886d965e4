# SPDX-License-Identifier: GPL-2.0
"""RoCEv2 packets built in Python for the VM tests (imported by roce-spoof.py, pma-wire.py):
the BTH, and the ICRC (zlib CRC-32 over the IBTA pseudo-header: masked IPv4/IPv6 and UDP
headers, masked BTH) for the headers the kernel writes for an ordinary UDP socket: IPv4
with DF set (IP_PMTUDISC_DO) and ID 0 (an unconnected socket), IPv6 with flow label 0."""
import ipaddress
import struct
import zlib

IP_MTU_DISCOVER, IP_PMTUDISC_DO = 10, 2


def bth(opcode, qpn, psn, pkey=0xFFFF, ack_req=False):
    return struct.pack(">BBHII", opcode, 0, pkey, qpn & 0xFFFFFF,
                       (0x80000000 if ack_req else 0) | (psn & 0xFFFFFF))


def icrc(ib, src, dst, sport):
    udp_len = 8 + len(ib) + 4
    s, d = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    if s.version == 4:
        ip = struct.pack(">BBHHHBBH", 0x45, 0xFF, 20 + udp_len, 0, 0x4000, 0xFF, 17, 0xFFFF)
    else:
        ip = bytes([0x6F, 0xFF, 0xFF, 0xFF]) + struct.pack(">HBB", udp_len, 17, 0xFF)
    ip += s.packed + d.packed
    udp = struct.pack(">HHHH", sport, 4791, udp_len, 0xFFFF)
    masked = bytearray(ib)
    masked[4] = 0xFF
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + ip + udp + bytes(masked)))
