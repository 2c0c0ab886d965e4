#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns the benchmark's BENCH/PROFILE lines into a markdown report and a PNG chart.

usage: bench-report.py RESULTS OUTDIR REPS SECONDS [KERNEL [MTU]]
"""
import statistics
import sys
from collections import defaultdict

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)
if not 5 <= len(sys.argv) <= 8:
    sys.exit(__doc__.strip())


def fmt(v, unit):
    if v is None:
        return "–"
    return f"{v:.3f}" if unit == "Gb/s" else f"{v:.1f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "–"
    return f"{a / b:.2f}×"


def main():
    path, outdir, reps, secs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    kernel = sys.argv[5] if len(sys.argv) > 5 else "debug"
    mtu = sys.argv[6] if len(sys.argv) > 6 else "1500"
    smp = sys.argv[7] if len(sys.argv) > 7 else "1"
    runs = defaultdict(list)
    units = {}
    profiles = defaultdict(list)
    cpu = defaultdict(list)  # (stack, test, size, q, vm) -> [(ticks, bytes or None)]
    base = defaultdict(list)  # the same key -> [ticks of the run's fixed cost], run by run
    ncpu = {}  # vm -> the CPUs its kernel brought up
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) >= 7 and w[0] == "BENCH":
                try:
                    key = (w[1], w[2], int(w[3]), int(w[4]))
                    runs[key].append(float(w[5]))
                    units[key] = w[6]
                except ValueError:
                    continue
            elif len(w) >= 8 and w[0] == "CPU":
                try:
                    key = (w[1], w[2], int(w[3]), int(w[4]), w[5])
                    cpu[key].append((int(w[6]), None if w[7] == "-" else int(w[7])))
                except ValueError:
                    continue
            elif len(w) >= 7 and w[0] == "CPU0":
                try:
                    base[(w[1], w[2], int(w[3]), int(w[4]), w[5])].append(int(w[6]))
                except ValueError:
                    continue
            elif len(w) >= 3 and w[0] == "NCPU":
                ncpu[w[1]] = w[2]
            elif len(w) >= 5 and w[0] == "PROFILE":
                profiles[(w[1], w[2])].append((w[3], " ".join(w[4:])))
    med = {k: statistics.median(v) for k, v in runs.items()}
    stacks = [s for s in ("rrxe", "rxe", "siw") if any(k[0] == s for k in med)]

    def m(stack, test, size, q=1):
        return med.get((stack, test, size, q))

    out = []
    # What the guests had, as their kernels saw it: "-smp 2" once gave guests of one CPU.
    got = sorted(set(ncpu.values()))
    if not got:
        cpus = f"-smp {smp}"
    elif got == [smp]:
        cpus = f"-smp {smp}: {smp} CPU(s) each"
    else:
        cpus = f"-smp {smp} asked, but the guests brought up " + "/".join(ncpu[v] for v in sorted(ncpu)) + " CPU(s): NOT what was asked"
    out.append(f"Medians of {reps} run(s) each; two TCG VMs ({cpus}) over a QEMU socket link, "
               f"link MTU {mtu}; "
               f"whole benchmark {secs} s; guest kernel: {kernel} ("
               + ("the test kernel, with lockdep and kmemleak built in" if kernel == "debug"
                  else "no lockdep, no atomic-sleep or list checks, no kmemleak") + ").\n")
    hdr = "| test | unit | " + " | ".join(stacks) + " | rrxe/rxe |"
    out.append(hdr)
    out.append("|" + "---|" * (hdr.count("|") - 1))
    tcp = m("tcp", "iperf3", 131072)
    out.append("| iperf3 TCP (ceiling) | Gb/s | " + " | ".join(fmt(tcp, "Gb/s") for _ in stacks) + " | |")
    rows = [("ib_write_bw 64 KiB", "ib_write_bw", 65536, 1),
            ("ib_send_bw 64 KiB", "ib_send_bw", 65536, 1),
            ("ib_read_bw 64 KiB", "ib_read_bw", 65536, 1),
            ("ib_write_bw 64 KiB -q 8", "ib_write_bw", 65536, 8),
            ("ib_write_bw 64 KiB -q 64", "ib_write_bw", 65536, 64),
            ("ib_send_bw 64 KiB -e (events)", "ib_send_bw-e", 65536, 1),
            ("ib_read_bw 64 KiB -e (events)", "ib_read_bw-e", 65536, 1),
            ("ib_write_lat 2 B (t_typical)", "ib_write_lat", 2, 1),
            ("ib_send_lat 2 B (t_typical)", "ib_send_lat", 2, 1),
            ("ib_read_lat 2 B (t_typical)", "ib_read_lat", 2, 1)]
    for name, test, size, q in rows:
        unit = "µs" if test.endswith("_lat") else "Gb/s"
        cells = [fmt(m(s, test, size, q), "Gb/s" if unit == "Gb/s" else "usec") for s in stacks]
        out.append(f"| {name} | {unit} | " + " | ".join(cells) + f" | {ratio(m('rrxe', test, size, q), m('rxe', test, size, q))} |")

    sizes = sorted({k[2] for k in med if k[1] == "ib_write_bw" and k[3] == 1})
    if sizes:
        out.append("\nib_write_bw, -q 1, by message size (Gb/s):\n")
        out.append("| bytes | " + " | ".join(stacks) + " | rrxe/rxe |")
        out.append("|" + "---|" * (len(stacks) + 2))
        for s in sizes:
            out.append(f"| {s} | " + " | ".join(fmt(m(st, "ib_write_bw", s), "Gb/s") for st in stacks)
                       + f" | {ratio(m('rrxe', 'ib_write_bw', s), m('rxe', 'ib_write_bw', s))} |")

    # Kernel CPU per GB moved: system + irq + softirq ticks (USER_HZ = 100) over the bytes
    # of the run, less the run's fixed cost (the same run with 20 two-byte messages, CPU0,
    # paired run by run) where it was measured. perftest's user-space polling is left out;
    # iperf3's server reports no byte count, so its runs are charged the client's.
    def cpu_gb(stack, test, size, q, vm):
        samples = cpu.get((stack, test, size, q, vm), [])
        if not samples:
            return None
        known = [b for _, b in cpu.get((stack, test, size, q, "vm1"), []) if b]
        fallback = statistics.median(known) if known else None
        fixed = base.get((stack, test, size, q, vm), [])
        per = []
        for i, (t, b) in enumerate(samples):
            t0 = fixed[i] if i < len(fixed) else 0
            # A run that cost no more ticks than its fixed-cost twin measured nothing (with
            # two CPUs the ticks are summed over both and the twin sometimes costs more):
            # left out rather than counted as 0 s/GB.
            if (b or fallback) and t > t0:
                per.append((t - t0) / 100 / ((b or fallback) / 1e9))
        return statistics.median(per) if per else None

    def cells(stack, test, size, q):
        c, s = cpu_gb(stack, test, size, q, "vm1"), cpu_gb(stack, test, size, q, "vm0")
        if c is None and s is None:
            return "–"
        return " / ".join("–" if v is None else f"{v:.2f}" for v in (c, s))

    if cpu:
        out.append("\nKernel CPU per GB moved (s/GB: system + irq + softirq, perftest's polling "
                   "left out" + (", less each run's fixed cost: the same run with 20 two-byte "
                                 "messages" if base else "")
                   + "), client VM / server VM (the client sends, except in ib_read_bw; – where "
                   "no run cost more ticks than its fixed cost):\n")
        out.append("| test | " + " | ".join(["tcp"] + stacks) + " |")
        out.append("|" + "---|" * (len(stacks) + 2))
        out.append("| iperf3 | " + cells("tcp", "iperf3", 131072, 1) + " |" + " |" * len(stacks))
        for name, test, size, q in rows[:5]:
            out.append(f"| {name} | | " + " | ".join(cells(s, test, size, q) for s in stacks) + " |")

    def target(desc, ok):
        return f"- {desc}: " + ("–" if ok is None else ("met" if ok else "MISSED"))

    w = m("rrxe", "ib_write_bw", 65536)
    q8, q64 = m("rrxe", "ib_write_bw", 65536, 8), m("rrxe", "ib_write_bw", 65536, 64)
    out.append("\nTargets (ratios from this run):")
    for test, times in (("ib_write_bw", 3), ("ib_send_bw", 3), ("ib_read_bw", 2.5)):
        a, b = m("rrxe", test, 65536), m("rxe", test, 65536)
        out.append(target(f"{test} 64 KiB ≥ {times:g}× rxe ({ratio(a, b)})",
                          None if a is None or b is None else a >= times * b))
    for test in ("ib_write_bw", "ib_send_bw"):
        a = m("rrxe", test, 65536)
        pct = "–" if a is None or not tcp else f"{100 * a / tcp:.0f} %"
        out.append(target(f"{test} 64 KiB ≥ 75 % of TCP ({pct})",
                          None if a is None or tcp is None else a >= 0.75 * tcp))
    for test in ("ib_write_lat", "ib_send_lat"):
        a, b = m("rrxe", test, 2), m("rxe", test, 2)
        out.append(target(f"{test} 2 B ≤ 0.5× rxe ({ratio(a, b)})",
                          None if a is None or b is None else a <= 0.5 * b))
    out.append(target(f"-q 8 aggregate ≥ -q 1 ({ratio(q8, w)})",
                      None if q8 is None or w is None else q8 >= w))
    n64 = len(runs.get(("rrxe", "ib_write_bw", 65536, 64), []))
    out.append(target(f"a 64-QP run completes ({n64} of {reps} did)",
                      None if reps == "0" else n64 == int(reps)))
    cw = [cpu_gb(s, "ib_write_bw", 65536, 1, vm) for s in ("rrxe", "rxe") for vm in ("vm1", "vm0")]
    out.append(target("ib_write_bw 64 KiB kernel CPU/GB below rxe's, sender and receiver",
                      None if None in cw else cw[0] < cw[2] and cw[1] < cw[3]))

    e = [(t, m("rrxe", t, 65536), m("rrxe", t + "-e", 65536)) for t in ("ib_send_bw", "ib_read_bw")]
    if any(a and b for _, a, b in e) and tcp:
        out.append("\nWith completion events (-e: both processes sleep instead of spinning on "
                   "their CQs, as iperf3 sleeps), rrxe: "
                   + "; ".join(f"{t} {fmt(b, 'Gb/s')} Gb/s ({100 * b / tcp:.0f} % of TCP; "
                               f"{fmt(a, 'Gb/s')} polling)" for t, a, b in e if a and b) + ".")

    spread = [(k, min(v), max(v)) for k, v in sorted(runs.items()) if len(v) > 1]
    if spread:
        out.append("\nSpread (min–max over the runs):")
        for k, lo, hi in spread:
            out.append(f"- {k[0]} {k[1]} {k[2]} B -q {k[3]}: {lo:g}–{hi:g} {units[k]}")

    if profiles:
        out.append("\nWhere the time goes (perf cpu-clock, all CPUs, during ib_write_bw 64 KiB):")
        for (stack, vm), rows_ in sorted(profiles.items()):
            role = "server/receiver" if vm == "vm0" else "client/sender"
            out.append(f"\n{stack}, {vm} ({role}):\n")
            out.append("```")
            out.extend(f"{p:>7} {sym}" for p, sym in rows_[:15])
            out.append("```")

    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    with open(f"{outdir}/bench.md", "w", encoding="utf-8") as f:
        f.write(text)

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: chart skipped)")
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for st in stacks:
        xs = [s for s in sizes if m(st, "ib_write_bw", s) is not None]
        ax.plot(xs, [m(st, "ib_write_bw", s) for s in xs], marker="o", label=st)
    if tcp is not None:
        ax.axhline(tcp, linestyle="--", color="grey", label="iperf3 TCP")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("ib_write_bw, Gb/s (median)")
    ax.set_title("RDMA WRITE bandwidth over one TCG link")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{outdir}/bench.png", dpi=100)
    print(f"chart: {outdir}/bench.png")


if __name__ == "__main__":
    main()
