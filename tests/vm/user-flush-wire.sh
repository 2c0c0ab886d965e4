#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 300
# FLUSH across the wire: rrxe in VM 1 sends FLUSH requests (tests/user/flush with a peer)
# to QPs and MRs of rrxe in VM 0, which checks each against its MR and answers. The same
# expectations as user-flush: range and whole-MR flushes complete; past the MR, without
# flush access, for persistence and with a bad rkey they are NAK'd.
# Not against rdma_rxe: Linux 6.12's rxe has no payload offset in its RC_FLUSH opcode entry,
# so its ICRC of a FLUSH covers the headers twice and it drops a FLUSH whose ICRC follows
# the IBTA (ours, checked independently in Python); rxe-to-rxe FLUSH only works because
# both ends make the same mistake.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

bin=$RRXE_USER_BIN/flush
user_setup
if [ "$RRXE_VM" = 0 ]; then
  out=$(timeout 200 "$bin" -d "$DEV" -g "$GID" -p 18951 -s 2>&1); rc=$?
else
  # The requester retries its TCP connection for 60 s while the responder starts.
  out=$(timeout 200 "$bin" -d "$DEV" -g "$GID" -p 18951 "$RRXE_PEER_IP" 2>&1); rc=$?
fi
relay_tap flush "$rc" "$out"
user_teardown
tap_done
