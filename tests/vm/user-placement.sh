#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 600
# Placement errors (tests/user/placement.c, loopback RC QPs): a receive into a bad lkey or an
# MR without LOCAL_WRITE, a SEND gathered from a bad lkey, a READ or atomic result into a bad
# lkey, a SEND_WITH_INV of a key that cannot be invalidated and a WRITE whose MR is
# deregistered mid-message each end in the exact error statuses, with nothing written where it
# must not be. The same program then runs over the stock rdma_rxe, which must give the same
# statuses (except LOC_QP_OP_ERR where the IBTA says LOC_PROT_ERR, see placement.c).
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
out=$(timeout 250 "$RRXE_USER_BIN/placement" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap placement "$rc" "$out"
user_teardown

user_setup rxe
out=$(PLACEMENT_RXE=1 timeout 250 "$RRXE_USER_BIN/placement" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap placement-rxe "$rc" "$out"
user_teardown
tap_done
