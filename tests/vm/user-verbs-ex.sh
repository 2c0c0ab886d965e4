#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 300
# The extended verbs through librrxe: tests/user/verbs_ex (ibv_create_cq_ex polling,
# ibv_create_qp_ex with the ibv_wr_* API, refused operations, four threads posting on one
# QP, each step checked on both sides), and ibv_rc_pingpong -N (the new post-send API).
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
bin=$RRXE_USER_BIN/verbs_ex
if [ "$RRXE_VM" = 0 ]; then
  out=$(timeout 200 "$bin" -d "$DEV" -g "$GID" -p 18701 2>&1); rc=$?
else
  out=$(retry 20 1 timeout 200 "$bin" -d "$DEV" -g "$GID" -p 18701 "$RRXE_PEER_IP" 2>&1); rc=$?
fi
relay_tap verbs_ex "$rc" "$out"
pair "ibv_rc_pingpong -N (ibv_wr_* post API) 4 KiB x100, checked" 120 -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18702 -n 100 -s 4096 -c -N -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18702 -n 100 -s 4096 -c -N @PEER
user_teardown
tap_done
