# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# TAP output for the VM test scripts (sourced by guest-lib.sh): ok, not_ok, check, expect_fail,
# tap_done. Each line names the VM ($RRXE_VM).
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
