#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The benchmark (a command, not a test): rrxe, the stock rdma_rxe and siw on the same two TCG
# VMs in one run, iperf3 TCP on the same link as the ceiling. Prints a markdown table of
# medians with rrxe/rxe ratios and writes it, the raw results and a PNG chart of bandwidth
# against message size to the output directory.
#
#   scripts/bench.sh [--reps N] [--volume MiB] [--stacks "rrxe rxe siw"]
#                    [--sizes "1024 4096 ..."] [--profile] [--out DIR] [--kernel debug|nodebug]
#                    [--mtu BYTES] [--smp CPUS] [--local]
#
# --mtu sets both guests' eth0 MTU (default 1500) before anything runs, TCP included: at 9000
# every RoCE stack's port reports an active MTU of 4096 and perftest uses it as path MTU.
#
# --smp gives both guests that many virtual CPUs (default 1, as the tests): the variant that
# shows whether the stacks' work spreads over CPUs. This machine has 2 cores for both VMs.
#
# --local runs one VM instead: each stack between two processes of that VM, over its own
# loopback (qemu/bench-local-guest.sh), the server on the first CPU and the client on the
# last. All the work is guest CPU: with --smp 2 it shows whether a stack's work spreads over
# two CPUs, which the two-VM run cannot on a 2-core host. Report: bench-local.md.
#
# --kernel nodebug runs on a kernel without lockdep, the atomic-sleep and list checks and
# kmemleak (qemu/kernel-nodebug.config): it exports HEAD to $RRXE_BENCH_TREE (default
# /var/tmp/rrxe-bench-tree) with that config, builds and caches its kernel (about 11 min on 2
# idle cores, once) and runs there. The default is the test kernel, with its debugging.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=3 VOLUME=16 STACKS="rrxe rxe siw" SIZES="1024 4096 16384 65536 262144 1048576" PROFILE=0 OUT=bench-out
KERNEL=debug MTU=1500 SMP=1 LOCAL=0
args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '3,25s/^# \{0,1\}//p' "$0"; exit 0 ;;
    --reps) REPS=$2; shift 2 ;;
    --volume) VOLUME=$2; shift 2 ;;
    --stacks) STACKS=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --profile) PROFILE=1; shift ;;
    --out) OUT=$2; shift 2 ;;
    --kernel) KERNEL=$2; shift 2 ;;
    --mtu) MTU=$2; shift 2 ;;
    --smp) SMP=$2; shift 2 ;;
    --local) LOCAL=1; shift ;;
    *) echo "usage: scripts/bench.sh [--reps N] [--volume MiB] [--stacks LIST] [--sizes LIST] [--profile] [--out DIR] [--kernel debug|nodebug] [--mtu BYTES] [--smp CPUS] [--local]" >&2; exit 2 ;;
  esac
done
case "$KERNEL" in debug|nodebug) ;; *) echo "bench: --kernel debug or nodebug" >&2; exit 2 ;; esac
case "$MTU" in ''|*[!0-9]*) echo "bench: --mtu takes a number of bytes" >&2; exit 2 ;; esac
case "$SMP" in [1-8]) ;; *) echo "bench: --smp takes 1..8 CPUs" >&2; exit 2 ;; esac
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
dpkg-query -W -f='${Status}\n' python3-matplotlib 2>/dev/null | grep -q 'ok installed' || want+=(python3-matplotlib)
if [ "$PROFILE" = 1 ] && ! command -v perf >/dev/null 2>&1; then want+=(linux-perf); fi
if [ "${#want[@]}" -gt 0 ]; then
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null ||
    echo "bench: could not install ${want[*]} (no chart/profile)"
fi
make -s modules
make -s provider
mkdir -p "$OUT"
nst=$(echo "$STACKS" | wc -w) nsz=$(echo "$SIZES" | wc -w)
if [ "$LOCAL" = 1 ]; then
  # --volume is per run here too; the default moves 256 MiB (about 3 s at 100 MB/s).
  [[ " ${args[*]} " == *" --volume "* ]] || VOLUME=256
  timeout=$(( REPS * nst * 3 * (VOLUME / 2 + 40) + 600 ))
  echo "bench: --local, $REPS repetition(s), ${VOLUME} MiB per run, $SMP CPU(s), over: $STACKS (timeout ${timeout}s)"
  start=$(date +%s)
  qemu/run-vms --vms 1 --smp "$SMP" --timeout "$timeout" --out "$OUT" --name local qemu/bench-local-guest.sh \
    "$REPS" "$VOLUME" "$STACKS" || echo "bench: the VM run reported a problem (see $OUT/local-vm0.out)"
  tr -d '\r' < "$OUT"/local-vm0.out | grep -aE '^(LOCAL|NCPU) ' > "$OUT/results-local.txt" || true
  grep -ahE '^# vm0: FAILED' "$OUT"/local-vm0.out || true
  exec /usr/bin/python3 scripts/bench-local-report.py "$OUT/results-local.txt" "$OUT" "$REPS" \
    "$(( $(date +%s) - start ))" "$KERNEL" "$SMP"
fi
# Under TCG a stack moves ~5 MB/s: a bandwidth run takes VOLUME/5 s plus ~10 s of setup.
# The 64-QP run moves at least 64 x 20 messages (five runs' volume at 64 KiB); the CPU baselines
# add seven short runs; the two completion-event (-e) runs are two more.
timeout=$(( (REPS * nst * (20 + nsz) + REPS) * (VOLUME / 4 + 30) + 900 ))
echo "bench: $REPS repetition(s), ${VOLUME} MiB per bandwidth run, MTU $MTU, $SMP CPU(s) per VM, over: tcp $STACKS (timeout ${timeout}s)"
start=$(date +%s)
qemu/run-vms --vms 2 --smp "$SMP" --timeout "$timeout" --out "$OUT" --name bench qemu/bench-guest.sh \
  "$REPS" "$VOLUME" "$STACKS" "$SIZES" "$PROFILE" "$MTU" || echo "bench: the VM run reported a problem (see $OUT/bench-vm*.out)"
cat "$OUT"/bench-vm0.out "$OUT"/bench-vm1.out | tr -d '\r' | grep -aE '^(BENCH|CPU|CPU0|PROFILE|NCPU) ' > "$OUT/results.txt" || true
grep -ahE '^# vm[01]: FAILED|counters:' "$OUT"/bench-vm*.out || true
/usr/bin/python3 scripts/bench-report.py "$OUT/results.txt" "$OUT" "$REPS" "$(( $(date +%s) - start ))" "$KERNEL" "$MTU" "$SMP"
