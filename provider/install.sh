#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Builds librrxe-rdmavN.so (the rrxe libibverbs provider; N is the private ABI of the
# libibverbs it is built for, IBVERBS_PRIVATE_N) and installs it with its driver file.
#
#   provider/install.sh [options]
#     --libdir DIR    where librrxe-rdmavN.so goes
#                     (default: libibverbs' provider dir, /usr/lib/<multiarch>/libibverbs)
#     --confdir DIR   where rrxe.driver goes (default: /etc/libibverbs.d)
#     --destdir DIR   staging root prepended to both (also $DESTDIR); paths written into
#                     rrxe.driver stay the run-time ones
#     --sysroot DIR   build for the libibverbs installed under DIR (libibverbs-dev's headers
#                     and libibverbs.so.1; sets RRXE_SYSROOT, see provider/build.rs), in a
#                     cargo target dir of its own (target/sysroot/<DIR with / as _>), and
#                     install into DIR (the default --destdir)
#     --abs-driver    write "driver <libdir>/librrxe" even for the default libdir
#     --debug         build the dev profile instead of release
#     --no-build      install what the target dir's <profile>/librrxe.so already holds
#     --uninstall     remove the librrxe-rdmav*.so and rrxe.driver these options name
#
# N comes from the built library: the IBVERBS_PRIVATE_N version its imports need. The build
# finds libibverbs' private headers in an rdma-core source of the same ABI
# (scripts/rdma-core-src.sh, or RRXE_RDMA_CORE_SRC).
#
# The driver file. libibverbs reads every regular file in /etc/libibverbs.d (the directory is
# compiled in as IBV_CONFIG_DIR; there is no environment variable for it) and, for each
# "driver NAME" line, load_driver() (rdma-core libibverbs/dynamic_driver.c) does
#   NAME not starting with '/':  dlopen("<provider dir>/libNAME-rdmavN.so", RTLD_NOW), then
#                                dlopen("libNAME-rdmavN.so") through the library path;
#   NAME starting with '/':      dlopen(NAME "-rdmavN.so", RTLD_NOW).
# So "driver rrxe" finds the library in the provider dir, and any other --libdir gets the
# absolute form "driver <libdir>/librrxe", which loads <libdir>/librrxe-rdmavN.so.
#
# Using the library from a read-only tree (e.g. a VM whose root is the host's / over 9p):
# build it on the host with `make provider` (this script with --libdir/--confdir
# build/provider), then in the guest put copies of the system driver files plus ours in a
# tmpfs directory and bind-mount it over /etc/libibverbs.d, since IBV_CONFIG_DIR cannot be
# redirected:
#   mkdir -p /run/libibverbs.d && cp /etc/libibverbs.d/*.driver /run/libibverbs.d/
#   echo "driver $TREE/build/provider/librrxe" > /run/libibverbs.d/rrxe.driver
#   mount --bind /run/libibverbs.d /etc/libibverbs.d
# (qemu/guest-init.sh does exactly this). Without mounts, RDMAV_DRIVERS=$TREE/build/provider/librrxe
# in the environment of a non-setuid program makes libibverbs load it as well.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
multiarch=$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
default_libdir=/usr/lib/$multiarch/libibverbs
libdir=$default_libdir
confdir=/etc/libibverbs.d
destdir=${DESTDIR:-}
abs_driver=0
profile=release
build=1
uninstall=0
sysroot=

while [ $# -gt 0 ]; do
  case "$1" in
    --libdir) libdir=$2; shift 2 ;;
    --libdir=*) libdir=${1#*=}; shift ;;
    --confdir) confdir=$2; shift 2 ;;
    --confdir=*) confdir=${1#*=}; shift ;;
    --destdir) destdir=$2; shift 2 ;;
    --destdir=*) destdir=${1#*=}; shift ;;
    --sysroot) sysroot=$2; shift 2 ;;
    --sysroot=*) sysroot=${1#*=}; shift ;;
    --abs-driver) abs_driver=1; shift ;;
    --uninstall) uninstall=1; shift ;;
    --debug) profile=debug; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '3,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# Absolute run-time paths (relative ones are taken from the current directory).
