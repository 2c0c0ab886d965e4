#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Sets up a Debian 12 machine for rrxe from the package registries only, then builds (or
# reuses from the cache) the guest kernel. Idempotent: fast when everything is in place.
#   scripts/setup.sh [--kernel 6.12|7.3] [--cc clang|gcc] [--no-kernel]
# The kernel is 6.12 by default (or $RRXE_KERNEL), built with clang (or $RRXE_CC);
# scripts/build-kernel.sh builds it. --no-kernel: the packages and tools only.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '3,7s/^# \{0,1\}//p' "$0"; }
build_kernel=1
while [ $# -gt 0 ]; do
  case "$1" in
    --kernel) [ $# -ge 2 ] || { usage >&2; exit 2; }; export RRXE_KERNEL=$2; shift 2 ;;
    --cc) [ $# -ge 2 ] || { usage >&2; exit 2; }; export RRXE_CC=$2; shift 2 ;;
    --no-kernel) build_kernel=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
. scripts/env.sh
rrxe_kernel_check setup || exit 2
rrxe_cc_check setup || exit 2
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo

PKGS=(
  linux-source-6.12 rustc-web rust-web-src
  clang-19 lld-19 llvm-19 libclang-19-dev gcc
  bc bison flex libelf-dev libssl-dev make cpio xz-utils kmod dpkg-dev
  qemu-system-x86
  rdma-core ibverbs-utils ibverbs-providers libibverbs-dev librdmacm-dev rdmacm-utils perftest
  infiniband-diags
  iproute2 iperf3 ethtool python3
  tcpdump tshark
  nvme-cli fio nfs-kernel-server nfs-common
  dkms mmdebstrap
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  # tshark (tests/vm/capture.sh decodes the capture netdev's frames) asks whether
  # non-root users may capture: no, answered ahead for a noninteractive install.
  echo 'wireshark-common wireshark-common/install-setuid boolean false' | $SUDO debconf-set-selections
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The kernel's Rust must be exactly the rustc-web/rust-web-src pair (1.96): check it.
/usr/bin/rustc -V | grep -q '^rustc 1\.96' || { echo "setup: /usr/bin/rustc is not 1.96 ($(/usr/bin/rustc -V))"; exit 1; }
ls -d /usr/src/rustc-1.96*/library >/dev/null 2>&1 || { echo "setup: rust-web-src 1.96 library/ missing"; exit 1; }

# bindgen-cli, pinned (host tool, built with the machine's cargo).
BINDGEN_VERSION=0.73.2
if ! "$HOME/.cargo/bin/bindgen" --version 2>/dev/null | grep -q " $BINDGEN_VERSION\$"; then
  echo "setup: installing bindgen-cli $BINDGEN_VERSION"
  cargo install -q bindgen-cli --version "$BINDGEN_VERSION" --locked
fi

# cargo-fuzz for the proto fuzz targets (needs the machine's nightly toolchain to run).
if ! command -v cargo-fuzz >/dev/null 2>&1 && cargo +nightly --version >/dev/null 2>&1; then
  echo "setup: installing cargo-fuzz"
  cargo install -q cargo-fuzz --locked || echo "setup: cargo-fuzz unavailable; fuzzing will be skipped"
fi

# rdma-core's private headers (libibverbs/driver.h is not packaged), which the provider's
# build reads: trixie's 56.x source (private ABI 34, this host's 44.0) and sid's 65.x.
bash scripts/rdma-core-src.sh --all || echo "setup: rdma-core source unavailable; the provider will not build (scripts/rdma-core-src.sh)"

[ "$build_kernel" = 0 ] || bash scripts/build-kernel.sh
