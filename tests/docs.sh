#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The documents agree with the code: docs/counters.md lists every counter the module
# registers (drivers/rrxe/counters.rs), in order, and no other; docs/testing.md names every VM
# test in tests/vm/; every relative link in README.md and docs/*.md reaches a file; the README
# stays a README (at most 250 lines) and no document names numbered work items. TAP.
#   tests/docs.sh [--help]
set -uo pipefail
case "${1:-}" in
  -h|--help) sed -n '3,7s/^# \{0,1\}//p' "$0"; exit 0 ;;
  '') ;;
  *) echo "docs.sh: unknown argument '$1'" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
n=0 bad=0
ok() { n=$((n + 1)); echo "ok $n - docs: $*"; }
not_ok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - docs: $*"; }

code=$(sed -n 's/^ *[A-Za-z]* = c"\([a-z0-9_]*\)",$/\1/p' drivers/rrxe/counters.rs)
doc=$(sed -n 's/^| `\([a-z0-9_]*\)` |.*/\1/p' docs/counters.md)
if [ -z "$code" ]; then not_ok "no counter names found in drivers/rrxe/counters.rs"
elif [ "$code" = "$doc" ]; then ok "docs/counters.md lists the $(wc -l <<<"$code") counters of counters.rs, in order"
else
  not_ok "docs/counters.md differs from counters.rs"
  diff <(echo "$code") <(echo "$doc") | sed 's/^/# /'
fi

missing=
for t in tests/vm/*.sh; do
  name=$(basename "$t" .sh)
  grep -q "\`$name\`" docs/testing.md || missing="$missing $name"
done
if [ -z "$missing" ]; then ok "docs/testing.md names every VM test"
else not_ok "docs/testing.md does not name:$missing"; fi

for f in README.md docs/*.md; do
  dir=$(dirname "$f") broken=
  for link in $(grep -o '](\([^)#]*\)[)#]' "$f" | sed 's/^](//; s/[)#]$//' | grep -v '^[a-z]*:' | sort -u); do
    [ -e "$dir/$link" ] || broken="$broken $link"
  done
  if [ -z "$broken" ]; then ok "$f: relative links reach files"
  else not_ok "$f: broken links:$broken"; fi
done

lines=$(wc -l <README.md)
if [ "$lines" -le 250 ]; then ok "README.md has $lines lines (at most 250)"
else not_ok "README.md has $lines lines (at most 250)"; fi

hits=$(grep -n -i -E '\b(issue|task|session|wave)[ -]?#?[0-9]+' README.md docs/*.md)
if [ -z "$hits" ]; then ok "no numbered work items in README.md and docs/"
else not_ok "numbered work items:"; echo "$hits" | sed 's/^/# /'; fi

echo "1..$n"
[ "$bad" = 0 ]
