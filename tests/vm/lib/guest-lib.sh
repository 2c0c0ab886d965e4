# shellcheck shell=bash
# Helpers for the VM test scripts (source it first): TAP output (tap.sh), module loading,
# retries, GID lookup.
# Environment from run-vms: RRXE_VM, RRXE_NVMS, RRXE_MY_IP, RRXE_PEER_IP, RRXE_ROOT, KDIR.

RRXE_KO=${RRXE_KO:-$RRXE_ROOT/rrxe.ko}
. "$RRXE_ROOT/tests/vm/lib/tap.sh"

# retry N DELAY CMD...: until CMD succeeds, at most N times.
retry() {
  local n=$1 d=$2 i=0; shift 2
  while ! "$@"; do i=$((i + 1)); [ "$i" -ge "$n" ] && return 1; sleep "$d"; done
}

# kmod NAME...: modprobe from our kernel's modules_install tree (not the host's /lib/modules).
kmod() { modprobe -d "$RRXE_MODROOT" "$@"; }
# load_rrxe: insmod rrxe.ko (with the tunnel modules it needs), unless rrxe is loaded already
# (tests/selftest.sh on a machine set up by its owner).
load_rrxe() {
  [ -d /sys/module/rrxe ] && return 0
  kmod udp_tunnel 2>/dev/null
  kmod ip6_udp_tunnel 2>/dev/null
  insmod "$RRXE_KO"
}
load_rxe() { kmod crc32_generic 2>/dev/null; kmod rdma_rxe; }
load_siw() { kmod siw; }

# The GID index of this port's RoCEv2 GID for an IPv4 address (::ffff:a.b.c.d).
gid_index_v4() {
  gid_index_of "$1" "$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${2//./ })"
}
# The GID index of this port's RoCEv2 GID for an IPv6 address.
gid_index_v6() {
  gid_index_of "$1" "$(python3 -c 'import ipaddress, sys; print(ipaddress.ip_address(sys.argv[1]).exploded)' "$2")"
}
# gid_index_of DEV GID: the index of a RoCE v2 GID, in sysfs's spelled-out form. One grep over
# the table (1024 entries: a cat per entry takes minutes in a TCG guest), then the types of
# the matches, lowest index first.
gid_index_of() {
  local d=/sys/class/infiniband/$1/ports/1 idx
  for idx in $(grep -lsx "$2" "$d"/gids/* | sed 's#.*/##' | sort -n); do
    if [ "$(cat "$d/gid_attrs/types/$idx" 2>/dev/null)" = "RoCE v2" ]; then echo "$idx"; return 0; fi
  done
  return 1
}
