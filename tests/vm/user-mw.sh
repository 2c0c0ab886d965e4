#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 300
# Memory windows through librrxe (tests/user/mw.c, loopback RC QPs on one host): type 1
# bound with ibv_bind_mw, type 2B with IBV_WR_BIND_MW, data through windows checked byte for
# byte, accesses outside a window, beyond its rights, with stale keys or from another QP
# refused, LOCAL_INV and SEND_WITH_INV revoking a window.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
out=$(timeout 200 "$RRXE_USER_BIN/mw" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap mw "$rc" "$out"
user_teardown
tap_done
