#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 900
# nvmeof.sh with the target on rrxe and the host on the stock rdma_rxe (up to the reconnect
# with verification).
NVMEOF_HOST=rxe NVMEOF_INTEROP=1 . "$RRXE_ROOT/tests/vm/nvmeof.sh"
