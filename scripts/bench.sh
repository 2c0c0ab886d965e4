#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The benchmark (a command, not a test): rrxe, the stock rdma_rxe and siw on the same two TCG
# VMs in one run, with iperf3 TCP and a UDP ping-pong (sockperf) on the same link as the
# ceiling and the latency floor. Prints a markdown table of medians with their spread, the
# ratios to TCP, to the floor and to rdma_rxe, the guest kernel's and the host's CPU per GB,
# and the performance targets met or missed; writes it, the raw results and a PNG chart of
# bandwidth against message size to the output directory.
#
#   scripts/bench.sh [--reps N] [--volume MiB] [--stacks "rrxe rxe siw"]
#                    [--sizes "1024 4096 ..."] [--profile] [--out DIR] [--kernel nodebug|debug]
#                    [--linux 6.12|7.3] [--mtu BYTES] [--smp CPUS] [--pin split|none]
#                    [--trace "TESTS"] [--local | --veth | --ab REV]
#
# Each repetition (default 5) runs TCP both ways, the floor and then every stack, the
# stacks' order rotated each time; every bandwidth run moves --volume MiB (default 256).
# The headline rows wait for completions (-e), as iperf3 sleeps: on a 2-core host a
# process spinning on its CQ takes the core that QEMU's I/O threads need
# (qemu/bench-guest.sh says what runs).
#
# --profile adds, after the repetitions, a perf cpu-clock profile of both VMs during each
# -e row at 64 KiB on rrxe and rdma_rxe; --reps 0 --profile runs the profile alone.
#
# --trace "ib_read_bw ib_write_lat ..." adds, after the repetitions, one run of each test on
# rrxe (a bandwidth test at 64 KiB with -e, a latency test at 2 bytes) with 1 s of trace
# events recorded in both VMs (rrxe's packets, the driver's frames, interrupts, scheduler
# switches), summarised by scripts/bench-trace.py: where a packet waits, how much a READ
# keeps in flight, a ping-pong's median cycle. Report: trace.txt (--reps 0 --trace: alone).
#
# --pin split (the default) runs each VM's QEMU threads on a host CPU of its own (VM 0 on
# CPU 0, VM 1 on CPU 1), vCPU and I/O threads together; --pin none leaves placement to the
# scheduler. scripts/bench-host.py places them and measures, for every run, the host CPU of
# both QEMU processes (vCPU threads and the rest), which the report gives per GB moved.
#
# --kernel nodebug (the default) runs on the benchmark kernel: the test kernel's
# configuration without lockdep, the atomic-sleep and list checks and kmemleak, compiled -O2
# (qemu/kernel-nodebug.config). It exports HEAD to $RRXE_BENCH_TREE (default
# /var/tmp/rrxe-bench-tree), builds and caches that kernel (about 11 min on 2 idle cores,
# once) and runs there. --kernel debug runs on the test kernel, with its debugging.
# --linux picks the kernel series (default 6.12, as the tests).
#
# --mtu sets both guests' eth0 MTU (default 1500) before anything runs, TCP included: at 9000
# every RoCE stack's port reports an active MTU of 4096 and perftest uses it as path MTU.
#
# --smp gives both guests that many virtual CPUs (default 1, as the tests): the variant that
# shows whether the stacks' work spreads over CPUs. This machine has 2 cores for both VMs.
#
# --local runs one VM instead: each stack between two processes of that VM, over its own
# loopback (qemu/bench-local-guest.sh), with completion events, the server on the first CPU
# and the client on the last. All the work is guest CPU: with --smp 2 it shows whether a
# stack's work spreads over two CPUs, which the two-VM run cannot on a 2-core host.
# Report: bench-local.md.
#
# --veth runs one VM too: two network namespaces over a veth pair with its offloads off,
# TCP and rrxe between them (qemu/bench-veth-guest.sh): each stack's kernel CPU per
# packet without QEMU's network path. Report: bench-veth.md.
#
# --ab REV compares two builds of rrxe.ko on the same VMs, the way a lever is measured: the
# module of the working tree's HEAD (the stack rrxe) and that of REV (rrxe-b, built from
# `git archive REV` against the same kernel), alternating (the stacks' order rotates every
# repetition, so with --reps 8 (the default here) that is 8 pairs, each in its own order).
# The provider is HEAD's for both. Each repetition runs TCP and the floor, then for each
# build the four -e rows at 64 KiB and the three latencies. Report: bench-ab.md, each row's
# medians, the median and range of the pairs' ratios, and how many pairs HEAD won.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=5 VOLUME=256 STACKS="rrxe rxe siw" SIZES="1024 4096 16384 65536 262144 1048576" PROFILE=0 OUT=bench-out
KERNEL=nodebug LINUX=6.12 MTU=1500 SMP=1 LOCAL=0 PIN=split AB= TRACE=
args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) awk 'NR >= 3 && !/^#/ {exit} NR >= 3 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;;
    --reps) REPS=$2; shift 2 ;;
    --volume) VOLUME=$2; shift 2 ;;
    --stacks) STACKS=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --profile) PROFILE=1; shift ;;
    --trace) [ $# -ge 2 ] || { echo "bench: --trace takes a list of perftest tests" >&2; exit 2; }; TRACE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --kernel) KERNEL=$2; shift 2 ;;
    --linux) LINUX=$2; shift 2 ;;
    --pin) PIN=$2; shift 2 ;;
    --mtu) MTU=$2; shift 2 ;;
    --smp) SMP=$2; shift 2 ;;
    --local) LOCAL=1; shift ;;
    --veth) LOCAL=veth; shift ;;
    --ab) [ $# -ge 2 ] || { echo "bench: --ab takes a revision" >&2; exit 2; }; AB=$2; shift 2 ;;
    *) echo "usage: scripts/bench.sh [--reps N] [--volume MiB] [--stacks LIST] [--sizes LIST] [--profile] [--out DIR] [--kernel nodebug|debug] [--linux 6.12|7.3] [--mtu BYTES] [--smp CPUS] [--pin split|none] [--trace TESTS] [--local | --veth | --ab REV]" >&2; exit 2 ;;
  esac
