# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Wire interop of the kernel-verbs test between rrxe and the stock rdma_rxe (which stands in
# for a hardware RoCEv2 NIC). Source it after guest-lib.sh with one argument, the VM that runs
# rrxe (0: rrxe is the server, 1: rrxe is the client); the other VM runs rdma_rxe. VM 0 is
# always the server (kverbs-common.sh).
if [ "$RRXE_VM" = "$1" ]; then
  KV_DEV=rrxe0
  kv_dev_setup() { load_rrxe && rdma link add rrxe0 type rrxe netdev eth0; }
else
  KV_DEV=rxe0
  kv_dev_setup() { load_rxe && rdma link add rxe0 type rxe netdev eth0; }
fi
. "$RRXE_ROOT/tests/vm/lib/kverbs-common.sh"
