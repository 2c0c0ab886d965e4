# SPDX-License-Identifier: GPL-2.0
"""The benchmark's result lines (qemu/bench-guest.sh, scripts/bench-host.py), parsed, and the
cell formats of its reports: a module that scripts/bench-report.py and
scripts/bench-ab-report.py import, not a command.

usage: from bench_results import Results, cell, fmt, ratio, pct
"""
import statistics
from collections import defaultdict


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
        self.counters_b = defaultdict(dict)  # the same, of an A/B run's other build
        # (stack, test, size, q, vm) -> {rep: {name: delta}}: rrxe's counters that moved
        # over one bandwidth run
        self.runcounters = defaultdict(dict)
        self.profiles = defaultdict(list)
        self.ncpu = {}
        # (stack, test, size, q, vm) -> {rep: [sent, tx kicks, received, rx kicks, tx irqs,
        # rx irqs]} (None: not counted)
        self.notify = defaultdict(dict)
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
        elif w[0] in ("COUNTERS", "COUNTERS_B") and len(w) >= 4:
            names = w[5:] if len(w) > 5 and w[3] == "link" else w[3:]
            into = self.counters if w[0] == "COUNTERS" else self.counters_b
            into[(w[1], rep(2))] = {
                names[i]: int(names[i + 1]) for i in range(0, len(names) - 1, 2) if names[i + 1].isdigit()}
        elif w[0] == "RUNCOUNTERS" and len(w) >= 7 and w[6].isdigit():
            self.runcounters[(w[1], w[2], int(w[3]), int(w[4]), w[5])][int(w[6])] = {
                w[i]: int(w[i + 1]) for i in range(7, len(w) - 1, 2) if w[i + 1].lstrip("-").isdigit()}
        elif w[0] == "NOTIFY" and len(w) >= 13:
            self.notify[(w[1], w[2], int(w[3]), int(w[4]), w[5])][rep(12)] = [
                int(x) if x.isdigit() else None for x in w[6:12]]
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


    def notify_rates(self, stack, test, size, q, vm):
        """Median notifications per 1000 frames of a row on one VM: (transmit kicks and
        interrupts per 1000 frames sent, receive kicks and interrupts per 1000 received),
        each None where not counted or no frame moved."""
        cols = ([], [], [], [])
        for sent, tk, recv, rk, ti, ri in self.notify.get((stack, test, size, q, vm), {}).values():
            for col, n, d in ((0, tk, sent), (1, ti, sent), (2, rk, recv), (3, ri, recv)):
                if n is not None and d:
                    cols[col].append(1000 * n / d)
        return tuple(statistics.median(c) if c else None for c in cols)


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


if __name__ == "__main__":
    print(__doc__.strip())
