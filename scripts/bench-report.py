#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns the benchmark's result lines (qemu/bench-guest.sh, scripts/bench-host.py) into a
markdown report and a PNG chart.

usage: bench-report.py RESULTS OUTDIR REPS SECONDS [KERNEL [MTU [SMP [LINUX]]]]
"""
import statistics
import sys
from collections import defaultdict

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
LATENCY = [("ib_write_lat 2 B", "ib_write_lat", 1.3),
           ("ib_send_lat 2 B", "ib_send_lat", 1.3),
           ("ib_read_lat 2 B", "ib_read_lat", 1.5)]


def num(w):
    try:
        return float(w)
    except ValueError:
        return None


class Results:
    def __init__(self, path):
        self.runs = defaultdict(dict)      # (stack, test, size, q) -> {rep: value}
        self.units = {}
        self.kcpu = defaultdict(dict)      # (stack, test, size, q, vm) -> {rep: (ticks, bytes)}
        self.kbase = defaultdict(dict)     # (stack, test, size, q, vm) -> {rep: ticks}
        self.host = {}                     # id -> [vm0 vcpu, vm0 other, vm1 vcpu, vm1 other] ns
        self.pins = []
        self.stuck = []
        self.counters = defaultdict(dict)  # (vm, rep) -> {name: value}
        self.profiles = defaultdict(list)
        self.ncpu = {}
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                self.parse(line.split())

    def parse(self, w):
        if not w:
            return
        rep = lambda i: int(w[i]) if len(w) > i and w[i].isdigit() else 0  # noqa: E731
        if w[0] == "BENCH" and len(w) >= 7 and num(w[5]) is not None:
            key = (w[1], w[2], int(w[3]), int(w[4]))
            self.runs[key][rep(7)] = float(w[5])
            self.units[key] = w[6]
        elif w[0] == "CPU" and len(w) >= 8 and w[6].isdigit():
            self.kcpu[(w[1], w[2], int(w[3]), int(w[4]), w[5])][rep(8)] = (
                int(w[6]), None if w[7] == "-" else int(w[7]))
        elif w[0] == "CPU0" and len(w) >= 7 and w[6].isdigit():
            self.kbase[(w[1], w[2], int(w[3]), int(w[4]), w[5])][rep(7)] = int(w[6])
        elif w[0] == "HOST" and len(w) >= 4:
            self.host[w[1]] = [int(x) for x in w[2:] if x.isdigit()]
        elif w[0] == "PIN":
            self.pins.append(" ".join(w[1:]))
        elif w[0] == "STUCK" and len(w) >= 6:
            self.stuck.append(" ".join(w[1:]))
        elif w[0] == "COUNTERS" and len(w) >= 4:
            names = w[5:] if len(w) > 5 and w[3] == "link" else w[3:]
            self.counters[(w[1], rep(2))] = {
                names[i]: int(names[i + 1]) for i in range(0, len(names) - 1, 2) if names[i + 1].isdigit()}
        elif w[0] == "NCPU" and len(w) >= 3:
            self.ncpu[w[1]] = w[2]
        elif w[0] == "PROFILE" and len(w) >= 5:
            self.profiles[(w[1], w[2])].append((w[3], " ".join(w[4:])))

    def med(self, stack, test, size, q=1):
        v = list(self.runs.get((stack, test, size, q), {}).values())
        return statistics.median(v) if v else None

    def spread(self, stack, test, size, q=1):
        v = list(self.runs.get((stack, test, size, q), {}).values())
        return (min(v), max(v)) if len(v) > 1 else None

    def kernel_gb(self, stack, test, size, q, vm):
        """Guest kernel s/GB of a row, less each run's fixed-cost twin of the same repetition."""
        per = []
        fallback = [b for _, b in self.kcpu.get((stack, test, size, q, "vm1"), {}).values() if b]
        for r, (ticks, b) in self.kcpu.get((stack, test, size, q, vm), {}).items():
            b = b or (statistics.median(fallback) if fallback else None)
            t0 = self.kbase.get((stack, test, size, q, vm), {}).get(r, 0)
            # A run that cost no more ticks than its twin measured nothing: left out.
            if b and ticks > t0:
                per.append((ticks - t0) / 100 / (b / 1e9))
        return statistics.median(per) if per else None

    def host_gb(self, stack, test, size, q):
        """Host s/GB of both QEMU processes, (vCPU, other), less the fixed-cost twin."""
        per = []
        for r, (_, b) in self.kcpu.get((stack, test, size, q, "vm1"), {}).items():
            run = self.host.get(f"{stack}:{test}:{size}:{q}:{r}")
            if not b or not run or len(run) < 4:
                continue
            fixed = self.host.get(f"{stack}:{test}:{size}:{q}:{r}:fixed", [0] * len(run))
            vcpu = run[0] + run[2] - fixed[0] - fixed[2]
            other = run[1] + run[3] - fixed[1] - fixed[3]
            if vcpu + other > 0:
                per.append((vcpu / 1e9 / (b / 1e9), other / 1e9 / (b / 1e9)))
        if not per:
            return None
        return (statistics.median(p[0] for p in per), statistics.median(p[1] for p in per))


