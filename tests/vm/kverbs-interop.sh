#!/bin/bash
# vms: 2
# timeout: 300
# Wire interop: the kernel-verbs test between rrxe (VM 0, server) and the stock rdma_rxe
# (VM 1, client) — RC SEND/WRITE/READ/atomics/FRMR and UD, data verified both ways. rdma_rxe
# stands in for a hardware RoCEv2 NIC.
. "$RRXE_ROOT/qemu/guest-lib.sh"
if [ "$RRXE_VM" = 0 ]; then
  KV_DEV=rrxe0
  kv_dev_setup() { load_rrxe && rdma link add rrxe0 type rrxe netdev eth0; }
else
  KV_DEV=rxe0
  kv_dev_setup() { load_rxe && rdma link add rxe0 type rxe netdev eth0; }
fi
. "$RRXE_ROOT/tests/vm/lib/kverbs-common.sh"
