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
# 512 bytes to GROUP with mckey once the receivers joined: one on each VM (both), or only on
# the other VM (other); the other VM signals on PORT once its receiver joined. Each receiver
# must get every datagram. BIND is this VM's address.
mckey_round() {
  local desc=$1 grp=$2 me=$3 port=$4 sender=$5 where=${6:-both} out=/run/mckey-$4.out rpid=
  if [ "$RRXE_VM" != "$sender" ] || [ "$where" = both ]; then
    : > "$out"
    # Line-buffered: mckey prints "joined" with printf, which a file would keep until exit.
    timeout 120 stdbuf -oL mckey -m "$grp" -b "$me" -C "$MCAST_MSGS" -S 512 > "$out" 2>&1 &
    rpid=$!
    if retry 60 0.5 grep -q "joined dgid" "$out"; then ok "$desc: receiver joined"
    else not_ok "$desc: receiver joined"; sed 's/^/# /' "$out"; fi
  fi
  if [ "$RRXE_VM" != "$sender" ]; then
    peer_signal "$port"
  elif peer_wait "$port" 90; then
    check "$desc: sender (mckey -s -C $MCAST_MSGS)" \
      timeout 60 mckey -m "$grp" -b "$me" -s -C "$MCAST_MSGS" -S 512
  else
    not_ok "$desc: the other VM's receiver joined"
  fi
  if [ -n "$rpid" ]; then
    if wait "$rpid" && grep -q "data transfers complete" "$out"; then
      ok "$desc: receiver got $MCAST_MSGS datagrams"
    else
      not_ok "$desc: receiver got $MCAST_MSGS datagrams"; sed 's/^/# /' "$out"; show_counters
    fi
  fi
}
