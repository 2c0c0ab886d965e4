#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The acceptance scripts of tests/vm/ on any two machines (VMs or hosts) that have rrxe,
# kselftest style: TAP 13 on stdout, one "ok N NAME" / "not ok N NAME" per script with the
# script's own TAP as comments, exit status 0 when every script passed.
#
#   tests/selftest.sh --role server|client --peer PEER_IPV4 [--netdev IF] [--dev RDMA_DEV]
#                     [--list] [TEST...]
#
# Run it on both machines at about the same time, one with --role server and the other
# with --role client (the two sides meet over TCP, on ports 18500-18999, and retry while
# the other is not up yet). A machine that already has an rrxe device on IF (default: the
# netdev that routes to PEER) keeps it; otherwise the script loads rrxe.ko from this tree
# and adds rrxe0, and removes both afterwards. Needs root, rdma-core's tools, perftest, the
# provider (make provider; bash provider/install.sh) and the test programs
# (make -C tests/user). Default TESTs: every script that runs on a plain pair of machines;
# the single-machine ones (# vms: 1) run on the server side only, after the paired ones.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEFAULT="user-pingpong user-perftest user-verbs-ex user-matrix user-verbs-misc user-mw user-loopback user-ring-garbage"
role= peer= netdev= dev= tests=()
while [ $# -gt 0 ]; do
  case "$1" in
    --role) role=$2; shift 2 ;;
    --peer) peer=$2; shift 2 ;;
    --netdev) netdev=$2; shift 2 ;;
    --dev) dev=$2; shift 2 ;;
    --list) echo "$DEFAULT" | tr ' ' '\n'; exit 0 ;;
    -h|--help) sed -n '3,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) tests+=("$1"); shift ;;
  esac
done
case "$role" in server) vm=0 ;; client) vm=1 ;; *) echo "selftest: --role server|client is required" >&2; exit 2 ;; esac
[ -n "$peer" ] || { echo "selftest: --peer PEER_IPV4 is required" >&2; exit 2; }
[ ${#tests[@]} -gt 0 ] || read -r -a tests <<<"$DEFAULT"
[ -n "$netdev" ] || netdev=$(ip -o route get "$peer" 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p')
my_ip=$(ip -o -4 addr show dev "$netdev" 2>/dev/null | awk '{ sub(/\/.*/, "", $4); print $4; exit }')
[ -n "$my_ip" ] || { echo "selftest: no IPv4 address on netdev '$netdev'" >&2; exit 2; }

export RRXE_ROOT=$ROOT RRXE_VM=$vm RRXE_NVMS=2 RRXE_MY_IP=$my_ip RRXE_PEER_IP=$peer
export RRXE_NETDEV=$netdev RRXE_MODROOT=${RRXE_MODROOT:-/}
[ -n "$dev" ] && export RRXE_DEV=$dev

echo "TAP version 13"
echo "1..${#tests[@]}"
n=0 failed=0
for t in "${tests[@]}"; do
  n=$((n + 1))
  f=$ROOT/tests/vm/$t.sh
  if [ ! -f "$f" ]; then
    echo "not ok $n selftest: $t # no such test ($f)"; failed=$((failed + 1)); continue
  fi
  if [ "$vm" = 1 ] && grep -q '^# vms: 1' "$f"; then
    echo "ok $n selftest: $t # SKIP single-machine test, run by the server side"; continue
  fi
  echo "# selftest: $t ($role, $my_ip on $netdev <-> $peer)"
  to=$(sed -n 's/^# timeout: *//p' "$f" | head -n 1)
  timeout "${to:-300}" bash "$f" 2>&1 | sed 's/^/# /'
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 0 ]; then echo "ok $n selftest: $t"
  else echo "not ok $n selftest: $t # exit status $rc"; failed=$((failed + 1)); fi
done
echo "# $((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
