#!/bin/bash
# vms: 1
# timeout: 300
# A hostile process writes garbage into the queues rrxe shares with it (send, receive and
# completion rings, their indices) and rings the doorbell itself: error completions and QPs
# or CQs in error, no kernel splat (the harness fails on any), and the device still works.
. "$RRXE_ROOT/qemu/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
out=$(timeout 200 "$RRXE_ROOT/tests/user/ring_garbage" -d "$DEV" -g "$GID" 2>&1); rc=$?
while IFS= read -r l; do
  case "$l" in
    "ok "*) ok "ring_garbage: ${l#ok * - }" ;;
    "not ok "*) not_ok "ring_garbage: ${l#not ok * - }" ;;
    "Bail out!"*) not_ok "ring_garbage: $l" ;;
    "1.."*) ;;
    *) echo "# $l" ;;
  esac
done <<< "$out"
if [ "$rc" = 0 ]; then ok "ring_garbage exit status 0"; else not_ok "ring_garbage exit status $rc"; fi
user_teardown
tap_done
