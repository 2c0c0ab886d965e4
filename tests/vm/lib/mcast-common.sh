# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# UD multicast steps (source after user-common.sh, once user_setup has set DEV): mckey rounds
# between the two VMs, counters, the netdev's group memberships.

# Datagrams the sender of a round sends (and each receiver waits for).
MCAST_MSGS=10

# counter NAME: this VM's value of one device counter.
counter() {
  rdma statistic show link "$DEV"/1 2>/dev/null | tr ' ' '\n' | awk -v k="$1" 'p {print; exit} $0 == k {p = 1}'
}

# in_group GROUP: eth0 is a member of GROUP (ip maddr).
in_group() { ip maddr show dev "${RRXE_NETDEV:-eth0}" | grep -qw "$1"; }

# no_groups GROUP...: eth0 is a member of none of them.
no_groups() {
  local g
  for g in "$@"; do
    if in_group "$g"; then echo "still a member of $g"; ip maddr show dev "${RRXE_NETDEV:-eth0}"; return 1; fi
  done
}

# mckey_round DESC GROUP BIND PORT SENDER [both|other]: VM SENDER sends MCAST_MSGS datagrams of
# 512 bytes to GROUP once the receivers (mckey: rdma_join_multicast, librdmacm attaching the
# QP) joined: one on each VM (both), or only on the other VM (other); the other VM signals on
# PORT once its receiver joined. Each receiver must get every datagram. BIND is this VM's
# address. The sender is tests/user/mcast -s, which waits for each send's completion: mckey's
# own sender posts its sends unsignaled and exits at once, and an rdma_rxe sender then
# flushes most of them with its QP (1 of 10 sent, seen).
mckey_round() {
  local desc=$1 grp=$2 me=$3 port=$4 sender=$5 where=${6:-both} out=/run/mckey-$4.out rpid=
  if [ "$RRXE_VM" != "$sender" ] || [ "$where" = both ]; then
    : > "$out"
    # Line-buffered: mckey prints "joined" with printf, which a file would keep until exit.
    timeout 60 stdbuf -oL mckey -m "$grp" -b "$me" -C "$MCAST_MSGS" -S 512 > "$out" 2>&1 &
    rpid=$!
    if retry 60 0.5 grep -q "joined dgid" "$out"; then ok "$desc: receiver joined"
    else not_ok "$desc: receiver joined"; sed 's/^/# /' "$out"; fi
  fi
  if [ "$RRXE_VM" != "$sender" ]; then
    peer_signal "$port"
  elif peer_wait "$port" 90; then
    local sout rc
    sout=$(timeout 60 "$RRXE_USER_BIN/mcast" -d "$DEV" -g "$GID" -m "$grp" -s "$MCAST_MSGS" 2>&1); rc=$?
    relay_tap "$desc: sender" "$rc" "$sout"
    # What left: the IP layer's multicast count and eth0's transmit count.
    echo "# $desc: sender: $(awk '/^IpExt:/ && n++ {print "OutMcastPkts", $5}' /proc/net/netstat)," \
      "eth0 tx_packets $(cat /sys/class/net/"${RRXE_NETDEV:-eth0}"/statistics/tx_packets)"
  else
    not_ok "$desc: the other VM's receiver joined"
  fi
  if [ -n "$rpid" ]; then
    if wait "$rpid" && grep -q "data transfers complete" "$out"; then
      ok "$desc: receiver got $MCAST_MSGS datagrams"
    else
      not_ok "$desc: receiver got $MCAST_MSGS datagrams"; sed 's/^/# /' "$out"; show_counters
      # What the IP layer saw (InHdrErrors, InMcastPkts, ...).
      grep -E '^(Ip|IpExt):' /proc/net/snmp /proc/net/netstat | sed 's/^/# /'
    fi
  fi
}
