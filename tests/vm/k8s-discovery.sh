#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 900
# The Kubernetes RDMA tools' discovery replayed on rrxe0 (docs/containers.md): the sysfs and
# /dev reads of k8s-rdma-shared-dev-plugin and rdma-cni (PCI: rrxe0, a virtual device like
# rdma_rxe, is found by neither) and of rdmamap's netdev lookup (GID table: finds rrxe0 for
# eth0 and for a pod's macvlan) and char-device lookup; then a macvlan pod's side: the
# device, its GIDs, the index docs/containers.md says to use, and traffic between the pod and
# the other VM with it (ibv_rc_pingpong, rping).
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"
. "$RRXE_ROOT/tests/vm/lib/netns-common.sh"

# --- The host: what the discovery code of each tool finds -----------------------------------

user_setup

# rdma_rxe and siw hang their devices under /sys/devices/virtual since Linux 5.11 (commit
# a9d2e9ae953f "RDMA/siw,rxe: Make emulated devices virtual in the device tree"): an
# ib_device is not parented to its netdev's device. rrxe does the same: no `device` link.
virtual_dev() {
  [ "$(readlink -f /sys/class/infiniband/rrxe0)" = /sys/devices/virtual/infiniband/rrxe0 ] &&
    [ ! -e /sys/class/infiniband/rrxe0/device ]
}
check "rrxe0 is a virtual device (/sys/devices/virtual/infiniband/rrxe0, no device link), as rdma_rxe" virtual_dev
# What rdma_rxe offers instead, and rrxe too: the `parent` attribute names the netdev.
parent_is_eth0() { [ "$(cat /sys/class/infiniband/rrxe0/parent)" = eth0 ]; }
check "rrxe0/parent reads eth0, as rdma_rxe's parent attribute" parent_is_eth0

# k8s-rdma-shared-dev-plugin (Mellanox/k8s-rdma-shared-dev-plugin):
# resourceManager.DiscoverHostDevices (pkg/resources/resources_manager.go) lists PCI
# devices (ghw.PCI: /sys/bus/pci/devices) of class 0x02; NewPciNetDevice
# (pkg/resources/pci_net_device.go) names each one's netdevs (utils.GetNetNames:
# /sys/bus/pci/devices/ADDR/net/) and its RDMA devices (rdmaDeviceSpec.Get ->
# utils.GetRdmaDevices -> rdmamap.GetRdmaDevicesForPcidev: /sys/bus/pci/devices/ADDR/infiniband/),
# and drops the device when those lack rdma_cm, umad or uverbs (VerifyRdmaSpec). Its
# selectors (vendors, deviceIDs, drivers, ifNames, linkTypes) only filter what this walk kept.
# names DIR: the entries of DIR on one line (none if DIR is missing).
names() { local e l=(); for e in "$1"/*; do [ -e "$e" ] && l+=("${e##*/}"); done; echo "${l[*]}"; }
plugin_walk() {
  local d class
  for d in /sys/bus/pci/devices/*; do
    class=$(cat "$d/class" 2>/dev/null) || continue
    [ "${class:2:2}" = 02 ] || continue
    echo "${d##*/} net=[$(names "$d/net")] infiniband=[$(names "$d/infiniband")]"
  done
}
WALK=$(plugin_walk)
sed 's/^/#   shared-dev-plugin PCI walk: /' <<<"$WALK"
check "the shared device plugin's PCI walk sees the network PCI functions" test -n "$WALK"
walk_lacks_rrxe() { ! grep -q 'infiniband=\[[^]]*rrxe0' <<<"$WALK"; }
check "... and none of them lists rrxe0 under infiniband/: no selector can match it" walk_lacks_rrxe

# rdma-cni (k8snetworkplumbingwg/rdma-cni): CmdAdd (cmd/rdma/main.go) takes the network's
# deviceID, a PCI address (or an auxiliary device), and getRDMADevice asks
# rdmamap.GetRdmaDevicesForPcidev for it (pkg/rdma/rdma.go, rdma_ops.go): the same
# /sys/bus/pci/devices/ADDR/infiniband/ directory. eth0's PCI function (its device link
# leads to virtioN under it) has none, so rdma-cni fails with "no RDMA devices found".
eth0_pci() { readlink -f /sys/class/net/eth0/device | grep -oE '[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]' | tail -n 1; }
PCI=$(eth0_pci)
no_rdma_on_pci() { [ -n "$PCI" ] && [ -z "$(ls "/sys/bus/pci/devices/$PCI/infiniband" 2>/dev/null)" ]; }
check "rdma-cni's lookup for eth0's PCI function ($PCI) finds no RDMA device" no_rdma_on_pci

