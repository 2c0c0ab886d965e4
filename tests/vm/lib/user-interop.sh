# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# User-level wire interop (source after guest-lib.sh with INTEROP_RRXE_VM set): the VM
# numbered INTEROP_RRXE_VM runs rrxe through librrxe, the other the stock rdma_rxe through
# rdma-core's librxe; VM 0 is the server of every pair.
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

if [ "$RRXE_VM" = "$INTEROP_RRXE_VM" ]; then user_setup rrxe; else user_setup rxe; fi
p=18800
pair "rping -V -C 50 (rrxe on vm$INTEROP_RRXE_VM)" 120 -- \
  rping -s -a "$RRXE_MY_IP" -p $((p + 1)) -V -C 50 -- \
  rping -c -a @PEER -p $((p + 1)) -V -C 50
pair "ibv_rc_pingpong 4 KiB x50, checked" 120 -- \
  ibv_rc_pingpong -d @DEV -g @GID -p $((p + 2)) -n 50 -s 4096 -c -- \
  ibv_rc_pingpong -d @DEV -g @GID -p $((p + 2)) -n 50 -s 4096 -c @PEER
pair "ibv_ud_pingpong 512 B x50, checked" 120 -- \
  ibv_ud_pingpong -d @DEV -g @GID -p $((p + 3)) -n 50 -s 512 -c -- \
  ibv_ud_pingpong -d @DEV -g @GID -p $((p + 3)) -n 50 -s 512 -c @PEER
n=3
for t in "ib_send_bw -s 65536 -n 100" "ib_write_bw -s 65536 -n 100" "ib_read_bw -s 65536 -n 100" \
         "ib_atomic_bw -n 200"; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  pair "$t" 180 -- \
    $t -d @DEV -x @GID -p $((p + n)) -F -- \
    $t -d @DEV -x @GID -p $((p + n)) -F @PEER
done
user_teardown
tap_done
