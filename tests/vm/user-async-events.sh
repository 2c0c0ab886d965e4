#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 200
# The QP's affiliated asynchronous events through ibv_get_async_event (tests/user/async_events,
# loopback QPs on one host), each once and for the right QP: COMM_EST (first SEND in RTR),
# LAST_WQE_REACHED (a QP on an SRQ entering ERR, once per entry), SQ_DRAINED (SQD with the
# notification asked for; a WRITE posted in SQD waits for RTS), QP_ACCESS_ERR and QP_REQ_ERR
# at the responder of a WRITE to an MR without remote write and of a READ its QP does not
# allow, QP_FATAL for a corrupt shared send queue.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
out=$(timeout 120 "$RRXE_USER_BIN/async_events" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap async_events "$rc" "$out"
user_teardown
tap_done
