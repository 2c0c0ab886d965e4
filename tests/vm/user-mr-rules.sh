#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 400
# Registration rules and object limits through librrxe (tests/user/mr_rules.c, loopback RC
# QPs on one host): ibv_rereg_mr changing access, translation and PD (with the keys it
# returns), windows granting remote write on a LOCAL_WRITE|MW_BIND region, rereg refused
# while a window is bound, random key tags, no key or key slot reused right after it was
# freed (100 dereg+reg, dealloc+alloc MW), QPNs of 16 creates not consecutive, a failed
# modify_qp keeping nothing, the path MTU clamped to the port, max_pd/max_srq/max_mw enforced. Then QP numbers start at a random
# point: the first QPN of three fresh loads of the module are not all the same.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
out=$(timeout 300 "$RRXE_USER_BIN/mr_rules" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap mr_rules "$rc" "$out"
qpns=$(sed -n 's/^# first-qpn //p' <<<"$out")
user_teardown
for i in 1 2; do
  user_setup
  qpns+=" $(MR_RULES_QPN_ONLY=1 "$RRXE_USER_BIN/mr_rules" -d "$DEV" -g "$GID" | sed -n 's/^# first-qpn //p')"
  user_teardown
done
# Three loads all starting at one number would be a counter (chance 4080^-2 otherwise).
set -- $qpns
if [ $# = 3 ] && ! { [ "$1" = "$2" ] && [ "$2" = "$3" ]; }; then
  ok "the first QPN after each of 3 module loads differs: $qpns"
else
  not_ok "the first QPN after each of 3 module loads differs: $qpns"
fi
tap_done
