#!/usr/bin/env bash
# Builds librrxe-rdmav34.so (the rrxe libibverbs provider) and installs it with its driver
# file.
#
#   provider/install.sh [options]
#     --libdir DIR    where librrxe-rdmav34.so goes
#                     (default: libibverbs' provider dir, /usr/lib/<multiarch>/libibverbs)
#     --confdir DIR   where rrxe.driver goes (default: /etc/libibverbs.d)
#     --destdir DIR   staging root prepended to both (also $DESTDIR); paths written into
#                     rrxe.driver stay the run-time ones
#     --abs-driver    write "driver <libdir>/librrxe" even for the default libdir
#     --debug         build the dev profile instead of release
#     --no-build      install what target/<profile>/librrxe.so already holds
#
# The driver file. libibverbs reads every regular file in /etc/libibverbs.d (the directory is
# compiled in as IBV_CONFIG_DIR; there is no environment variable for it) and, for each
# "driver NAME" line, load_driver() (rdma-core libibverbs/dynamic_driver.c) does
#   NAME not starting with '/':  dlopen("<provider dir>/libNAME-rdmav34.so", RTLD_NOW), then
#                                dlopen("libNAME-rdmav34.so") through the library path;
#   NAME starting with '/':      dlopen(NAME "-rdmav34.so", RTLD_NOW).
# So "driver rrxe" finds the library in the provider dir, and any other --libdir gets the
# absolute form "driver <libdir>/librrxe", which loads <libdir>/librrxe-rdmav34.so.
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

while [ $# -gt 0 ]; do
  case "$1" in
    --libdir) libdir=$2; shift 2 ;;
    --libdir=*) libdir=${1#*=}; shift ;;
    --confdir) confdir=$2; shift 2 ;;
    --confdir=*) confdir=${1#*=}; shift ;;
    --destdir) destdir=$2; shift 2 ;;
    --destdir=*) destdir=${1#*=}; shift ;;
    --abs-driver) abs_driver=1; shift ;;
    --debug) profile=debug; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# Absolute run-time paths (relative ones are taken from the current directory).
abspath() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "$(pwd)" "$1" ;; esac; }
libdir=$(abspath "$libdir")
confdir=$(abspath "$confdir")

target_dir=${CARGO_TARGET_DIR:-$root/target}
if [ "$build" = 1 ]; then
  if [ "$profile" = release ]; then
    (cd "$root" && cargo build --release -p rrxe-provider --lib)
  else
    (cd "$root" && cargo build -p rrxe-provider --lib)
  fi
fi
built=$target_dir/$profile/librrxe.so
[ -f "$built" ] || { echo "install.sh: $built not found (build failed?)" >&2; exit 1; }

if [ "$abs_driver" = 1 ] || [ "$libdir" != "$default_libdir" ]; then
  driver_line="driver $libdir/librrxe"
else
  driver_line="driver rrxe"
fi

SUDO=
for d in "$destdir$libdir" "$destdir$confdir"; do
  p=$d; while [ ! -e "$p" ]; do p=$(dirname "$p"); done
  if [ ! -w "$p" ] && [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
done

$SUDO install -d "$destdir$libdir" "$destdir$confdir"
# install(1) replaces the file (new inode), so running programs keep their mapped copy.
$SUDO install -m 0644 "$built" "$destdir$libdir/librrxe-rdmav34.so"
printf '%s\n' "$driver_line" | $SUDO tee "$destdir$confdir/rrxe.driver.tmp" >/dev/null
$SUDO mv -f "$destdir$confdir/rrxe.driver.tmp" "$destdir$confdir/rrxe.driver"
echo "installed $destdir$libdir/librrxe-rdmav34.so and $destdir$confdir/rrxe.driver ($driver_line)"