# rdmamap.GetRdmaDeviceForNetdevice (Mellanox/rdmamap rdma_map.go), which dranet
# (kubernetes-sigs/dranet pkg/inventory/sysfs.go GetRdmaDevice) and udev-manager's
# networkRdma resources (ydb-platform/udev-manager internal/plugin/net_rdma.go) use: for an
# Ethernet netdev (netlink EncapType "ether": ARPHRD_ETHER, /sys/class/net/IF/type 1),
# getRdmaDeviceForEth walks /sys/class/infiniband/* (GetRdmaDeviceList), their ports/*
# (GetPorts) and each port's gid_attrs/ndevs/* (getNetdeviceIds) and returns the first device
# with an entry that reads the netdev's name (isNetdevForRdma). An unused entry fails to read:
# grep -s skips it as rdmamap does. One grep per port (a read per entry is slow in a TCG guest).
rdmamap_for_netdev() {
  [ "$(cat "/sys/class/net/$1/type")" = 1 ] || return 1
  local dev port
  for dev in /sys/class/infiniband/*; do
    for port in "$dev"/ports/*; do
      if grep -qsx "$1" "$port"/gid_attrs/ndevs/*; then echo "${dev##*/}"; return 0; fi
    done
  done
  return 1
}
# is_rrxe0 CMD...: CMD prints rrxe0.
is_rrxe0() { [ "$("$@")" = rrxe0 ]; }
check "rdmamap's netdev lookup (gid_attrs/ndevs) finds rrxe0 for eth0" is_rrxe0 rdmamap_for_netdev eth0

