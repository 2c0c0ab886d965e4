#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 180
# The rrxe trace events through tracefs (events/rrxe/), on a loopback ibv_rc_pingpong: each
# QP goes RESET->INIT->RTR->RTS, sends and receives with its QPN and consecutive PSNs, and
# the RTT of its ACKed packets is read from the timestamps; a fault rule's dropped SEND is
# traced with the retransmit timeout that sent it again, a forced RNR NAK as sent and
# received, a forced remote access NAK as the error completion and the move to ERR it caused.
# The commands are docs/tracing.md's worked examples.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

T=/sys/kernel/tracing
W=$(mktemp -d)
user_setup
mountpoint -q $T || mount -t tracefs nodev $T
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
F=/sys/kernel/debug/rrxe/$DEV/faults
for e in pkt_tx pkt_rx nak_tx nak_rx retransmit cwnd qp_state comp_err fault; do
  check "tracefs has rrxe:rrxe_$e" test -f "$T/events/rrxe/rrxe_$e/format"
done

# rrxe_trace: the rrxe events of the trace buffer, one a line: TIMESTAMP EVENT KEY=VALUE...
rrxe_trace() {
  awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^rrxe_[a-z_]+:$/) {
           t = $(i - 1); sub(/:$/, "", t); e = $i; sub(/:$/, "", e); s = t " " e
           for (j = i + 1; j <= NF; j++) s = s " " $j
           print s; break } }' $T/trace
}
# The awk function that reads a field of such a line: f("psn").
FIELD='function f(k, i) { for (i = 3; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2) }'

# pingpong DESC N PORT [fails]: a loopback ibv_rc_pingpong of N 1 KiB messages, checked to
# pass (or, with `fails`, the client to fail; its server is then stopped). Sets CQPN and SQPN
# (the client's and the server's QP numbers, as the trace prints them) and CPSN (the
# client's first PSN, decimal). Run in this shell (not through check: it sets variables).
pingpong() {
  local desc=$1 n=$2 port=$3 so sp rc src
  so=$(mktemp)
  timeout 30 ibv_rc_pingpong -d "$DEV" -g "$GID" -p "$port" -n "$n" -s 1024 -c > "$so" 2>&1 &
  sp=$!
  retry 50 0.2 listening "$port"
  out=$(until_connected 20 timeout 30 ibv_rc_pingpong -d "$DEV" -g "$GID" -p "$port" -n "$n" \
    -s 1024 -c "$RRXE_MY_IP" 2>&1); rc=$?
  [ "${4:-}" = fails ] && kill "$sp" 2>/dev/null
  wait "$sp"; src=$?
  # "  local address:  LID 0x0000, QPN 0x0000c5, PSN 0x4d7e1a, GID ..."
  CQPN=$(awk '/^ *local address/ { gsub(",", ""); print $6; exit }' <<<"$out")
  SQPN=$(awk '/^ *remote address/ { gsub(",", ""); print $6; exit }' <<<"$out")
  CPSN=$(awk '/^ *local address/ { gsub(",", ""); print $8; exit }' <<<"$out")
  CQPN=$(printf '0x%x' "$((CQPN))"); SQPN=$(printf '0x%x' "$((SQPN))"); CPSN=$((CPSN))
  if [ "${4:-}" = fails ]; then
    if [ "$rc" != 0 ]; then ok "$desc"; else not_ok "$desc (the client passed)"; fi
    grep -v address <<<"$out" | tail -n 3 | sed 's/^/#   /'
  elif [ "$rc" = 0 ] && [ "$src" = 0 ]; then ok "$desc"
  else
    not_ok "$desc (client $rc, server $src)"
    { echo "$out"; cat "$so"; } | tail -n 30 | sed 's/^/# /'
  fi
  rm -f "$so"
}
trace_start() { echo 0 > $T/tracing_on; echo > $T/trace; echo 1 > $T/events/rrxe/enable; echo 1 > $T/tracing_on; }
trace_stop() { echo 0 > $T/tracing_on; echo 0 > $T/events/rrxe/enable; rrxe_trace > "$1"; }
show() { sed 's/^/# /' "$1" | head -n "${2:-40}"; }

