#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Checks, before any long work, that a kernel tree can build rrxe.ko:
#   scripts/check-kdir.sh KDIR [RUSTC]
# a configured and built tree, CONFIG_RUST, CONFIG_INFINIBAND and
# CONFIG_INFINIBAND_USER_ACCESS, the Rust build metadata, and the rustc the tree was built
# with. Prints one line naming what is missing and how to get it, and exits 1; silent and
# 0 when the tree is fit. The Makefile runs it before every module build.
set -u
case "${1:-}" in -h|--help|'') sed -n '3,8s/^# \{0,1\}//p' "$0"; [ -n "${1:-}" ]; exit ;; esac
kdir=$1 rustc=${2:-rustc}
die() { echo "rrxe: $*" >&2; exit 1; }
[ -d "$kdir" ] || die "no kernel tree at KDIR=$kdir: build one with 'bash scripts/build-kernel.sh', or point KDIR at your kernel's build tree (/lib/modules/\$(uname -r)/build)"
cfg=$kdir/.config
[ -f "$cfg" ] || die "$kdir is not a configured kernel tree (no .config): configure and build it, or point KDIR at /lib/modules/\$(uname -r)/build"
[ -f "$kdir/Module.symvers" ] || die "the kernel tree at $kdir is not built (no Module.symvers): run make there first (modules_prepare is not enough for Rust modules)"
has() { grep -Eq "^$1=(y|m)\$" "$cfg"; }
has CONFIG_RUST || die "the kernel at $kdir has no Rust support (CONFIG_RUST=y): rrxe is a Rust module; rebuild that kernel with CONFIG_RUST=y (make rustavailable says what it needs)"
has CONFIG_INFINIBAND || die "the kernel at $kdir has no RDMA core (CONFIG_INFINIBAND=y or m): enable it and rebuild the kernel"
has CONFIG_INFINIBAND_USER_ACCESS || die "the kernel at $kdir has no user verbs (CONFIG_INFINIBAND_USER_ACCESS=y or m): enable it and rebuild the kernel"
has CONFIG_NET_UDP_TUNNEL || die "the kernel at $kdir has no UDP tunnel sockets (CONFIG_NET_UDP_TUNNEL=y or m): enable it and rebuild the kernel"
[ -f "$kdir/rust/libkernel.rmeta" ] || die "the kernel tree at $kdir has no Rust build metadata (rust/libkernel.rmeta): out-of-tree Rust modules need a tree built with CONFIG_RUST=y, or headers that ship it (see docs/install.md, 'Supported kernels')"
want=$(sed -n 's/^CONFIG_RUSTC_VERSION_TEXT="\(.*\)"$/\1/p' "$cfg")
if [ -n "$want" ]; then
  have=$("$rustc" --version 2>/dev/null) || die "no rustc at '$rustc': the kernel at $kdir was built with '$want'; install that rustc and pass RUSTC=/path/to/it"
  [ "$have" = "$want" ] || die "the kernel at $kdir was built with '$want', but RUSTC=$rustc is '$have': a Rust module must be built by the same rustc; install that one and pass RUSTC=/path/to/it"
fi
exit 0
