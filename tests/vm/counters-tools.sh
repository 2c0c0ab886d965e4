#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 420
# The counters the usual tools read, against the traffic that made them. Of an rping's QP,
# stopped between pings: its per-QP counter object (`rdma statistic qp`, bound
# automatically, then unbound and bound again by hand) and its driver details (`rdma
# resource show qp -dd`), equal to each other and to no more than the port's. PerfMgt MADs
# from the other VM (tests/vm/lib/pma-wire.py), answered from the port's counters with the
# right statuses. After an ib_write_bw of 200 x 64 KiB: the port's byte and packet counters
# in hw_counters/ and in the PerfMgt agent's counters/ (equal, and at least the bytes
# written), and the writer's packets sent in chains (tx_chains). And perfquery, which
# cannot address a RoCE port.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
P=/sys/class/infiniband/$DEV/ports/1
T=$(mktemp -d)

# port_stat NAME: the port's counter NAME as `rdma statistic show link` shows it.
port_stat() {
  rdma statistic show link "$DEV"/1 | tr ' ' '\n' | awk -v n="$1" 'f {print; exit} $0 == n {f=1}'
}

# --- The PerfMgt agent in sysfs, and perfquery. ---
# The extended group (unicast_*) is there only when ClassPortInfo says the agent has
# PortCountersExtended.
check "ports/1/counters/ has the PerfMgt counters, extended ones included" \
  test -r "$P/counters/port_xmit_data" -a -r "$P/counters/unicast_xmit_packets" \
  -a -r "$P/counters/link_downed"
if ! command -v perfquery > /dev/null; then
  ok "perfquery # SKIP infiniband-diags is not installed"
elif [ ! -d /sys/class/infiniband_mad ]; then
  ok "perfquery # SKIP no user MAD access in this kernel (CONFIG_INFINIBAND_USER_MAD)"
else
  out=$(timeout 30 perfquery -C "$DEV" -P 1 -x 2>&1); rc=$?
  if [ "$rc" = 0 ]; then
    ok "perfquery -x reads $DEV port 1"
    echo "$out" | sed 's/^/# /'
  elif grep -q "client_register for mgmt 1 failed" <<<"$out"; then
    # libibmad opens the port for the SMI class too (QP0, to find its own LID with SMPs);
    # a RoCE port has no QP0: ib_register_mad_agent refuses (EPROTONOSUPPORT). With a
    # LID, a GUID or a GID it needs an SM or SA, which RoCE has neither of.
    ok "perfquery refuses a RoCE port: no QP0 for its SMI class (ports/1/counters/ instead)"
    echo "$out" | tail -n 2 | sed 's/^/#   /'
  else
    not_ok "perfquery -C $DEV -P 1 -x (exit $rc)"
    echo "$out" | tail -n 5 | sed 's/^/# /'
  fi
fi

# --- Per-QP counters of an rping's QP. ---
# rping pings as fast as it can, which leaves a one-CPU TCG guest little time for anything
# else: the client pings until both QPs have counted packets both ways, then stops (SIGSTOP)
# while the counters are read, and pings again once more for the binding by hand. With no
# traffic in between, what each tool shows must agree exactly.
check "automatic per-QP counters by QP type" rdma statistic qp set link "$DEV"/1 auto type on
check "the port's counter mode is auto" \
  bash -c "rdma statistic qp mode link $DEV/1 | grep -q 'auto type on'"
RP=18811
if [ "$RRXE_VM" = 0 ]; then
  rping -s -a "$RRXE_MY_IP" -p $RP > "$T/rping" 2>&1 &
  rp=$!
  retry 150 0.2 listening $RP
  peer_signal $((RP + 1))
else
  peer_wait $((RP + 1)) 120 || echo "# (no signal from the rping server)"
  # No -C: it pings until it is killed below.
  rping -c -a "$RRXE_PEER_IP" -p $RP > "$T/rping" 2>&1 &
  rp=$!
