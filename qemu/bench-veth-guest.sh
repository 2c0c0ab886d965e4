#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of scripts/bench.sh --veth (one VM): two network namespaces joined by a veth
# pair with its offloads off (no TSO, GSO, GRO, scatter-gather or checksum offload, so TCP
# hands the pair one MSS-sized, software-checksummed segment at a time, as rrxe hands it
# one packet with a software ICRC), and TCP (iperf3), rrxe and siw between them, the server
# in namespace b pinned to the first CPU, the client in a pinned to the last. The packets
# cross the IP stack and the veth pair but not QEMU's network path: the stacks' own cost
# per packet. rdma_rxe is not run: on Linux 6.12 its UDP socket lives in the initial
# namespace only; siw's rdma_connect between the namespaces failed there, so scripts/bench.sh
# runs rrxe alone unless told. Each stack's devices are added in shared mode (the default), one on
# each end of the pair, from inside its namespace. Prints, per run,
#   LOCAL <stack> <test> <MB/s> <bytes moved> <kernel ticks on cpu0> [<cpu1> ...]
#   PKTS <stack> <test> <packets sent>
# (ticks: system + irq + softirq of each CPU in USER_HZ ticks over the client's run;
# packets: the frames both ends of the pair sent, whatever the stack) and
#   NCPU vm0 <cpus>
# Arguments: REPS VOLUME(MiB per run) STACKS SLEEP_CQ
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/qemu/bench-lib.sh"
REPS=${1:-5} VOLUME=${2:-256} STACKS=${3:-rrxe} SLEEP_CQ=${4:-}
pcpu() { awk '$1 ~ /^cpu[0-9]/ {printf "%d ", $4 + $7 + $8}' /proc/stat; }
# Frames NS's end DEV of the pair has sent.
txp() { ip -n "$1" -s link show "$2" | awk '/TX:/ {getline; print $2; exit}'; }
last=$(( $(nproc) - 1 ))
echo "NCPU vm0 $(nproc)"
port=19000
A=10.99.0.1 B=10.99.0.2

kmod veth
ip netns add a && ip netns add b &&
  ip link add va netns a type veth peer name vb netns b &&
  ip -n a addr add $A/24 dev va && ip -n b addr add $B/24 dev vb &&
  ip -n a link set va up && ip -n b link set vb up &&
  ip -n a link set lo up && ip -n b link set lo up || { say "FAILED: veth pair"; exit 1; }
for e in a:va b:vb; do
  ns=${e%%:*} dev=${e#*:}
  # Each feature on its own: a feature veth cannot change must not keep the others on.
  for f in tso gso gro sg tx rx; do ip netns exec "$ns" ethtool -K "$dev" "$f" off 2>/dev/null; done
  say "$dev offloads: $(ip netns exec "$ns" ethtool -k "$dev" | awk '/^(tcp-segmentation-offload|generic-segmentation-offload|generic-receive-offload|scatter-gather|tx-checksumming|rx-checksumming):/ {printf "%s %s ", $1, $2}')"
done

# measure SERVER... -- CLIENT...: the server in b on CPU 0, the client in a on the last CPU;
# prints the client's output, and LOCAL/PKTS lines are the caller's.
measure() {
  local srv=() cli=() side=server a
  for a in "$@"; do
    if [ "$a" = -- ]; then side=client; continue; fi
    if [ "$side" = server ]; then srv+=("$a"); else cli+=("$a"); fi
  done
  timeout 300 ip netns exec b taskset -c 0 "${srv[@]}" > /dev/null 2>&1 &
  sleep 0.5
  retry 30 1 timeout 300 ip netns exec a taskset -c "$last" "${cli[@]}" 2>&1
  wait
}

# sent: the frames both ends of the pair have sent so far (data, ACKs and all, any stack).
sent() { echo $(( $(txp a va) + $(txp b vb) )); }

for _ in $(seq "$REPS"); do
  for stack in tcp $STACKS; do
    case "$stack" in
      tcp) ;;
      rrxe|siw)
        if [ "$stack" = rrxe ]; then load_rrxe; else load_siw; fi
        ip netns exec a rdma link add "${stack}a" type "$stack" netdev va &&
          ip netns exec b rdma link add "${stack}b" type "$stack" netdev vb || { say "$stack: link add failed"; continue; } ;;
      *) say "veth: no stack '$stack' (tcp, rrxe and siw run here)"; continue ;;
    esac
    if [ "$stack" = siw ]; then CA=(-R) CB=(-R)
    elif [ "$stack" = rrxe ]; then
      CA=(-x "$(retry 20 0.3 gid_index_v4 rrxea $A)") CB=(-x "$(retry 20 0.3 gid_index_v4 rrxeb $B)")
    fi
    tests=(ib_write_bw ib_send_bw ib_read_bw); [ "$stack" = tcp ] && tests=(iperf3)
    for t in "${tests[@]}"; do
      port=$((port + 1))
      read -r -a c0 <<< "$(pcpu)"
      p0=$(sent)
      if [ "$t" = iperf3 ]; then
        out=$(measure iperf3 -s -1 -p $port -- iperf3 -c $B -p $port -n "${VOLUME}M" -f m)
        # The receiver's Mbits/sec -> MB/s (2^20 bytes), as perftest reports.
        v=$(echo "$out" | awk '/receiver/ {for (i = 1; i <= NF; i++) if ($i == "Mbits/sec") print $(i - 1) * 1e6 / 8 / 1048576}' | tail -n 1)
        moved=$(( VOLUME * 1048576 ))
      else
        n=$(( VOLUME * 1048576 / 65536 ))
        c=(-s 65536 -n "$n" -F -Q 1 -N -p "$port")
        # Both processes sleep on their CQs through the shim, as in the two-VM rows.
        pre=(env ${SLEEP_CQ:+"LD_PRELOAD=$SLEEP_CQ"})
        out=$(measure "${pre[@]}" "$t" -d "${stack}b" "${CB[@]}" "${c[@]}" -- \
          "${pre[@]}" "$t" -d "${stack}a" "${CA[@]}" "${c[@]}" $B)
        v=$(echo "$out" | awk '$1 == 65536 && NF >= 4 && $4 + 0 > 0 {print $4}' | tail -n 1)
        moved=$(( n * 65536 ))
      fi
      read -r -a c1 <<< "$(pcpu)"
      p1=$(sent)
      if [ -z "$v" ]; then say "FAILED: $t on $stack"; echo "$out" | tail -n 5 | sed 's/^/#   /'; continue; fi
      ticks=""
      for i in "${!c1[@]}"; do ticks+=" $(( c1[i] - c0[i] ))"; done
      echo "LOCAL $stack $t $v $moved$ticks"
      echo "PKTS $stack $t $(( p1 - p0 ))"
    done
    case "$stack" in
      rrxe|siw)
        rdma link delete "${stack}a"; rdma link delete "${stack}b"
        if [ "$stack" = rrxe ]; then rmmod rrxe; else rmmod siw; fi ;;
    esac
  done
done
exit 0
