#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 300
# Foundation: rrxe.ko loads, rrxe0 binds to eth0, the provider shows it through libibverbs
# with the right attributes and GIDs, the port follows the netdev, bad adds fail cleanly,
# devices go away with link delete, netdev removal and rmmod. Runs the same in each VM.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"

n=$((RRXE_VM + 1))
check "insmod rrxe.ko" load_rrxe
check "rdma link add rrxe0 type rrxe netdev eth0" rdma link add rrxe0 type rrxe netdev eth0
check "rdma link show: rrxe0 on eth0, ACTIVE" sh -c 'rdma link show rrxe0/1 | grep -q "state ACTIVE .*netdev eth0"'
check "ibv_devices lists rrxe0 with its GUID (provider matched)" \
  sh -c "ibv_devices | grep -Eq '^\s*rrxe0\s+505400fffe77000$n\s*$'"

info=$(ibv_devinfo -v -d rrxe0 2>&1)
echo "$info" | sed 's/^/#   /'
has() { grep -Eq "$1" <<<"$info"; }
check "ibv_devinfo: node_guid from the MAC" has "node_guid:\s+5054:00ff:fe77:000$n"
check "ibv_devinfo: transport InfiniBand" has "transport:\s+InfiniBand \(0\)"
check "ibv_devinfo: port PORT_ACTIVE" has "state:\s+PORT_ACTIVE \(4\)"
check "ibv_devinfo: phys_state LINK_UP" has "phys_state:\s+LINK_UP \(5\)"
check "ibv_devinfo: link_layer Ethernet" has "link_layer:\s+Ethernet"
check "ibv_devinfo: max_mtu 4096" has "max_mtu:\s+4096 \(5\)"
check "ibv_devinfo: active_mtu 1024 for netdev MTU 1500" has "active_mtu:\s+1024 \(3\)"
# Every address of eth0 has a RoCE v2 GID.
for a in $(ip -o addr show dev eth0 | awk '$3 == "inet" || $3 == "inet6" {print $4}'); do
  a=${a%/*}
  case "$a" in *.*) g="::ffff:$a" ;; *) g=$a ;; esac
  check "ibv_devinfo: RoCE v2 GID for $a" has "GID\[ *[0-9]+\]:\s+$g, RoCE v2"
done
check "GID table has the IPv4 GID in sysfs" gid_index_v4 rrxe0 "$RRXE_MY_IP"

port_state() { ibv_devinfo -d rrxe0 | grep -q "state:\s*$1"; }
ip link set eth0 down
check "port follows netdev down (PORT_DOWN)" retry 20 0.3 port_state PORT_DOWN
ip link set eth0 up
check "port follows netdev up (PORT_ACTIVE)" retry 20 0.3 port_state PORT_ACTIVE
mtu_is() { ibv_devinfo -d rrxe0 | grep -Eq "active_mtu:\s+$1 "; }
ip link set eth0 mtu 1000
check "active_mtu follows netdev MTU 1000 (512)" retry 10 0.3 mtu_is 512
ip link set eth0 mtu 1500
check "active_mtu follows netdev MTU 1500 (1024)" retry 10 0.3 mtu_is 1024

expect_fail "second device on the same netdev is refused" rdma link add rrxe1 type rrxe netdev eth0
expect_fail "device on a non-Ethernet netdev (lo) is refused" rdma link add rrxe9 type rrxe netdev lo
expect_fail "device on a missing netdev is refused" rdma link add rrxe9 type rrxe netdev nosuch0
kmod veth
ip link add vth0 type veth peer name vth1
ip link set vth0 up
expect_fail "duplicate device name is refused" rdma link add rrxe0 type rrxe netdev vth0
check "second device on another netdev (veth)" rdma link add rrxe1 type rrxe netdev vth0
gone() { [ ! -e "/sys/class/infiniband/$1" ]; }
ip link del vth0
check "device goes away with its netdev" retry 20 0.3 gone rrxe1
check "rdma link delete rrxe0" rdma link delete rrxe0
check "rrxe0 is gone after delete" gone rrxe0
check "re-add rrxe0 after delete" rdma link add rrxe0 type rrxe netdev eth0
check "ibv_devinfo works again after re-add" port_state PORT_ACTIVE
check "rmmod rrxe with a device present" rmmod rrxe
check "no RDMA device left after rmmod" sh -c '[ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]'
check "reload and unload with no devices" sh -c "insmod '$RRXE_KO' && rmmod rrxe"
tap_done
