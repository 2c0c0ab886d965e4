# shellcheck shell=bash
# Helpers for guest test scripts (source it): module loading, TAP output, retries.
# Environment from run-vms: RRXE_VM, RRXE_NVMS, RRXE_MY_IP, RRXE_PEER_IP, RRXE_ROOT, KDIR.

RRXE_KO=${RRXE_KO:-$RRXE_ROOT/rrxe.ko}
TAP_N=0
TAP_FAILED=0

# ok DESCRIPTION: record a pass.
ok() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - vm$RRXE_VM: $*"; }
# not_ok DESCRIPTION: record a failure.
not_ok() { TAP_N=$((TAP_N + 1)); TAP_FAILED=$((TAP_FAILED + 1)); echo "not ok $TAP_N - vm$RRXE_VM: $*"; }
# check DESCRIPTION CMD...: run CMD; pass when it exits 0, else show its output (the last 30
# lines, without perftest's per-QP address lines, which bury its error with -q 8).
check() {
  local desc=$1 out; shift
  if out=$("$@" 2>&1); then ok "$desc"; else
    not_ok "$desc"
    echo "$out" | grep -vE '^ *(local|remote) address: |^ *GID: ' | tail -n 30 | sed 's/^/# /'
  fi
}
# expect_fail DESCRIPTION CMD...: pass when CMD fails.
expect_fail() {
  local desc=$1 out; shift
  if out=$("$@" 2>&1); then not_ok "$desc (unexpectedly succeeded)"; echo "$out" | sed 's/^/# /'; else ok "$desc"; echo "$out" | tail -n 3 | sed 's/^/#   /'; fi
}
# tap_done: the final line; exit status of the script.
tap_done() { echo "1..$TAP_N"; [ "$TAP_FAILED" = 0 ]; }

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
# gid_index_of DEV GID: the index of a RoCE v2 GID, in sysfs's spelled-out form.
gid_index_of() {
  local dev=$1 want=$2 f idx type gid
  for f in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
    idx=${f##*/}
    gid=$(cat "$f" 2>/dev/null) || continue
    type=$(cat /sys/class/infiniband/"$dev"/ports/1/gid_attrs/types/"$idx" 2>/dev/null) || continue
    if [ "$gid" = "$want" ] && [ "$type" = "RoCE v2" ]; then echo "$idx"; return 0; fi
  done
  return 1
}
