#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The demo: set up (idempotent), build rrxe.ko and the provider, boot two VMs and run rping
# and ib_write_bw between them over rrxe (then over rdma_rxe for reference).
#   scripts/demo.sh [--help]
# Exits non-zero when the setup, a build or a step of the demo fails.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h|--help) sed -n '3,6s/^# \{0,1\}//p' "$0"; exit 0 ;;
  '') ;;
  *) echo "demo: unknown argument '$1'" >&2; sed -n '3,6s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
bash scripts/setup.sh
make -s modules
make -s provider
make -s -C tests/kverbs
rc=0
qemu/run-vms --vms 2 --timeout 600 --name demo tests/demo.sh || rc=$?
for i in 0 1; do sed -n '/^RRXE-BOOTED/,$p' qemu/out/demo-vm$i.out | grep -v '^RRXE-'; done
[ "$rc" = 0 ] || echo "demo: a step failed (see above and qemu/out/demo-vm*.console)" >&2
exit "$rc"
