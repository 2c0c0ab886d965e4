#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 300
# Wire interop with the roles swapped: the stock rdma_rxe on VM 0 (server), rrxe on VM 1
# (client). See kverbs-interop.sh.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/kverbs-interop.sh" 1
