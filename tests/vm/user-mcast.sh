#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 600
# append: kmemleak=on
# UD multicast. rdma_cm's rdma_join_multicast (librdmacm attaching the QP): mckey with
# receivers on both VMs and the sender on VM 0, over IPv4 (the RDMA CM refuses an IPv6 group
# on a RoCE v2 port with ENOTSUPP, cma_iboe_join_multicast, for rdma_rxe as for rrxe).
# tests/user/mcast on each VM, over IPv4 and IPv6 (raw verbs: ibv_attach_mcast, an AH to the
# group): datagrams to the group reach every attached QP intact, a detached QP gets none, an
# attached QP cannot be destroyed (EBUSY), and one left attached at exit is detached by the
# kernel (the netdev leaves the group). Interop with rdma_rxe (VM 1 switches to it): rrxe
# sends to rxe and rxe to rrxe (IPv4). The limits ibv_devinfo shows, the counters, and
# kmemleak on VM 0 (rrxe) after all of it.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"
. "$RRXE_ROOT/tests/vm/lib/kmemleak.sh"
. "$RRXE_ROOT/tests/vm/lib/mcast-common.sh"

[ "$RRXE_VM" = 0 ] && { kml_start || { tap_done; exit; }; }
user_setup rrxe
ME6=fd77::$((RRXE_VM + 1))

# The limits (rdma_rxe's values).
info=$(ibv_devinfo -v -d "$DEV" 2>&1)
for l in "max_mcast_grp:8192" "max_mcast_qp_attach:56" "max_total_mcast_qp_attach:458752"; do
  k=${l%%:*} v=${l#*:}
  got=$(awk -v k="$k:" '$1 == k {print $2}' <<<"$info")
  if [ "$got" = "$v" ]; then ok "ibv_devinfo: $k $v"; else not_ok "ibv_devinfo: $k is '$got', not $v"; fi
done

# rrxe on both VMs.
mckey_round "mckey IPv4 239.1.2.3" 239.1.2.3 "$RRXE_MY_IP" 19710 0 both
n=$(counter rcvd_mcast_pkts)
if [ "${n:-0}" -ge "$MCAST_MSGS" ]; then ok "rcvd_mcast_pkts $n >= $MCAST_MSGS"
else not_ok "rcvd_mcast_pkts ${n:-?} < $MCAST_MSGS"; fi
check "the netdev left the group" retry 20 0.2 no_groups 239.1.2.3

# Attach, deliver, detach, EBUSY, exit while attached (local, one VM at a time is enough,
# both do it: the groups differ per VM).
GID6=$(retry 20 0.3 gid_index_v6 "$DEV" "$ME6") || GID6=
mcast_local() {
  local g=$1 gi=$2 out rc
  out=$(timeout 60 "$RRXE_USER_BIN/mcast" -d "$DEV" -g "$gi" -m "$g" -k 2>&1); rc=$?
  relay_tap "mcast $g" "$rc" "$out"
  check "mcast $g: the netdev left the group after exit" retry 20 0.2 no_groups "$g"
}
mcast_local "239.2.0.$((RRXE_VM + 1))" "$GID"
if [ -n "$GID6" ]; then mcast_local "ff0e::db8:2:$((RRXE_VM + 1))" "$GID6"
else not_ok "$DEV has a RoCE v2 GID for $ME6"; fi

# Interop: VM 1 moves to rdma_rxe (its own UDP socket on 4791: rrxe unloaded first).
if [ "$RRXE_VM" = 1 ]; then
  user_teardown
  user_setup rxe
fi
mckey_round "rrxe -> rxe, mckey IPv4 239.1.3.1" 239.1.3.1 "$RRXE_MY_IP" 19730 0 other
mckey_round "rxe -> rrxe, mckey IPv4 239.1.3.2" 239.1.3.2 "$RRXE_MY_IP" 19740 1 other

if [ "$RRXE_VM" = 0 ]; then
  check "rdma link delete $DEV" rdma link delete "$DEV"
  kml_check "after multicast traffic, detaches and link delete (rrxe loaded)"
  check "rmmod rrxe" rmmod rrxe
  kml_check "after rmmod rrxe"
else
  show_counters
  check "rdma link delete $DEV" rdma link delete "$DEV"
fi
tap_done
