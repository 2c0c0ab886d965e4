#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 600
# Shared mode keeps pods apart even when their addresses are equal: pods A and B both have
# 10.66.0.1 on two macvlans of eth0 (so rrxe0 has that GID twice, once per netdev), pod C
# (10.66.0.2) talks to them, and which pod C's packets for 10.66.0.1 reach is C's neighbour
# entry. A UD and an RC pair (ibv_ud_pingpong, ibv_rc_pingpong, data checked) work from C
# to each pod over its own netdev. Packets for A's QPs sent to B's netdev (same address,
# same Q_Key) reach no QP: A's servers get nothing, and every such packet counts in
# rx_drop_netdev. A process may not send from a GID of another namespace: modify_qp and
# create_ah refuse it with ENODEV (tests/user/netns_gid), in a pod and in init_net.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"
. "$RRXE_ROOT/tests/vm/lib/netns-common.sh"

MA=52:54:00:66:0a:01 MB=52:54:00:66:0b:01 MC=52:54:00:66:0c:01
SHARED=10.66.0.1
# mkpod NAME IFNAME MAC ADDR...: a namespace with a macvlan (bridge mode) of eth0 named
# IFNAME (unique, so that sysfs's gid_attrs/ndevs names it), with MAC and the addresses.
mkpod() {
  local ns=$1 nd=$2 mac=$3 a; shift 3
  kmod macvlan 2>/dev/null
  ip netns add "$ns" && ip link add "$nd" link eth0 address "$mac" type macvlan mode bridge &&
    ip link set "$nd" netns "$ns" || return 1
  for a in "$@"; do ip -n "$ns" addr add "$a/24" dev "$nd" || return 1; done
  ip -n "$ns" link set lo up && ip -n "$ns" link set "$nd" up
}
# gid_on DEV ADDR NDEV: the index of DEV's RoCE v2 GID for IPv4 ADDR on netdev NDEV.
gid_on() {
  local d=/sys/class/infiniband/$1/ports/1 i
  for i in $(grep -lsx "$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${2//./ })" \
               "$d"/gids/* | sed 's#.*/##' | sort -n); do
    if [ "$(cat "$d/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] &&
       [ "$(cat "$d/gid_attrs/ndevs/$i" 2>/dev/null)" = "$3" ]; then echo "$i"; return 0; fi
  done
  return 1
}
# to MAC: pod C's packets for the shared address go to the pod with that MAC.
to() { ip -n podc neigh replace "$SHARED" lladdr "$1" dev netc nud permanent; }
# run_pair T PORT SRVNS SERVER... -- CLIENT...: SERVER in SRVNS (background), then, once it
# listens on PORT, CLIENT in pod C (`timeout T`). Sets CRC (the client's exit status) and
# SRC (the server's; "running" if it has not ended 3 s after the client, when it is
# stopped) and prints both outputs as comments. With UNTIL set (a command), the client is
# stopped as soon as UNTIL succeeds (a client that would wait for ever).
run_pair() {
  local t=$1 port=$2 ns=$3 srv=() so co; shift 3
  while [ "$1" != -- ]; do srv+=("$1"); shift; done; shift
  so=$(mktemp) co=$(mktemp)
  timeout 120 ip netns exec "$ns" "${srv[@]}" >"$so" 2>&1 &
  local sp=$!
  retry 50 0.2 ip netns exec "$ns" bash -c "$(declare -f listening); listening $port"
  timeout "$t" ip netns exec podc "$@" >"$co" 2>&1 &
  local cp=$!
  if [ -n "${UNTIL:-}" ]; then
    retry $((t * 5)) 0.2 sh -c "$UNTIL || ! kill -0 $cp 2>/dev/null"
    kill -TERM "$cp" 2>/dev/null
  fi
  wait "$cp"; CRC=$?
  if retry 15 0.2 proc_gone "$sp"; then wait "$sp"; SRC=$?
  else SRC=running; kill -TERM "$sp"; wait "$sp"; fi
  sed 's/^/#   server: /' "$so"; sed 's/^/#   client: /' "$co"
  rm -f "$so" "$co"
  echo "# ($SECONDS s)"
}

user_setup
check "pod A: netA, $SHARED and 10.66.1.1" mkpod poda neta $MA $SHARED 10.66.1.1
check "pod B: netB, $SHARED and 10.66.2.1" mkpod podb netb $MB $SHARED 10.66.2.1
check "pod C: netC, 10.66.0.2, 10.66.1.2, 10.66.2.2" mkpod podc netc $MC 10.66.0.2 10.66.1.2 10.66.2.2
GA=$(retry 30 0.3 gid_on rrxe0 $SHARED neta) || GA=
GB=$(retry 30 0.3 gid_on rrxe0 $SHARED netb) || GB=
GC=$(retry 30 0.3 gid_on rrxe0 10.66.0.2 netc) || GC=
if [ -n "$GA" ] && [ -n "$GB" ] && [ -n "$GC" ] && [ "$GA" != "$GB" ]; then
  ok "rrxe0 has $SHARED twice (index $GA on netA, $GB on netB) and 10.66.0.2 (index $GC)"
else not_ok "rrxe0's GIDs of the pods ($GA, $GB, $GC)"; GA=${GA:-1} GB=${GB:-2} GC=${GC:-3}; fi

# Send side: another namespace's GID is refused where a path or an AH is made.
out=$(ip netns exec podc timeout 30 "$RRXE_USER_BIN/netns_gid" -d rrxe0 -g "$GC" -x "$GA" 2>&1)
relay_tap "pod C with pod A's GID" $? "$out"
out=$(timeout 30 "$RRXE_USER_BIN/netns_gid" -d rrxe0 -g "$GID" -x "$GB" 2>&1)
relay_tap "init_net with pod B's GID" $? "$out"

# Each pod's pairs, over its own netdev.
c0=$(counter rrxe0 rx_drop_netdev)
p=19650
for pod in a b; do
  if [ $pod = a ]; then mac=$MA g=$GA tcp=10.66.1.1; else mac=$MB g=$GB tcp=10.66.2.1; fi
  check "pod C's $SHARED is pod ${pod^^}'s netdev ($mac)" to $mac
  p=$((p + 1))
  run_pair 60 $p pod$pod ibv_ud_pingpong -d rrxe0 -g "$g" -p $p -n 20 -s 512 -c -- \
    ibv_ud_pingpong -d rrxe0 -g "$GC" -p $p -n 20 -s 512 -c $tcp
  if [ "$SRC" = 0 ] && [ "$CRC" = 0 ]; then ok "UD: pod C to pod ${pod^^} ($SHARED, index $g), 20 x 512 B, checked"
  else not_ok "UD: pod C to pod ${pod^^} (server exit $SRC, client exit $CRC)"; fi
  p=$((p + 1))
  run_pair 60 $p pod$pod ibv_rc_pingpong -d rrxe0 -g "$g" -p $p -n 20 -s 4096 -c -- \
    ibv_rc_pingpong -d rrxe0 -g "$GC" -p $p -n 20 -s 4096 -c $tcp
  if [ "$SRC" = 0 ] && [ "$CRC" = 0 ]; then ok "RC: pod C to pod ${pod^^} ($SHARED, index $g), 20 x 4 KiB, checked"
  else not_ok "RC: pod C to pod ${pod^^} (server exit $SRC, client exit $CRC)"; fi
done
check "rx_drop_netdev did not move ($c0)" test "$(counter rrxe0 rx_drop_netdev)" = "$c0"

# Pod A's QPs (same addresses, same Q_Key) over pod B's netdev: nothing may reach them.
check "pod C's $SHARED is now pod B's netdev ($MB)" to $MB
cross() {
  local kind=$1 c1 r1
  c1=$(counter rrxe0 rx_drop_netdev) r1=$(counter rrxe0 rcvd_pkts)
  p=$((p + 1))
  if [ "$kind" = UD ]; then
    # The client sends one datagram, then waits for ever for the answer: it is stopped
    # once a packet has been dropped (or after 60 s).
    UNTIL="[ \"\$(rdma statistic show link rrxe0/1 | tr ' ' '\n' | grep -A1 -x rx_drop_netdev | tail -n 1)\" -gt $c1 ]" \
    run_pair 60 $p poda ibv_ud_pingpong -d rrxe0 -g "$GA" -p $p -n 5 -s 512 -c -- \
      ibv_ud_pingpong -d rrxe0 -g "$GC" -p $p -n 5 -s 512 -c 10.66.1.1
  else
    run_pair 60 $p poda ibv_rc_pingpong -d rrxe0 -g "$GA" -p $p -n 5 -s 4096 -c -- \
      ibv_rc_pingpong -d rrxe0 -g "$GC" -p $p -n 5 -s 4096 -c 10.66.1.1
  fi
  local dc=$(($(counter rrxe0 rx_drop_netdev) - c1)) dr=$(($(counter rrxe0 rcvd_pkts) - r1))
  # Still waiting, or ended by its own timeout (124) on a slow host: never answered.
  if [ "$SRC" = running ] || [ "$SRC" = 124 ]; then ok "$kind: pod A's server got nothing (exit: $SRC)"
  else not_ok "$kind: pod A's server got nothing (exit $SRC)"; fi
  if [ "$CRC" != 0 ]; then ok "$kind: pod C's client failed (exit $CRC)"
  else not_ok "$kind: pod C's client failed (exit 0: its packets reached pod A's QP)"; fi
  if [ "$dc" -gt 0 ] && [ "$dc" = "$dr" ]; then
    ok "$kind: every packet received meanwhile ($dr) counted in rx_drop_netdev"
  else not_ok "$kind: every packet received meanwhile ($dr) counted in rx_drop_netdev (+$dc)"; fi
}
cross UD
cross RC
echo "# the steps took $SECONDS s"

check "ip netns del poda podb podc" sh -c 'ip netns del poda && ip netns del podb && ip netns del podc'
user_teardown
tap_done
