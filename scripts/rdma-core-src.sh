#!/usr/bin/env bash
# Fetches rdma-core's Debian source (trixie, 56.x) into $RRXE_CACHE/rdma-core-src once.
# Prints the source directory.
set -euo pipefail
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
  (cd "$dest.tmp" && apt-get source -qq rdma-core >/dev/null 2>&1)
  rm -rf "$dest"; mv "$dest.tmp" "$dest"
fi
ls -d "$dest"/rdma-core-*/ | head -n 1
