#!/bin/bash
# vms: 2
# timeout: 300
# Wire interop with the roles swapped: the stock rdma_rxe on VM 0 (server), rrxe on VM 1
# (client). See kverbs-interop.sh.
. "$RRXE_ROOT/qemu/guest-lib.sh"
if [ "$RRXE_VM" = 1 ]; then
  KV_DEV=rrxe0
  kv_dev_setup() { load_rrxe && rdma link add rrxe0 type rrxe netdev eth0; }
else
  KV_DEV=rxe0
  kv_dev_setup() { load_rxe && rdma link add rxe0 type rxe netdev eth0; }
fi
. "$RRXE_ROOT/tests/vm/lib/kverbs-common.sh"
