#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of scripts/bench.sh (runs in both VMs): VM 0 serves, VM 1 connects. Each
# repetition measures, in this order, iperf3 TCP both ways and a UDP ping-pong (the link's
# ceilings and latency floor), then every stack in turn, the stacks' order rotated by one
# each repetition so that no stack always runs first or last. A stack's rows in a repetition:
#   ib_write_bw at 64 KiB with completion events (-e; the headline) and its -q 8 pair,
#   ib_send_bw and ib_read_bw -e, the same three polling, ib_write_bw -q 64 (rrxe),
#   ib_write_bw -e over the other message sizes, 2-byte ib_write/send/read_lat, and
#   ib_write/send_lat over UC (not siw).
# Every bandwidth run moves VOLUME MiB, with -Q 1 (a completion per message: perftest's own
# choice above 8 KiB when polling, so polling and event runs signal alike) and -N (no peak
# search, which costs minutes after a long run). In the -e rows both processes sleep until
# a completion arrives instead of spinning on their CQs: the shim of qemu/perftest-sleep-cq.c
# ($SLEEP_CQ), preloaded into both, makes a poll of an empty CQ wait for its completion
# event. Not perftest's own -e: perftest 4.5 refuses it for ib_write_bw ("Events feature not
# available on WRITE verb"), and where it takes it, it can wait forever at a run's end (it
# re-arms the CQ, polls at most 16 completions and waits again: completions beyond 16 that
# came before the re-arm raise no event: of 12 runs of 20 two-byte ib_send_bw -e messages,
# 3 hung so on rrxe and 2 on rdma_rxe, with the server done and the client waiting).
# Lines printed (VM 1 prints the results; REP is the repetition, 1..REPS):
#   BENCH <stack> <test> <bytes> <qps> <value> <Gb/s|usec> <rep>
#   CPU <stack> <test> <bytes> <qps> vm<N> <ticks> <bytes moved> <rep>
#     the guest kernel CPU of a bandwidth run while its client ran (system + irq + softirq,
#     USER_HZ ticks: the processes' user-space polling is left out), from both VMs
#   CPU0 <stack> <test> <bytes> <qps> vm<N> <ticks> <rep>
#     the same for the run's fixed cost: the same run with 20 two-byte messages (64 KiB -e
#     rows only)
#   MARK b|e <stack>:<test>:<bytes>:<qps>:<rep>[:fixed]
#     just before and after a client run (VM 1): scripts/bench-host.py measures the host
#     CPU of both QEMU processes between them
#   STUCK <stack> <test> <bytes> <qps> <rep> [fixed] <state> <%cpu> <kernel wait>
#     a server that had not exited 10 s after its client ended (it is killed), as ps saw it
#   COUNTERS vm<N> <rep> link rrxe0/1 <name> <value>...   (rrxe's counters, each repetition;
#     COUNTERS_B: those of the other build in an A/B run)
#   RUNCOUNTERS <stack> <test> <bytes> <qps> vm<N> <rep> <name> <delta>...
#     what each of rrxe's counters that moved moved over one bandwidth run (rrxe and
#     rrxe-b), on each VM: which run of a repetition retransmitted, waited or timed out
#   PROFILE <stack>:<test> vm<N> <percent> <symbol>   (PROFILE=1: cpu-clock, during each
#     -e row at 64 KiB)
#   NOTIFY <stack> <test> <bytes> <qps> vm<N> <sent> <tx kicks> <received> <rx kicks> <tx irqs>
#     <rx irqs> <rep>
#     the link's frames and virtio notifications over a bandwidth run, on each VM: the frames
#     eth0 sent and received, the kicks virtio-net gave QEMU on its transmit queue (frames to
#     send) and its receive queue (buffers to fill), and the interrupts QEMU raised on each
#     ("-" where this kernel's virtio-net counts no kicks)
#   NCPU vm<N> <cpus>
#   TRACE <test> vm<N> <finding>   (TRACE="TESTS": scripts/bench-trace.py's summary of 1 s of
#     each test's trace events on rrxe, both VMs)
# Arguments: REPS VOLUME(MiB per bandwidth run) STACKS SIZES PROFILE MTU SLEEP_CQ [AB_KO [TRACE]]
# AB_KO (an A/B run, scripts/bench.sh --ab): the other build's rrxe.ko, the stack rrxe-b.
# Each repetition then runs only the rows an A/B compares: the four -e rows at 64 KiB and
# the three latencies, after TCP and the floor.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/qemu/bench-lib.sh"
REPS=${1:-5} VOLUME=${2:-256} DUR=5 STACKS=${3:-"rrxe rxe siw"} SIZES=${4:-"1024 4096 16384 65536 262144 1048576"} PROFILE=${5:-0} MTU=${6:-1500}
SLEEP_CQ=${7:-} AB_KO=${8:-} TRACE=${9:-}
# Kernel CPU time so far (system + irq + softirq of /proc/stat, USER_HZ ticks).
kcpu() { awk '$1 == "cpu" {print $4 + $7 + $8}' /proc/stat; }
# The link's virtio device (virtio1: virtio0 is the 9p share) for its interrupt lines.
VDEV=$(basename "$(readlink -f /sys/class/net/eth0/device)")
# vstat: eth0's frames and notifications so far: sent, transmit kicks, received, receive
# kicks (ethtool's virtio-net counters; "-" without them), transmit and receive interrupts
# (/proc/interrupts, summed over the CPUs).
vstat() {
  local st=/sys/class/net/eth0/statistics k
  k=$(ethtool -S eth0 2>/dev/null | awk '$1 == "tx_kicks:" {t = $2} $1 == "rx_kicks:" {r = $2}
        END {print (t == "" ? "-" : t), (r == "" ? "-" : r)}')
  set -- $k
  echo "$(cat $st/tx_packets) $1 $(cat $st/rx_packets) $2 $(awk -v d="$VDEV" '
    NR == 1 {n = NF; next}
    {c = 0; for (i = 2; i <= n + 1; i++) c += $i}
    $NF == d "-output.0" {o = c} $NF == d "-input.0" {in_ = c}
    END {print o + 0, in_ + 0}' /proc/interrupts)"
}
# vdelta BEFORE AFTER: what each of vstat's six numbers moved ("-" stays "-").
vdelta() {
  local a=($1) b=($2) i out=()
  for i in 0 1 2 3 4 5; do
    if [ "${a[$i]}" = - ] || [ "${b[$i]}" = - ]; then out+=(-); else out+=($(( b[i] - a[i] ))); fi
  done
  echo "${out[*]}"
}
port=19000
PERF=$(command -v perf || true)
RUN_TICKS=0
mkdir -p /run/tmp
# MARK and STUCK lines go to the console even from inside $(...).
exec 9>&1

# listening PORT SECONDS: until a TCP or UDP socket of this VM is bound to PORT with no peer
# (a listener, or perftest's and sockperf's servers), at most SECONDS.
listening() {
  local hex n
  hex=$(printf '%04X' "$1")
  for n in $(seq $(( $2 * 5 ))); do
    grep -qsE ":$hex [0-9A-F]+:0000 (0A|07) " /proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6 && return 0
    [ "$n" = 1 ] || sleep 0.2
  done
  return 1
}

# run ID TIMEOUT -- SERVER... -- CLIENT...: VM 0 runs the server, VM 1 the client, a fresh
# port every call (@PORT in the arguments); the client's output goes to stdout. VM 0 tells
# VM 1 once its server listens, so that the client starts once (it still retries, 30 times,
# if its connection fails) and the MARK lines VM 1 prints around it, for the host's CPU
# measure, hold the client's run alone. Then VM 1 tells VM 0 that its client is done (VM 0
# waits for that word as long as VM 1's tries may take, so the two stay on the same run); VM 0
# gives its server 10 s more to exit on its own, then kills it (STUCK), so that a server that
# misses its client's end (seen with siw's -e servers) costs 10 s, not TIMEOUT. Sets
# RUN_TICKS: this VM's kernel CPU (kcpu) while the client ran (on VM 0: from its word to VM 1
# to VM 1's word back). Call it outside $(...) where RUN_TICKS is wanted.
run() {
  local id=$1 t=$2 side=server srv=() cli=() a sp wp k0 rc=0; shift 3
  port=$((port + 1))
  for a in "$@"; do
    if [ "$a" = "--" ]; then side=client; continue; fi
    a=${a//@PORT/$port}
    if [ "$side" = server ]; then srv+=("$a"); else cli+=("$a"); fi
  done
  if [ "$RRXE_VM" = 0 ]; then
    timeout "$t" "${srv[@]}" > /dev/null 2>&1 &
    sp=$!
    # As long as VM 1 may take (its wait for this word, 30 tries of at most TIMEOUT): a
    # VM 0 that stopped waiting first would start its next server while VM 1 still tried
    # this one, and from then on every word would come a step late (a run lost the rest of
    # its tests after a siw client crashed in librdmacm, this way as far as its logs show).
    peer_wait $((port + 10000)) $((60 + 30 * (t + 1))) &
    wp=$!
    listening "$port" 30 || say "no server on port $port after 30 s: ${srv[*]}"
    peer_signal $((port + 20000))
    k0=$(kcpu)
    wait "$wp"
    RUN_TICKS=$(( $(kcpu) - k0 ))
    for _ in $(seq 20); do kill -0 "$sp" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$sp" 2>/dev/null; then
      # Where the server waits (timeout's child): its state, CPU share and kernel wait.
      [ "$id" = - ] || echo "STUCK ${id//:/ } $(ps -o stat=,pcpu=,wchan:32= --ppid "$sp" | tr -s ' ' | head -n 1)" >&9
      kill "$sp" 2>/dev/null
    fi
    wait "$sp" 2>/dev/null
  else
    peer_wait $((port + 20000)) 60 || say "no word from VM 0's server on port $port"
    [ "$id" = - ] || echo "MARK b $id" >&9
    k0=$(kcpu)
    retry 30 1 timeout "$t" "${cli[@]}" 2>&1 || rc=$?
    RUN_TICKS=$(( $(kcpu) - k0 ))
    [ "$id" = - ] || echo "MARK e $id" >&9
    peer_signal $((port + 10000))
    return $rc
  fi
}

# cstat STACK: the device's counters now, "link DEV/1 name value..." on one line (nothing
# but on rrxe and rrxe-b).
cstat() {
  case "$1" in rrxe|rrxe-b) rdma statistic show link "$DEV"/1 2>/dev/null | tr -s ' \n' '  ' ;; esac
}
# cdelta BEFORE AFTER: the "name delta" pairs of the counters that moved.
cdelta() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    n = split(a, x, " "); for (i = 1; i < n; i++) if (x[i + 1] ~ /^[0-9]+$/) v[x[i]] = x[i + 1]
    n = split(b, y, " "); for (i = 1; i < n; i++)
      if (y[i + 1] ~ /^[0-9]+$/ && (y[i] in v) && y[i + 1] != v[y[i]]) printf " %s %d", y[i], y[i + 1] - v[y[i]]
  }'
}

