#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 300
# Wire interop: the kernel-verbs test between rrxe (VM 0, server) and the stock rdma_rxe
# (VM 1, client) — RC SEND/WRITE/READ/atomics/FRMR and UD, data verified both ways. rdma_rxe
# stands in for a hardware RoCEv2 NIC.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/kverbs-interop.sh" 0
