#!/bin/bash
# vms: 1
# timeout: 300
# Local loopback: both ends of every connection on one host over rrxe0 (the packets go from
# rrxe's transmit path straight to its receive path): RC and UD ping-pong with data checks,
# rping -V, the extended-verbs test, ib_write_bw and ib_read_bw.
. "$RRXE_ROOT/qemu/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
ip=$RRXE_MY_IP
# both DESC -- SERVER... -- CLIENT...: server in the background, the client when it listens.
both() {
  local desc=$1 side=s srv=() cli=() a; shift 2
  for a in "$@"; do
    if [ "$a" = -- ]; then side=c; continue; fi
    if [ $side = s ]; then srv+=("$a"); else cli+=("$a"); fi
  done
  local so sp co crc src
  so=$(mktemp)
  timeout 120 "${srv[@]}" > "$so" 2>&1 &
  sp=$!
  # rping runs through tests/vm/lib/rping-run (rping's own teardown race).
  [ "${cli[0]}" = rping ] && cli[0]=$RRXE_ROOT/tests/vm/lib/rping-run
  [ "${srv[0]}" = rping ] && srv[0]=$RRXE_ROOT/tests/vm/lib/rping-run
  co=$(retry 20 0.5 timeout 120 "${cli[@]}" 2>&1); crc=$?
  wait "$sp"; src=$?
  if [ "$crc" = 0 ] && [ "$src" = 0 ]; then ok "$desc"
  else
    not_ok "$desc (server exit $src, client exit $crc)"
    { echo "server:"; tail -n 15 "$so"; echo "client:"; echo "$co" | tail -n 15; } | sed 's/^/# /'
  fi
  rm -f "$so"
}
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
