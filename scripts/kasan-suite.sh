#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The whole test suite on a KASAN guest kernel, in one command. Not part of CI: it needs a
# second kernel build (about 30 min on 2 busy cores, cached afterwards) and runs about 4x
# longer than the suite (TCG plus KASAN), so it is run by hand, e.g. before resolving a
# change to memory handling:
#
#   bash scripts/kasan-suite.sh [--kernel 6.12|7.3] [VM-TEST-NAME...]
#
# It clones the committed tree (HEAD) to $RRXE_KASAN_TREE (default /var/tmp/rrxe-kasan-tree:
# rx-spoof runs its injector as `nobody`, which cannot read a tree under /root; a clone, not
# an export, since tests/dkms.sh stages the module's source with `git ls-files`),
# appends qemu/kernel-kasan.config to that copy's qemu/kernel.config (so its kernel has its
# own cache key) in place of the lockdep line (lockdep is the normal suite's, on every CI
# run; under KASAN it instruments its own bookkeeping too, and the whole run did not fit
# 140 minutes with both: 35 of 45 tests), builds that kernel, and runs tests/run-all.sh there with every VM
# timeout multiplied by 4, builds and VM tests only (the host tests and fuzzing do not
# depend on the guest kernel). The harness already fails a run on any KASAN report on a
# console.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '3,19s/^# \{0,1\}//p' "$0"; }
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --kernel) [ $# -ge 2 ] || { usage >&2; exit 2; }; export RRXE_KERNEL=$2; shift 2 ;;
    -*) echo "kasan-suite: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) [ -f "tests/vm/$1.sh" ] || { echo "kasan-suite: no VM test '$1'" >&2; exit 2; }; names+=("$1"); shift ;;
  esac
done
. scripts/env.sh
rrxe_kernel_check kasan-suite || exit 2
# Rust with KASAN needs clang: both kernels' init/Kconfig say RUST depends on
# "!KASAN || CC_IS_CLANG", so a gcc KASAN tree would lose CONFIG_RUST.
[ "$RRXE_CC" = clang ] || { echo "kasan-suite: a KASAN kernel with Rust needs clang (RRXE_CC=$RRXE_CC)" >&2; exit 2; }
tree=${RRXE_KASAN_TREE:-/var/tmp/rrxe-kasan-tree}
rm -rf "$tree"
mkdir -p "$tree"
git clone -q --no-hardlinks . "$tree"
grep -v '^CONFIG_PROVE_LOCKING=' qemu/kernel.config > "$tree/qemu/kernel.config"
cat qemu/kernel-kasan.config >> "$tree/qemu/kernel.config"
cd "$tree"
# A fresh environment for the copy: its own kernel key, tree and module root.
unset RRXE_KBUILD KDIR RRXE_MODROOT
bash scripts/build-kernel.sh
# 4-level paging in the KASAN guests. With 5-level paging (TCG's -cpu max has LA57), an
# interrupt during early boot can make KASAN report a wild access that is not one: while
# identify_boot_cpu() rebuilds boot_cpu_data's capabilities (the memset in identify_cpu),
# pgtable_l5_enabled() reads false, so KASAN checks a 5-level direct-map address against
# the 4-level shadow bounds. One KASAN suite run saw it 3 times in about 60 boots, in swapper during
# start_kernel, before any module (netns-link, nfs-rdma, rx-spoof). no5lvl keeps the answer
# constant.
export RRXE_GUEST_APPEND="no5lvl${RRXE_GUEST_APPEND:+ $RRXE_GUEST_APPEND}"
# The stack-frame check scales with the stack: KASAN doubles x86-64's 16 KiB
# (KASAN_STACK_ORDER in arch/x86/include/asm/page_64_types.h) and its redzones widen every
# frame (Qp::new, when it still built the QP's parts on its own stack: 2040 bytes in the test
# kernel's build, 2120 in KASAN's).
export RRXE_STACK_FRAME_LIMIT=${RRXE_STACK_FRAME_LIMIT:-4096}
RRXE_VM_ONLY=1 RRXE_TIMEOUT_SCALE=${RRXE_TIMEOUT_SCALE:-4} exec bash tests/run-all.sh --skip-setup --kernel "$RRXE_KERNEL" "${names[@]}"