done
case "$KERNEL" in debug|nodebug) ;; *) echo "bench: --kernel nodebug or debug" >&2; exit 2 ;; esac
case "$PIN" in split|none) ;; *) echo "bench: --pin split or none" >&2; exit 2 ;; esac
case "$REPS" in ''|*[!0-9]*) echo "bench: --reps takes a number of repetitions" >&2; exit 2 ;; esac
# No repetition: the profile or the traces alone (--reps 0 --profile, --reps 0 --trace).
if [ "$REPS" = 0 ] && [ "$PROFILE" != 1 ] && [ -z "$TRACE" ]; then
  echo "bench: --reps 0 runs nothing without --profile or --trace" >&2; exit 2
fi
for t in $TRACE; do
  case "$t" in ib_write_bw|ib_send_bw|ib_read_bw|ib_write_lat|ib_send_lat|ib_read_lat) ;;
    *) echo "bench: --trace: '$t' is not one of ib_write_bw ib_send_bw ib_read_bw ib_write_lat ib_send_lat ib_read_lat" >&2; exit 2 ;;
  esac
done
case "$VOLUME" in ''|*[!0-9]*|0) echo "bench: --volume takes a number of MiB (1 or more)" >&2; exit 2 ;; esac
export RRXE_KERNEL=$LINUX
case "$MTU" in ''|*[!0-9]*) echo "bench: --mtu takes a number of bytes" >&2; exit 2 ;; esac
case "$SMP" in [1-8]) ;; *) echo "bench: --smp takes 1..8 CPUs" >&2; exit 2 ;; esac
if [ -n "$AB" ] && [ "${RRXE_BENCH_IN_TREE:-0}" != 1 ]; then
  [ "$LOCAL" = 0 ] || { echo "bench: --ab runs on two VMs (not with --local or --veth)" >&2; exit 2; }
  ab=$(git rev-parse --verify -q "$AB^{commit}") || { echo "bench: --ab: no revision '$AB' here" >&2; exit 2; }
  # Both the revisions and their source, fixed before anything is built.
  export RRXE_BENCH_AB_REV=$ab RRXE_BENCH_A_REV=$(git rev-parse HEAD) RRXE_BENCH_AB_SRC=$(realpath -m "$OUT")/ab-src
  [[ " ${args[*]} " == *" --reps "* ]] || { REPS=8; args+=(--reps 8); }
  rm -rf "$RRXE_BENCH_AB_SRC"
  mkdir -p "$RRXE_BENCH_AB_SRC"
  git archive "$ab" | tar -x -C "$RRXE_BENCH_AB_SRC"
