# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# User-level wire interop (source after guest-lib.sh with INTEROP_RRXE_VM set): the VM
# numbered INTEROP_RRXE_VM runs rrxe through librrxe, the other the stock rdma_rxe through
# rdma-core's librxe; VM 0 is the server of every pair.
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

if [ "$RRXE_VM" = "$INTEROP_RRXE_VM" ]; then user_setup rrxe; else user_setup rxe; fi
p=18800
pair "rping -V -C 50 (rrxe on vm$INTEROP_RRXE_VM)" 120 -- \
  rping -s -a "$RRXE_MY_IP" -p $((p + 1)) -V -C 50 -- \
  rping -c -a @PEER -p $((p + 1)) -V -C 50
pair "ibv_rc_pingpong 4 KiB x50, checked" 120 -- \
  ibv_rc_pingpong -d @DEV -g @GID -p $((p + 2)) -n 50 -s 4096 -c -- \
  ibv_rc_pingpong -d @DEV -g @GID -p $((p + 2)) -n 50 -s 4096 -c @PEER
pair "ibv_ud_pingpong 512 B x50, checked" 120 -- \
  ibv_ud_pingpong -d @DEV -g @GID -p $((p + 3)) -n 50 -s 512 -c -- \
  ibv_ud_pingpong -d @DEV -g @GID -p $((p + 3)) -n 50 -s 512 -c @PEER
n=3
for t in "ib_send_bw -s 65536 -n 100" "ib_write_bw -s 65536 -n 100" "ib_read_bw -s 65536 -n 100" \
         "ib_atomic_bw -n 200"; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  pair "$t" 180 -- \
    $t -d @DEV -x @GID -p $((p + n)) -F -- \
    $t -d @DEV -x @GID -p $((p + n)) -F @PEER
done
# The ICRC by each routine rrxe has: the module times crc32_le against its table loop at
# load where crc32_le has architecture code and keeps the faster (the table loop in these
# TCG guests; on a real CPU or under KVM, PCLMULQDQ's crc32_le), so the other one is forced
# here with the icrc parameter and checked against rdma_rxe, which checks every ICRC. A
# value that names no routine fails the load with EINVAL and a message.
if [ "$RRXE_VM" = "$INTEROP_RRXE_VM" ] && [ -z "$KEEP_DEV" ]; then
  auto=$(dmesg | grep -o 'rrxe: ICRC by [a-z0-9_ ]*' | tail -n 1); auto=${auto% }
  case "$auto" in
    *"table loop") other=crc32_le ;;
    *crc32_le) other=table ;;
    *) other= ;;
  esac
  if [ -n "$other" ]; then ok "the kernel log names the ICRC's routine at load: ${auto#rrxe: }"
  else not_ok "the kernel log names the ICRC's routine at load (got '$auto')"; fi
  user_teardown
  # kmod's insmod prints EINVAL as "Invalid parameters"; other insmods as strerror's text.
  err=$(insmod "$RRXE_KO" icrc=crc64 2>&1) && rmmod rrxe
  check "insmod rrxe.ko icrc=crc64 fails with EINVAL ($err)" sh -c 'case "$1" in *"Invalid parameters"*|*"Invalid argument"*) exit 0 ;; *) exit 1 ;; esac' - "$err"
  check "the kernel log says icrc=crc64 names no routine" sh -c 'dmesg | tail -n 20 | grep -q "rrxe: icrc=crc64 names no ICRC routine"'
  if [ -n "$other" ] && out=$(insmod "$RRXE_KO" icrc="$other" 2>&1); then
    ok "insmod rrxe.ko icrc=$other"
    check "the kernel log names the forced routine" sh -c 'dmesg | tail -n 20 | grep -q "rrxe: ICRC by .* (icrc=$1)"' - "$other"
  else
    [ -z "$other" ] || { not_ok "insmod rrxe.ko icrc=$other"; echo "$out" | sed 's/^/# /'; }
    # Without the other routine, the pairs below still need a device: the default's.
    check "insmod rrxe.ko (icrc=auto)" insmod "$RRXE_KO"
  fi
  check "rdma link add rrxe0 type rrxe netdev ${RRXE_NETDEV:-eth0}" rdma link add rrxe0 type rrxe netdev "${RRXE_NETDEV:-eth0}"
  GID=$(retry 20 0.3 gid_index_v4 "$DEV" "$RRXE_MY_IP") || GID=0
fi
# The other side runs the same pairs whether or not the rrxe side could reload.
pair "ibv_rc_pingpong 4099 B x50, checked, rrxe's other ICRC routine" 120 -- \
  ibv_rc_pingpong -d @DEV -g @GID -p $((p + 9)) -n 50 -s 4099 -c -- \
  ibv_rc_pingpong -d @DEV -g @GID -p $((p + 9)) -n 50 -s 4099 -c @PEER
pair "ib_write_bw 64 KiB, rrxe's other ICRC routine" 180 -- \
  ib_write_bw -s 65536 -n 100 -d @DEV -x @GID -p $((p + 10)) -F -- \
  ib_write_bw -s 65536 -n 100 -d @DEV -x @GID -p $((p + 10)) -F @PEER
user_teardown
tap_done
