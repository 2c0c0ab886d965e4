#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The benchmark's host side: places the VMs' QEMU threads on the host's cores and measures
the host CPU each run takes, while qemu/run-vms runs the guests.

usage: bench-host.py OUTDIR NAME NVMS PIN

It waits for each VM's QEMU pid file (OUTDIR/NAME-vmI.pid, written by run-vms). PIN:
  split  every thread of VM I on host CPU I (modulo the host's CPUs): the two VMs do not
         share a core, and each VM's vCPU thread shares its core with that VM's own I/O
         threads (QEMU's main loop, which moves the link's and the consoles' bytes, and its
         worker threads), which it waits for anyway
  none   no placement (the kernel's scheduler decides)
and prints one line per VM:
  PIN vmI <host CPUs> vcpu=<tids> io=<tids>
Then it follows the last VM's console output (OUTDIR/NAME-vmN.out) for the guest's marks
  MARK b <id>   and   MARK e <id>
printed just before and just after a client run, and prints at each e:
  HOST <id> <vm0 vCPU ns> <vm0 other ns> [<vm1 vCPU ns> <vm1 other ns>]
the host CPU time each QEMU process spent between the two marks, split into its vCPU
threads (named "CPU n/TCG": run-vms starts QEMU with debug-threads=on) and all its other
threads. vCPU time is the sum of the threads' /proc/PID/task/TID/schedstat run time (ns);
a process's whole time is /proc/PID/stat's utime + stime, which keeps the time of threads
that ended (QEMU's worker threads come and go), in clock ticks. Ends when every QEMU has
exited. Output goes to stdout (bench.sh writes it to OUTDIR/host.txt).
"""
import os
import re
import sys
import time

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)
if len(sys.argv) != 5 or sys.argv[4] not in ("split", "none"):
    sys.exit(__doc__.strip())
OUT, NAME, NVMS, PIN = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")
MARK = re.compile(r"^MARK ([be]) (\S+)")


def say(line):
    print(line, flush=True)


def tasks(pid):
    """(tid, comm) of each live thread of pid."""
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/comm", encoding="utf-8") as f:
                    out.append((int(tid), f.read().strip()))
            except OSError:
                continue  # the thread ended
    except OSError:
        pass
    return out


def is_vcpu(comm):
    return comm.startswith("CPU ") and comm.endswith("/TCG")


def cpu_ns(pid):
    """(vCPU ns, other ns) of pid so far, or None once it has exited."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            # Fields after the ")" that ends comm: utime and stime are the 12th and 13th.
            rest = f.read().rsplit(")", 1)[1].split()
        total = (int(rest[11]) + int(rest[12])) * TICK_NS
    except (OSError, IndexError, ValueError):
        return None
    vcpu = 0
    for tid, comm in tasks(pid):
        if not is_vcpu(comm):
            continue
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="utf-8") as f:
                vcpu += int(f.read().split()[0])
        except (OSError, IndexError, ValueError):
            continue
    # The two clocks differ in resolution (a tick against ns): never a negative remainder.
    return vcpu, max(total - vcpu, 0)


def place(vm, pid):
    ncpu = os.cpu_count() or 1
    cores = {vm % ncpu}
    for tid, _ in tasks(pid):
        try:
            os.sched_setaffinity(tid, cores)
        except OSError:
            continue
    return cores


def main():
    pids = []
    deadline = time.time() + 120
    for i in range(NVMS):
        path = f"{OUT}/{NAME}-vm{i}.pid"
        while True:
            try:
                with open(path, encoding="utf-8") as f:
                    pids.append(int(f.read().strip()))
                break
            except (OSError, ValueError):
                if time.time() > deadline:
                    say(f"PIN vm{i} none: no pid file {path}")
                    return
                time.sleep(0.2)
    # QEMU starts its vCPU threads after writing the pid file: wait until each has one.
    while time.time() < deadline and not all(any(is_vcpu(c) for _, c in tasks(p)) for p in pids):
        time.sleep(0.2)
    for i, pid in enumerate(pids):
        cores = place(i, pid) if PIN == "split" else None
        ts = tasks(pid)
        say(f"PIN vm{i} {'any' if cores is None else ','.join(map(str, sorted(cores)))} "
            f"vcpu={','.join(str(t) for t, c in ts if is_vcpu(c))} "
            f"io={','.join(str(t) for t, c in ts if not is_vcpu(c))}")
    console = f"{OUT}/{NAME}-vm{NVMS - 1}.out"
    begin = {}
    buf = b""
    with open(console, "rb") as f:
        while True:
            chunk = f.read()
            if not chunk:
                if all(cpu_ns(p) is None for p in pids):
                    return
                time.sleep(0.02)
                continue
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for raw in lines:
                m = MARK.match(raw.decode("utf-8", "replace").strip("\r"))
                if not m:
                    continue
                now = [cpu_ns(p) for p in pids]
                if None in now:
                    continue
                if m.group(1) == "b":
                    begin[m.group(2)] = now
                elif m.group(2) in begin:
                    then = begin.pop(m.group(2))
                    cells = []
                    for (v0, o0), (v1, o1) in zip(then, now):
                        cells += [str(int(v1 - v0)), str(int(o1 - o0))]
                    say(f"HOST {m.group(2)} " + " ".join(cells))


if __name__ == "__main__":
    main()
