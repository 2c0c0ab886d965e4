#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 600
# User-level wire interop: rrxe (librrxe) on VM 0 as the server, the stock rdma_rxe (librxe)
# on VM 1 as the client: rping -V, RC and UD ping-pong with data checks, perftest
# send/write/read/atomic bandwidth.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
INTEROP_RRXE_VM=0
. "$RRXE_ROOT/tests/vm/lib/user-interop.sh"
