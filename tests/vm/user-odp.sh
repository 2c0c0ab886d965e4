#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 500
# On-demand-paging MRs through librrxe (loopback QPs on one host):
# - tests/user/odp: the advertised ODP caps, nothing pinned, WRITE/READ/SEND/atomics into
#   and out of never-touched pages (remote and local side), munmap+mmap and a punched hole
#   under a live MR, unmapped pages as error completions, ibv_advise_mr, implicit ODP over
#   a sparse 1 GiB mapping;
# - tests/user/odp_srq: receives through an SRQ into untouched ODP pages (RC SRQ_RECV);
# - tests/user/odp_ud: UD sends from untouched ODP pages (UD SEND).
# Then the device's ODP counters show faults were taken.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
for prog in odp odp_srq odp_ud; do
  out=$(timeout 300 "$RRXE_USER_BIN/$prog" -d "$DEV" -g "$GID" 2>&1); rc=$?
  relay_tap "$prog" "$rc" "$out"
done
faults=$(rdma statistic show link "$DEV/1" | grep -o 'odp_page_faults [0-9]*' | awk '{print $2}')
if [ "${faults:-0}" -gt 0 ]; then ok "odp_page_faults counted: $faults"
else not_ok "odp_page_faults counted: ${faults:-none}"; fi
user_teardown
tap_done
