# shellcheck shell=bash
# Common environment for rrxe's scripts: toolchain paths and the kernel build cache location.
# Source it; it defines variables only and never fails.
RRXE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RRXE_CACHE=${RRXE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rrxe}
RRXE_KVER_PKG=linux-source-6.12
RUST_LIB_SRC=${RUST_LIB_SRC:-$(ls -d /usr/src/rustc-1.96*/library 2>/dev/null | tail -n 1)}
KRUSTC=${KRUSTC:-/usr/bin/rustc}
BINDGEN=${BINDGEN:-$(command -v bindgen 2>/dev/null || echo "$HOME/.cargo/bin/bindgen")}
LIBCLANG_PATH=${LIBCLANG_PATH:-/usr/lib/llvm-19/lib}
export RUST_LIB_SRC LIBCLANG_PATH
# Flags every kernel-tree make needs (kernel build and the out-of-tree module build).
KMAKE_FLAGS=(LLVM=-19 "RUSTC=$KRUSTC" "BINDGEN=$BINDGEN" "RUST_LIB_SRC=$RUST_LIB_SRC")

# The cache key: source package version + config fragment + build recipe + toolchain versions.
rrxe_kernel_key() {
  {
    dpkg-query -W -f='${Version}\n' "$RRXE_KVER_PKG" 2>/dev/null
    cat "$RRXE_ROOT/qemu/kernel.config" "$RRXE_ROOT/scripts/build-kernel.sh"
    "$KRUSTC" -V 2>/dev/null
    clang-19 --version 2>/dev/null | head -n 1
    "$BINDGEN" --version 2>/dev/null
  } | sha256sum | cut -c1-16
}
RRXE_KBUILD=${RRXE_KBUILD:-$RRXE_CACHE/kernel-$(rrxe_kernel_key)}
# KDIR: the built kernel tree (a user may point it at their own CONFIG_RUST kernel).
KDIR=${KDIR:-$RRXE_KBUILD/linux}
RRXE_MODROOT=${RRXE_MODROOT:-$RRXE_KBUILD/modroot}
