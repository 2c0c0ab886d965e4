#!/bin/bash
# vms: 1
# timeout: 400
# On-demand-paging MRs through librrxe (tests/user/odp.c, loopback RC QPs on one host): the
# advertised ODP caps, nothing pinned, WRITE/READ/SEND/atomics into and out of never-touched
# pages (remote and local side), munmap+mmap and a punched hole under a live MR, unmapped
# pages as error completions, ibv_advise_mr, implicit ODP over a sparse 1 GiB mapping.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
out=$(timeout 300 "$RRXE_ROOT/tests/user/odp" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap odp "$rc" "$out"
user_teardown
tap_done
