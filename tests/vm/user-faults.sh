#!/bin/bash
# vms: 2
# timeout: 900
# User-level RC over rrxe on a faulty link (netem on both VMs' egress): first 1 % loss, then
# 5 % loss with reordering and duplication. Every transfer must complete with verified data
# (ping-pong -c, rping -V, perftest's own completion checks), and the retransmission
# counter must rise.
. "$RRXE_ROOT/qemu/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

counter() { rdma statistic show link rrxe0/1 | tr ' ' '\n' | awk -v n="$1" 'f {print; exit} $0 == n {f=1}'; }

user_setup
check "load sch_netem" kmod sch_netem
p=18900
for fault in "loss 1%" "loss 5% reorder 10% 50% duplicate 2%"; do
  before=$(counter retransmits)
  # shellcheck disable=SC2086
  check "netem delay 1ms $fault on eth0" tc qdisc replace dev eth0 root netem delay 1ms $fault
  pair "[$fault] ibv_rc_pingpong 4 KiB x100, checked" 300 -- \
    ibv_rc_pingpong -d @DEV -g @GID -p $((p + 1)) -n 100 -s 4096 -c -- \
    ibv_rc_pingpong -d @DEV -g @GID -p $((p + 1)) -n 100 -s 4096 -c @PEER
  pair "[$fault] rping -V -C 50" 300 -- \
    rping -s -a "$RRXE_MY_IP" -p $((p + 2)) -V -C 50 -- \
    rping -c -a @PEER -p $((p + 2)) -V -C 50
  pair "[$fault] ib_write_bw 64 KiB x100" 300 -- \
    ib_write_bw -d @DEV -x @GID -p $((p + 3)) -s 65536 -n 100 -F -- \
    ib_write_bw -d @DEV -x @GID -p $((p + 3)) -s 65536 -n 100 -F @PEER
  pair "[$fault] ib_read_bw 64 KiB x100" 300 -- \
    ib_read_bw -d @DEV -x @GID -p $((p + 4)) -s 65536 -n 100 -F -- \
    ib_read_bw -d @DEV -x @GID -p $((p + 4)) -s 65536 -n 100 -F @PEER
  pair "[$fault] ib_send_bw 64 KiB x100" 300 -- \
    ib_send_bw -d @DEV -x @GID -p $((p + 5)) -s 65536 -n 100 -F -- \
    ib_send_bw -d @DEV -x @GID -p $((p + 5)) -s 65536 -n 100 -F @PEER
  after=$(counter retransmits)
  if [ "${after:-0}" -gt "${before:-0}" ]; then ok "[$fault] retransmissions counted ($before -> $after)"
  else not_ok "[$fault] retransmissions counted (${before:-?} -> ${after:-?})"; fi
  p=$((p + 10))
done
check "remove netem" tc qdisc del dev eth0 root
user_teardown
tap_done
