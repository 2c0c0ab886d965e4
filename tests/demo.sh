#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The demo (not part of the test suite; run by scripts/demo.sh): rrxe0 in two VMs, then
# rping and ib_write_bw between them over rrxe, and the same over the stock rdma_rxe.
#   run by scripts/demo.sh in each VM (qemu/run-vms); tests/demo.sh --help prints this.
case "${1:-}" in -h|--help) sed -n '3,5s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
server=$([ "$RRXE_VM" = 0 ] && echo 1 || echo 0)
say() { echo "[vm$RRXE_VM] $*"; }

run_pair() { # DEV: rping + ib_write_bw over DEV
  local dev=$1 gid
  gid=$(retry 20 0.3 gid_index_v4 "$dev" "$RRXE_MY_IP") || { say "$dev: no RoCE v2 GID"; return 1; }
  say "$dev: RoCE v2 GID index $gid"
  if [ "$server" = 1 ]; then
    timeout 60 rping -s -a "$RRXE_MY_IP" -C 10 -V -v | tail -n 2
    timeout 90 ib_write_bw -d "$dev" -x "$gid" -s 65536 -n 500 --report_gbits -F
  else
    retry 20 1 timeout 30 rping -c -a "$RRXE_PEER_IP" -C 10 -V -v | tail -n 2
    retry 20 1 timeout 60 ib_write_bw -d "$dev" -x "$gid" -s 65536 -n 500 --report_gbits -F "$RRXE_PEER_IP"
  fi
}

rc=0
failed() { say "FAILED: $*"; rc=1; }
load_rrxe && rdma link add rrxe0 type rrxe netdev eth0 || failed "loading rrxe and adding rrxe0"
say "rrxe0 on eth0:"; ibv_devinfo -d rrxe0 | sed "s/^/[vm$RRXE_VM]   /"
say "--- rping + ib_write_bw over rrxe0"
run_pair rrxe0 || failed "rrxe0: rping/ib_write_bw"
say "--- the kernel-verbs test over rrxe0 (kernel rdma_cm: RC SEND/WRITE/READ/atomics/FRMR, UD)"
if [ "$RRXE_VM" = 0 ]; then role="role=server"; else role="role=client"; sleep 2; fi
if insmod "$RRXE_ROOT/tests/kverbs/rrxe_ktest.ko" $role addr=10.77.0.1 iters=1; then
  dmesg | grep -E 'rrxe_ktest: (ok|not ok|# done)' | sed "s/^.*rrxe_ktest: /[vm$RRXE_VM]   /" | tail -n 40
  dmesg | grep -q 'rrxe_ktest: not ok' && failed "the kernel-verbs test"
  rmmod rrxe_ktest
else
  failed "insmod rrxe_ktest.ko"
fi
rdma link delete rrxe0; rmmod rrxe
say "--- rping + ib_write_bw over the stock rdma_rxe, for reference"
{ load_rxe && rdma link add rxe0 type rxe netdev eth0 && run_pair rxe0; } || failed "rxe0: rping/ib_write_bw"
rdma link delete rxe0
exit "$rc"
