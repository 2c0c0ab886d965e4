#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns the benchmark's result lines (qemu/bench-guest.sh, scripts/bench-host.py) into a
markdown report and a PNG chart.

usage: bench-report.py RESULTS OUTDIR REPS SECONDS [KERNEL [MTU [SMP [LINUX]]]]
"""
import sys

# No __pycache__ in the checkout (a report is a command, with no side effect beyond its
# output).
sys.dont_write_bytecode = True
from bench_results import Results, cell, pct, ratio  # noqa: E402

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)
if not 5 <= len(sys.argv) <= 9:
    sys.exit(__doc__.strip())

STACKS = ("rrxe", "rxe", "siw")
KIB64 = 65536
# The headline rows: both processes wait for completion events (-e), as iperf3 sleeps.
HEADLINE = [("ib_write_bw 64 KiB -e", "ib_write_bw-e"),
            ("ib_send_bw 64 KiB -e", "ib_send_bw-e"),
            ("ib_read_bw 64 KiB -e", "ib_read_bw-e")]
# (row, test, target against the floor, the floor's multiple the row compares with).
# perftest prints half the round trip for WRITE and SEND, as the floor is, but the whole
# round trip for READ and atomics (print_report_lat's rtt_factor): ib_read_lat is compared
# with the UDP round trip, twice the floor.
LATENCY = [("ib_write_lat 2 B", "ib_write_lat", 1.3, 1),
           ("ib_send_lat 2 B", "ib_send_lat", 1.3, 1),
           ("ib_read_lat 2 B", "ib_read_lat", 1.5, 2)]


def main():
    path, outdir, reps, secs = sys.argv[1:5]
    kernel = sys.argv[5] if len(sys.argv) > 5 else "nodebug"
    mtu = int(sys.argv[6]) if len(sys.argv) > 6 else 1500
    smp = sys.argv[7] if len(sys.argv) > 7 else "1"
    linux = sys.argv[8] if len(sys.argv) > 8 else "6.12"
    res = Results(path)
    stacks = [s for s in STACKS if any(k[0] == s for k in res.runs)]
    m = res.med
    tcp = m("tcp", "iperf3", 131072)
    # TCP from the server to the client: the direction of a READ's data (a run from before
    # this row has none; READ is then compared with the other direction).
    tcp_r = m("tcp", "iperf3-R", 131072)

    def ceiling(test):
        return tcp_r if test.startswith("ib_read") and tcp_r is not None else tcp
    floor = m("udp", "sockperf", 14)
    out = []

    got = sorted(set(res.ncpu.values()))
    if not got or got == [smp]:
        cpus = f"-smp {smp}"
    else:
        cpus = (f"-smp {smp} asked, but the guests brought up "
                + "/".join(res.ncpu[v] for v in sorted(res.ncpu)) + " CPU(s): NOT what was asked")
    kdesc = ("the benchmark kernel: -O2, no lockdep, no atomic-sleep or list checks, no kmemleak"
             if kernel == "nodebug" else "the test kernel, with lockdep and kmemleak built in")
    out.append(f"Medians of {reps} repetition(s), the range in brackets; two TCG VMs ({cpus}) over "
               f"a QEMU socket link, link MTU {mtu}; guest kernel {linux}, {kdesc}; every "
               f"bandwidth run -Q 1 (a completion per message); whole benchmark {secs} s.")
    if res.pins:
        out.append("QEMU threads: " + "; ".join(res.pins) + ".")
    out.append("")

    # The headline: completion events.
    hdr = "| test | unit | " + " | ".join(stacks) + " | rrxe/TCP | rrxe/rxe |"
    out += [hdr, "|" + "---|" * (hdr.count("|") - 1)]
    out.append(f"| iperf3 TCP (ceiling), client → server | Gb/s | {cell(res, 'tcp', 'iperf3', 131072)}"
               + " |" * len(stacks) + " | |")
    if tcp_r is not None:
        out.append(f"| iperf3 TCP (ceiling), server → client | Gb/s | {cell(res, 'tcp', 'iperf3-R', 131072)}"
                   + " |" * len(stacks) + " | |")
    for name, test in HEADLINE:
        out.append(f"| {name} | Gb/s | " + " | ".join(cell(res, s, test, KIB64) for s in stacks)
                   + f" | {pct(m('rrxe', test, KIB64), ceiling(test))} | {ratio(m('rrxe', test, KIB64), m('rxe', test, KIB64))} |")
    if tcp_r is not None:
        out.append("\nrrxe/TCP is to TCP in the direction of the data: client to server for WRITE "
                   "and SEND, server to client for READ.")
    out.append("")
    hdr = "| test | unit | " + " | ".join(stacks) + " | rrxe/floor | rrxe/rxe |"
    out += [hdr, "|" + "---|" * (hdr.count("|") - 1)]
    out.append(f"| UDP ping-pong, 14 B (floor) | µs | {cell(res, 'udp', 'sockperf', 14, unit='usec')}"
               + " |" * len(stacks) + " | |")
    spin = m("udp", "sockperf-spin", 14)
    if spin is not None:
        out.append(f"| UDP ping-pong, 14 B, both sides spinning | µs | {cell(res, 'udp', 'sockperf-spin', 14, unit='usec')}"
                   + " |" * len(stacks) + f" {ratio(spin, floor)} | |")
    for name, test, _, rtt in LATENCY:
        base = floor * rtt if floor else None
        label = f"{name} (t_typical{', a round trip' if rtt == 2 else ''})"
        out.append(f"| {label} | µs | " + " | ".join(cell(res, s, test, 2, unit="usec") for s in stacks)
                   + f" | {ratio(m('rrxe', test, 2), base)} | {ratio(m('rrxe', test, 2), m('rxe', test, 2))} |")
    # UC: no ACK frames (a run from before these rows has none, and prints no row).
    for name, test in (("ib_write_lat 2 B, UC", "ib_write_lat-uc"), ("ib_send_lat 2 B, UC", "ib_send_lat-uc")):
        if m("rrxe", test, 2) is None and m("rxe", test, 2) is None:
            continue
        out.append(f"| {name} (t_typical) | µs | " + " | ".join(cell(res, s, test, 2, unit="usec") for s in stacks)
                   + f" | {ratio(m('rrxe', test, 2), floor)} | {ratio(m('rrxe', test, 2), m('rxe', test, 2))} |")
    out.append("\nThe floor and ib_write_lat and ib_send_lat are half a round trip; ib_read_lat is a "
               "whole one, as perftest prints it, so its ratio is to twice the floor. An RC WRITE "
               "or SEND puts two frames each way on the link (the request, the ACK of the "
               "other side's), UC and the floor one. perftest's latency tests spin (on memory "
               "or their CQ); the floor's processes sleep in their receives, the spinning "
               "floor's poll a non-blocking socket (its rrxe/floor column: its ratio to the floor).")

    out.append("\nSecondary rows (polling: both processes spin on their CQs; -q 8 with events):\n")
    hdr = "| test | " + " | ".join(stacks) + " | rrxe/rxe |"
    out += [hdr, "|" + "---|" * (hdr.count("|") - 1)]
    for name, test, q in (("ib_write_bw 64 KiB", "ib_write_bw", 1), ("ib_send_bw 64 KiB", "ib_send_bw", 1),
                          ("ib_read_bw 64 KiB", "ib_read_bw", 1), ("ib_write_bw 64 KiB -e -q 8", "ib_write_bw-e", 8),
                          ("ib_write_bw 64 KiB -q 64", "ib_write_bw", 64)):
        out.append(f"| {name} | " + " | ".join(cell(res, s, test, KIB64, q) for s in stacks)
                   + f" | {ratio(m('rrxe', test, KIB64, q), m('rxe', test, KIB64, q))} |")

    sizes = sorted({k[2] for k in res.runs if k[1] == "ib_write_bw-e" and k[3] == 1})
    if sizes:
        out.append("\nib_write_bw -e, -q 1, by message size (Gb/s):\n")
        out += ["| bytes | " + " | ".join(stacks) + " | rrxe/rxe |", "|" + "---|" * (len(stacks) + 2)]
        for s in sizes:
            out.append(f"| {s} | " + " | ".join(cell(res, st, "ib_write_bw-e", s) for st in stacks)
                       + f" | {ratio(m('rrxe', 'ib_write_bw-e', s), m('rxe', 'ib_write_bw-e', s))} |")

    # CPU per GB: the guests' kernels (perftest's user-space polling left out) and the host.
    def kcells(stack, test, size=KIB64, q=1):
        c, s = res.kernel_gb(stack, test, size, q, "vm1"), res.kernel_gb(stack, test, size, q, "vm0")
        return "–" if c is None and s is None else " / ".join("–" if v is None else f"{v:.2f}" for v in (c, s))

    def hcells(stack, test, size=KIB64, q=1):
        h = res.host_gb(stack, test, size, q)
        return "–" if h is None else f"{h[0] + h[1]:.1f} ({h[0]:.1f} + {h[1]:.1f})"

    if res.kcpu:
        out.append("\nGuest kernel CPU per GB moved (s/GB: system + irq + softirq, less each run's "
                   "fixed cost, the same run with 20 two-byte messages), client VM / server VM:\n")
        out += ["| test | " + " | ".join(["tcp"] + stacks) + " |", "|" + "---|" * (len(stacks) + 2)]
        out.append("| iperf3 | " + kcells("tcp", "iperf3", 131072) + " |" + " |" * len(stacks))
        for name, test in HEADLINE:
            out.append(f"| {name} | | " + " | ".join(kcells(s, test) for s in stacks) + " |")
    if res.host:
        out.append("\nHost CPU per GB moved (s/GB: both QEMU processes, all their threads, as vCPU "
                   "+ I/O threads; less the fixed-cost twin; TCP: the whole 5 s run):\n")
        out += ["| test | " + " | ".join(["tcp"] + stacks) + " | rrxe/rxe |", "|" + "---|" * (len(stacks) + 3)]
        out.append("| iperf3 | " + hcells("tcp", "iperf3", 131072) + " |" + " |" * len(stacks) + " |")
        for name, test in HEADLINE:
            a, b = res.host_gb("rrxe", test, KIB64, 1), res.host_gb("rxe", test, KIB64, 1)
            out.append(f"| {name} | | " + " | ".join(hcells(s, test) for s in stacks)
                       + f" | {ratio(sum(a) if a else None, sum(b) if b else None)} |")

    # Virtio notifications: under TCG a kick (the guest telling QEMU a queue has work) and
    # an interrupt (QEMU telling the guest) each stop the vCPU, and a kick wakes QEMU's
    # I/O thread, which shares the VM's host core.
    if res.notify:
        def ncells(stack, test, vm, size=KIB64):
            r = res.notify_rates(stack, test, size, 1, vm)
            if all(v is None for v in r):
                return "–"
            f = lambda v: "–" if v is None else f"{v:.0f}"  # noqa: E731
            return f"{f(r[0])} / {f(r[1])} · {f(r[2])} / {f(r[3])}"
        out.append("\nVirtio notifications per 1000 frames (medians), each VM: kicks / interrupts "
                   "of the transmit queue per 1000 frames sent · kicks / interrupts of the "
                   "receive queue per 1000 frames received:\n")
        out += ["| test | VM | " + " | ".join(["tcp"] + stacks) + " |", "|" + "---|" * (len(stacks) + 3)]
        for vm, who in (("vm1", "client"), ("vm0", "server")):
            out.append(f"| iperf3 | {who} | " + ncells("tcp", "iperf3", vm, 131072) + " |" + " |" * len(stacks))
            if tcp_r is not None:
                out.append(f"| iperf3 -R | {who} | " + ncells("tcp", "iperf3-R", vm, 131072) + " |"
                           + " |" * len(stacks))
            for name, test in HEADLINE:
                out.append(f"| {name} | {who} | | " + " | ".join(ncells(s, test, vm) for s in stacks) + " |")

    # The targets (docs/performance.md): None when the run has no number for it.
    def target(desc, ok):
        return f"- {desc}: " + ("–" if ok is None else ("met" if ok else "MISSED"))

    def ge(a, b, f=1.0):
        return None if a is None or b is None else a >= f * b

    def le(a, b, f=1.0):
        return None if a is None or b is None else a <= f * b

    out.append("\nTargets (medians of this run):")
    if mtu < 4200:
        for name, test in HEADLINE:
            a, b = m("rrxe", test, KIB64), m("rxe", test, KIB64)
            c = ceiling(test)
            way = " in its direction" if c is not tcp else ""
            out.append(target(f"{name} ≥ 75 % of TCP{way} ({pct(a, c)})", ge(a, c, 0.75)))
            out.append(target(f"{name} ≥ 1.5× rxe ({ratio(a, b)})", ge(a, b, 1.5)))
    else:
        a = m("rrxe", "ib_write_bw-e", KIB64)
        out.append(target(f"ib_write_bw 64 KiB -e ≥ 90 % of TCP ({pct(a, tcp)})", ge(a, tcp, 0.9)))
    for name, test, f, rtt in LATENCY:
        a, b = m("rrxe", test, 2), m("rxe", test, 2)
        base = floor * rtt if floor else None
        what = "the UDP round trip" if rtt == 2 else "the UDP floor"
        out.append(target(f"{name} ≤ {f}× {what} ({ratio(a, base)})", le(a, base, f)))
        out.append(target(f"{name} ≤ 0.7× rxe ({ratio(a, b)})", le(a, b, 0.7)))
    for name, test in HEADLINE[:2]:
        a, b = res.host_gb("rrxe", test, KIB64, 1), res.host_gb("rxe", test, KIB64, 1)
        a, b = (sum(a) if a else None), (sum(b) if b else None)
        out.append(target(f"{name} host CPU/GB ≤ 0.7× rxe's ({ratio(a, b)})", le(a, b, 0.7)))
    q1 = res.runs.get(("rrxe", "ib_write_bw-e", KIB64, 1), {})
    q8 = res.runs.get(("rrxe", "ib_write_bw-e", KIB64, 8), {})
    pairs = [q8[r] / q1[r] for r in q8 if r in q1 and q1[r] > 0]
    out.append(target(f"-q 8 ≥ -q 1 in every paired run ({len(pairs)} pairs, ratios "
                      + (", ".join(f"{p:.2f}" for p in pairs) or "none") + ")",
                      None if not pairs else min(pairs) >= 1.0))
    n64 = len(res.runs.get(("rrxe", "ib_write_bw", KIB64, 64), {}))
    out.append(target(f"a 64-QP run completes ({n64} of {reps} did)", None if not stacks else n64 == int(reps)))
    sent = sum(c.get("sent_pkts", 0) for (vm, _), c in res.counters.items())
    tmo = sum(c.get("retransmit_timeouts", 0) for (vm, _), c in res.counters.items())
    drops = sum(c.get("tx_drops", 0) for (vm, _), c in res.counters.items())
    if sent:
        # On a lossless link every retransmit timeout is spurious unless a packet was dropped
        # on the way out (tx_drops): all of them are counted here.
        out.append(target(f"retransmit timeouts ≤ 0.01 % of packets sent ({tmo} of {sent}, "
                          f"{100 * tmo / sent:.4f} %; {drops} transmit drops)", tmo <= sent / 10000))

    # Which run of a repetition retransmitted, timed out or waited: rrxe's counters over each
    # bandwidth run with completion events (the -q 1 / -q 8 pair first).
    runc = sorted((k for k in res.runcounters if k[0] == "rrxe" and k[4] == "vm1" and k[1].endswith("-e")),
                  key=lambda k: (k[2] != KIB64, k[1] != "ib_write_bw-e", k[2], k[1], k[3]))
    if runc:
        out.append("\nrrxe's counters over each run with completion events, repetition by repetition "
                   "(client: packets sent, retransmit timeouts, window cuts undone as spurious, packets "
                   "sent again, transmit waits; server: duplicate requests, transmit waits):\n")
        out += ["| row | rep | Gb/s | sent | timeouts | cuts undone | sent again | tx waits | server dup | "
                "server tx waits |", "|" + "---|" * 10]
        for key in runc:
            stack, test, size, q, _ = key
            srv = res.runcounters.get((stack, test, size, q, "vm0"), {})
            for r, c in sorted(res.runcounters[key].items()):
                v = res.runs.get((stack, test, size, q), {}).get(r)
                sc = srv.get(r, {})
                out.append(f"| {test} {size} -q {q} | {r} | " + ("–" if v is None else f"{v:.3f}") + " | "
                           + " | ".join(str(c.get(n, 0)) for n in ("sent_pkts", "retransmit_timeouts",
                                                                   "cwnd_undos", "retransmits", "tx_waits"))
                           + f" | {sc.get('duplicate_request', 0)} | {sc.get('tx_waits', 0)} |")

    if res.stuck:
        out.append(f"\nServers that had not exited 10 s after their client ended (killed): "
                   f"{len(res.stuck)}: " + "; ".join(res.stuck) + ".")
    if res.profiles:
        out.append("\nWhere the time goes (perf cpu-clock, all CPUs, 5 s of each 64 KiB row with "
                   "completion events; the client sends a WRITE's and a SEND's data, the server a "
                   "READ's):")
        for (key, vm), rows in sorted(res.profiles.items()):
            stack, _, test = key.partition(":")
            out.append(f"\n{stack}, {test or 'ib_write_bw'}, {vm} ({'server' if vm == 'vm0' else 'client'}):\n")
            out += ["```"] + [f"{p:>7} {sym}" for p, sym in rows[:15]] + ["```"]

    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    with open(f"{outdir}/bench.md", "w", encoding="utf-8") as f:
        f.write(text)
    chart(res, stacks, sizes, tcp, outdir)


def chart(res, stacks, sizes, tcp, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: chart skipped)")
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for st in stacks:
        xs = [s for s in sizes if res.med(st, "ib_write_bw-e", s) is not None]
        ax.plot(xs, [res.med(st, "ib_write_bw-e", s) for s in xs], marker="o", label=st)
    if tcp is not None:
        ax.axhline(tcp, linestyle="--", color="grey", label="iperf3 TCP")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("ib_write_bw -e, Gb/s (median)")
    ax.set_title("RDMA WRITE bandwidth over one TCG link")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{outdir}/bench.png", dpi=100)
    print(f"chart: {outdir}/bench.png")


if __name__ == "__main__":
    main()
