#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 300
# Kernel-verbs test (tests/kverbs/rrxe_ktest.ko: kernel rdma_cm + verbs, RC and UD, data
# verified) between the two VMs over the stock rdma_rxe, the reference for rrxe.
# Needs the module built first: make -C tests/kverbs
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
KV_DEV=rxe0
kv_dev_setup() { load_rxe && rdma link add rxe0 type rxe netdev eth0; }
. "$RRXE_ROOT/tests/vm/lib/kverbs-common.sh"
