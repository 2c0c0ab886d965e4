# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# kmemleak checks for the VM tests (boot with `# append: kmemleak=on`): kml_start once the
# VM is up (clears what boot left), kml_check WHEN after the step to check.
KML=/sys/kernel/debug/kmemleak
# kml_start: records whether kmemleak is on; fails (and says so) when it is not.
kml_start() {
  mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
  if [ ! -w "$KML" ]; then not_ok "kmemleak is on ($KML)"; return 1; fi
  ok "kmemleak is on"
  kml_scan >/dev/null
  echo clear > "$KML"
}
# Two scans: kmemleak reports an object only after it stayed unreferenced for a while.
kml_scan() {
  echo scan > "$KML"; sleep 6; echo scan > "$KML"
  grep -ac '^unreferenced object' "$KML"
}
# kml_check WHEN: no unreferenced object since kml_start (the report is shown otherwise).
kml_check() {
  local n
  n=$(kml_scan)
  if [ "${n:-1}" = 0 ]; then ok "kmemleak: no leaks $1"
  else not_ok "kmemleak: no leaks $1 ($n unreferenced objects)"; head -n 80 "$KML" | sed 's/^/# /'; fi
}