# 1. A clean exchange.
check "clear the fault rules" sh -c "echo clear > $F"
trace_start
pingpong "loopback ibv_rc_pingpong 1 KiB x20 with the rrxe events on" 20 18921
trace_stop $W/trace1
echo "# client QPN $CQPN (first PSN $CPSN), server QPN $SQPN; $(wc -l < $W/trace1) events"
for q in "$CQPN" "$SQPN"; do
  # Example: how did this QP get to RTS?
  states=$(awk -v q="$q" "$FIELD"' $2 == "rrxe_qp_state" && f("qpn") == q { printf "%s->%s ", f("old"), f("new") }' $W/trace1)
  check "QP $q: $states" test "$states" = "RESET->INIT INIT->RTR RTR->RTS "
done
sends=$(awk -v q="$CQPN" "$FIELD"' $2 == "rrxe_pkt_tx" && f("qpn") == q && f("opcode") == "RC_SEND_ONLY" { print f("psn") }' $W/trace1 | uniq)
check "the client's 20 SENDs are traced (a PSN sent again counted once)" test "$(wc -l <<<"$sends")" = 20
check "their PSNs run from $CPSN one by one" \
  test "$(awk -v p="$CPSN" '$1 != (p + NR - 1) % 16777216 { bad = 1 } END { print !bad }' <<<"$sends")" = 1
check "the server received those 20 SENDs at QP $SQPN, in the same order" \
  test "$(awk -v q="$SQPN" "$FIELD"' $2 == "rrxe_pkt_rx" && f("qpn") == q && f("opcode") == "RC_SEND_ONLY" { print f("psn") }' $W/trace1 | uniq)" = "$sends"
