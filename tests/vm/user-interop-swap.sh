#!/bin/bash
# vms: 2
# timeout: 600
# User-level wire interop with the roles swapped: the stock rdma_rxe on VM 0 (server), rrxe
# on VM 1 (client). See user-interop.sh.
. "$RRXE_ROOT/qemu/guest-lib.sh"
INTEROP_RRXE_VM=1
. "$RRXE_ROOT/tests/vm/lib/user-interop.sh"
