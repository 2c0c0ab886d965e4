#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of scripts/bench.sh (runs in both VMs): iperf3 TCP as the ceiling, then the
# perftest runs for every stack in turn on the same link. VM 0 serves, VM 1 connects and
# prints one machine-readable line per measurement:
#   BENCH <stack> <test> <bytes> <qps> <value> <Gb/s|usec>
# from both VMs, for each bandwidth run, the kernel CPU it took (system + irq + softirq
# time, in USER_HZ ticks: perftest's user-space polling is left out) and the bytes moved:
#   CPU <stack> <test> <bytes> <qps> vm<N> <ticks> <bytes moved>
# and, for the 64 KiB runs, the same run's fixed cost (20 two-byte messages):
#   CPU0 <stack> <test> <bytes> <qps> vm<N> <ticks>
# and, with PROFILE=1, the top of a cpu-clock profile of both VMs during ib_write_bw:
#   PROFILE <stack> vm<N> <percent> <symbol>
# and the CPUs the guest kernel brought up (the report prints them, not the -smp asked for):
#   NCPU vm<N> <cpus>
# Arguments: REPS VOLUME(MiB per bandwidth run) STACKS SIZES PROFILE MTU
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/qemu/bench-lib.sh"
REPS=${1:-3} VOLUME=${2:-16} DUR=5 STACKS=${3:-"rrxe rxe siw"} SIZES=${4:-"1024 4096 16384 65536 262144 1048576"} PROFILE=${5:-0} MTU=${6:-1500}
# Kernel CPU time so far (system + irq + softirq of /proc/stat, USER_HZ ticks).
kcpu() { awk '$1 == "cpu" {print $4 + $7 + $8}' /proc/stat; }
port=19000
PERF=$(command -v perf || true)

