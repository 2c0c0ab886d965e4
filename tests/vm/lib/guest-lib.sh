# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Helpers for the VM test scripts (source it first): TAP output (tap.sh), module loading,
# retries, GID lookup.
# Environment from run-vms: RRXE_VM, RRXE_NVMS, RRXE_MY_IP, RRXE_PEER_IP, RRXE_ROOT, KDIR,
# RRXE_USER_BIN (the tests/user programs built for this guest's root filesystem).

RRXE_KO=${RRXE_KO:-$RRXE_ROOT/rrxe.ko}
RRXE_USER_BIN=${RRXE_USER_BIN:-$RRXE_ROOT/tests/user}
. "$RRXE_ROOT/tests/vm/lib/tap.sh"

# A slower guest kernel (scripts/kasan-suite.sh: KASAN, about 4x) sets RRXE_TIMEOUT_SCALE;
# retry counts and `timeout` durations in the scripts are multiplied by it (the C test
# programs read it too, tests/user/scale.h).
SCALE=${RRXE_TIMEOUT_SCALE:-1}
[[ $SCALE =~ ^[1-9][0-9]?$ ]] || SCALE=1

# timeout [OPTION...] SECONDS CMD...: coreutils timeout with SECONDS (a whole number) x SCALE.
timeout() {
  local o=()
  while [[ $# -gt 0 && $1 == -* ]]; do
    case $1 in -s | -k) o+=("$1" "$2"); shift 2 ;; *) o+=("$1"); shift ;; esac
  done
  local d=$1; shift
  [[ $d =~ ^[0-9]+$ ]] && d=$((d * SCALE))
  command timeout "${o[@]}" "$d" "$@"
}

# retry N DELAY CMD...: until CMD succeeds, at most N (x SCALE) times.
retry() {
  local n=$(($1 * SCALE)) d=$2 i=0; shift 2
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

# Cross-VM steps: `peer_wait PORT SECONDS` blocks until the other VM calls `peer_signal PORT`
# (or SECONDS x SCALE pass: exit 1); peer_signal retries while the waiter is not listening yet.
peer_wait() {
  python3 - "$1" "$(($2 * SCALE))" <<'PY'
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", int(sys.argv[1]))); s.listen(1); s.settimeout(int(sys.argv[2]))
try:
    s.accept()[0].close()
except socket.timeout:
    sys.exit(1)
PY
}
peer_signal() { retry 120 0.5 bash -c "exec 3<>/dev/tcp/$RRXE_PEER_IP/$1" 2>/dev/null; }

# writable DIR: a tmpfs-backed overlay over DIR of the read-only 9p root (changes vanish with
# the VM): for tests that install into the guest as a user would (install-modprobe,
# readme-install).
writable() {
  local w=/run/ovl/$(echo "$1" | tr / _)
  mkdir -p "$w/u" "$w/w" && mount -t overlay overlay -o "lowerdir=$1,upperdir=$w/u,workdir=$w/w" "$1"
}