fi
if [ "$KERNEL" = nodebug ] && [ "${RRXE_BENCH_IN_TREE:-0}" != 1 ]; then
  tree=${RRXE_BENCH_TREE:-/var/tmp/rrxe-bench-tree}
  out=$(realpath -m "$OUT")
  rm -rf "$tree"
  mkdir -p "$tree"
  git archive HEAD | tar -x -C "$tree"
  grep -v -E '^CONFIG_(PROVE_LOCKING|DEBUG_ATOMIC_SLEEP|DEBUG_LIST|DEBUG_KMEMLEAK|DEBUG_KMEMLEAK_DEFAULT_OFF)=' \
    qemu/kernel.config > "$tree/qemu/kernel.config"
  cat qemu/kernel-nodebug.config >> "$tree/qemu/kernel.config"
  # A fresh environment for the copy: its own kernel key, tree and module root.
  unset RRXE_KBUILD KDIR RRXE_MODROOT
  cd "$tree"
  RRXE_BENCH_IN_TREE=1 exec bash scripts/bench.sh "${args[@]}" --out "$out"
fi
bash scripts/setup.sh
# The chart and the in-guest profiler are the benchmark's own needs, not the tests'.
want=()
for pkg in python3-matplotlib sockperf; do
  dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q 'ok installed' || want+=("$pkg")
done
if [ "$PROFILE" = 1 ] && ! command -v perf >/dev/null 2>&1; then want+=(linux-perf); fi
if [ "${#want[@]}" -gt 0 ]; then
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null ||
    echo "bench: could not install ${want[*]} (no chart, profile or latency floor)"
fi
make -s modules
make -s provider
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
ab_ko=
if [ -n "$AB" ]; then
  # REV's module against this tree's kernel (its own scripts would pick its own config's).
  make -s -C "$RRXE_BENCH_AB_SRC" modules KDIR="$(bash -c '. scripts/env.sh; echo "$KDIR"')"
  ab_ko=$OUT/rrxe-b.ko
  cp "$RRXE_BENCH_AB_SRC/rrxe.ko" "$ab_ko"
  [[ " ${args[*]} " == *" --stacks "* ]] || STACKS="rrxe rrxe-b"
fi
nst=$(echo "$STACKS" | wc -w) nsz=$(echo "$SIZES" | wc -w)
# The shim that makes ib_write_bw's client sleep on its CQ (qemu/perftest-sleep-cq.c),
# built for the guests' root (the host's).
cc -shared -fPIC -O2 -Wall -o "$OUT/perftest-sleep-cq.so" qemu/perftest-sleep-cq.c -libverbs
if [ "$LOCAL" = veth ]; then
  # On Linux 6.12 rdma_rxe's UDP socket lives in the initial namespace only, and siw's
  # rdma_connect between the two namespaces failed ("Function rdma_connect failed"): rrxe
  # alone by default; --stacks siw still tries.
  [[ " ${args[*]} " == *" --stacks "* ]] || STACKS="rrxe"
  nst=$(echo "$STACKS" | wc -w)
  timeout=$(( REPS * (nst * 3 + 1) * (VOLUME / 4 + 40) + 600 ))
  echo "bench: --veth, $REPS repetition(s), ${VOLUME} MiB per run, $SMP CPU(s), over: tcp $STACKS (timeout ${timeout}s)"
  start=$(date +%s)
  qemu/run-vms --vms 1 --smp "$SMP" --timeout "$timeout" --out "$OUT" --name veth qemu/bench-veth-guest.sh \
    "$REPS" "$VOLUME" "$STACKS" "$OUT/perftest-sleep-cq.so" || echo "bench: the VM run reported a problem (see $OUT/veth-vm0.out)"
  tr -d '\r' < "$OUT"/veth-vm0.out | grep -aE '^(LOCAL|PKTS|NCPU) ' > "$OUT/results-veth.txt" || true
  grep -ahE '^# vm0: ' "$OUT"/veth-vm0.out || true
  exec /usr/bin/python3 scripts/bench-local-report.py "$OUT/results-veth.txt" "$OUT" "$REPS" \
    "$(( $(date +%s) - start ))" "$KERNEL" "$SMP" veth
