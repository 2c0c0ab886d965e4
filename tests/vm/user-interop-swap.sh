#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 600
# retries: 1
# (one retry: a CI run once saw the rrxe client stall after 60 of 100 64 KiB SENDs to
# rdma_rxe; not reproduced in 18 runs since. run-all prints a failed attempt and its
# failures, and a failed step prints both sides' counters.)
# User-level wire interop with the roles swapped: the stock rdma_rxe on VM 0 (server), rrxe
# on VM 1 (client). See user-interop.sh.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
INTEROP_RRXE_VM=1
. "$RRXE_ROOT/tests/vm/lib/user-interop.sh"
