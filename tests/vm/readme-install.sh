#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 900
# root: host
# The README's install block, run as written: the block after the "readme-install" marker in
# README.md is extracted from the file (so the two cannot drift) and run with bash -e on a
# guest made to look like a user's machine: its kernel's build tree at
# /lib/modules/$(uname -r)/build (as a headers package puts it), writable /lib/modules,
# libibverbs' provider directory and /etc/libibverbs.d with no rrxe provider in them (the
# harness's own provider setup undone), rrxe not loaded, cargo on PATH. Then what the block
# did is checked: the module installed and loaded, the provider installed where libibverbs
# looks, the device up, rping and ib_write_bw through it.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"

rel=$(uname -r)
lib=$(realpath /lib)
modules_dir() { # /lib/modules/<release> with the kernel's modules and its build tree
  writable "$lib" && mkdir -p /lib/modules && cp -a "$RRXE_MODROOT/lib/modules/$rel" /lib/modules/ &&
    rm -f "/lib/modules/$rel/build" && ln -s "$KDIR" "/lib/modules/$rel/build"
}
provdir=$(pkg-config --variable=libdir libibverbs 2>/dev/null)/libibverbs
[ -d "$provdir" ] || provdir=/usr/lib/$(gcc -print-multiarch)/libibverbs
stock_verbs_conf() { # the root's own /etc/libibverbs.d, writable, without rrxe
  umount /etc/libibverbs.d 2>/dev/null
  writable /etc/libibverbs.d && rm -f /etc/libibverbs.d/rrxe.driver
}
check "/lib/modules/$rel with the kernel's modules and build -> the kernel tree" modules_dir
check "the checkout writable (a tmpfs-backed overlay)" writable "$RRXE_ROOT"
check "libibverbs' provider directory ($provdir) writable" writable "$provdir"
check "/etc/libibverbs.d is the root's own, writable, without rrxe" stock_verbs_conf
check "no rrxe provider before the install" sh -c "! ls $provdir/librrxe-* 2>/dev/null | grep -q ."
check "rrxe not loaded before the install" sh -c '! test -d /sys/module/rrxe'

block=/run/readme-install.sh
extract() { # the fenced block after the marker line
  awk '/^<!-- readme-install/ {m = 1; next}
       m == 1 && /^```/ {m = 2; next}
       m == 2 && /^```/ {exit}
       m == 2 {print}' "$RRXE_ROOT/README.md" >"$block" && [ -s "$block" ]
}
check "README.md has the install block after its readme-install marker" extract
sed 's/^/#   | /' "$block"

# A machine of the user's: sudo (not every Debian has it; root needs none), the user's home
# as HOME (the guest's is not root's), writable, with its cargo tools and the cache the
# setup filled (rdma-core's source), cargo and bindgen on PATH.
home=$(getent passwd root | cut -d: -f6)
check "the user's home ($home) writable (a tmpfs-backed overlay)" writable "$home"
mkdir -p /run/readme-bin
command -v sudo >/dev/null || printf '#!/bin/sh\nexec "$@"\n' >/run/readme-bin/sudo
chmod +x /run/readme-bin/* 2>/dev/null
log=/run/readme-install.out
run_block() {
  (cd "$RRXE_ROOT" && HOME=$home PATH=/run/readme-bin:$home/.cargo/bin:$PATH timeout 700 bash -e "$block") >"$log" 2>&1
}
check "the README's install block runs to its end (bash -e)" run_block
grep -v '^\s*$' "$log" | tail -n 60 | sed 's/^/#   /'

check "rrxe.ko installed under /lib/modules/$rel/updates" test -f "/lib/modules/$rel/updates/rrxe.ko"
check "rrxe loaded" test -d /sys/module/rrxe
check "librrxe-rdmavN.so installed in $provdir" sh -c "ls $provdir/librrxe-rdmav*.so >/dev/null"
check "/etc/libibverbs.d/rrxe.driver installed" grep -qx 'driver rrxe' /etc/libibverbs.d/rrxe.driver
check "ibv_devinfo -d rrxe0 printed PORT_ACTIVE" grep -q 'PORT_ACTIVE' "$log"
check "rping: the client's pings came back" grep -q 'ping data' "$log"
check "ib_write_bw printed a bandwidth line" grep -Eq '^\s*65536\s+[0-9]+\s+[0-9.]+\s+[0-9.]+' "$log"
check "ibv_devices lists rrxe0 through the installed provider" sh -c 'ibv_devices | grep -q rrxe0'
check "rdma link delete rrxe0" rdma link delete rrxe0
check "modprobe -r rrxe" modprobe -r rrxe
tap_done
