#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 400
# A hostile process on the raw uverbs write() ABI (tests/user/uverbs_hostile.c, no
# libibverbs checks in between): work-request lists with kernel, unmapped and user SGE
# addresses on user QPs (inline and not) are refused with EINVAL and send nothing; every
# size field of CREATE_CQ/QP/SRQ, RESIZE_CQ, REG_MR and ALLOC_MW at 0, 1, 2^31, 2^32-1,
# max and max+1 gets its exact errno or succeeds; handles of nothing, of another type or
# of another context get the uverbs layer's ENOENT/EINVAL; REREG_MR with CHANGE_PD; POLL_CQ
# on a user CQ gets the core's EOPNOTSUPP (not in rrxe's command mask). Then
# the device still works: a loopback ibv_rc_pingpong with data checks. (The harness fails
# the run on any oops, WARNING, KASAN or lockdep report on the console.)
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
out=$(timeout 200 "$RRXE_USER_BIN/uverbs_hostile" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap uverbs_hostile "$rc" "$out"
both "afterwards: loopback ibv_rc_pingpong 4 KiB x200, checked" -- \
  ibv_rc_pingpong -d "$DEV" -g "$GID" -p 18611 -n 200 -s 4096 -c -- \
  ibv_rc_pingpong -d "$DEV" -g "$GID" -p 18611 -n 200 -s 4096 -c "$RRXE_MY_IP"
user_teardown
tap_done