# run TIMEOUT -- SERVER... -- CLIENT...: VM 0 runs the server, VM 1 the client (retrying
# until the server listens); the client's output goes to stdout. A fresh port every call.
run() {
  local t=$1 side=server srv=() cli=() a; shift 2
  port=$((port + 1))
  for a in "$@"; do
    if [ "$a" = "--" ]; then side=client; continue; fi
    a=${a//@PORT/$port}
    if [ "$side" = server ]; then srv+=("$a"); else cli+=("$a"); fi
  done
  if [ "$RRXE_VM" = 0 ]; then
    timeout "$t" "${srv[@]}" > /dev/null 2>&1
  else
    sleep 0.5
    retry 30 1 timeout "$t" "${cli[@]}" 2>&1
  fi
}

# pt TEST BYTES QPS MSGS [FLAG]: one perftest bandwidth pair (server on VM 0, client on VM 1).
pt() {
  local test=$1 size=$2 q=$3 n=$4 f=(); [ -n "${5:-}" ] && f=("$5")
  run 300 -- \
    "$test" -d "$DEV" "${CONN[@]}" -p @PORT -s "$size" -q "$q" -n "$n" -F "${f[@]}" -- \
    "$test" -d "$DEV" "${CONN[@]}" -p @PORT -s "$size" -q "$q" -n "$n" -F "${f[@]}" "$RRXE_PEER_IP"
}
# bw STACK TEST BYTES QPS [-e]: the average bandwidth line of perftest -> BENCH. Each run
# moves about VOLUME MiB (perftest's duration mode reports 0 here), 20..2000 messages per QP.
# With -e both processes wait for completion events instead of polling; the test is
# reported as TEST-e.
bw() {
  local stack=$1 test=$2 size=$3 q=$4 ev=${5:-} out v n c0
  n=$(( VOLUME * 1048576 / size / q )); n=$(( n < 20 ? 20 : n > 2000 ? 2000 : n ))
  # The kernel CPU of everything but the transfer (process start, device open, memory
  # registration, connection, teardown: seconds under TCG, as much as a 16 MiB transfer)
  # for the CPU/GB table: the same run with 20 two-byte messages, subtracted by the report.
  if [ "$size" = 65536 ]; then
    c0=$(kcpu)
    pt "$test" 2 "$q" 20 "$ev" > /dev/null
    echo "CPU0 $stack $test$ev $size $q vm$RRXE_VM $(( $(kcpu) - c0 ))"
  fi
  c0=$(kcpu)
  out=$(pt "$test" "$size" "$q" "$n" "$ev")
  echo "CPU $stack $test$ev $size $q vm$RRXE_VM $(( $(kcpu) - c0 )) $(( n * size * q ))"
  [ "$RRXE_VM" = 1 ] || return 0
  # A zero is not a measurement: perftest's cycle clock sometimes reads 0 under TCG.
  # perftest prints MB/s (2^20 bytes) with two decimals: 0.01 MB/s of resolution. Its Gb/s
  # (--report_gbits) has two decimals too on some tests (ib_read_bw printed 0.10 for every
  # stack), too coarse at TCG speeds; the Gb/s here is computed from the MB/s.
  v=$(echo "$out" | awk -v s="$size" '$1 == s && NF >= 4 && $4 + 0 > 0 {printf "%.6f\n", $4 * 1048576 * 8 / 1e9}' | tail -n 1)
  if [ -n "$v" ]; then echo "BENCH $stack $test$ev $size $q $v Gb/s"; [ -n "${BENCH_DEBUG:-}" ] && echo "$out" | sed 's/^/#   /'
  else say "FAILED: $test $ev -s $size -q $q on $stack"; echo "$out" | tail -n 5 | sed 's/^/#   /'; fi
}
# lat STACK TEST: t_typical of 2-byte latency -> BENCH.
lat() {
  local stack=$1 test=$2 out v
  out=$(run 120 -- \
    "$test" -d "$DEV" "${CONN[@]}" -p @PORT -s 2 -n 1000 -F -- \
    "$test" -d "$DEV" "${CONN[@]}" -p @PORT -s 2 -n 1000 -F "$RRXE_PEER_IP")
  [ "$RRXE_VM" = 1 ] || return 0
  v=$(echo "$out" | awk '$1 == 2 && NF >= 5 && $5 != "inf" && $5 + 0 > 0 {print $5}' | tail -n 1)
  if [ -n "$v" ]; then echo "BENCH $stack $test 2 1 $v usec"
  else say "FAILED: $test -s 2 on $stack"; echo "$out" | tail -n 5 | sed 's/^/#   /'; fi
}
# profile STACK: a cpu-clock profile of both VMs while ib_write_bw 64 KiB runs.
profile() {
  local stack=$1
  [ -x "$PERF" ] || { say "no perf binary: profile skipped"; return 0; }
  (sleep 3; "$PERF" record -a -e cpu-clock -F 499 -o /run/tmp/perf.data -- sleep "$DUR" > /dev/null 2>&1) &
  # perftest's duration mode keeps the link busy through the whole sampling window at any
  # speed (a fixed volume ended before sampling began on the faster stack, and its profile
  # was 97 % idle). Its result, unused here, reads 0 under TCG.
  run $((DUR + 60)) -- \
    ib_write_bw -d "$DEV" "${CONN[@]}" -p @PORT -s 65536 -D $((DUR + 6)) -F -- \
    ib_write_bw -d "$DEV" "${CONN[@]}" -p @PORT -s 65536 -D $((DUR + 6)) -F "$RRXE_PEER_IP" > /dev/null
  wait
  "$PERF" report -i /run/tmp/perf.data --stdio --sort sym --percent-limit 1 2>/dev/null |
    awk -v s="$stack" -v vm="vm$RRXE_VM" '/^ +[0-9.]+%/ {p=$1; $1=""; $2=""; sub(/^ +/, ""); print "PROFILE", s, vm, p, $0}' | head -n 25
}

# Both guests' link MTU, before anything runs (TCP too): a RoCE port's active MTU follows
# it (4096 from about 4200 bytes up), and perftest takes that as the path MTU.
if [ "$MTU" != 1500 ]; then
  ip link set eth0 mtu "$MTU" || say "cannot set MTU $MTU on eth0"
fi
say "eth0 MTU $(cat /sys/class/net/eth0/mtu)"
echo "NCPU vm$RRXE_VM $(nproc)"

# The ceiling: TCP over the same link.
sysctl -qw kernel.perf_event_paranoid=-1 kernel.kptr_restrict=0 2>/dev/null
for r in $(seq "$REPS"); do
  c0=$(kcpu)
  out=$(run $((DUR + 30)) -- iperf3 -s -1 -p @PORT -- iperf3 -c "$RRXE_PEER_IP" -p @PORT -t "$DUR" -f g)
  c1=$(kcpu)
  [ "$RRXE_VM" = 1 ] || { echo "CPU tcp iperf3 131072 1 vm0 $(( c1 - c0 )) -"; continue; }
  v=$(echo "$out" | awk '/receiver/ {for (i = 1; i <= NF; i++) if ($i == "Gbits/sec") print $(i - 1)}' | tail -n 1)
  # The bytes iperf3 moved: its receiver line's Transfer column.
  bytes=$(echo "$out" | awk '/receiver/ {u = $6; b = $5; m = u == "GBytes" ? 1073741824 : u == "MBytes" ? 1048576 : u == "KBytes" ? 1024 : 1; printf "%d", b * m}' | tail -n 1)
  echo "CPU tcp iperf3 131072 1 vm1 $(( c1 - c0 )) ${bytes:--}"
  if [ -n "$v" ]; then echo "BENCH tcp iperf3 131072 1 $v Gb/s"; else say "FAILED: iperf3"; echo "$out" | tail -n 5; fi
done

for stack in $STACKS; do
  setup_stack "$stack" || continue
  say "--- $stack ($DEV, $(ibv_devinfo -d "$DEV" 2>/dev/null | awk '/active_mtu/ {print "active MTU", $2}' | head -n 1))"
  for r in $(seq "$REPS"); do
    for t in ib_write_bw ib_send_bw ib_read_bw; do bw "$stack" "$t" 65536 1; done
    bw "$stack" ib_write_bw 65536 8
    # Many QPs at once (the target is rrxe's): the aggregate must hold up and every
    # QP must finish. Only rrxe: on siw perftest 4.5's rdma_cm client segfaults in
    # librdmacm 44 at -q 64; on the benchmark kernel rdma_rxe's -q 64 server left at once;
    # either way the two VMs' runs fell out of step and every later run failed.
    [ "$stack" = rrxe ] && bw "$stack" ib_write_bw 65536 64
    # The same with completion events: both processes sleep until a completion instead of
    # spinning on their CQs. On a 2-core host a spinning guest CPU is a busy host thread
    # that QEMU's I/O threads (the link itself) must share the cores with; iperf3 sleeps.
    # (ib_write_bw's server polls nothing; its client alone would gain little.) Not on
    # siw: after each -e run its server did not exit and waited out its 300 s timeout (the
    # run at ee8a378 took 1483 s instead of about 480).
    [ "$stack" = siw ] || for t in ib_send_bw ib_read_bw; do bw "$stack" "$t" 65536 1 -e; done
    for s in $SIZES; do [ "$s" = 65536 ] || bw "$stack" ib_write_bw "$s" 1; done
    for t in ib_write_lat ib_send_lat ib_read_lat; do lat "$stack" "$t"; done
  done
  [ "$PROFILE" = 1 ] && [ "$stack" != siw ] && profile "$stack"
  # The counters of the run, for the packets-per-message picture.
  [ "$stack" = rrxe ] && rdma statistic show link "$DEV"/1 | tr ' ' '\n' | paste -sd' ' | sed "s/^/# vm$RRXE_VM counters: /"
  teardown_stack "$stack"
done
exit 0
