#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 300
# A hostile process writes garbage into the queues rrxe shares with it (send, receive and
# completion rings, their indices) and rings the doorbell itself: error completions and QPs
# or CQs in error, no kernel splat (the harness fails on any), and the device still works.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
out=$(timeout 200 "$RRXE_USER_BIN/ring_garbage" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap ring_garbage "$rc" "$out"
user_teardown
tap_done
