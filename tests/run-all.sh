#!/usr/bin/env bash
# All of rrxe's tests: setup (idempotent), host unit/property/simulation tests, the module
# and provider builds, then every VM test in tests/vm/. Ends with "N passed, N failed".
#   tests/run-all.sh [--skip-setup] [VM-TEST-NAME...]
# RRXE_VM_ONLY=1 skips the host tests and fuzzing (scripts/kasan-suite.sh: they do not
# depend on the guest kernel and run in the normal suite).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
skip_setup=0
[ "${1:-}" = --skip-setup ] && { skip_setup=1; shift; }
passed=0 failed=0
failures=()
t0=$(date +%s)
note() { printf '\n=== %s (t=%ds)\n' "$*" "$(( $(date +%s) - t0 ))"; }
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); failures+=("$1"); echo "FAILED: $1"; }
finish() {
  echo
  echo "=== summary (${SECONDS}s)"
  for f in "${failures[@]}"; do echo "  failed: $f"; done
  echo "$passed passed, $failed failed"
  [ "$failed" = 0 ]
  exit
}

if [ "$skip_setup" = 0 ]; then
  note "setup"
  bash scripts/setup.sh || { fail "scripts/setup.sh"; finish; }
fi
. scripts/env.sh
echo "kernel: $KDIR (cold build took $(cat "$RRXE_KBUILD/build-seconds" 2>/dev/null || echo '?') s)"

# The provider's layout test must really compare against rdma-core's headers here.
export RRXE_REQUIRE_RDMA_CORE_SRC=1
if [ "${RRXE_VM_ONLY:-0}" = 1 ]; then
  note "host tests: not run (RRXE_VM_ONLY=1: this run is about the guest kernel; the host tests do not depend on it)"
else
  note "host tests: cargo test --workspace"
  log=$(mktemp)
  cargo test --workspace --release 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  hp=$(grep -E '^test result:' "$log" | sed -E 's/.* ([0-9]+) passed.*/\1/' | paste -sd+ | bc)
  hf=$(grep -E '^test result:' "$log" | sed -E 's/.* ([0-9]+) failed.*/\1/' | paste -sd+ | bc)
  passed=$((passed + ${hp:-0}))
  if [ "$rc" != 0 ] || [ "${hf:-0}" != 0 ]; then
    failed=$((failed + ${hf:-0}))
    fail "cargo test --workspace (exit $rc)"
  fi
  rm -f "$log"
fi

note "build: rrxe.ko"
if make -s modules >build.log 2>&1; then pass; else cat build.log; fail "make modules (rrxe.ko)"; fi
# An eighth of the kernel stack: 2 KiB of x86-64's 16 KiB. A KASAN kernel doubles the stack
# (KASAN_STACK_ORDER) and pads every frame with redzones: scripts/kasan-suite.sh sets 4096.
limit=${RRXE_STACK_FRAME_LIMIT:-2048}
note "check: no stack frame over $limit bytes in rrxe.ko (an eighth of the kernel stack)"
big=$(objdump -d rrxe.ko | python3 scripts/stack-frames.py "$limit")
if [ -z "$big" ]; then pass; else echo "$big"; fail "stack frames over $limit bytes in rrxe.ko"; fi

if [ "${RRXE_VM_ONLY:-0}" = 1 ]; then
  note "fuzz: not run (RRXE_VM_ONLY=1)"
else
  note "fuzz: proto parse_packet, responder, caps and uwqe, 20 s each (cargo-fuzz, nightly)"
  if cargo +nightly --version >/dev/null 2>&1 && command -v cargo-fuzz >/dev/null; then
    for t in parse_packet responder caps uwqe; do
      if (cd drivers/rrxe/proto/fuzz && cargo +nightly fuzz run "$t" -- -max_total_time=20 >fuzz-$t.log 2>&1); then
        pass; tail -n 1 "drivers/rrxe/proto/fuzz/fuzz-$t.log"
      else
        tail -n 30 "drivers/rrxe/proto/fuzz/fuzz-$t.log"; fail "cargo fuzz run $t"
      fi
    done
  else
    echo "SKIP: no nightly toolchain or cargo-fuzz here (the fuzz bodies still run on stable in cargo test)"
  fi
fi

note "build: rrxe_ktest.ko (kernel-verbs test module)"
if make -s -C tests/kverbs >>build.log 2>&1; then pass; else tail -n 40 build.log; fail "make -C tests/kverbs (rrxe_ktest.ko)"; fi
note "build: librrxe-rdmav34.so"
if make -s provider >>build.log 2>&1; then pass; else tail -n 40 build.log; fail "make provider"; fi
note "build: tests/user (user-verbs test programs)"
if make -s -C tests/user >>build.log 2>&1; then pass; else tail -n 40 build.log; fail "make -C tests/user"; fi

out=$ROOT/qemu/out
mkdir -p "$out"
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=($(ls tests/vm/*.sh | xargs -n1 basename | sed 's/\.sh$//'))
for t in "${tests[@]}"; do
  f=tests/vm/$t.sh
  vms=$(sed -n 's/^# vms: *//p' "$f" | head -n 1); vms=${vms:-1}
  to=$(sed -n 's/^# timeout: *//p' "$f" | head -n 1); to=${to:-300}
  # A slower kernel (scripts/kasan-suite.sh: KASAN, about 4x) scales every VM timeout.
  to=$(( to * ${RRXE_TIMEOUT_SCALE:-1} ))
  retries=$(sed -n 's/^# retries: *//p' "$f" | head -n 1); retries=${retries:-0}
  append=$(sed -n 's/^# append: *//p' "$f" | head -n 1)
  note "VM test $t ($vms VMs)"
  qemu/run-vms --vms "$vms" --timeout "$to" --out "$out" --name "$t" --append "$append" "$f"
  vrc=$?
  # A test known to be timing-sensitive may declare retries; a failed attempt is reported.
  while [ "$vrc" != 0 ] && [ "$retries" -gt 0 ]; do
    retries=$((retries - 1))
    echo "RETRY: $t failed (see below); running it again. Failed attempt's failures:"
    for i in $(seq 0 $((vms - 1))); do grep -a '^not ok ' "$out/$t-vm$i.out" | sed 's/^/  /'; done
    qemu/run-vms --vms "$vms" --timeout "$to" --out "$out" --name "$t" --append "$append" "$f"
    vrc=$?
  done
  for i in $(seq 0 $((vms - 1))); do
    o=$out/$t-vm$i.out
    sed -n '/^RRXE-BOOTED/,$p' "$o" | grep -av '^RRXE-' 
    p=$(grep -ac '^ok ' "$o"); f2=$(grep -a '^not ok ' "$o")
    passed=$((passed + p))
    while IFS= read -r l; do [ -n "$l" ] && fail "$t: ${l#not ok }"; done <<<"$f2"
  done
  [ "$vrc" = 0 ] || fail "$t: VM run (timeout, splat or script failure; see qemu/out/$t-vm*.console)"
done
finish