fi
# This VM's rping QP: RC, in RTS.
rping_qp() {
  rdma resource show qp link "$DEV"/1 | awk '/ type RC / && / state RTS / && / comm rping/ {
    for (i = 1; i < NF; i++) if ($i == "lqpn") { print $(i + 1); f = 1; exit } }
    END { exit !f }'
}
qpn=$(retry 100 0.2 rping_qp | tail -n 1)
if [ -n "$qpn" ]; then ok "rping's RC QP is up (lqpn $qpn)"; else not_ok "rping's RC QP is up"; qpn=0; fi
# obj_of QPN [MIN]: the counter object holding QP QPN, once its sent and received packets
# are above MIN (default 0), as its number then `NAME=VALUE` lines in $T/obj. An object
# is a line `link DEV/1 cntn N NAME VALUE...`, more `NAME VALUE` pairs (one a line in newer
# iproute2) and a line `LQPN: <QPN,...>`.
obj_of() {
  rdma statistic qp show link "$DEV"/1 | awk -v q="$1" -v m="${2:-0}" '
    function pairs(from) { for (i = from; i < NF; i += 2) { k[++n] = $i; v[$i] = $(i + 1) } }
    /^link/ { n = 0; split("", v); pairs(3); next }
    /LQPN:/ { s = $0; gsub(/[^0-9,]/, "", s); c = split(s, l, ",")
      for (j = 1; j <= c; j++) if (l[j] == q && v["sent_pkts"] > m && v["rcvd_pkts"] > m) {
        print v["cntn"]; for (i = 1; i <= n; i++) print k[i] "=" v[k[i]]; f = 1; exit }
      next }
    { pairs(1) }
    END { exit !f }' > "$T/obj"
}
val() { sed -n "s/^$1=//p" "$T/obj"; }
# res_of QPN: QP QPN's driver details (`rdma resource show qp -dd`: NAME VALUE, iproute2
# names them drv_NAME) as `NAME=VALUE` lines in $T/res; res NAME: one of them (-1 if none).
res_of() {
  rdma -dd resource show qp link "$DEV"/1 lqpn "$1" | awk '{ for (i = 1; i < NF; i++) {
    k = $i; sub(/^drv_/, "", k)
    if (k ~ /^(sq_next_psn|sq_una_psn|sq_inflight|cwnd|srtt_us|rto_us|rq_epsn|rq_msn|retransmits|retransmit_timeouts|sent_pkts|rcvd_pkts|sent_bytes|rcvd_bytes)$/)
      print k "=" $(i + 1) } }' > "$T/res"
}
res() { local v; v=$(sed -n "s/^$1=//p" "$T/res" | head -n 1); echo "${v:--1}"; }
# pause [SIGNAL]: VM 1 pings until its object has counted both ways, stops its rping and
# tells VM 0 on port SIGNAL; VM 0 waits for that.
pause() {
  if [ "$RRXE_VM" = 1 ]; then
    kill -CONT "$rp" 2>/dev/null
    retry 150 0.2 obj_of "$qpn" "${2:-0}" || echo "# (no packets counted; rping: $(tail -n 2 "$T/rping" | paste -sd' '))"
    kill -STOP "$rp" 2>/dev/null
    peer_signal "$1"
  else
    peer_wait "$1" 300 || echo "# (no signal from the client's VM)"
  fi
}
pause $((RP + 2))
if obj_of "$qpn"; then
  c1=$(head -n 1 "$T/obj")
  ok "an automatic counter object (cntn $c1) holds QP $qpn, its packets counted both ways"
  sed 1d "$T/obj" | paste -sd' ' | sed 's/^/# /'
else
  not_ok "an automatic counter object holds QP $qpn, its packets counted both ways"
  rdma statistic qp show link "$DEV"/1 | sed 's/^/# /'
  c1=0
fi
missing=
for n in sent_pkts rcvd_pkts sent_bytes rcvd_bytes retransmits retransmit_timeouts \
         rnr_naks_sent rnr_naks_rcvd out_of_seq_request seq_naks_rcvd; do
  [ -n "$(val $n)" ] || missing="$missing $n"
done
if [ -z "$missing" ]; then ok "the object shows the QP's packets, bytes, retransmissions, timeouts and NAKs"
else not_ok "the object lacks:$missing"; fi
if [ -z "$(val rx_icrc_errors)$(val link_downed)" ]; then ok "the object hides the port-only counters"
else not_ok "the object shows port-only counters (rx_icrc_errors, link_downed)"; fi
res_of "$qpn"
paste -sd' ' "$T/res" | sed 's/^/# res -dd: /'
if [ "$(res cwnd)" -gt 0 ] && [ "$(res sq_next_psn)" -ge 0 ] && [ "$(res sq_una_psn)" -ge 0 ] &&
   [ "$(res sq_inflight)" -ge 0 ] && [ "$(res rq_epsn)" -ge 0 ] && [ "$(res srtt_us)" -gt 0 ] &&
   [ "$(res retransmits)" -ge 0 ]; then
  ok "rdma resource show qp -dd shows QP $qpn's PSNs, window, measured RTT and retransmissions"
