#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Makes the source tarball of a guest kernel series available and prints its path.
#   scripts/kernel-source.sh [--kernel 6.12|7.3]
# 6.12: Debian's linux-source-6.12 package (scripts/setup.sh installs it from the host's
# archive). 7.3: Debian's linux-source-7.3 from trixie-backports, downloaded once with a
# private apt configuration (the host's apt sources stay as they are) into
# $RRXE_CACHE/src/, checked by apt against the archive's signed index.
set -euo pipefail
usage() { sed -n '3,8s/^# \{0,1\}//p' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --kernel) [ $# -ge 2 ] || { usage >&2; exit 2; }; export RRXE_KERNEL=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "kernel-source: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
. "$(dirname "$0")/env.sh"
rrxe_kernel_check kernel-source || exit 2

src=$RRXE_CACHE/src
case "$RRXE_KERNEL" in
  6.12)
    f=/usr/src/linux-source-6.12.tar.xz
    [ -f "$f" ] || { echo "kernel-source: $f missing: apt-get install linux-source-6.12 (scripts/setup.sh does)" >&2; exit 1; }
    echo "$f" ;;
  7.3)
    f=$src/linux-source-7.3.tar.xz
    if [ ! -f "$f" ] || [ ! -f "$src/$RRXE_KVER_PKG.version" ]; then
      apt=$src/apt
      mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/sources"
      printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > "$apt/sources/trixie-backports.sources"
      o=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt/sources"
         -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt" -o Debug::NoLocking=1
         -o APT::Sandbox::User=root)
      echo "kernel-source: fetching $RRXE_KVER_PKG from trixie-backports" >&2
      apt-get "${o[@]}" update -qq >&2
      ver=$(apt-cache "${o[@]}" show "$RRXE_KVER_PKG" | sed -n 's/^Version: //p' | head -n 1)
      [ -n "$ver" ] || { echo "kernel-source: $RRXE_KVER_PKG not in trixie-backports" >&2; exit 1; }
      rm -rf "$src/deb.tmp"; mkdir -p "$src/deb.tmp"
      (cd "$src/deb.tmp" && apt-get "${o[@]}" download -qq "$RRXE_KVER_PKG=$ver" >&2)
      dpkg-deb -x "$src"/deb.tmp/"$RRXE_KVER_PKG"_*.deb "$src/deb.tmp/x"
      mv "$src/deb.tmp/x/usr/src/linux-source-7.3.tar.xz" "$f"
      rm -rf "$src/deb.tmp"
      echo "$ver" > "$src/$RRXE_KVER_PKG.version"
    fi
    echo "$f" ;;
esac
