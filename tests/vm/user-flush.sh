#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 200
# FLUSH end to end (tests/user/flush.c, loopback RC QPs): requests written into the SQ in
# the user ABI's RRXE_WR_FLUSH layout (rdma-core 44 has no ibv_wr_flush), completed for a
# range or a whole MR with flush access, refused with a remote access error past the MR,
# without flush access, for persistence, with a bad rkey; a malformed one fails locally.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
out=$(timeout 150 "$RRXE_USER_BIN/flush" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap flush "$rc" "$out"
user_teardown
tap_done
