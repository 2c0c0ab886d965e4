#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""PerfMgt MADs over the wire, as another host's performance manager sends them: each a
RoCEv2 UD SEND to the peer's GSI QP (QP 1, Q_Key 0x80010000) from an ordinary UDP socket
(ICRC from roce.py), the answer captured on IFACE (an AF_PACKET socket) by its transaction
ID. The peer's driver answers in process_mad; this host's rrxe sees the answer too and its
MAD layer drops it (no agent asked). Prints TAP lines (numbered), then the plan.

pma-wire.py IFACE SRC DST
"""
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from roce import IP_MTU_DISCOVER, IP_PMTUDISC_DO, bth, icrc  # noqa: E402

UD_SEND_ONLY, GSI_QKEY, DATA = 0x64, 0x80010000, 64
CLASS_PORT_INFO, PORT_SAMPLES_CONTROL, PORT_COUNTERS, PORT_COUNTERS_EXT = 0x01, 0x10, 0x12, 0x1D
n = failed = 0


def ok(cond, what):
    global n, failed
    n += 1
    failed += not cond
    print(f"{'' if cond else 'not '}ok {n} - {what}", flush=True)


def mad(method, attr, tid, port_select=1, class_version=1):
    m = bytearray(256)
    m[0:4] = bytes([1, 0x04, class_version, method])
    m[8:16] = struct.pack(">Q", tid)
    m[16:18] = struct.pack(">H", attr)
    m[DATA + 1] = port_select
    return bytes(m)


def answer_of(frame, dst, tid):
    """The MAD of a RoCEv2 UD SEND from DST to QP 1 answering TID, or None."""
    if len(frame) < 14 + 20 + 8 + 12 + 8 + 256 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0xF) * 4
    if ip[9] != 17 or socket.inet_ntoa(ip[12:16]) != dst:
        return None
    udp = ip[ihl:]
    if struct.unpack_from(">H", udp, 2)[0] != 4791:
        return None
    ib = udp[8:]
    if ib[0] != UD_SEND_ONLY or struct.unpack_from(">I", ib, 4)[0] & 0xFFFFFF != 1:
        return None
    m = ib[20:20 + 256]
    if len(m) < 256 or m[1] != 0x04 or struct.unpack_from(">Q", m, 8)[0] != tid:
        return None
    return m


class Pma:
    def __init__(self, iface, src, dst):
        self.dst, self.src = dst, src
        self.tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.tx.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
        self.tx.bind((src, 0))
        self.sport = self.tx.getsockname()[1]
        self.rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
        self.rx.bind((iface, 0))
        self.tid = 0x7272786500000000 | (os.getpid() & 0xFFFF) << 16
        self.psn = 0

    def ask(self, method, attr, **kw):
        """Sends the MAD (again after a second without an answer, up to 5 times) and returns
        (its transaction ID, the answer or None)."""
        self.tid += 1
        req = mad(method, attr, self.tid, **kw)
        for _ in range(5):
            self.psn += 1
            ib = bth(UD_SEND_ONLY, 1, self.psn) + struct.pack(">II", GSI_QKEY, 1) + req
            self.tx.sendto(ib + icrc(ib, self.src, self.dst, self.sport), (self.dst, 4791))
            end = time.monotonic() + 1
            while (left := end - time.monotonic()) > 0:
                self.rx.settimeout(left)
                try:
                    frame = self.rx.recv(65535)
                except socket.timeout:
                    break
                m = answer_of(frame, self.dst, self.tid)
                if m is not None:
                    return self.tid, m
        return self.tid, None


def status(m):
    return struct.unpack_from(">H", m, 4)[0]


def u64(m, off):
    return struct.unpack_from(">Q", m, DATA + off)[0]


def u32(m, off):
    return struct.unpack_from(">I", m, DATA + off)[0]


def main():
    iface, src, dst = sys.argv[1:4]
    p = Pma(iface, src, dst)

    def answered(what, method, attr, **kw):
        tid, m = p.ask(method, attr, **kw)
        ok(m is not None, f"{what}: answered")
        if m is None:
            return None
        ok(m[3] == 0x81 and struct.unpack_from(">H", m, 16)[0] == attr,
           f"{what}: a GetResp for the attribute asked, with the request's transaction ID {tid:#x}")
        return m

    m = answered("ClassPortInfo", 0x01, CLASS_PORT_INFO, port_select=0)
    if m:
        cap = struct.unpack_from(">H", m, DATA + 2)[0]
        ok(status(m) == 0 and m[DATA] == 1 and m[DATA + 1] == 1 and cap & 1 << 9
           and u32(m, 4) & 0x1F == 18,
           f"ClassPortInfo: status 0, versions 1, PortCountersExtended (CapabilityMask {cap:#06x})")
    m = answered("PortCountersExtended", 0x01, PORT_COUNTERS_EXT)
    if m:
        data_x, data_r, pk_x, pk_r = u64(m, 8), u64(m, 16), u64(m, 24), u64(m, 32)
        print(f"# the peer's PortXmitData {data_x} PortRcvData {data_r} PortXmitPkts {pk_x} "
              f"PortRcvPkts {pk_r}")
        ok(status(m) == 0 and m[DATA + 1] == 1, "PortCountersExtended: status 0, PortSelect 1")
        # The peer received this query and the one before, and answered that one; a packet
        # is at least 44 octets (IPv4, UDP, BTH, ICRC); every packet is unicast.
        ok(pk_x >= 1 and pk_r >= 2 and data_x * 4 + 3 >= pk_x * 44 and data_r * 4 + 3 >= pk_r * 44
           and u64(m, 40) == pk_x and u64(m, 48) == pk_r and u64(m, 56) == 0 and u64(m, 64) == 0,
           "PortCountersExtended: the peer's traffic, data in 4-octet units, all unicast")
    m = answered("PortCounters", 0x01, PORT_COUNTERS)
    if m:
        ok(status(m) == 0 and u32(m, 32) >= 1 and u32(m, 36) >= 3,
           f"PortCounters: status 0, packets both ways ({u32(m, 32)} sent, {u32(m, 36)} received)")
    m = answered("PortCountersExtended of all ports", 0x01, PORT_COUNTERS_EXT, port_select=0xFF)
    if m:
        ok(status(m) == 0 and u64(m, 24) >= 1, "PortCountersExtended of all ports: this port's")
    for what, method, attr, kw, want in (
            ("Get PortSamplesControl", 0x01, PORT_SAMPLES_CONTROL, {}, 0x000C),
            ("Get PortCounters of port 2", 0x01, PORT_COUNTERS, {"port_select": 2}, 0x001C),
            ("Set PortCounters (clear)", 0x02, PORT_COUNTERS, {}, 0x0008),
            ("Get PortCounters, class version 2", 0x01, PORT_COUNTERS, {"class_version": 2}, 0x0004)):
        m = answered(what, method, attr, **kw)
        if m:
            ok(status(m) == want and not any(m[24:]),
               f"{what}: status {status(m):#06x} (want {want:#06x}), no data")
    print(f"1..{n}")
    sys.exit(1 if failed else 0)


main()