else not_ok "rdma resource show qp -dd: QP $qpn's driver details"; fi
# Bound since its INIT, before its first packet: the object has all of the QP's traffic.
port_sent=$(port_stat sent_pkts) port_bytes=$(port_stat sent_bytes)
if [ "$(val sent_pkts)" = "$(res sent_pkts)" ] && [ "$(val sent_bytes)" = "$(res sent_bytes)" ] &&
   [ "$(val rcvd_pkts)" = "$(res rcvd_pkts)" ] &&
   [ "$(res sent_pkts)" -le "$port_sent" ] && [ "$(res sent_bytes)" -le "$port_bytes" ]; then
  ok "object = QP <= port: $(val sent_pkts) = $(res sent_pkts) <= $port_sent packets sent, $(val sent_bytes) = $(res sent_bytes) <= $port_bytes bytes"
else
  not_ok "object = QP <= port: $(val sent_pkts), $(res sent_pkts), $port_sent packets sent; $(val sent_bytes), $(res sent_bytes), $port_bytes bytes; $(val rcvd_pkts), $(res rcvd_pkts) received"
fi

# By hand: auto off (the port's mode becomes manual while an object exists), unbind, bind.
check "auto off" rdma statistic qp set link "$DEV"/1 auto off
check "the port's counter mode is no longer auto" \
  bash -c "rdma statistic qp mode link $DEV/1 | grep -q 'auto off'"
before=$(port_stat sent_pkts)
check "unbind QP $qpn from object $c1" rdma statistic qp unbind link "$DEV"/1 cntn "$c1" lqpn "$qpn"
if ! obj_of "$qpn" -1; then ok "no object holds QP $qpn any more (object $c1 freed)"
else not_ok "an object still holds QP $qpn"; fi
after=$(port_stat sent_pkts)
if [ "$after" = "$before" ]; then ok "the port keeps the freed object's counts ($after sent packets)"
else not_ok "the port's sent packets moved from $before to $after when object $c1 was freed"; fi
check "bind QP $qpn by hand" rdma statistic qp bind link "$DEV"/1 lqpn "$qpn"
if obj_of "$qpn" -1 && [ "$(val sent_pkts)" = 0 ]; then
  c2=$(head -n 1 "$T/obj")
  ok "a new object (cntn $c2) holds QP $qpn, from zero"
else
  not_ok "a new object holds QP $qpn, from zero"
  paste -sd' ' "$T/obj" | sed 's/^/# /'
  c2=0
fi
[ "$RRXE_VM" = 0 ] && peer_signal $((RP + 3))
[ "$RRXE_VM" = 1 ] && { peer_wait $((RP + 3)) 300 || echo "# (no signal from the server's VM)"; }
pause $((RP + 4))
if obj_of "$qpn"; then
  bound=$(val sent_pkts)
  res_of "$qpn"
  if [ "$bound" -lt "$(res sent_pkts)" ]; then
    ok "object $c2 counts from its bind: $bound of the QP's $(res sent_pkts) packets sent"
  else not_ok "object $c2 counts from its bind: $bound, the QP's $(res sent_pkts)"; fi
else
  not_ok "object $c2 counts QP $qpn's packets after its bind"
fi
check "unbind QP $qpn from object $c2" rdma statistic qp unbind link "$DEV"/1 cntn "$c2" lqpn "$qpn"
if ! obj_of "$qpn" -1; then ok "object $c2 is gone"; else not_ok "object $c2 is still there"; fi
# Both VMs are done with their QP: the client ends (it is stopped: SIGKILL), the server
# follows.
if [ "$RRXE_VM" = 0 ]; then
  peer_signal $((RP + 5))
  retry 150 0.2 bash -c "! kill -0 $rp 2>/dev/null" || kill "$rp" 2>/dev/null
else
  peer_wait $((RP + 5)) 300 || echo "# (no signal from the server's VM)"
  kill -KILL "$rp" 2>/dev/null
fi
wait "$rp" 2>/dev/null
tail -n 2 "$T/rping" | sed 's/^/# rping: /'

