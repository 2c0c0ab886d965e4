#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The report of an A/B run (scripts/bench.sh --ab REV): two builds of rrxe.ko on the same
two VMs, alternating, the stack rrxe being HEAD's build and rrxe-b REV's.

usage: bench-ab-report.py RESULTS OUTDIR HEAD-REV REV SECONDS [KERNEL [MTU [LINUX]]]

Writes OUTDIR/bench-ab.md and prints it: for each row, both builds' medians and ranges,
the median and range of the ratio HEAD/REV within each repetition (a pair: the same
repetition, back to back, the order alternating), and in how many pairs HEAD did better
(higher bandwidth, lower latency); then TCP and the floor, and the counters of both builds.
"""
import statistics
import sys

# No __pycache__ in the checkout (a report is a command, with no side effect beyond its
# output).
sys.dont_write_bytecode = True
from bench_results import Results, cell  # noqa: E402

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)
if not 6 <= len(sys.argv) <= 9:
    sys.exit(__doc__.strip())

KIB64 = 65536
ROWS = [("ib_write_bw 64 KiB -e", "ib_write_bw-e", KIB64, 1),
        ("ib_write_bw 64 KiB -e -q 8", "ib_write_bw-e", KIB64, 8),
        ("ib_send_bw 64 KiB -e", "ib_send_bw-e", KIB64, 1),
        ("ib_read_bw 64 KiB -e", "ib_read_bw-e", KIB64, 1),
        ("ib_write_lat 2 B", "ib_write_lat", 2, 1),
        ("ib_send_lat 2 B", "ib_send_lat", 2, 1),
        ("ib_read_lat 2 B", "ib_read_lat", 2, 1)]
# The counters summed over the run (both VMs), for each build.
COUNTERS = ("sent_pkts", "rcvd_pkts", "retransmits", "retransmit_timeouts", "cwnd_cuts",
            "cwnd_undos", "tx_waits", "tx_drops", "tx_chains", "duplicate_request")


def main():
    path, outdir, a_rev, b_rev, secs = sys.argv[1:6]
    kernel = sys.argv[6] if len(sys.argv) > 6 else "nodebug"
    mtu = sys.argv[7] if len(sys.argv) > 7 else "1500"
    linux = sys.argv[8] if len(sys.argv) > 8 else "6.12"
    res = Results(path)
    # Summed over both VMs and every repetition, for each build.
    counters = {}
    for build, per in (("rrxe", res.counters), ("rrxe-b", res.counters_b)):
        counters[build] = {}
        for c in per.values():
            for n, v in c.items():
                counters[build][n] = counters[build].get(n, 0) + v
    out = [f"# A/B: rrxe {a_rev[:7]} (HEAD) against {b_rev[:7]} (rrxe-b)", "",
           f"Two TCG VMs (-smp 1), MTU {mtu}, Linux {linux}, guest kernel {kernel}; "
           f"the builds alternate within each repetition; {secs} s. A pair is one repetition "
           "of both builds, back to back; HEAD/REV is the ratio within a pair (for latency, "
           "below 1 is better).", "",
           "| row | unit | HEAD | REV | HEAD/REV, median of pairs (range) | pairs HEAD better |",
           "|---|---|---|---|---|---|"]
    for name, test, size, q in ROWS:
        a = res.runs.get(("rrxe", test, size, q), {})
        b = res.runs.get(("rrxe-b", test, size, q), {})
        unit = "usec" if test.endswith("_lat") else "Gb/s"
        pairs = [(a[r], b[r]) for r in sorted(a) if r in b and b[r] > 0]
        ratios = [x / y for x, y in pairs]
        better = sum(1 for x, y in pairs if (x > y if unit == "Gb/s" else x < y))
        rc = "–" if not ratios else (f"{statistics.median(ratios):.3f} "
                                     f"({min(ratios):.3f}–{max(ratios):.3f})")
        out.append(f"| {name} | {unit} | {cell(res, 'rrxe', test, size, q, unit)} | "
                   f"{cell(res, 'rrxe-b', test, size, q, unit)} | {rc} | {better} of {len(pairs)} |")
    tcp = cell(res, "tcp", "iperf3", 131072)
    udp = cell(res, "udp", "sockperf", 14, unit="usec")
    out += ["", f"iperf3 TCP: {tcp} Gb/s; UDP floor: {udp} µs "
            "(medians and ranges over the repetitions).", "",
            "Counters over the whole run, both VMs summed:", "",
            "| counter | HEAD | REV |", "|---|---|---|"]
    for n in COUNTERS:
        if n in counters["rrxe"] or n in counters["rrxe-b"]:
            out.append(f"| {n} | {counters['rrxe'].get(n, 0)} | {counters['rrxe-b'].get(n, 0)} |")
    if res.notify:
        out += ["", "Virtio notifications per 1000 frames (medians), each VM: kicks / interrupts "
                "of the transmit queue per 1000 frames sent · kicks / interrupts of the receive "
                "queue per 1000 frames received:", "",
                "| row | VM | HEAD | REV |", "|---|---|---|---|"]
        for name, test, size, q in ROWS:
            if test.endswith("_lat"):
                continue
            for vm, who in (("vm1", "client"), ("vm0", "server")):
                cells = []
                for build in ("rrxe", "rrxe-b"):
                    r = res.notify_rates(build, test, size, q, vm)
                    f = lambda v: "–" if v is None else f"{v:.0f}"  # noqa: E731
                    cells.append("–" if all(v is None for v in r)
                                 else f"{f(r[0])} / {f(r[1])} · {f(r[2])} / {f(r[3])}")
                out.append(f"| {name} | {who} | {cells[0]} | {cells[1]} |")
    text = "\n".join(out) + "\n"
    with open(f"{outdir}/bench-ab.md", "w", encoding="utf-8") as f:
        f.write(text)
    print(text)


main()
