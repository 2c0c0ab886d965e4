#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 600
# tests/selftest.sh the way a user runs it on machines of their own: rrxe already loaded and
# a device (named roce7 here: any name, found by its hca_type) already on the netdev, the
# runner told only its role and the peer's address. It must find the device, pass
# user-pingpong (paired) and user-verbs-misc (server side only; skipped on the client),
# print kselftest TAP, and leave the device in place.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"

check "insmod rrxe.ko (as the machine's owner would)" load_rrxe
check "rdma link add roce7 type rrxe netdev eth0" rdma link add roce7 type rrxe netdev eth0
role=server; [ "$RRXE_VM" = 1 ] && role=client
# The runner gets none of the harness's environment beyond the module search path.
sout=$(env -i PATH="$PATH" HOME="$HOME" TMPDIR="$TMPDIR" RRXE_MODROOT="$RRXE_MODROOT" \
  bash "$RRXE_ROOT/tests/selftest.sh" --role "$role" --peer "$RRXE_PEER_IP" \
  user-pingpong user-verbs-misc 2>&1); rc=$?
echo "$sout" | sed 's/^/#   /'
has() { grep -Eq "$1" <<<"$sout"; }
if [ "$rc" = 0 ]; then ok "tests/selftest.sh --role $role exits 0"; else not_ok "tests/selftest.sh --role $role exits 0 (got $rc)"; fi
check "kselftest TAP header" has '^TAP version 13$'
check "plan 1..2" has '^1\.\.2$'
check "found the machine's roce7 on eth0" has "using the machine's roce7"
check "user-pingpong passed" has '^ok 1 selftest: user-pingpong$'
if [ "$RRXE_VM" = 0 ]; then
  check "user-verbs-misc passed on the server" has '^ok 2 selftest: user-verbs-misc$'
else
  check "user-verbs-misc skipped on the client" has '^ok 2 selftest: user-verbs-misc # SKIP'
fi
check "roce7 is still there afterwards" test -e /sys/class/infiniband/roce7
check "rdma link delete roce7" rdma link delete roce7
check "rmmod rrxe" rmmod rrxe
tap_done
