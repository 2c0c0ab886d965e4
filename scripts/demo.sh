#!/usr/bin/env bash
# The demo: set up (idempotent), build rrxe.ko and the provider, boot two VMs and run rping
# and ib_write_bw between them over rrxe (then over rdma_rxe for reference).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
make -s modules
make -s provider
make -s -C tests/kverbs
qemu/run-vms --vms 2 --timeout 600 --name demo tests/demo.sh || true
for i in 0 1; do sed -n '/^RRXE-BOOTED/,$p' qemu/out/demo-vm$i.out | grep -v '^RRXE-'; done