def fmt(v, unit="Gb/s"):
    if v is None:
        return "–"
    return f"{v:.3f}" if unit == "Gb/s" else f"{v:.1f}"


def cell(res, stack, test, size, q=1, unit="Gb/s"):
    v, s = res.med(stack, test, size, q), res.spread(stack, test, size, q)
    if v is None:
        return "–"
    return fmt(v, unit) + (f" ({fmt(s[0], unit)}–{fmt(s[1], unit)})" if s else "")


def ratio(a, b):
    return "–" if a is None or b is None or b == 0 else f"{a / b:.2f}×"


def pct(a, b):
    return "–" if a is None or b is None or b == 0 else f"{100 * a / b:.0f} %"


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
    out.append(f"| iperf3 TCP (ceiling) | Gb/s | {cell(res, 'tcp', 'iperf3', 131072)}"
               + " |" * len(stacks) + " | |")
    for name, test in HEADLINE:
        out.append(f"| {name} | Gb/s | " + " | ".join(cell(res, s, test, KIB64) for s in stacks)
                   + f" | {pct(m('rrxe', test, KIB64), tcp)} | {ratio(m('rrxe', test, KIB64), m('rxe', test, KIB64))} |")
    out.append("")
    hdr = "| test | unit | " + " | ".join(stacks) + " | rrxe/floor | rrxe/rxe |"
    out += [hdr, "|" + "---|" * (hdr.count("|") - 1)]
    out.append(f"| UDP ping-pong, 14 B (floor) | µs | {cell(res, 'udp', 'sockperf', 14, unit='usec')}"
               + " |" * len(stacks) + " | |")
    for name, test, _ in LATENCY:
        out.append(f"| {name} (t_typical) | µs | " + " | ".join(cell(res, s, test, 2, unit="usec") for s in stacks)
                   + f" | {ratio(m('rrxe', test, 2), floor)} | {ratio(m('rrxe', test, 2), m('rxe', test, 2))} |")

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
            out.append(target(f"{name} ≥ 75 % of TCP ({pct(a, tcp)})", ge(a, tcp, 0.75)))
            out.append(target(f"{name} ≥ 1.5× rxe ({ratio(a, b)})", ge(a, b, 1.5)))
    else:
        a = m("rrxe", "ib_write_bw-e", KIB64)
        out.append(target(f"ib_write_bw 64 KiB -e ≥ 90 % of TCP ({pct(a, tcp)})", ge(a, tcp, 0.9)))
    for name, test, f in LATENCY:
        a, b = m("rrxe", test, 2), m("rxe", test, 2)
        out.append(target(f"{name} ≤ {f}× the UDP floor ({ratio(a, floor)})", le(a, floor, f)))
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

    if res.stuck:
        out.append(f"\nServers that had not exited 10 s after their client ended (killed): "
                   f"{len(res.stuck)}: " + "; ".join(res.stuck) + ".")
    if res.profiles:
        out.append("\nWhere the time goes (perf cpu-clock, all CPUs, during ib_write_bw 64 KiB):")
        for (stack, vm), rows in sorted(res.profiles.items()):
            out.append(f"\n{stack}, {vm} ({'server/receiver' if vm == 'vm0' else 'client/sender'}):\n")
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
