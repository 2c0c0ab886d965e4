#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 300
# What the syscall-free provider must decide itself (tests/user/qp_state, loopback QPs on
# one host): ibv_post_send / ibv_post_recv / ibv_wr_complete against the QP state with
# rdma_rxe's return values (EINVAL for sends below RTS and receives in RESET; accepted and
# flushed in ERROR, whether set by ibv_modify_qp or entered by the kernel), a legacy
# ibv_post_send waiting for an open ibv_wr_start batch, and ibv_resize_cq failures (refused
# sizes, a ring that cannot be mapped) leaving a working CQ with its completions.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
out=$(timeout 200 "$RRXE_USER_BIN/qp_state" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap qp_state "$rc" "$out"
user_teardown
tap_done
