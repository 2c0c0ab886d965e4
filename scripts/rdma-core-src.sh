#!/usr/bin/env bash
# Fetches rdma-core's Debian source (trixie, 56.x) into $RRXE_CACHE/rdma-core-src once.
# Prints the source directory.
#   scripts/rdma-core-src.sh [--help]
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,4s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
. "$(dirname "$0")/env.sh"
dest=$RRXE_CACHE/rdma-core-src
if ! ls -d "$dest"/rdma-core-*/libibverbs >/dev/null 2>&1; then
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  list=/etc/apt/sources.list.d/rrxe-trixie-src.sources
  if [ ! -f "$list" ]; then
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' | $SUDO tee "$list" >/dev/null
    $SUDO apt-get update -qq
  fi
  rm -rf "$dest.tmp"; mkdir -p "$dest.tmp"
  # The archive serves the upstream tarball but (seen here) not always the .dsc, so
  # apt-get source may fail after downloading it: unpack the tarball ourselves, checked
  # against the sha256 the signed Sources index gives.
  (cd "$dest.tmp" && apt-get source -qq rdma-core >/dev/null 2>&1) || true
  orig=$(ls "$dest.tmp"/rdma-core_*.orig.tar.gz 2>/dev/null | head -n 1)
  [ -n "$orig" ] || { echo "rdma-core-src: no upstream tarball downloaded" >&2; exit 1; }
  want=$(apt-cache showsrc rdma-core | awk -v f="${orig##*/}" '$3 == f && length($1) == 64 {print $1; exit}')
  have=$(sha256sum "$orig" | cut -d' ' -f1)
  [ -n "$want" ] && [ "$want" = "$have" ] || { echo "rdma-core-src: checksum mismatch for $orig" >&2; exit 1; }
  [ -d "$dest.tmp"/rdma-core-*/libibverbs ] 2>/dev/null || tar -xzf "$orig" -C "$dest.tmp"
  rm -rf "$dest"; mv "$dest.tmp" "$dest"
fi
ls -d "$dest"/rdma-core-*/ | head -n 1