# pt ID TEST BYTES QPS MSGS [-e]: one perftest bandwidth pair.
pt() {
  local id=$1 test=$2 size=$3 q=$4 n=$5 ev=${6:-} c=() pre=()
  c=(-d "$DEV" "${CONN[@]}" -p @PORT -s "$size" -q "$q" -n "$n" -F -Q 1 -N)
  [ -n "$ev" ] && pre=(env ${SLEEP_CQ:+"LD_PRELOAD=$SLEEP_CQ"})
  run "$id" $((60 + VOLUME / 2)) -- "${pre[@]}" "$test" "${c[@]}" -- "${pre[@]}" "$test" "${c[@]}" "$RRXE_PEER_IP"
}
# bw STACK TEST BYTES QPS REP [-e]: the average bandwidth of a run moving VOLUME MiB
# (perftest's duration mode reports 0 here) -> BENCH; TEST is reported as TEST-e with -e.
bw() {
  local stack=$1 test=$2 size=$3 q=$4 r=$5 ev=${6:-} out v n id ns cs
  n=$(( VOLUME * 1048576 / size / q )); n=$(( n < 20 ? 20 : n ))
  id="$stack:$test$ev:$size:$q:$r"
  # The kernel and host CPU of everything but the transfer (process start, device open,
  # memory registration, connection, teardown: seconds under TCG) for the CPU/GB tables:
  # the same run with 20 two-byte messages, subtracted by the report.
  if [ "$size" = 65536 ] && [ -n "$ev" ]; then
    pt "$id:fixed" "$test" 2 "$q" 20 "$ev" > /dev/null
    echo "CPU0 $stack $test$ev $size $q vm$RRXE_VM $RUN_TICKS $r"
  fi
  ns=$(vstat) cs=$(cstat "$stack")
  pt "$id" "$test" "$size" "$q" "$n" "$ev" > /run/tmp/pt.out
  echo "NOTIFY $stack $test$ev $size $q vm$RRXE_VM $(vdelta "$ns" "$(vstat)") $r"
  [ -n "$cs" ] && echo "RUNCOUNTERS $stack $test$ev $size $q vm$RRXE_VM $r$(cdelta "$cs" "$(cstat "$stack")")"
  out=$(cat /run/tmp/pt.out)
  echo "CPU $stack $test$ev $size $q vm$RRXE_VM $RUN_TICKS $(( n * size * q )) $r"
  [ "$RRXE_VM" = 1 ] || return 0
  # A zero is not a measurement: perftest's cycle clock sometimes reads 0 under TCG.
  # perftest prints MB/s (2^20 bytes) with two decimals; its Gb/s column has two decimals
  # too (ib_read_bw printed 0.10 for every stack), so the Gb/s here is computed from MB/s.
  v=$(echo "$out" | awk -v s="$size" '$1 == s && NF >= 4 && $4 + 0 > 0 {printf "%.6f\n", $4 * 1048576 * 8 / 1e9}' | tail -n 1)
  if [ -n "$v" ]; then echo "BENCH $stack $test$ev $size $q $v Gb/s $r"
  else say "FAILED: $test $ev -s $size -q $q on $stack"; echo "$out" | tail -n 5 | sed 's/^/#   /'; fi
}
# lat STACK TEST REP [UC]: t_typical (the median) of 2-byte latency -> BENCH; with UC, over
# an unreliable connected QP (no ACK frames), reported as TEST-uc.
lat() {
  local stack=$1 test=$2 r=$3 uc=${4:-} out v c=()
  [ -n "$uc" ] && c=(-c UC)
  out=$(run - 120 -- \
    "$test" -d "$DEV" "${CONN[@]}" "${c[@]}" -p @PORT -s 2 -n 1000 -F -- \
    "$test" -d "$DEV" "${CONN[@]}" "${c[@]}" -p @PORT -s 2 -n 1000 -F "$RRXE_PEER_IP")
  [ "$RRXE_VM" = 1 ] || return 0
  v=$(echo "$out" | awk '$1 == 2 && NF >= 5 && $5 != "inf" && $5 + 0 > 0 {print $5}' | tail -n 1)
  if [ -n "$v" ]; then echo "BENCH $stack $test${uc:+-uc} 2 1 $v usec $r"
  else say "FAILED: $test ${c[*]} -s 2 on $stack"; echo "$out" | tail -n 5 | sed 's/^/#   /'; fi
}
# tcp REP [-R]: iperf3 for DUR seconds -> BENCH and CPU lines; with -R the server sends
# (test iperf3-R), the direction of a READ's data, where the client sends a WRITE's and a
# SEND's.
tcp() {
  local r=$1 rev=${2:-} out v bytes t=iperf3 ns
  [ -n "$rev" ] && t=iperf3-R
  ns=$(vstat)
  run "tcp:$t:131072:1:$r" $((DUR + 30)) -- iperf3 -s -1 -p @PORT -- iperf3 -c "$RRXE_PEER_IP" -p @PORT -t "$DUR" -f g $rev > /run/tmp/tcp.out
  echo "NOTIFY tcp $t 131072 1 vm$RRXE_VM $(vdelta "$ns" "$(vstat)") $r"
  out=$(cat /run/tmp/tcp.out)
  [ "$RRXE_VM" = 1 ] || { echo "CPU tcp $t 131072 1 vm0 $RUN_TICKS - $r"; return 0; }
  v=$(echo "$out" | awk '/receiver/ {for (i = 1; i <= NF; i++) if ($i == "Gbits/sec") print $(i - 1)}' | tail -n 1)
  # The bytes iperf3 moved: its receiver line's Transfer column.
  bytes=$(echo "$out" | awk '/receiver/ {u = $6; b = $5; m = u == "GBytes" ? 1073741824 : u == "MBytes" ? 1048576 : u == "KBytes" ? 1024 : 1; printf "%d", b * m}' | tail -n 1)
  echo "CPU tcp $t 131072 1 vm1 $RUN_TICKS ${bytes:--} $r"
  if [ -n "$v" ]; then echo "BENCH tcp $t 131072 1 $v Gb/s $r"; else say "FAILED: iperf3 $rev"; echo "$out" | tail -n 5; fi
}
# floor REP: the link's latency floor, a UDP ping-pong of sockperf's smallest datagram (14
# bytes; a 2-byte RoCE SEND is a 20-byte UDP payload, a WRITE 36) for 3 s: the median of
# half the round trips, as perftest's t_typical -> BENCH udp sockperf (blocking receives).
# Then the same with both sides spinning on a non-blocking socket (--nonblocked: the
# server's receive loop never sleeps), as perftest's latency tests spin on memory or their
# CQ: a spinning vCPU is a busy host thread beside its VM's QEMU I/O thread
# -> BENCH udp sockperf-spin.
floor() {
  local r=$1 out v spin t
  for spin in "" --nonblocked; do
    t=sockperf${spin:+-spin}
    out=$(run - 30 -- sockperf sr -i "$RRXE_MY_IP" -p @PORT $spin -- \
      sockperf pp -i "$RRXE_PEER_IP" -p @PORT -m 14 -t 3 $spin)
    [ "$RRXE_VM" = 1 ] || continue
    v=$(echo "$out" | awk '/percentile 50.000 =/ {print $NF}' | tail -n 1)
    if [ -n "$v" ] && [ "${v%%.*}" -gt 0 ] 2>/dev/null; then echo "BENCH udp $t 14 1 $v usec $r"
    else say "FAILED: sockperf ping-pong ${spin}"; echo "$out" | tail -n 5 | sed 's/^/#   /'; fi
  done
}
# profile STACK TEST: a cpu-clock profile of both VMs, 5 s from 3 s into TEST 64 KiB with
# completion events (the headline row's way), 12288 messages (768 MiB: about 9 s at
# 0.7 Gb/s, so the link is busy through the whole sampling window).
profile() {
  local stack=$1 test=$2 c=()
  [ -x "$PERF" ] || { say "no perf binary: profile skipped"; return 0; }
  c=(-d "$DEV" "${CONN[@]}" -p @PORT -s 65536 -n 12288 -F -Q 1 -N)
  (sleep 3; "$PERF" record -a -e cpu-clock -F 499 -o /run/tmp/perf.data -- sleep "$DUR" > /dev/null 2>&1) &
  run - $((DUR + 120)) -- env ${SLEEP_CQ:+"LD_PRELOAD=$SLEEP_CQ"} "$test" "${c[@]}" -- \
    env ${SLEEP_CQ:+"LD_PRELOAD=$SLEEP_CQ"} "$test" "${c[@]}" "$RRXE_PEER_IP" > /dev/null
  wait
  "$PERF" report -i /run/tmp/perf.data --stdio --sort sym --percent-limit 1 2>/dev/null |
    awk -v s="$stack:$test" -v vm="vm$RRXE_VM" '/^ +[0-9.]+%/ {p=$1; $1=""; $2=""; sub(/^ +/, ""); print "PROFILE", s, vm, p, $0}' | head -n 25
}
# trace STACK TEST: 1 s of trace events, from 1 s after TEST's packets start (a bandwidth test: 64 KiB with
# completion events, as profile; a latency test: 2 bytes over RC, 20000 iterations), on both
# VMs: rrxe's packets, the frames handed to the device layer (net_dev_queue), to the
# driver (net_dev_start_xmit) and back from it (net_dev_xmit), the frames received,
# virtio's interrupts and the scheduler's switches; scripts/bench-trace.py summarises each VM's in the guest -> TRACE.
trace() {
  local stack=$1 test=$2 T=/sys/kernel/tracing c=() pre=() e
  mountpoint -q $T || mount -t tracefs nodev $T 2>/dev/null
  [ -d "$T/events/rrxe" ] || { say "no rrxe trace events in this kernel: trace skipped"; return 0; }
  echo 0 > $T/tracing_on; : > $T/trace; echo 65536 > $T/buffer_size_kb
  for e in rrxe/rrxe_pkt_tx rrxe/rrxe_pkt_rx net/net_dev_queue net/net_dev_start_xmit net/net_dev_xmit \
           net/netif_receive_skb irq/irq_handler_entry sched/sched_switch; do
    echo 1 > "$T/events/$e/enable"
  done
  case "$test" in
    *_lat) c=(-d "$DEV" "${CONN[@]}" -p @PORT -s 2 -n 20000 -F) ;;
    *) c=(-d "$DEV" "${CONN[@]}" -p @PORT -s 65536 -n 12288 -F -Q 1 -N); pre=(env ${SLEEP_CQ:+"LD_PRELOAD=$SLEEP_CQ"}) ;;
  esac
  # The window opens 1 s after the link starts carrying the test's packets (at least 100 in
  # 0.2 s; perftest's start under TCG takes seconds, and differently in the two VMs).
  (for _ in $(seq 600); do
     a=$(( $(cat /sys/class/net/eth0/statistics/rx_packets) + $(cat /sys/class/net/eth0/statistics/tx_packets) ))
     sleep 0.2
     b=$(( $(cat /sys/class/net/eth0/statistics/rx_packets) + $(cat /sys/class/net/eth0/statistics/tx_packets) ))
     [ $((b - a)) -ge 100 ] && break
   done
   sleep 1; echo 1 > $T/tracing_on; sleep 1; echo 0 > $T/tracing_on) &
  run - 300 -- "${pre[@]}" "$test" "${c[@]}" -- "${pre[@]}" "$test" "${c[@]}" "$RRXE_PEER_IP" > /dev/null
  wait
  echo 0 > $T/events/enable
  python3 "$RRXE_ROOT/scripts/bench-trace.py" "$test" < $T/trace | sed "s/^/TRACE $test vm$RRXE_VM /"
  : > $T/trace
}

