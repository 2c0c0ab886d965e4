#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns the LOCAL lines of scripts/bench.sh --local into a markdown report.

usage: bench-local-report.py RESULTS OUTDIR REPS SECONDS KERNEL SMP
"""
import statistics
import sys
from collections import defaultdict

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)
if len(sys.argv) != 7:
    sys.exit(__doc__.strip())

TESTS = ["ib_write_bw", "ib_send_bw", "ib_read_bw"]
KERNELS = {
    "debug": "debug (the test kernel, with lockdep and kmemleak built in)",
    "nodebug": "nodebug (no lockdep, no atomic-sleep or list checks, no kmemleak)",
}


def main():
    path, outdir, reps, secs, kernel, smp = sys.argv[1:7]
    gbps = defaultdict(list)  # (stack, test) -> [Gb/s]
    spg = defaultdict(list)  # (stack, test) -> [[kernel s/GB of each CPU]]
    ncpu = None
    stacks = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) == 3 and w[0] == "NCPU":
                ncpu = w[2]
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
    med = {k: statistics.median(v) for k, v in gbps.items()}

    def cell(stack, test):
        v = med.get((stack, test))
        return "–" if v is None else f"{v:.3f}"

    def ratio(test):
        a, b = med.get(("rrxe", test)), med.get(("rxe", test))
        return "–" if a is None or not b else f"{a / b:.2f}×"

    cpus = f"{ncpu} CPU(s)" if ncpu else "CPUs not reported"
    asked = "" if ncpu == smp else f" (NOT the {smp} asked for)"
    out = [
        f"Two processes of one TCG VM ({cpus}{asked}; the server on CPU 0, the client on the"
        f" last), each stack over its own loopback at 64 KiB; medians of {reps} run(s);"
        f" whole run {secs} s; guest kernel: {KERNELS.get(kernel, kernel)}.",
        "",
        "| test | unit | " + " | ".join(stacks) + " | rrxe/rxe |",
        "|---|---|" + "---|" * len(stacks) + "---|",
    ]
    for t in TESTS:
        out.append(f"| {t} 64 KiB | Gb/s | " + " | ".join(cell(s, t) for s in stacks)
                   + f" | {ratio(t)} |")
    out += [
        "",
        "Kernel CPU per GB moved on each CPU (s/GB: system + irq + softirq over the client's"
        " run, its setup included; medians), CPU 0 / CPU 1 ...:",
        "",
        "| test | " + " | ".join(stacks) + " |",
        "|---|" + "---|" * len(stacks),
    ]
    for t in TESTS:
        cells = []
        for s in stacks:
            rows = spg.get((s, t))
            if not rows:
                cells.append("–")
                continue
            per_cpu = [statistics.median(r[i] for r in rows) for i in range(len(rows[0]))]
            cells.append(" / ".join(f"{v:.2f}" for v in per_cpu))
        out.append(f"| {t} 64 KiB | " + " | ".join(cells) + " |")
    text = "\n".join(out) + "\n"
    with open(f"{outdir}/bench-local.md", "w", encoding="utf-8") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
