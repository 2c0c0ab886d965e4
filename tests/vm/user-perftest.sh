#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 900
# perftest over rrxe between two VMs through librrxe: bandwidth and latency for send, RDMA
# write, RDMA read and atomics, connected over the perftest TCP side channel and over
# rdma_cm (-R). Each run is checked by both sides' exit status (perftest fails on any
# completion error or a connection it could not make). perftest's default send path is the
# extended QP API (ibv_wr_*, ibv_qp_ex); the bandwidth tests run again with
# --use_old_post_send, which posts with ibv_post_send, so both of the provider's send paths
# carry perftest's traffic.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
port=18700
for cm in "" "-R"; do
  for t in "ib_write_bw -s 65536 -n 200" "ib_send_bw -s 65536 -n 200" "ib_read_bw -s 65536 -n 200" \
           "ib_atomic_bw -n 500" "ib_write_lat -s 2 -n 500" "ib_send_lat -s 2 -n 500" \
           "ib_read_lat -s 2 -n 500"; do
    port=$((port + 1))
    # shellcheck disable=SC2086
    pair "$t $cm" 180 -- \
      $t $cm -d @DEV -x @GID -p $port -F -- \
      $t $cm -d @DEV -x @GID -p $port -F @PEER
  done
done
for t in "ib_write_bw -s 65536 -n 200" "ib_send_bw -s 65536 -n 200" "ib_read_bw -s 65536 -n 200" \
         "ib_atomic_bw -n 500"; do
  port=$((port + 1))
  # shellcheck disable=SC2086
  pair "$t --use_old_post_send" 180 -- \
    $t --use_old_post_send -d @DEV -x @GID -p $port -F -- \
    $t --use_old_post_send -d @DEV -x @GID -p $port -F @PEER
done
user_teardown
tap_done
