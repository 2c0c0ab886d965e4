#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Fetches rdma-core's source from Debian (the private provider headers libibverbs-dev does
# not ship) into $RRXE_CACHE/rdma-core-src/rdma-core-<version>, once per suite, and prints
# the source directories.
#   scripts/rdma-core-src.sh [--all | SUITE...]
# SUITE: trixie (rdma-core 56.x, private ABI 34: builds for rdma-core 44-56; the default)
#        sid    (rdma-core 65.x, private ABI 65)
# --all: both. Uses a private apt configuration (the host's apt sources stay as they are);
# the tarball is checked against the sha256 of the archive's signed Sources index.
set -euo pipefail
usage() { sed -n '3,10s/^# \{0,1\}//p' "$0"; }
suites=()
while [ $# -gt 0 ]; do
  case "$1" in
    --all) suites+=(trixie sid); shift ;;
    trixie|sid) suites+=("$1"); shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "rdma-core-src: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[ ${#suites[@]} -gt 0 ] || suites=(trixie)
. "$(dirname "$0")/env.sh"
dest=$RRXE_CACHE/rdma-core-src
mkdir -p "$dest"

fetch() {
  local suite=$1 apt=$dest/apt-$1
  local mark=$dest/$suite.version
  if [ -f "$mark" ] && [ -d "$dest/rdma-core-$(cat "$mark")/libibverbs" ]; then
    echo "$dest/rdma-core-$(cat "$mark")"
    return
  fi
  mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/sources"
  printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$suite" > "$apt/sources/$suite.sources"
  local o=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt/sources"
           -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt" -o Debug::NoLocking=1
           -o APT::Sandbox::User=root)
  echo "rdma-core-src: fetching rdma-core's source from $suite" >&2
  apt-get "${o[@]}" update -qq >&2
  local tmp=$dest/$suite.tmp
  rm -rf "$tmp"; mkdir -p "$tmp"
  # The archive serves the upstream tarball but (seen here) not always the .dsc, so
  # apt-get source may fail after downloading it: unpack the tarball ourselves, checked
  # against the sha256 the signed Sources index gives.
  (cd "$tmp" && apt-get "${o[@]}" source -qq --download-only rdma-core >/dev/null 2>&1) || true
  local orig
  orig=$(ls "$tmp"/rdma-core_*.orig.tar.gz 2>/dev/null | head -n 1)
  [ -n "$orig" ] || { echo "rdma-core-src: no upstream tarball downloaded from $suite" >&2; exit 1; }
  local want have ver
  want=$(apt-cache "${o[@]}" showsrc rdma-core | awk -v f="${orig##*/}" '$3 == f && length($1) == 64 {print $1; exit}')
  have=$(sha256sum "$orig" | cut -d' ' -f1)
  [ -n "$want" ] && [ "$want" = "$have" ] || { echo "rdma-core-src: checksum mismatch for $orig" >&2; exit 1; }
  ver=${orig##*/rdma-core_}; ver=${ver%.orig.tar.gz}
  mkdir -p "$tmp/x"
  tar -xzf "$orig" -C "$tmp/x"
  # The tarball's top directory is rdma-core-<ver> or linux-rdma-rdma-core-<commit>.
  local top
  top=$(ls -d "$tmp"/x/*/ | head -n 1)
  [ -d "$top/libibverbs" ] || { echo "rdma-core-src: $orig has no libibverbs/" >&2; exit 1; }
  rm -rf "$dest/rdma-core-$ver"
  mv "$top" "$dest/rdma-core-$ver"
  mv "$orig" "$dest/"
  rm -rf "$tmp"
  echo "$ver" > "$mark"
  echo "$dest/rdma-core-$ver"
}

for s in "${suites[@]}"; do fetch "$s"; done