acks=$(awk -v q="$CQPN" "$FIELD"' $2 == "rrxe_pkt_rx" && f("qpn") == q && f("opcode") == "RC_ACKNOWLEDGE"' $W/trace1 | wc -l)
check "the client received ACKs ($acks)" test "$acks" -gt 0
# Example: this QP's RTT, from each ACK-requesting packet to the ACK of its PSN.
rtt=$(awk -v q="$CQPN" "$FIELD"'
  $2 == "rrxe_pkt_tx" && f("qpn") == q && f("ackreq") == 1 { sent[f("psn")] = $1 }
  $2 == "rrxe_pkt_rx" && f("qpn") == q && f("opcode") == "RC_ACKNOWLEDGE" && (f("psn") in sent) {
    us = ($1 - sent[f("psn")]) * 1e6; n++; sum += us; if (us > max) max = us
    delete sent[f("psn")] }
  END { if (n) printf "%d samples, mean %.1f us, max %.1f us\n", n, sum / n, max }' $W/trace1)
check "RTT of QP $CQPN from send and ACK timestamps: ${rtt:-none}" test -n "$rtt"
# (A retransmit timeout may fire on a slow host: not checked here.)
check "no error completion, NAK or fault rule hit in a clean exchange" \
  test "$(grep -cE ' rrxe_(comp_err|nak_tx|nak_rx|fault) ' $W/trace1)" = 0
show $W/trace1 12

# 2. A dropped SEND: the fault rule's hit, the timeout, the SEND again.
check "rule: drop the 3rd SEND sent" sh -c "echo 'dir=tx op=send nth=3 action=drop count=1' > $F"
trace_start
pingpong "loopback ibv_rc_pingpong 1 KiB x10, one SEND dropped" 10 18922
trace_stop $W/trace2
# Example: where did the retransmits come from?
hit=$(awk "$FIELD"' $2 == "rrxe_fault" { print f("qpn"), f("psn"), f("action"); exit }' $W/trace2)
read -r fq fpsn faction <<<"$hit"
check "rrxe_fault: rule 1 dropped QP $fq's SEND, PSN $fpsn" test "$faction" = drop
rt=$(awk -v q="$fq" -v p="$fpsn" "$FIELD"' $2 == "rrxe_retransmit" && f("qpn") == q && f("una") == p { print f("timeouts"), f("una"), f("resent"); exit }' $W/trace2)
read -r rtn rtuna rtres <<<"$rt"
check "rrxe_retransmit: QP $fq timed out ($rtn) at una $rtuna and sent $rtres again" \
  test "${rtn:-0}" -ge 1 -a "${rtuna:-x}" = "$fpsn" -a "${rtres:-0}" -ge 1
check "the SEND of PSN $fpsn went out again after the drop" \
  test "$(awk -v q="$fq" -v p="$fpsn" "$FIELD"' $2 == "rrxe_fault" { hit = 1 } hit && $2 == "rrxe_pkt_tx" && f("qpn") == q && f("psn") == p' $W/trace2 | wc -l)" -ge 1
awk "$FIELD"' $2 ~ /fault|retransmit|cwnd/' $W/trace2 | sed 's/^/# /'

# 3. A forced RNR NAK, sent by the responder and received by the requester.
check "rule: answer the 2nd SEND received with RNR NAK (timer 1)" \
  sh -c "printf 'clear\ndir=rx op=send nth=2 action=nak:rnr:1 count=1\n' > $F"
trace_start
pingpong "loopback ibv_rc_pingpong 1 KiB x10, one RNR NAK" 10 18923
trace_stop $W/trace3
ntx=$(awk "$FIELD"' $2 == "rrxe_nak_tx" { print f("qpn"), f("psn"), f("nak"); exit }' $W/trace3)
nrx=$(awk "$FIELD"' $2 == "rrxe_nak_rx" { print f("qpn"), f("psn"), f("nak"); exit }' $W/trace3)
read -r ntq ntpsn ntkind <<<"$ntx"
read -r nrq nrpsn nrkind <<<"$nrx"
check "rrxe_nak_tx: QP $ntq sent an RNR NAK at PSN $ntpsn" test "$ntkind" = rnr
check "rrxe_nak_rx: QP $nrq, its peer, received it at the same PSN" \
  test "$nrkind" = rnr -a "$nrpsn" = "$ntpsn" -a "$nrq" != "$ntq"
awk '$2 ~ /nak|fault/' $W/trace3 | sed 's/^/# /'

# 4. A forced remote access NAK: the error completion and the QP's move to ERR.
check "rule: answer the 1st SEND received with a remote access NAK" \
  sh -c "printf 'clear\ndir=rx op=send nth=1 action=nak:access count=1\n' > $F"
trace_start
pingpong "loopback ibv_rc_pingpong: the client fails on the NAK" 5 18924 fails
trace_stop $W/trace4
# Example: why did my QP go to error?
why=$(awk -v q="$CQPN" "$FIELD"'
  $2 == "rrxe_nak_rx" && f("qpn") == q { nak = f("nak") }
  $2 == "rrxe_comp_err" && f("qpn") == q && !st { st = f("status") }
  $2 == "rrxe_qp_state" && f("qpn") == q && f("new") == "ERR" { from = f("old") }
  END { print nak, st, from }' $W/trace4)
read -r wnak wst wfrom <<<"$why"
check "QP $CQPN: NAK $wnak received, completion $wst, then $wfrom->ERR" \
  test "$wnak $wst $wfrom" = "rem_access REM_ACCESS_ERR RTS"
awk '$2 ~ /nak|comp_err|qp_state|fault/' $W/trace4 | sed 's/^/# /' | head -n 20

check "clear the fault rules" sh -c "echo clear > $F"
rm -rf "$W"
user_teardown
tap_done
