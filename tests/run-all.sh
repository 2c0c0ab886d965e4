#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# All of rrxe's tests: setup (idempotent), host unit/property/simulation tests, the module
# and provider builds, then the VM tests in tests/vm/. Ends with "N passed, N failed".
#   tests/run-all.sh [--kernel 6.12|7.3] [--root bookworm|trixie|sid] [--cc clang|gcc]
#                    [--skip-setup] [VM-TEST-NAME...]
#   tests/run-all.sh --extended [--kernel 6.12|7.3] [--skip-setup]
#   tests/run-all.sh --list | --help
# With no kernel and no names (the README's test command, and CI's): every VM test but those
# of tests/vm/sets/extended on the default kernel (6.12) with the host's root, then the cross
# set (tests/vm/sets/other-kernel) on 7.3 with Debian sid's root (rdma-core 65), which ends
# with its matrix line. --extended: the rest, which does not fit CI's time: the VM tests of
# tests/vm/sets/extended and 20 s of cargo-fuzz on each fuzz target.
# --kernel K: every VM test (or the named ones) on K only. Names without --kernel: those
# tests on 6.12. Unknown options and test names are refused before anything runs.
# --root SUITE (or $RRXE_ROOTFS): the guests boot that cached Debian root filesystem
# (scripts/build-rootfs.sh builds it if needed); the VM tests named, or tests/vm/sets/root,
# on --kernel K or 6.12, with tests/user and the provider built for that root. No host tests.
# --cc gcc (or $RRXE_CC=gcc): every kernel of the run is the tree built with gcc
# (scripts/build-kernel.sh --cc gcc, cached apart from the clang trees); the VM tests
# named, or tests/vm/sets/gcc, on --kernel K or 6.12, with the module builds and DKMS
# against that tree. No host tests. --cc clang is the default.
# RRXE_VM_ONLY=1 skips the host tests and fuzzing (scripts/kasan-suite.sh: they do not
# depend on the guest kernel and run in the normal suite).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
usage() { sed -n '3,24s/^# \{0,1\}//p' "$0"; }
all_tests() { ls tests/vm/*.sh | xargs -n1 basename | sed 's/\.sh$//'; }
skip_setup=0 kernel= names=() extended=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --list) all_tests; exit 0 ;;
    --skip-setup) skip_setup=1; shift ;;
    --extended) extended=1; shift ;;
    --kernel) [ $# -ge 2 ] || { usage >&2; exit 2; }; kernel=$2; shift 2 ;;
    --root) [ $# -ge 2 ] || { usage >&2; exit 2; }; export RRXE_ROOTFS=$2; shift 2 ;;
    --cc) [ $# -ge 2 ] || { usage >&2; exit 2; }; export RRXE_CC=$2; shift 2 ;;
    -*) echo "run-all: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
. scripts/env.sh
[ -z "$kernel" ] || RRXE_KERNEL=$kernel rrxe_kernel_check run-all || exit 2
rrxe_rootfs_check run-all || exit 2
rrxe_cc_check run-all || exit 2
for t in "${names[@]}"; do
  [ -f "tests/vm/$t.sh" ] || { echo "run-all: no VM test '$t' (tests/run-all.sh --list shows them)" >&2; exit 2; }
done
mapfile -t other_set < <(grep -v '^#' tests/vm/sets/other-kernel | xargs -n1)
for t in "${other_set[@]}"; do
  [ -f "tests/vm/$t.sh" ] || { echo "run-all: tests/vm/sets/other-kernel names no VM test '$t'" >&2; exit 2; }
done
mapfile -t root_set < <(grep -v '^#' tests/vm/sets/root | xargs -n1)
mapfile -t extended_set < <(grep -v '^#' tests/vm/sets/extended | xargs -n1)
for t in "${extended_set[@]}"; do
  [ -f "tests/vm/$t.sh" ] || { echo "run-all: tests/vm/sets/extended names no VM test '$t'" >&2; exit 2; }
done
if [ "$extended" = 1 ] && { [ ${#names[@]} -gt 0 ] || [ -n "${RRXE_ROOTFS:-}" ]; }; then
  echo "run-all: --extended runs tests/vm/sets/extended: no test names or --root with it" >&2; exit 2
fi
# The default run's VM tests: all but the extended set.
default_tests() { all_tests | grep -vxF -f <(printf '%s\n' "${extended_set[@]}"); }
mapfile -t gcc_set < <(grep -v '^#' tests/vm/sets/gcc | xargs -n1)
for t in "${gcc_set[@]}"; do
  [ -f "tests/vm/$t.sh" ] || { echo "run-all: tests/vm/sets/gcc names no VM test '$t'" >&2; exit 2; }
done
# The plan: one "KERNEL/ROOT:TEST TEST ..." entry per run, in order (ROOT empty: the host's).
plan=()
# --root: a run about one root filesystem: no host checks (check-kdir, DKMS) either.
root_only=${RRXE_ROOTFS:-}
if [ -n "$RRXE_ROOTFS" ]; then
  plan=("${kernel:-6.12}/$RRXE_ROOTFS:${names[*]:-${root_set[*]}}")
  # The host tests do not depend on the guests' root filesystem.
  RRXE_VM_ONLY=1
elif [ "$extended" = 1 ]; then
  plan=("${kernel:-6.12}/:${extended_set[*]}")
elif [ -n "$kernel" ]; then
  plan=("$kernel/:${names[*]:-$(all_tests | xargs)}")
elif [ "$RRXE_CC" != clang ]; then
  plan=("6.12/:${names[*]:-${gcc_set[*]}}")
elif [ ${#names[@]} -gt 0 ]; then
  plan=("6.12/:${names[*]}")
else
  plan=("6.12/:$(default_tests | xargs)" "7.3/sid:${other_set[*]}")
fi
# The host tests do not depend on the compiler the guest kernel was built with.
[ "$RRXE_CC" = clang ] || RRXE_VM_ONLY=1
# A test whose header says "# root: host" needs the host's root (install-modprobe builds and
# installs the module inside the guest with the host's toolchain): in an entry with another
# root it runs in an entry of its own, with the host's root, just before.
split=()
for entry in "${plan[@]}"; do
  k=${entry%%/*} r=${entry#*/}; r=${r%%:*}
  host=() rest=()
  for t in ${entry#*:}; do
    if [ -n "$r" ] && grep -q '^# root: host' "tests/vm/$t.sh"; then host+=("$t"); else rest+=("$t"); fi
  done
  [ ${#host[@]} = 0 ] || split+=("$k/:${host[*]}")
  [ ${#rest[@]} = 0 ] || split+=("$k/$r:${rest[*]}")
done
plan=("${split[@]}")

passed=0 failed=0 dkms_done=
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
# tap_host NAME CMD...: a host test printing TAP; each ok passes, each not ok fails.
tap_host() {
  local name=$1 log l; shift
  log=$(mktemp)
  "$@" >"$log" 2>&1; local rc=$?
  cat "$log"
  passed=$((passed + $(grep -c '^ok ' "$log")))
  while IFS= read -r l; do [ -n "$l" ] && fail "$name: ${l#not ok }"; done < <(grep '^not ok ' "$log")
  [ "$rc" = 0 ] || grep -q '^not ok ' "$log" || fail "$name: exit $rc"
  rm -f "$log"
}
# use_kernel K: this script's and its children's kernel tree is K's from now on.
use_kernel() {
  export RRXE_KERNEL=$1
  unset RRXE_KBUILD KDIR RRXE_MODROOT
  . scripts/env.sh
}

# Setup: the packages, then the first kernel of the plan in the foreground. Every later
# kernel is built in the background from the start, with idle priority (SCHED_IDLE: it
# only takes CPU time that nothing else wants: the serial stretches of the first build,
# fuzzing's one core, the second core while a one-VM test runs), so a cold run does not
# pay for two kernel builds in a row. Its output is shown, and waited for, at its turn.
bg_kernels=() bg_roots=()
if [ "$skip_setup" = 0 ]; then
  note "setup: packages and tools"
  bash scripts/setup.sh --no-kernel || { fail "scripts/setup.sh"; finish; }
  first=${plan[0]%%/*}
  mkdir -p qemu/out
  for entry in "${plan[@]:1}"; do
    k=${entry%%/*} r=${entry#*/}; r=${r%%:*}
    if [ "$k" != "$first" ] && [[ " ${bg_kernels[*]} " != *" $k:"* ]]; then
      note "setup: kernel $k, in the background (log: qemu/out/build-kernel-$k.log)"
      chrt --idle 0 bash scripts/build-kernel.sh --kernel "$k" >"qemu/out/build-kernel-$k.log" 2>&1 &
      bg_kernels+=("$k:$!")
    fi
    # A later entry's root filesystem (mostly downloads) is built beside the first kernel.
    if [ -n "$r" ] && [[ " ${bg_roots[*]} " != *" $r:"* ]]; then
      note "setup: root filesystem $r, in the background (log: qemu/out/build-rootfs-$r.log)"
      bash scripts/build-rootfs.sh --root "$r" >"qemu/out/build-rootfs-$r.log" 2>&1 &
      bg_roots+=("$r:$!")
    fi
  done
  note "setup: kernel $first"
  bash scripts/build-kernel.sh --kernel "$first" || { fail "scripts/build-kernel.sh --kernel $first"; finish; }
fi
# wait_kernel K: waits for K's background build, if any, and shows its log.
wait_kernel() {
  local e rc
  for e in "${bg_kernels[@]}"; do
    [ "${e%%:*}" = "$1" ] || continue
    note "setup: waiting for kernel $1's background build"
    wait "${e#*:}"; rc=$?
    cat "qemu/out/build-kernel-$1.log"
    [ "$rc" = 0 ] || { fail "scripts/build-kernel.sh --kernel $1"; return 1; }
  done
  return 0
}
# wait_root R: waits for root filesystem R's background build, if any, and shows its log's
# end (build_root then finds it cached, or builds it and stops the run if that fails).
wait_root() {
  local e
  for e in "${bg_roots[@]}"; do
    [ "${e%%:*}" = "$1" ] || continue
    note "setup: waiting for root filesystem $1's background build"
    wait "${e#*:}"
    tail -n 5 "qemu/out/build-rootfs-$1.log"
  done
}

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

if [ "${RRXE_VM_ONLY:-0}" = 1 ]; then
  note "fuzz: not run (RRXE_VM_ONLY=1)"
elif [ "$extended" = 0 ]; then
  note "fuzz: not in this run (tests/run-all.sh --extended runs it; the fuzz bodies run on stable in cargo test)"
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

if [ -n "$root_only" ]; then
  note "check: tests/check-kdir.sh, tests/help.sh, tests/docs.sh and tests/dkms.sh not run (--root: they check the host's build, not the guests' root)"
else
  note "check: make refuses an unfit kernel tree at once, saying why (tests/check-kdir.sh)"
  tap_host "check-kdir" bash tests/check-kdir.sh
  note "check: every command answers --help and -h without side effects (tests/help.sh)"
  tap_host "help" bash tests/help.sh
  note "check: the documents agree with the code: counters, test names, links (tests/docs.sh)"
  tap_host "docs" bash tests/docs.sh
fi

build_modules() { # rrxe.ko, rrxe_ktest.ko and rrxe_movebuf.ko for the current kernel
note "build: rrxe.ko (kernel $RRXE_KERNEL)"
if make -s modules >build.log 2>&1; then pass; else cat build.log; fail "make modules (rrxe.ko)"; fi
# An eighth of the kernel stack: 2 KiB of x86-64's 16 KiB. A KASAN kernel doubles the stack
# (KASAN_STACK_ORDER) and pads every frame with redzones: scripts/kasan-suite.sh sets 4096.
limit=${RRXE_STACK_FRAME_LIMIT:-2048}
note "check: no stack frame over $limit bytes in rrxe.ko (an eighth of the kernel stack)"
big=$(objdump -d rrxe.ko | python3 scripts/stack-frames.py "$limit")
if [ -z "$big" ]; then pass; else echo "$big"; fail "stack frames over $limit bytes in rrxe.ko"; fi

note "build: rrxe_ktest.ko (kernel-verbs test module)"
if make -s -C tests/kverbs >>build.log 2>&1; then pass; else tail -n 40 build.log; fail "make -C tests/kverbs (rrxe_ktest.ko)"; fi
note "build: rrxe_movebuf.ko (test dma-buf exporter)"
if make -s -C tests/movebuf >>build.log 2>&1; then pass; else tail -n 40 build.log; fail "make -C tests/movebuf (rrxe_movebuf.ko)"; fi

if [ -z "$root_only" ] && [[ " $dkms_done " != *" $RRXE_KERNEL "* ]]; then
  note "check: DKMS adds, builds and installs rrxe against kernel $RRXE_KERNEL (tests/dkms.sh)"
  tap_host "dkms ($RRXE_KERNEL)" bash tests/dkms.sh
  dkms_done+=" $RRXE_KERNEL"
fi
}


build_root() { # the root filesystem $RRXE_ROOTFS, and what its guests run built for it
note "setup: root filesystem $RRXE_ROOTFS (scripts/build-rootfs.sh)"
local dir
dir=$(bash scripts/build-rootfs.sh --root "$RRXE_ROOTFS") || { fail "scripts/build-rootfs.sh --root $RRXE_ROOTFS"; finish; }
sed 's/^/  /' "$dir/.rrxe-info"
note "build: tests/user in the $RRXE_ROOTFS root (scripts/build-user-tests.sh)"
if bash scripts/build-user-tests.sh --root "$RRXE_ROOTFS" >>build.log 2>&1; then pass
else tail -n 40 build.log; fail "scripts/build-user-tests.sh --root $RRXE_ROOTFS"; fi
local pdir
pdir=$(rrxe_root_provider_dir "$RRXE_ROOTFS")
if [ -n "${RRXE_PROVIDER_DIR:-}" ]; then
  note "build: none for the provider: the guests load the one in RRXE_PROVIDER_DIR=$RRXE_PROVIDER_DIR ($(cd "$RRXE_PROVIDER_DIR" 2>/dev/null && echo librrxe-rdmav*.so))"
elif [ "$pdir" = "$ROOT/build/provider" ]; then
  note "build: the provider for $RRXE_ROOTFS is the host's (same rdma-core ABI): $pdir"
else
  note "build: the provider for the $RRXE_ROOTFS root (provider/install.sh --sysroot) into $pdir"
  if bash provider/install.sh --sysroot "$dir" --destdir / --libdir "$pdir" --confdir "$pdir" >>build.log 2>&1; then pass
  else tail -n 40 build.log; fail "provider/install.sh --sysroot $dir"; fi
fi
}

run_vm_tests() { # TEST...: on the current kernel
local t f vms to retries append smp vrc i o p f2 l
out=$ROOT/qemu/out
mkdir -p "$out"
for t in "$@"; do
  f=tests/vm/$t.sh
  vms=$(sed -n 's/^# vms: *//p' "$f" | head -n 1); vms=${vms:-1}
  to=$(sed -n 's/^# timeout: *//p' "$f" | head -n 1); to=${to:-300}
  # A slower kernel (scripts/kasan-suite.sh: KASAN, about 4x) scales every VM timeout.
  to=$(( to * ${RRXE_TIMEOUT_SCALE:-1} ))
  retries=$(sed -n 's/^# retries: *//p' "$f" | head -n 1); retries=${retries:-0}
  append=$(sed -n 's/^# append: *//p' "$f" | head -n 1)
  # CPUs per VM (default 1): a test of what needs more than one CPU says so.
  smp=$(sed -n 's/^# smp: *//p' "$f" | head -n 1); smp=${smp:-1}
  note "VM test $t ($vms VMs$([ "$smp" = 1 ] || echo ", $smp CPUs each"))"
  qemu/run-vms --vms "$vms" --smp "$smp" --timeout "$to" --out "$out" --name "$t" --append "$append" "$f"
  vrc=$?
  # A test known to be timing-sensitive may declare retries; a failed attempt is reported.
  while [ "$vrc" != 0 ] && [ "$retries" -gt 0 ]; do
    retries=$((retries - 1))
    # The failed attempt's output and consoles stay, beside the next attempt's.
    for i in $(seq 0 $((vms - 1))); do
      for x in out console; do cp -f "$out/$t-vm$i.$x" "$out/$t-vm$i.failed-$retries.$x" 2>/dev/null; done
    done
    echo "RETRY: $t failed (see below; its output: $out/$t-vm*.failed-$retries.*); running it again. Failed attempt's failures:"
    for i in $(seq 0 $((vms - 1))); do grep -a '^not ok ' "$out/$t-vm$i.out" | sed 's/^/  /'; done
    qemu/run-vms --vms "$vms" --smp "$smp" --timeout "$to" --out "$out" --name "$t" --append "$append" "$f"
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
}

note "build: $(basename build/provider/librrxe-rdmav*.so 2>/dev/null || echo 'the provider')"
if make -s provider >build.log 2>&1; then pass; else tail -n 40 build.log; fail "make provider"; fi
if [[ " ${plan[*]} " == *"/:"* ]]; then
  note "build: tests/user (user-verbs test programs)"
  if make -s -C tests/user >>build.log 2>&1; then pass; else tail -n 40 build.log; fail "make -C tests/user"; fi
fi

for entry in "${plan[@]}"; do
  k=${entry%%/*} r=${entry#*/}; r=${r%%:*}
  wait_kernel "$k" || continue
  use_kernel "$k"
  export RRXE_ROOTFS=$r
  read -ra tests <<<"${entry#*:}"
  note "kernel $RRXE_KERNEL (built with $RRXE_CC): $KDIR (cold build took $(cat "$RRXE_KBUILD/build-seconds" 2>/dev/null || echo '?') s), ${#tests[@]} VM tests${r:+, root filesystem $r}"
  p0=$passed f0=$failed
  if [ -n "$r" ]; then wait_root "$r"; build_root; fi
  build_modules
  run_vm_tests "${tests[@]}"
  if [ -n "$r" ]; then
    # The cell's line, in tests/matrix.sh's form (rdma-core's version as that root has it).
    v=$(sed -n 's/^rdma-core //p' "$(rrxe_rootfs_dir "$r")/.rrxe-info" 2>/dev/null | sed 's/-[^-]*$//; s/\.0$//')
    echo "matrix: kernel $k / rdma-core ${v:-?} ($r): $((passed - p0)) passed, $((failed - f0)) failed"
  fi
done
finish
