#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 300
# The rest of the verbs an application uses, through librrxe (tests/user/verbs_misc.c,
# loopback QPs on one host): device and port limits reported and enforced (32 SGEs each
# way, data checked), the errno of wrong arguments on the data path, SRQ query/modify and
# its limit event (also with 200 receives posted at once, more than one pull's batch),
# SRQ resize (ibv_modify_srq IBV_SRQ_MAX_WR) up and down with receives posted,
# completion channels (next and solicited-only), UD with ibv_wr_set_ud_addr
# and ibv_wr_set_inline_data_list, and ibv_wr_local_inv of a type 2B window.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
out=$(timeout 200 "$RRXE_USER_BIN/verbs_misc" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap verbs_misc "$rc" "$out"
user_teardown
tap_done
