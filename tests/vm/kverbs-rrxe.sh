#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 300
# Kernel-verbs test (tests/kverbs/rrxe_ktest.ko: kernel rdma_cm + verbs, RC and UD, data
# verified) between the two VMs over rrxe.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
KV_DEV=rrxe0
kv_dev_setup() { load_rrxe && rdma link add rrxe0 type rrxe netdev eth0; }
. "$RRXE_ROOT/tests/vm/lib/kverbs-common.sh"