abspath() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "$(pwd)" "$1" ;; esac; }
libdir=$(abspath "$libdir")
confdir=$(abspath "$confdir")

target_dir=${CARGO_TARGET_DIR:-$root/target}
if [ -n "$sysroot" ]; then
  sysroot=$(cd "$sysroot" && pwd)
  export RRXE_SYSROOT=$sysroot
  # Another libibverbs, another build: never reuse (or overwrite) the host's artifacts.
  [ -n "${CARGO_TARGET_DIR:-}" ] || target_dir=$root/target/sysroot/$(printf '%s' "$sysroot" | tr / _)
  export CARGO_TARGET_DIR=$target_dir
  [ -n "$destdir" ] || destdir=$sysroot
fi

SUDO=
for d in "$destdir$libdir" "$destdir$confdir"; do
  p=$d; while [ ! -e "$p" ]; do p=$(dirname "$p"); done
  if [ ! -w "$p" ] && [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
done

if [ "$uninstall" = 1 ]; then
  # Only what this script installs: our library (any ABI) and, if it is ours, rrxe.driver.
  removed=0
  for f in "$destdir$libdir"/librrxe-rdmav*.so; do
    [ -e "$f" ] || continue
    $SUDO rm -f "$f"; echo "removed $f"; removed=1
  done
  drv=$destdir$confdir/rrxe.driver
  if [ -f "$drv" ] && grep -q '^driver .*rrxe$' "$drv"; then
    $SUDO rm -f "$drv"; echo "removed $drv"; removed=1
  fi
  [ "$removed" = 1 ] || echo "install.sh: nothing of rrxe's in $destdir$libdir or $destdir$confdir"
  exit 0
fi

if [ "$build" = 1 ]; then
  if [ "$profile" = release ]; then
    (cd "$root" && cargo build --release -p rrxe-provider --lib)
  else
    (cd "$root" && cargo build -p rrxe-provider --lib)
  fi
fi
built=$target_dir/$profile/librrxe.so
[ -f "$built" ] || { echo "install.sh: $built not found (build failed?)" >&2; exit 1; }
# The private ABI the library was built for: the version of its libibverbs imports.
pabi=$(readelf --dyn-syms -W "$built" | grep -o 'IBVERBS_PRIVATE_[0-9]*' | head -n 1)
pabi=${pabi#IBVERBS_PRIVATE_}
[ -n "$pabi" ] || { echo "install.sh: $built imports no IBVERBS_PRIVATE_<N> symbol" >&2; exit 1; }
name=librrxe-rdmav$pabi.so

if [ "$abs_driver" = 1 ] || [ "$libdir" != "$default_libdir" ]; then
  driver_line="driver $libdir/librrxe"
else
  driver_line="driver rrxe"
fi

$SUDO install -d "$destdir$libdir" "$destdir$confdir"
# A library of another ABI left in the same directory would never load: replace it.
for old in "$destdir$libdir"/librrxe-rdmav*.so; do
  if [ -e "$old" ] && [ "$old" != "$destdir$libdir/$name" ]; then $SUDO rm -f "$old"; fi
done
# install(1) replaces the file (new inode), so running programs keep their mapped copy.
$SUDO install -m 0644 "$built" "$destdir$libdir/$name"
printf '%s\n' "$driver_line" | $SUDO tee "$destdir$confdir/rrxe.driver.tmp" >/dev/null
$SUDO mv -f "$destdir$confdir/rrxe.driver.tmp" "$destdir$confdir/rrxe.driver"
echo "installed $destdir$libdir/$name and $destdir$confdir/rrxe.driver ($driver_line)"
