#!/bin/bash
# vms: 1
# timeout: 300
# Local loopback: both ends of every connection on one host over rrxe0 (the packets go from
# rrxe's transmit path straight to its receive path): RC and UD ping-pong with data checks,
# rping -V, the extended-verbs test, ib_write_bw and ib_read_bw.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
ip=$RRXE_MY_IP
both "loopback ibv_rc_pingpong 4 KiB x200, checked" -- \
  ibv_rc_pingpong -d "$DEV" -g "$GID" -p 18601 -n 200 -s 4096 -c -- \
  ibv_rc_pingpong -d "$DEV" -g "$GID" -p 18601 -n 200 -s 4096 -c "$ip"
both "loopback ibv_ud_pingpong 512 B x100, checked" -- \
  ibv_ud_pingpong -d "$DEV" -g "$GID" -p 18602 -n 100 -s 512 -c -- \
  ibv_ud_pingpong -d "$DEV" -g "$GID" -p 18602 -n 100 -s 512 -c "$ip"
both "loopback rping -V -C 50" -- \
  rping -s -a "$ip" -p 18603 -V -C 50 -- \
  rping -c -a "$ip" -p 18603 -V -C 50
both "loopback verbs_ex (extended verbs, threads)" -- \
  "$RRXE_ROOT/tests/user/verbs_ex" -d "$DEV" -g "$GID" -p 18604 -- \
  "$RRXE_ROOT/tests/user/verbs_ex" -d "$DEV" -g "$GID" -p 18604 "$ip"
both "loopback ib_write_bw 64 KiB x200" -- \
  ib_write_bw -d "$DEV" -x "$GID" -p 18605 -s 65536 -n 200 -F -- \
  ib_write_bw -d "$DEV" -x "$GID" -p 18605 -s 65536 -n 200 -F "$ip"
both "loopback ib_read_bw 64 KiB x200" -- \
  ib_read_bw -d "$DEV" -x "$GID" -p 18606 -s 65536 -n 200 -F -- \
  ib_read_bw -d "$DEV" -x "$GID" -p 18606 -s 65536 -n 200 -F "$ip"
user_teardown
tap_done