# --- PerfMgt MADs over the wire: each VM asks the other's agent (both devices are up). ---
out=$(timeout 120 python3 "$RRXE_ROOT/tests/vm/lib/pma-wire.py" "${RRXE_NETDEV:-eth0}" \
      "$RRXE_MY_IP" "$RRXE_PEER_IP" 2>&1)
relay_tap pma-wire $? "$out"

# --- The port's counters after a transfer of known size. ---
check "automatic per-QP counters again" rdma statistic qp set link "$DEV"/1 auto type on
# snap NAME: hw_counters/ and counters/ into $T/NAME, once two reads of hw_counters/ around
# the read of counters/ agree (no packet in between).
snap() {
  local i a b
  for ((i = 0; i < 50; i++)); do
    a=$(cd "$P/hw_counters" && grep -H . sent_pkts rcvd_pkts sent_bytes rcvd_bytes tx_chains)
    b=$(cd "$P/counters" && grep -H . port_xmit_data port_rcv_data port_xmit_packets \
        port_rcv_packets unicast_xmit_packets unicast_rcv_packets multicast_xmit_packets)
    if [ "$a" = "$(cd "$P/hw_counters" && grep -H . sent_pkts rcvd_pkts sent_bytes rcvd_bytes tx_chains)" ]; then
      printf '%s\n%s\n' "$a" "$b" | tr : = > "$T/$1"
      return 0
    fi
    sleep 0.2
  done
  return 1
}
get() { sed -n "s/^$2=//p" "$T/$1"; }
check "counters read before" snap before
port=18821
pair "ib_write_bw 64 KiB x200" 180 -- \
  ib_write_bw -d @DEV -x @GID -p $port -s 65536 -n 200 -F -- \
  ib_write_bw -d @DEV -x @GID -p $port -s 65536 -n 200 -F @PEER
check "counters read after" snap after
paste -sd' ' "$T/after" | sed 's/^/# /'
# The PerfMgt agent's counters are the device's, with data in units of four octets.
pma_ok=1
for pair in sent_bytes/port_xmit_data rcvd_bytes/port_rcv_data; do
  [ "$(($(get after "${pair%/*}") / 4))" = "$(get after "${pair#*/}")" ] || pma_ok=0
done
for pair in sent_pkts/port_xmit_packets rcvd_pkts/port_rcv_packets \
            sent_pkts/unicast_xmit_packets rcvd_pkts/unicast_rcv_packets; do
  [ "$(get after "${pair%/*}")" = "$(get after "${pair#*/}")" ] || pma_ok=0
done
[ "$(get after multicast_xmit_packets)" = 0 ] || pma_ok=0
if [ "$pma_ok" = 1 ]; then ok "counters/ (the PMA) equals hw_counters/: bytes / 4, packets, all unicast"
else not_ok "counters/ (the PMA) differs from hw_counters/"; fi
check "the automatic objects left with ib_write_bw's QPs" \
  bash -c "[ -z \"\$(rdma statistic qp show link $DEV/1)\" ]"
payload=$((200 * 65536))
if [ "$RRXE_VM" = 1 ]; then dir=sent; else dir=rcvd; fi
bytes=$(($(get after ${dir}_bytes) - $(get before ${dir}_bytes)))
pkts=$(($(get after ${dir}_pkts) - $(get before ${dir}_pkts)))
if [ "$bytes" -ge "$payload" ] && [ "$pkts" -ge 200 ]; then
  ok "${dir}_bytes grew by $bytes >= $payload written, ${dir}_pkts by $pkts"
else
  not_ok "${dir}_bytes grew by $bytes (>= $payload written?), ${dir}_pkts by $pkts"
fi
# The writer's packets leave in chains (net::TxBatch): at least one, each of two or more.
if [ "$RRXE_VM" = 1 ]; then
  chains=$(($(get after tx_chains) - $(get before tx_chains)))
  if [ "$chains" -ge 1 ] && [ $((2 * chains)) -le "$pkts" ]; then
    ok "tx_chains grew by $chains for the $pkts packets sent (1 to $((pkts / 2)))"
  else
    not_ok "tx_chains grew by $chains for the $pkts packets sent (1 to $((pkts / 2))?)"
  fi
fi
link=$(port_stat ${dir}_bytes)
if [ "$link" = "$(get after ${dir}_bytes)" ]; then ok "rdma statistic shows the same ${dir}_bytes ($link)"
else not_ok "rdma statistic shows ${dir}_bytes $link, hw_counters/ $(get after ${dir}_bytes)"; fi

rm -rf "$T"
user_teardown
tap_done