fi
if [ "$LOCAL" = 1 ]; then
  timeout=$(( REPS * nst * 3 * (VOLUME / 2 + 40) + 600 ))
  echo "bench: --local, $REPS repetition(s), ${VOLUME} MiB per run, $SMP CPU(s), over: $STACKS (timeout ${timeout}s)"
  start=$(date +%s)
  qemu/run-vms --vms 1 --smp "$SMP" --timeout "$timeout" --out "$OUT" --name local qemu/bench-local-guest.sh \
    "$REPS" "$VOLUME" "$STACKS" "$OUT/perftest-sleep-cq.so" || echo "bench: the VM run reported a problem (see $OUT/local-vm0.out)"
  tr -d '\r' < "$OUT"/local-vm0.out | grep -aE '^(LOCAL|NCPU) ' > "$OUT/results-local.txt" || true
  grep -ahE '^# vm0: FAILED' "$OUT"/local-vm0.out || true
  exec /usr/bin/python3 scripts/bench-local-report.py "$OUT/results-local.txt" "$OUT" "$REPS" \
    "$(( $(date +%s) - start ))" "$KERNEL" "$SMP"
fi
nst=$(echo "$STACKS" | wc -w)
# A generous bound, not an estimate: every run at 8 MB/s plus 30 s of setup (the stacks move
# 15 to 60 MB/s under TCG).
timeout=$(( REPS * (nst * (14 + nsz) + 2) * (VOLUME / 8 + 30) + 900 ))
echo "bench: $REPS repetition(s), ${VOLUME} MiB per bandwidth run, MTU $MTU, $SMP CPU(s) per VM, QEMU threads: --pin $PIN, over: tcp udp $STACKS (timeout ${timeout}s)"
start=$(date +%s)
# A pid file of an earlier run in the same directory would send the host side to the
# wrong process.
rm -f "$OUT"/bench-vm*.pid
/usr/bin/python3 scripts/bench-host.py "$OUT" bench 2 "$PIN" > "$OUT/host.txt" &
host=$!
qemu/run-vms --vms 2 --smp "$SMP" --timeout "$timeout" --out "$OUT" --name bench qemu/bench-guest.sh \
  "$REPS" "$VOLUME" "$STACKS" "$SIZES" "$PROFILE" "$MTU" "$OUT/perftest-sleep-cq.so" "$ab_ko" "$TRACE" ||
  echo "bench: the VM run reported a problem (see $OUT/bench-vm*.out)"
wait "$host" || echo "bench: the host side failed (see $OUT/host.txt)"
{ cat "$OUT"/bench-vm0.out "$OUT"/bench-vm1.out | tr -d '\r' | grep -aE '^(BENCH|CPU|CPU0|PROFILE|NCPU|STUCK|COUNTERS|COUNTERS_B|RUNCOUNTERS|NOTIFY) '
  grep -aE '^(HOST|PIN) ' "$OUT/host.txt"; } > "$OUT/results.txt" || true
grep -ahE '^# vm[01]: FAILED' "$OUT"/bench-vm*.out || true
if [ -n "$TRACE" ]; then
  cat "$OUT"/bench-vm0.out "$OUT"/bench-vm1.out | tr -d '\r' | grep -aE '^(TRACE|BENCH udp) ' | sort -s -k2,2 > "$OUT/trace.txt" || true
  echo "bench: trace summaries in $OUT/trace.txt"
  [ "$REPS" != 0 ] || [ "$PROFILE" = 1 ] || exit 0
fi
if [ -n "$AB" ]; then
  exec /usr/bin/python3 scripts/bench-ab-report.py "$OUT/results.txt" "$OUT" "$RRXE_BENCH_A_REV" "$RRXE_BENCH_AB_REV" \
    "$(( $(date +%s) - start ))" "$KERNEL" "$MTU" "$LINUX"
fi
/usr/bin/python3 scripts/bench-report.py "$OUT/results.txt" "$OUT" "$REPS" "$(( $(date +%s) - start ))" "$KERNEL" "$MTU" "$SMP" "$LINUX"
