# SPDX-License-Identifier: GPL-2.0
# Shared by the benchmark's guest scripts (bench-guest.sh, bench-local-guest.sh); sourced
# after tests/vm/lib/guest-lib.sh.
say() { echo "# vm$RRXE_VM: $*"; }

setup_stack() { # STACK -> DEV, CONN (how perftest connects)
  case "$1" in
    rrxe) load_rrxe && rdma link add rrxe0 type rrxe netdev eth0; DEV=rrxe0 ;;
    # The other build of an A/B run (scripts/bench.sh --ab REV): its rrxe.ko is $AB_KO.
    rrxe-b) [ -n "${AB_KO:-}" ] && RRXE_KO=$AB_KO load_rrxe && rdma link add rrxe0 type rrxe netdev eth0; DEV=rrxe0 ;;
    rxe) load_rxe && rdma link add rxe0 type rxe netdev eth0; DEV=rxe0 ;;
    siw) load_siw && rdma link add siw0 type siw netdev eth0; DEV=siw0 ;;
  esac || { say "$1: setup failed"; return 1; }
  if [ "$1" = siw ]; then
    CONN=(-R)   # iWARP: rdma_cm only
  else
    local gid
    gid=$(retry 20 0.3 gid_index_v4 "$DEV" "$RRXE_MY_IP") || { say "$DEV: no RoCE v2 GID"; return 1; }
    CONN=(-x "$gid")
  fi
}
teardown_stack() {
  rdma link delete "$DEV" 2>/dev/null
  case "$1" in rrxe|rrxe-b) rmmod rrxe ;; rxe) rmmod rdma_rxe ;; siw) rmmod siw ;; esac 2>/dev/null
}

