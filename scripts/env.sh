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
# rrxe_kernel_check WHO: RRXE_KERNEL is a known series, or WHO says so and the caller exits 2.
rrxe_kernel_check() {
  case " $RRXE_KERNELS " in *" $RRXE_KERNEL "*) return 0 ;; esac
  echo "$1: unknown kernel '$RRXE_KERNEL' (known: $RRXE_KERNELS)" >&2
  return 2
}
RUST_LIB_SRC=${RUST_LIB_SRC:-$(ls -d /usr/src/rustc-1.96*/library 2>/dev/null | tail -n 1)}
KRUSTC=${KRUSTC:-/usr/bin/rustc}
BINDGEN=${BINDGEN:-$(command -v bindgen 2>/dev/null || echo "$HOME/.cargo/bin/bindgen")}
LIBCLANG_PATH=${LIBCLANG_PATH:-/usr/lib/llvm-19/lib}
export RUST_LIB_SRC LIBCLANG_PATH RRXE_KERNEL
# Flags every kernel-tree make needs (kernel build and the out-of-tree module build).
KMAKE_FLAGS=(LLVM=-19 "RUSTC=$KRUSTC" "BINDGEN=$BINDGEN" "RUST_LIB_SRC=$RUST_LIB_SRC")

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
# The cache key: series, source package version, config fragments, build recipe, toolchain.
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
  } | sha256sum | cut -c1-16
}
RRXE_KBUILD=${RRXE_KBUILD:-$RRXE_CACHE/kernel-$RRXE_KERNEL-$(rrxe_kernel_key)}
# KDIR: the built kernel tree (a user may point it at their own CONFIG_RUST kernel).
KDIR=${KDIR:-$RRXE_KBUILD/linux}
RRXE_MODROOT=${RRXE_MODROOT:-$RRXE_KBUILD/modroot}
