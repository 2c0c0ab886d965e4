# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Loading the kernel-verbs test module (tests/kverbs/rrxe_ktest.ko) and relaying its TAP:
# the module runs its whole test in its init and logs TAP lines "rrxe_ktest: ok N - ...",
# which become the calling script's TAP. Source after tests/vm/lib/guest-lib.sh.
#   KTEST_KO        (optional) the module (default: the checkout's tests/kverbs build)
#   KTEST_TIMEOUT   (optional) seconds insmod may take (default 240)
KTEST_KO=${KTEST_KO:-$RRXE_ROOT/tests/kverbs/rrxe_ktest.ko}
KTEST_TIMEOUT=${KTEST_TIMEOUT:-240}

# kv_insmod_tap ARGS...: insmod the module with ARGS, one check that it returned 0, its
# TAP lines from this load as ours (diagnostics as comments), one check that its plan
# matches its results, then rmmod.
kv_insmod_tap() {
  local marker t0 t1 out rc tapf plan='' nlines=0 line
  marker="kverbs-marker-vm$RRXE_VM-$$-$(date +%s%N)"
  echo "$marker" > /dev/kmsg
  t0=$(date +%s.%N)
  out=$(timeout -s KILL "$KTEST_TIMEOUT" insmod "$KTEST_KO" "$@" 2>&1); rc=$?
  t1=$(date +%s.%N)
  if [ "$rc" = 0 ]; then
    ok "insmod rrxe_ktest.ko $* returned 0 after $(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s"
  else
    not_ok "insmod rrxe_ktest.ko $* (exit $rc)"; echo "$out" | sed 's/^/# /'
  fi
  # (No process substitution: the guest has no /dev/fd.)
  tapf=$(mktemp)
  dmesg --notime | sed -n "/$marker/,\$p" | grep -a '^rrxe_ktest: ' | sed 's/^rrxe_ktest: //' > "$tapf"
  while IFS= read -r line; do
    case "$line" in
      "ok "*) ok "ktest: ${line#* - }"; nlines=$((nlines + 1)) ;;
      "not ok "*) not_ok "ktest: ${line#* - }"; nlines=$((nlines + 1)) ;;
      1..*) plan=${line#1..} ;;
      *) echo "# ktest: ${line#\# }" ;;
    esac
  done < "$tapf"
  rm -f "$tapf"
  if [ -n "$plan" ] && [ "$plan" = "$nlines" ] && [ "$nlines" -gt 0 ]; then
    ok "ktest: finished, plan 1..$plan matches the $nlines results"
  else
    not_ok "ktest: finished with a TAP plan (plan '${plan:-none}', $nlines results)"
  fi
  check "rmmod rrxe_ktest" rmmod rrxe_ktest
}
