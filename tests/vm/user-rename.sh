#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 600
# librrxe binds to rrxe devices by what they are (the hca_type sysfs attribute rrxe.ko sets),
# not by their name: a device added as roce0 (VM 0) and one renamed with `rdma dev set`
# (VM 1: rrxe0 -> tenant_a, then -> tenant_b) each open through librrxe
# (tests/user/provider_of), pass ibv_devinfo and an ibv_rc_pingpong with data checks, with
# the providers loaded in either order. Before that, on the same VMs, stock rdma_rxe
# devices (rxe0, and rrxe7, the name librrxe once matched) are served by librxe and never
# by librrxe, even with librxe removed from the driver list.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

which=$RRXE_USER_BIN/provider_of
# The provider libraries of this libibverbs' private ABI (ours as the build named it).
rrxe_so=$(basename "$(ls "${RRXE_PROVIDER_DIR:-$RRXE_ROOT/build/provider}"/librrxe-rdmav*.so 2>/dev/null | head -n 1)")
rxe_so=librxe-rdmav${rrxe_so#librrxe-rdmav}

# served_by DEV LIB: provider_of DEV prints LIB.
served_by() {
  local got
  got=$("$which" "$1" 2>&1)
  if [ "$got" = "$2" ]; then ok "$1 is served by $2"; else not_ok "$1 is served by $2 (got: $got)"; fi
}

# --- rdma_rxe and rrxe cannot be loaded together (both bind UDP port 4791): rxe first.
rxe_name=rxe0; [ "$RRXE_VM" = 1 ] && rxe_name=rrxe7
check "modprobe rdma_rxe" load_rxe
check "rdma link add $rxe_name type rxe netdev eth0" rdma link add "$rxe_name" type rxe netdev eth0
if [ -e /sys/class/infiniband/$rxe_name/hca_type ]; then
  not_ok "rdma_rxe's $rxe_name has no hca_type attribute"
else
  ok "rdma_rxe's $rxe_name has no hca_type attribute"
fi
served_by "$rxe_name" "$rxe_so"
# Without librxe in the driver list, nobody may claim it (librrxe least of all).
mkdir -p /run/rename-hidden
mv /etc/libibverbs.d/rxe.driver /run/rename-hidden/
out=$("$which" "$rxe_name" 2>&1); rc=$?
if [ "$rc" = 1 ] && grep -q "is not in the device list" <<<"$out"; then
  ok "without librxe, $rxe_name is claimed by no provider"
else
  not_ok "without librxe, $rxe_name is claimed by no provider (rc $rc: $out)"
fi
mv /run/rename-hidden/rxe.driver /etc/libibverbs.d/
check "rdma link delete $rxe_name" rdma link delete "$rxe_name"
check "rmmod rdma_rxe" rmmod rdma_rxe

# --- rrxe devices under other names.
check "insmod rrxe.ko" load_rrxe
if [ "$RRXE_VM" = 0 ]; then
  DEV=roce0
  check "rdma link add roce0 type rrxe netdev eth0" rdma link add roce0 type rrxe netdev eth0
else
  check "rdma link add rrxe0 type rrxe netdev eth0" rdma link add rrxe0 type rrxe netdev eth0
  DEV=tenant_a
  check "rdma dev set rrxe0 name tenant_a" rdma dev set rrxe0 name tenant_a
fi
hca=$(cat /sys/class/infiniband/$DEV/hca_type 2>&1)
[ "$hca" = rrxe ] && ok "$DEV: hca_type reads rrxe" || not_ok "$DEV: hca_type reads rrxe (got: $hca)"

# rename_check: this VM's DEV opens through librrxe, and ibv_devinfo shows it.
rename_check() {
  GID=$(retry 20 0.3 gid_index_v4 "$DEV" "$RRXE_MY_IP") || GID=
  if [ -n "$GID" ]; then ok "$DEV has a RoCE v2 GID for $RRXE_MY_IP (index $GID)"
  else not_ok "$DEV has a RoCE v2 GID for $RRXE_MY_IP"; GID=0; fi
  served_by "$DEV" "$rrxe_so"
  out=$(ibv_devinfo -d "$DEV" 2>&1); rc=$?
  if [ "$rc" = 0 ] && grep -q "hca_id:[[:space:]]*$DEV\$" <<<"$out" &&
     grep -q "state:[[:space:]]*PORT_ACTIVE" <<<"$out"; then
    ok "ibv_devinfo -d $DEV: the device, its port active"
  else
    not_ok "ibv_devinfo -d $DEV: the device, its port active (rc $rc)"
    echo "$out" | sed 's/^/# /'
  fi
}

rename_check
pair "ibv_rc_pingpong 4 KiB x100, checked (roce0 <-> tenant_a)" 120 -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18631 -n 100 -s 4096 -c -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18631 -n 100 -s 4096 -c @PEER

# libibverbs tries its providers in the order it loaded them, which follows the readdir
# order of /etc/libibverbs.d (a tmpfs here). Flip the order of rxe.driver and rrxe.driver by
# re-creating one of them: librrxe must win either way (librxe has no match for an rrxe
# device under these names, and librrxe's match takes no rdma_rxe device).
order() { ls -U /etc/libibverbs.d | grep -E '^r+xe\.driver$' | paste -sd' '; }
recreate() {
  cat "/etc/libibverbs.d/$1" > "/run/rename-$1" && rm "/etc/libibverbs.d/$1" &&
    mv "/run/rename-$1" "/etc/libibverbs.d/$1"
}
before=$(order)
recreate "${before##* }"
[ "$(order)" = "$before" ] && recreate "${before%% *}"
after=$(order)
if [ "$after" != "$before" ]; then ok "driver files re-ordered: '$before' -> '$after'"
else not_ok "driver files re-ordered: '$before' -> '$after'"; fi
if [ "$RRXE_VM" = 1 ]; then
  check "rdma dev set tenant_a name tenant_b" rdma dev set tenant_a name tenant_b
  DEV=tenant_b
fi
rename_check
pair "ibv_rc_pingpong 4 KiB x100, checked (roce0 <-> tenant_b, other driver order)" 120 -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18632 -n 100 -s 4096 -c -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18632 -n 100 -s 4096 -c @PEER

show_counters
check "rdma link delete $DEV" rdma link delete "$DEV"
check "rmmod rrxe" rmmod rrxe
tap_done