# Both guests' link MTU, before anything runs (TCP too): a RoCE port's active MTU follows
# it (4096 from about 4200 bytes up), and perftest takes that as the path MTU.
if [ "$MTU" != 1500 ]; then
  ip link set eth0 mtu "$MTU" || say "cannot set MTU $MTU on eth0"
fi
say "eth0 MTU $(cat /sys/class/net/eth0/mtu)"
echo "NCPU vm$RRXE_VM $(nproc)"
sysctl -qw kernel.perf_event_paranoid=-1 kernel.kptr_restrict=0 2>/dev/null
read -r -a order <<< "$STACKS"
for r in $(seq "$REPS"); do
  say "=== repetition $r of $REPS: ${order[*]}"
  tcp "$r"
  [ -z "$AB_KO" ] && tcp "$r" -R
  floor "$r"
  for stack in "${order[@]}"; do
    setup_stack "$stack" || continue
    say "--- $stack ($DEV, $(ibv_devinfo -d "$DEV" 2>/dev/null | awk '/active_mtu/ {print "active MTU", $2}' | head -n 1))"
    # -q 8 right after -q 1: the pair the target compares.
    bw "$stack" ib_write_bw 65536 1 "$r" -e
    bw "$stack" ib_write_bw 65536 8 "$r" -e
    for t in ib_send_bw ib_read_bw; do bw "$stack" "$t" 65536 1 "$r" -e; done
    if [ -z "$AB_KO" ]; then
      for t in ib_write_bw ib_send_bw ib_read_bw; do bw "$stack" "$t" 65536 1 "$r"; done
      # Many QPs at once (the target is rrxe's): the aggregate must hold up and every QP must
      # finish. Only rrxe: on siw perftest 4.5's rdma_cm client segfaults in librdmacm 44 at
      # -q 64; on the benchmark kernel rdma_rxe's -q 64 server left at once.
      [ "$stack" = rrxe ] && bw "$stack" ib_write_bw 65536 64 "$r"
      for s in $SIZES; do [ "$s" = 65536 ] || bw "$stack" ib_write_bw "$s" 1 "$r" -e; done
    fi
    for t in ib_write_lat ib_send_lat ib_read_lat; do lat "$stack" "$t" "$r"; done
    # The same WRITE and SEND over UC: one frame each way, where RC adds an ACK frame in
    # each direction (iWARP has no UC: not siw).
    if [ -z "$AB_KO" ] && [ "$stack" != siw ]; then
      for t in ib_write_lat ib_send_lat; do lat "$stack" "$t" "$r" UC; done
    fi
    # The device's counters over this repetition (the module is reloaded for each).
    # (COUNTERS_B: the other build of an A/B run.)
    case "$stack" in rrxe) c=COUNTERS ;; rrxe-b) c=COUNTERS_B ;; *) c= ;; esac
    [ -n "$c" ] && echo "$c vm$RRXE_VM $r $(cstat "$stack")"
    teardown_stack "$stack"
  done
  order=("${order[@]:1}" "${order[0]}")
done
if [ "$PROFILE" = 1 ]; then
  for stack in $STACKS; do
    [ "$stack" = siw ] && continue
    setup_stack "$stack" || continue
    for t in ib_write_bw ib_send_bw ib_read_bw; do profile "$stack" "$t"; done
    teardown_stack "$stack"
  done
fi
if [ -n "$TRACE" ] && setup_stack rrxe; then
  # Alone (no repetition): the floors too, to read the latency cycles against (repetition 0).
  [ "$REPS" = 0 ] && floor 0
  for t in $TRACE; do trace rrxe "$t"; done
  teardown_stack rrxe
fi
exit 0
