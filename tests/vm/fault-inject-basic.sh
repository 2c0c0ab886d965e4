#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 240
# Fault injection rules (debugfs rrxe/<dev>/faults, tests/user/fault_inject.c on loopback RC
# QPs): a lost 3rd READ response is recovered with the data right; seven drops end one QP in
# RETRY_EXC_ERR at retry_cnt 6 while another pair works on; one seed gives the same counts
# twice; a NAKed WRITE completes with REM_ACCESS_ERR, a forced RNR NAK delays its SEND by the
# encoded time; a WRITE packet held behind the next one and a SEND held 30 ms arrive right.
# The file refuses bad rules, rules beyond its limit (counted) and writers
# without CAP_NET_ADMIN.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
F=/sys/kernel/debug/rrxe/$DEV/faults
check "the rules file $F exists, mode 0600" test "$(stat -c %a "$F")" = 600
check "clear" sh -c "echo clear > $F"
check "a rule is added and listed in its canonical form" sh -c \
  "echo 'dir=tx qp=18 action=drop op=read_resp nth=3 count=1' > $F &&
   grep -qx 'id=1 qp=0x12 dir=tx op=read_resp nth=3 action=drop count=1 seen=0 hits=0 live' $F"
check "a bad rule is refused with EINVAL" test "$(errno_of_write "$F" 'dir=sideways action=drop')" = EINVAL
check "the bad rule left the rules as they were" test "$(wc -l < "$F")" = 1
# setpriv drops CAP_NET_ADMIN from the bounding set: the python3 it runs has it no more.
check "a writer without CAP_NET_ADMIN is refused with EPERM" \
  test "$(errno_of_write "$F" clear setpriv --bounding-set -net_admin)" = EPERM
check "its write changed nothing" test "$(wc -l < "$F")" = 1
before=$(dev_counter fault_rules_refused)
rules=$(for i in $(seq 1 8); do echo "dir=rx qp=$i action=drop"; done)
check "8 more rules do not fit beside one (at most 8): refused whole, ENOSPC" \
  test "$(errno_of_write "$F" "$rules")" = ENOSPC
after=$(dev_counter fault_rules_refused)
check "the refused rules are counted (fault_rules_refused $before -> $after)" \
  test "$((after - before))" = 8
check "clear, then 8 rules in one write fit" sh -c "printf 'clear\n%s\n' \"\$1\" > $F" _ "$rules"
check "8 rules listed" test "$(wc -l < "$F")" = 8
check "clear empties the list" sh -c "echo clear > $F && test ! -s $F"
# (errno 95: Python names it ENOTSUP, the same number as EOPNOTSUPP on Linux.)
check "delay and reorder on transmit are refused with EOPNOTSUPP" \
  test "$(errno_of_write "$F" 'dir=tx action=delay:100')/$(errno_of_write "$F" 'dir=tx action=reorder:2')" = ENOTSUP/ENOTSUP
check "delay and reorder on receive are accepted" sh -c \
  "printf 'clear\ndir=rx qp=7 action=delay:100\ndir=rx qp=7 action=reorder:2\n' > $F && test \"\$(wc -l < $F)\" = 2"
check "clear" sh -c "echo clear > $F"

# Every rule line of docs/fault-injection.md's examples (its ```faults blocks) is accepted.
examples=$(awk '/^```faults$/ {f=1; next} /^```/ {f=0} f' "$RRXE_ROOT/docs/fault-injection.md")
check "docs/fault-injection.md has example rules" test -n "$examples"
while IFS= read -r l; do
  check "docs example accepted: $l" sh -c "printf 'clear\n%s\n' \"\$1\" > $F && test \"\$(wc -l < $F)\" = 1" _ "$l"
done <<< "$examples"
check "clear" sh -c "echo clear > $F"

hits_before=$(dev_counter fault_hits)
out=$(timeout 180 "$RRXE_USER_BIN/fault_inject" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap fault_inject "$rc" "$out"
hits_after=$(dev_counter fault_hits)
check "fault_hits counts the rules' hits ($hits_before -> $hits_after)" \
  test "$((hits_after - hits_before))" -gt 0
user_teardown
tap_done