# rdmamap.GetRdmaCharDevices (its device list for a pod): in each of /sys/class/infiniband_cm
# (ucm*), /sys/class/infiniband_mad (issm*, umad*) and /sys/class/infiniband_verbs (uverbs*),
# the entries whose `ibdev` reads the device's name, as /dev/infiniband/NAME
# (getCharDevices), then /dev/infiniband/rdma_cm if it exists (getRdmaUcmDevice).
rdmamap_char_devs() {
  local cls e
  for cls in infiniband_cm:ucm infiniband_mad:issm infiniband_mad:umad infiniband_verbs:uverbs; do
    for e in /sys/class/"${cls%%:*}"/*; do
      [[ ${e##*/} == *"${cls#*:}"* ]] || continue
      [ "$(cat "$e/ibdev" 2>/dev/null)" = "$1" ] && echo "/dev/infiniband/${e##*/}"
    done
  done
  [ -e /dev/infiniband/rdma_cm ] && echo /dev/infiniband/rdma_cm
}
# dev_matches PATH: PATH is the character device its sysfs entry describes (major:minor).
dev_matches() {
  local n=${1##*/} s
  [ -c "$1" ] || return 1
  [ "$n" = rdma_cm ] && s=/sys/class/misc/rdma_cm/dev || s=$(ls -d /sys/class/infiniband_*/"$n")/dev
  [ "$(stat -c '%t:%T' "$1" | { IFS=: read -r a b; printf '%d:%d' "0x$a" "0x$b"; })" = "$(cat "$s")" ]
}
CHARS=$(rdmamap_char_devs rrxe0)
echo "# rdmamap char devices of rrxe0: $(xargs <<<"$CHARS")"
UVERBS=$(grep -x '/dev/infiniband/uverbs[0-9]*' <<<"$CHARS")
uverbs_and_cm() { [ "$(grep -c . <<<"$UVERBS")" = 1 ] && grep -qx /dev/infiniband/rdma_cm <<<"$CHARS"; }
check "rdmamap's char devices of rrxe0 hold one uverbs device ($UVERBS) and rdma_cm" uverbs_and_cm
all_match() { local p; for p in $CHARS; do dev_matches "$p" || { echo "$p"; return 1; }; done; }
check "each is a character device with its sysfs entry's major:minor" all_match
if [ -d /sys/class/infiniband_mad ]; then
  # ib_umad makes umadN and issmN for every port with IB MAD support, RoCE included.
  umad_issm() { grep -q '/umad[0-9]' <<<"$CHARS" && grep -q '/issm[0-9]' <<<"$CHARS"; }
  check "with ib_umad: umad and issm devices of rrxe0 too (the shared plugin's VerifyRdmaSpec set)" umad_issm
else
  echo "# no ib_umad in this kernel (CONFIG_INFINIBAND_USER_MAD unset): no umad/issm devices"
fi

# --- A pod: a macvlan of eth0 in its own namespace (shared mode) ----------------------------

check "rdma system show: shared" sh -c 'rdma system show | grep -q "netns shared"'
check "pod1 namespace with a macvlan of eth0 ($(pod_ip 1))" pod_add pod1 1 macvlan
pod_sees() { in_pod pod1 test -e /sys/class/infiniband/rrxe0 && in_pod pod1 ibv_devices | grep -qw rrxe0; }
check "the pod sees rrxe0 (sysfs, ibv_devices)" pod_sees
LINK=$(in_pod pod1 rdma link show rrxe0/1 2>&1)
echo "# in the pod: rdma link show: $LINK"
# nldev reports a port's netdev only to the netdev's own namespace (fill_port_info).
link_no_netdev() { grep -q 'rrxe0/1 state ACTIVE physical_state LINK_UP' <<<"$LINK" && ! grep -q netdev <<<"$LINK"; }
check "rdma link in the pod: rrxe0/1 ACTIVE, LINK_UP, no netdev (eth0 is in init_net)" link_no_netdev
DEVINFO=$(in_pod pod1 ibv_devinfo -d rrxe0 2>&1)
grep -E 'state:|link_layer:|active_mtu:' <<<"$DEVINFO" | tr -s '\t ' ' ' | sed 's/^/#   ibv_devinfo in the pod:/'
devinfo_ok() { grep -q PORT_ACTIVE <<<"$DEVINFO" && grep -q 'link_layer:.*Ethernet' <<<"$DEVINFO"; }
check "ibv_devinfo -d rrxe0 in the pod: PORT_ACTIVE, link_layer Ethernet" devinfo_ok
# The pod's GIDs appear once the core has handled the address (pod_gid retries until then).
G1_SYSFS=$(pod_gid pod1 rrxe0 "$(pod_ip 1)") || G1_SYSFS=
GIDS=$(in_pod pod1 "$RRXE_ROOT/scripts/show-gids" rrxe0)
sed 's/^/#   show-gids in the pod: /' <<<"$GIDS"
# docs/containers.md: the index of the pod's own address, RoCE v2, from show-gids's output.
G1=$(awk -v ip="$(pod_ip 1)" '$5 == ip && $6 == "v2" { print $3; exit }' <<<"$GIDS")
doc_index_ok() {
  [ -n "$G1" ] && [ "$G1" = "$G1_SYSFS" ] &&
    [ "$(in_pod pod1 cat "/sys/class/infiniband/rrxe0/ports/1/gid_attrs/ndevs/$G1")" = net0 ]
}
check "the doc's index (show-gids row of $(pod_ip 1), v2: ${G1:-none}) is the sysfs one, on net0" doc_index_ok
# The kernel lists every namespace's GIDs to every process (rdma_query_gid_table, sysfs): the
# pod also sees the host's address, so an index must be chosen by address, not taken first.
host_gid_in_pod() { awk -v ip="$RRXE_MY_IP" '$5 == ip && $6 == "v2" { f = 1 } END { exit !f }' <<<"$GIDS"; }
check "the pod's GID table also lists the host's $RRXE_MY_IP (index $GID): choose by address" host_gid_in_pod
check "rdmamap's netdev lookup in the pod finds rrxe0 for net0 (the pod's GID)" \
  is_rrxe0 in_pod pod1 bash -c "$(declare -f rdmamap_for_netdev); rdmamap_for_netdev net0"

# Between VM 1's pod and VM 0 itself (init_net, eth0's GID): the pod uses the doc's index.
p=19450
G1=${G1:-1}
RRXE_PEER_IP=$(pod_ip 1 1) pair "VM 1's pod to VM 0: ibv_rc_pingpong, pod side -g $G1 (4 KiB x20, checked)" 120 -- \
  ibv_rc_pingpong -d rrxe0 -g @GID -p $((p + 1)) -n 20 -s 4096 -c -- \
  ip netns exec pod1 ibv_rc_pingpong -d rrxe0 -g "$G1" -p $((p + 1)) -n 20 -s 4096 -c "$PEER_VM_IP"
RRXE_PEER_IP=$(pod_ip 1 1) pair "VM 1's pod to VM 0: rping -V -C 5 (rdma_cm picks the pod's GID)" 120 -- \
  "$RRXE_ROOT/tests/vm/lib/rping-run" -s -a "$RRXE_MY_IP" -p $((p + 2)) -V -C 5 -- \
  ip netns exec pod1 "$RRXE_ROOT/tests/vm/lib/rping-run" -c -a "$PEER_VM_IP" -p $((p + 2)) -V -C 5

check "ip netns del pod1" ip netns del pod1
pod_gid_gone() { ! gid_index_v4 rrxe0 "$(pod_ip 1)"; }
check "the pod's GID leaves rrxe0 with its namespace" retry 30 1 pod_gid_gone
user_teardown
tap_done
