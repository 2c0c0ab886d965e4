#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Every command of the project answers --help (and -h) with its usage and exits 0, without
# side effects: the scripts under scripts/ (shell and Python) and tests/, qemu/run-vms,
# provider/install.sh and `make help`. Each runs under a 20 s timeout with $RRXE_CACHE
# pointed at an empty directory, which must stay empty, and the checkout's `git status` must
# not change. TAP.
#   tests/help.sh [--help]
set -uo pipefail
case "${1:-}" in -h|--help) sed -n '3,8s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
before=$(git status --porcelain 2>/dev/null)
n=0 bad=0
ok() { n=$((n + 1)); echo "ok $n - help: $*"; }
not_ok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - help: $*"; }
# check NAME CMD...: CMD prints a usage (its first line not a comment) and exits 0, and
# neither the cache nor the checkout changed.
check() {
  local name=$1 out rc; shift
  out=$(RRXE_CACHE=$cache timeout 20 "$@" 2>&1 </dev/null); rc=$?
  if [ "$rc" != 0 ]; then not_ok "$name: exit $rc"; echo "$out" | tail -n 5 | sed 's/^/# /'
  elif [ -z "$out" ] || [[ $(head -n 1 <<<"$out") == "#"* ]]; then not_ok "$name: no usage printed"
  elif [ -n "$(ls -A "$cache")" ]; then not_ok "$name: wrote into RRXE_CACHE: $(ls -A "$cache" | head -n 3 | xargs)"
  elif [ "$(git status --porcelain 2>/dev/null)" != "$before" ]; then not_ok "$name: changed the checkout"
  else ok "$name"; fi
  rm -rf "${cache:?}"/* "${cache:?}"/.[!.]* 2>/dev/null
}
for s in scripts/*.sh tests/*.sh qemu/run-vms provider/install.sh; do
  [ "$s" = scripts/env.sh ] && continue  # sourced by the others, not a command
  for flag in --help -h; do check "$s $flag" bash "$s" "$flag"; done
done
for s in scripts/*.py; do
  for flag in --help -h; do check "$s $flag" python3 "$s" "$flag"; done
done
check "make help" make -s help
echo "1..$n"
[ "$bad" = 0 ]
