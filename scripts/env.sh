# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Common environment for rrxe's scripts: toolchain paths, the guest kernel chosen and its
# build cache location. Source it; it defines variables only and never fails.
#
# RRXE_KERNEL picks the kernel series (default 6.12, the one the README's commands use):
#   6.12  Debian's linux-source-6.12 (installed from the archive by scripts/setup.sh)
#   7.3   Debian's linux-source-7.3 (trixie-backports), fetched by scripts/kernel-source.sh
RRXE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RRXE_CACHE=${RRXE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rrxe}
RRXE_KERNELS="6.12 7.3"
RRXE_KERNEL=${RRXE_KERNEL:-6.12}
RRXE_KVER_PKG=linux-source-$RRXE_KERNEL
# RRXE_CC picks the compiler a kernel tree is built with (default clang):
#   clang  clang-19 and ld.lld-19 (LLVM=-19), the toolchain Rust for Linux is tested with
#   gcc    the host's gcc and binutils (Debian 12: gcc 12); bindgen still parses the C
#          headers with libclang 19, with the gcc-only flags filtered out (the kernel's
#          rust/Makefile and rrxe's Kbuild)
# A gcc tree has its own cache directory, kernel-<series>-gcc-<key>.
RRXE_CCS="clang gcc"
RRXE_CC=${RRXE_CC:-clang}
# rrxe_kernel_check WHO: RRXE_KERNEL is a known series, or WHO says so and the caller exits 2.
rrxe_kernel_check() {
  case " $RRXE_KERNELS " in *" $RRXE_KERNEL "*) return 0 ;; esac
  echo "$1: unknown kernel '$RRXE_KERNEL' (known: $RRXE_KERNELS)" >&2
  return 2
}
# rrxe_cc_check WHO: RRXE_CC is a known compiler, or WHO says so and the caller exits 2.
rrxe_cc_check() {
  case " $RRXE_CCS " in *" $RRXE_CC "*) return 0 ;; esac
  echo "$1: unknown compiler '$RRXE_CC' (known: $RRXE_CCS)" >&2
  return 2
}
# Empty before rust-web-src is installed: `|| true` keeps a `set -e` caller (setup.sh, which
# installs it) alive on a fresh machine, where ls fails.
RUST_LIB_SRC=${RUST_LIB_SRC:-$( (ls -d /usr/src/rustc-1.96*/library 2>/dev/null || true) | tail -n 1)}
KRUSTC=${KRUSTC:-/usr/bin/rustc}
BINDGEN=${BINDGEN:-$(command -v bindgen 2>/dev/null || echo "$HOME/.cargo/bin/bindgen")}
LIBCLANG_PATH=${LIBCLANG_PATH:-/usr/lib/llvm-19/lib}
export RUST_LIB_SRC LIBCLANG_PATH RRXE_KERNEL RRXE_CC
# Flags every kernel-tree make needs (kernel build and the out-of-tree module build). A gcc
# tree takes the kernel's default CC (gcc) and binutils.
KMAKE_FLAGS=("RUSTC=$KRUSTC" "BINDGEN=$BINDGEN" "RUST_LIB_SRC=$RUST_LIB_SRC")
[ "$RRXE_CC" != clang ] || KMAKE_FLAGS=(LLVM=-19 "${KMAKE_FLAGS[@]}")

