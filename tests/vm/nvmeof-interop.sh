#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 900
# nvmeof.sh with the target on the stock rdma_rxe and the host on rrxe (up to the reconnect
# with verification; the link-delete phase is rrxe's own, in nvmeof).
NVMEOF_TARGET=rxe NVMEOF_INTEROP=1 . "$RRXE_ROOT/tests/vm/nvmeof.sh"
