#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns the LOCAL (and PKTS) lines of scripts/bench.sh --local or --veth into a markdown
report: bench-local.md, or bench-veth.md with MODE veth.

usage: bench-local-report.py RESULTS OUTDIR REPS SECONDS KERNEL SMP [local|veth]
"""
import statistics
import sys
from collections import defaultdict

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)
if len(sys.argv) not in (7, 8) or (len(sys.argv) == 8 and sys.argv[7] not in ("local", "veth")):
    sys.exit(__doc__.strip())

TESTS = ["ib_write_bw", "ib_send_bw", "ib_read_bw"]
TITLES = {
    "local": "Two processes of one TCG VM ({cpus}; the server on CPU 0, the client on the last),"
             " each stack over its own loopback, ib_*_bw at 64 KiB with completion events",
    "veth": "One TCG VM ({cpus}), two network namespaces over a veth pair with its offloads off"
            " (the server in one on CPU 0, the client in the other on the last CPU), TCP"
            " (iperf3) and each stack's ib_*_bw at 64 KiB with completion events",
}
KERNELS = {
    "debug": "debug (the test kernel, with lockdep and kmemleak built in)",
    "nodebug": "nodebug (-O2, no lockdep, no atomic-sleep or list checks, no kmemleak)",
}


def main():
    path, outdir, reps, secs, kernel, smp = sys.argv[1:7]
    mode = sys.argv[7] if len(sys.argv) == 8 else "local"
    gbps = defaultdict(list)  # (stack, test) -> [Gb/s]
    usp = defaultdict(list)  # (stack, test) -> [kernel µs per packet sent, all CPUs]
    pending = None  # the ticks of the last LOCAL line, for the PKTS line after it
    spg = defaultdict(list)  # (stack, test) -> [[kernel s/GB of each CPU]]
    ncpu = None
    stacks = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) == 3 and w[0] == "NCPU":
                ncpu = w[2]
            if len(w) == 4 and w[0] == "PKTS" and pending and pending[0] == (w[1], w[2]) and w[3].isdigit():
                if int(w[3]) > 0:
                    usp[pending[0]].append(pending[1] / 100 / int(w[3]) * 1e6)
                pending = None
            if len(w) < 6 or w[0] != "LOCAL":
                continue
            try:
                stack, test, mbs, moved = w[1], w[2], float(w[3]), int(w[4])
                ticks = [int(t) for t in w[5:]]
            except ValueError:
                continue
            if stack not in stacks:
                stacks.append(stack)
            # perftest's MB/s is 2^20 bytes a second; a tick is 1/100 s (USER_HZ).
            gbps[(stack, test)].append(mbs * 1048576 * 8 / 1e9)
            spg[(stack, test)].append([t / 100 / (moved / 1e9) for t in ticks])
            pending = ((stack, test), sum(ticks))
    med = {k: statistics.median(v) for k, v in gbps.items()}

    def cell(stack, test):
        v = med.get((stack, test))
        return "–" if v is None else f"{v:.3f}"

    base = "rxe" if mode == "local" else "tcp"

    def ratio(test):
        a, b = med.get(("rrxe", test)), med.get((base, "iperf3" if base == "tcp" else test))
        return "–" if a is None or not b else f"{a / b:.2f}×"

    cpus = f"{ncpu} CPU(s)" if ncpu else "CPUs not reported"
    asked = "" if ncpu == smp else f" (NOT the {smp} asked for)"
    tests = (["iperf3"] if mode == "veth" else []) + TESTS
    out = [
        TITLES[mode].format(cpus=f"{cpus}{asked}") + f"; medians of {reps} run(s);"
        f" whole run {secs} s; guest kernel: {KERNELS.get(kernel, kernel)}.",
        "",
        "| test | unit | " + " | ".join(stacks) + f" | rrxe/{base} |",
        "|---|---|" + "---|" * len(stacks) + "---|",
    ]
    for t in tests:
        out.append(f"| {t}{'' if t == 'iperf3' else ' 64 KiB'} | Gb/s | " + " | ".join(cell(s, t) for s in stacks)
                   + f" | {'' if t == 'iperf3' else ratio(t)} |")
    out += [
        "",
        "Kernel CPU per GB moved on each CPU (s/GB: system + irq + softirq over the client's"
        " run, its setup included; medians), CPU 0 / CPU 1 ...:",
        "",
        "| test | " + " | ".join(stacks) + " |",
        "|---|" + "---|" * len(stacks),
    ]
    for t in tests:
        cells = []
        for s in stacks:
            rows = spg.get((s, t))
            if not rows:
                cells.append("–")
                continue
            per_cpu = [statistics.median(r[i] for r in rows) for i in range(len(rows[0]))]
            cells.append(" / ".join(f"{v:.2f}" for v in per_cpu))
        out.append(f"| {t}{'' if t == 'iperf3' else ' 64 KiB'} | " + " | ".join(cells) + " |")
    if usp:
        out += ["", "Kernel CPU per packet (µs: all CPUs' system + irq + softirq time over the"
                " client's run, over the frames both ends of the veth pair sent, data and"
                " acknowledgements; medians):", "",
                "| test | " + " | ".join(stacks) + " |", "|---|" + "---|" * len(stacks)]
        for t in tests:
            cells = ["–" if not usp.get((s_, t)) else f"{statistics.median(usp[(s_, t)]):.1f}" for s_ in stacks]
            out.append(f"| {t}{'' if t == 'iperf3' else ' 64 KiB'} | " + " | ".join(cells) + " |")
    text = "\n".join(out) + "\n"
    with open(f"{outdir}/bench-{mode}.md", "w", encoding="utf-8") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