# The version of the source package of $RRXE_KERNEL that the cache holds (or installed).
rrxe_kernel_src_version() {
  if [ -f "$RRXE_CACHE/src/$RRXE_KVER_PKG.version" ]; then
    cat "$RRXE_CACHE/src/$RRXE_KVER_PKG.version"
  else
    dpkg-query -W -f='${Version}\n' "$RRXE_KVER_PKG" 2>/dev/null
  fi
}
# The kernel config fragments of $RRXE_KERNEL: the common one, then the series' own if any.
rrxe_kernel_fragments() {
  echo "$RRXE_ROOT/qemu/kernel.config"
  [ ! -f "$RRXE_ROOT/qemu/kernel-$RRXE_KERNEL.config" ] || echo "$RRXE_ROOT/qemu/kernel-$RRXE_KERNEL.config"
}
# How a tree is built from the source and the fragments (scripts/build-kernel.sh): change
# this line whenever that recipe changes what it builds, so cached trees are rebuilt.
RRXE_KBUILD_RECIPE="tinyconfig + fragments + olddefconfig; bzImage modules; modules_install"
# The cache key: series, source package version, config fragments, build recipe, toolchain
# (for a gcc tree also the compiler's name, gcc's and binutils' versions).
rrxe_kernel_key() {
  {
    echo "$RRXE_KERNEL"
    rrxe_kernel_src_version
    # The options the fragments set, not their comments.
    rrxe_kernel_fragments | xargs cat | grep -E '^(CONFIG_|# CONFIG_.* is not set)'
    echo "$RRXE_KBUILD_RECIPE"
    "$KRUSTC" -V 2>/dev/null
    clang-19 --version 2>/dev/null | head -n 1
    "$BINDGEN" --version 2>/dev/null
    if [ "$RRXE_CC" = gcc ]; then
      echo "cc gcc"
      gcc --version 2>/dev/null | head -n 1
      ld --version 2>/dev/null | head -n 1
    fi
  } | sha256sum | cut -c1-16
}
# kernel-<series>-<key> for clang, kernel-<series>-<cc>-<key> for another compiler.
rrxe_kernel_cc_tag=; [ "$RRXE_CC" = clang ] || rrxe_kernel_cc_tag=$RRXE_CC-
RRXE_KBUILD=${RRXE_KBUILD:-$RRXE_CACHE/kernel-$RRXE_KERNEL-$rrxe_kernel_cc_tag$(rrxe_kernel_key)}
# KDIR: the built kernel tree (a user may point it at their own CONFIG_RUST kernel).
KDIR=${KDIR:-$RRXE_KBUILD/linux}
RRXE_MODROOT=${RRXE_MODROOT:-$RRXE_KBUILD/modroot}

# Guest root filesystems (scripts/build-rootfs.sh): Debian suites built with mmdebstrap into
# $RRXE_CACHE/rootfs-<suite>-<key>. Without one (RRXE_ROOTFS empty, the default) the guests
# boot with the host's / as their root.
RRXE_ROOTFS_SUITES="bookworm trixie sid"
RRXE_ROOTFS=${RRXE_ROOTFS:-}
# rrxe_rootfs_check WHO: RRXE_ROOTFS is empty or a known suite, or WHO says so (exit 2).
rrxe_rootfs_check() {
  case " $RRXE_ROOTFS_SUITES " in *" ${RRXE_ROOTFS:-none} "*) return 0 ;; esac
  [ -z "$RRXE_ROOTFS" ] && return 0
  echo "$1: unknown root '$RRXE_ROOTFS' (known: $RRXE_ROOTFS_SUITES)" >&2
  return 2
}
# The packages of every root: the test tools, and what building tests/user in it needs.
RRXE_ROOTFS_PACKAGES="bash mawk kmod iproute2 procps mount util-linux hostname python3
  iputils-ping ethtool rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest
  libibverbs-dev librdmacm-dev gcc libc6-dev make pkg-config"
# How scripts/build-rootfs.sh builds a root: change this line whenever that recipe changes
# what it builds, so cached roots are rebuilt.
RRXE_ROOTFS_RECIPE="mmdebstrap --variant=essential, no Valid-Until check, no docs/man/locales, qemu/rootfs-init as /usr/local/sbin/rrxe-init"
# rrxe_rootfs_key SUITE: the cache key of SUITE's root (packages, recipe, guest bootstrap).
rrxe_rootfs_key() {
  {
    echo "$1"
    echo $RRXE_ROOTFS_PACKAGES
    echo "$RRXE_ROOTFS_RECIPE"
    cat "$RRXE_ROOT/qemu/rootfs-init"
  } | sha256sum | cut -c1-16
}
rrxe_rootfs_dir() { echo "$RRXE_CACHE/rootfs-$1-$(rrxe_rootfs_key "$1")"; }
# What the guests on root SUITE run that is built for that root, under build/root-SUITE/:
# the tests/user programs (scripts/build-user-tests.sh) and the libibverbs provider
# (librrxe-rdmavN.so for the root's private ABI N). Bookworm has the host's rdma-core (ABI
# 34): its provider is the host's build/provider/. With no root: the host's builds.
rrxe_root_user_dir() {
  if [ -n "${1:-}" ]; then echo "$RRXE_ROOT/build/root-$1/user"; else echo "$RRXE_ROOT/tests/user"; fi
}
rrxe_root_provider_dir() {
  case "${1:-}" in
    ''|bookworm) echo "$RRXE_ROOT/build/provider" ;;
    *) echo "$RRXE_ROOT/build/root-$1/provider" ;;
  esac
}
