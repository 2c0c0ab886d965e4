# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Helpers for the network-namespace VM tests (source after guest-lib.sh and user-common.sh):
# "pods" (named network namespaces) with a macvlan or ipvlan child of eth0, or eth0 itself,
# and commands run inside them. Pod addresses are on the VMs' link (10.77.0.0/24), above
# the VMs' own: pod P of VM V has 10.77.0.(10 * P + V + 1) and MAC 52:54:00:77:P0:0(V+1).

# pod_ip P [VM]: the address of pod P on VM (default: this VM).
pod_ip() { echo "10.77.0.$((10 * $1 + ${2:-$RRXE_VM} + 1))"; }
# pod_peer_ip P: the address of pod P on the other VM.
pod_peer_ip() { pod_ip "$1" $((1 - RRXE_VM)); }
# in_pod NAME CMD...: CMD inside the pod's namespace (its own /sys, so its RDMA devices).
in_pod() { local p=$1; shift; ip netns exec "$p" "$@"; }

# pod_add NAME P KIND: namespace NAME with a KIND (macvlan | ipvlan) child of eth0 as
# its eth0-like "net0", pod P's address, up. KIND macvlan is bridge mode, ipvlan is L2.
pod_add() {
  local name=$1 p=$2 kind=$3
  ip netns add "$name" || return 1
  case "$kind" in
    macvlan)
      kmod macvlan 2>/dev/null
      ip link add "$name-net0" link eth0 type macvlan mode bridge || return 1
      ip link set "$name-net0" address "52:54:00:77:${p}0:0$((RRXE_VM + 1))" || return 1 ;;
    ipvlan)
      kmod ipvlan 2>/dev/null
      ip link add "$name-net0" link eth0 type ipvlan mode l2 || return 1 ;;
    *) return 1 ;;
  esac
  ip link set "$name-net0" netns "$name" || return 1
  in_pod "$name" ip link set "$name-net0" name net0 || return 1
  in_pod "$name" ip addr add "$(pod_ip "$p")/24" dev net0 || return 1
  in_pod "$name" ip link set lo up || return 1
  in_pod "$name" ip link set net0 up
}

# pod_gid NAME DEV IP: the index of DEV's RoCE v2 GID for IPv4 address IP, read in the pod.
pod_gid() {
  in_pod "$1" bash -c '. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"; retry 30 0.3 gid_index_v4 "$0" "$1"' "$2" "$3"
}

# counter DEV NAME [POD]: one counter of DEV's port (rdma statistic), 0 if absent.
counter() {
  local c
  if [ -n "${3:-}" ]; then c=$(in_pod "$3" rdma statistic show link "$1/1" 2>/dev/null)
  else c=$(rdma statistic show link "$1/1" 2>/dev/null); fi
  c=$(tr ' ' '\n' <<<"$c" | grep -A1 -x "$2" | tail -n 1)
  echo "${c:-0}"
}
# traffic_flows DEV MIN [POD]: DEV has sent and received more than MIN packets.
traffic_flows() {
  [ "$(counter "$1" sent_pkts "${3:-}")" -gt "$2" ] && [ "$(counter "$1" rcvd_pkts "${3:-}")" -gt "$2" ]
}
# gone DEV [POD]: no RDMA device DEV (in the pod's view).
dev_gone() {
  if [ -n "${2:-}" ]; then ! in_pod "$2" test -e "/sys/class/infiniband/$1"
  else [ ! -e "/sys/class/infiniband/$1" ]; fi
}
# proc_gone PID: the process has exited.
proc_gone() { ! kill -0 "$1" 2>/dev/null; }
