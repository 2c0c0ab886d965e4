#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of scripts/bench.sh --local (one VM): each stack's ib_write_bw, ib_send_bw and
# ib_read_bw at 64 KiB between two processes of this VM, over the stack's own loopback (the
# packets never reach the link): the server pinned to the first CPU, the client to the last
# (the same CPU in a one-CPU VM). All the work is guest CPU, so this is where a stack that
# spreads its work over CPUs shows it on a 2-core host. As the two-VM headline rows, with
# completion events: -Q 1 -N, and both processes sleep on their CQs through the shim
# SLEEP_CQ (qemu/perftest-sleep-cq.c, see qemu/bench-guest.sh); polling, two processes on
# one CPU would take turns spinning. Prints, per run,
#   LOCAL <stack> <test> <MB/s> <bytes moved> <kernel ticks on cpu0> [<cpu1> ...]
# (system + irq + softirq time of each CPU in USER_HZ ticks over the client's run) and
#   NCPU vm0 <cpus>
# Arguments: REPS VOLUME(MiB per run) STACKS SLEEP_CQ
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/qemu/bench-lib.sh"
REPS=${1:-3} VOLUME=${2:-256} STACKS=${3:-"rrxe rxe siw"} SLEEP_CQ=${4:-}
pre=(env ${SLEEP_CQ:+"LD_PRELOAD=$SLEEP_CQ"})
pcpu() { awk '$1 ~ /^cpu[0-9]/ {printf "%d ", $4 + $7 + $8}' /proc/stat; }
last=$(( $(nproc) - 1 ))
echo "NCPU vm0 $(nproc)"
n=$(( VOLUME * 1048576 / 65536 ))
port=19000
for stack in $STACKS; do
  setup_stack "$stack" || continue
  say "--- $stack ($DEV), server on CPU 0, client on CPU $last"
  for r in $(seq "$REPS"); do
    for t in ib_write_bw ib_send_bw ib_read_bw; do
      port=$((port + 1))
      c=(-d "$DEV" "${CONN[@]}" -p "$port" -s 65536 -n "$n" -F -Q 1 -N)
      timeout 300 taskset -c 0 "${pre[@]}" "$t" "${c[@]}" > /dev/null 2>&1 &
      sleep 0.5
      # The ticks cover the client's whole run (its setup too: about a second).
      read -r -a c0 <<< "$(pcpu)"
      out=$(retry 30 1 timeout 300 taskset -c "$last" "${pre[@]}" "$t" "${c[@]}" "$RRXE_MY_IP" 2>&1)
      read -r -a c1 <<< "$(pcpu)"
      wait
      v=$(echo "$out" | awk '$1 == 65536 && NF >= 4 && $4 + 0 > 0 {print $4}' | tail -n 1)
      if [ -z "$v" ]; then say "FAILED: $t on $stack"; echo "$out" | tail -n 5 | sed 's/^/#   /'; continue; fi
      ticks=""
      for i in "${!c1[@]}"; do ticks+=" $(( c1[i] - c0[i] ))"; done
      echo "LOCAL $stack $t $v $(( n * 65536 ))$ticks"
    done
  done
  teardown_stack "$stack"
done
exit 0
