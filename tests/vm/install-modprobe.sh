#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 400
# root: host
# Installed like any module: `make modules_install` puts rrxe.ko under
# /lib/modules/<release>/updates and runs depmod, so that `modprobe rrxe` loads the
# modules it needs first, `modprobe -r` removes it, and `rdma link add ... type rrxe` loads
# it by its rdma-link-rrxe alias when it is not loaded; modinfo shows what a packager reads.
# The guest's root is the host's, read-only: a tmpfs-backed overlay makes the checkout
# writable for make, and a tmpfs holds this kernel's module directory (copied from the
# kernel build's modules_install tree), as a distribution's /lib/modules would.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"

rel=$(uname -r)
# /lib/modules may not exist on the host: the overlay goes over /lib's real directory.
lib=$(realpath /lib)
modules_dir() {
  writable "$lib" && mkdir -p /lib/modules && cp -a "$RRXE_MODROOT/lib/modules/$rel" /lib/modules/
}
check "$lib writable (a tmpfs-backed overlay), /lib/modules/$rel from the kernel build's modules" modules_dir
check "the checkout writable (a tmpfs-backed overlay)" writable "$RRXE_ROOT"

check "make modules_install (KDIR=$KDIR)" make -C "$RRXE_ROOT" -s modules_install KDIR="$KDIR"
check "rrxe.ko installed under /lib/modules/$rel/updates" test -f "/lib/modules/$rel/updates/rrxe.ko"
check "depmod ran: modules.dep lists rrxe" grep -q 'updates/rrxe.ko:' "/lib/modules/$rel/modules.dep"

info=$(modinfo rrxe 2>&1)
echo "$info" | sed 's/^/#   /'
field() { grep -Eq "^$1:\s+$2" <<<"$info"; }
want_version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$RRXE_ROOT/Cargo.toml" | head -n 1)
check "modinfo: version $want_version" field version "$want_version\$"
check "modinfo: description" field description "Soft-RoCE"
check "modinfo: license GPL" field license "GPL\$"
check "modinfo: author" field author "rrxe developers"
check "modinfo: alias rdma-link-rrxe" field alias "rdma-link-rrxe\$"
deps() { grep -E '^depends:' <<<"$info" | tr ', ' '\n\n' | grep -qx "$1"; }
check "modinfo: depends on udp_tunnel" deps udp_tunnel
check "modinfo: depends on ip6_udp_tunnel" deps ip6_udp_tunnel

loaded() { [ -d "/sys/module/$1" ]; }
check "rrxe not loaded before modprobe" sh -c '! test -d /sys/module/rrxe'
check "modprobe rrxe" modprobe rrxe
check "modprobe loaded udp_tunnel and ip6_udp_tunnel first" sh -c 'test -d /sys/module/udp_tunnel && test -d /sys/module/ip6_udp_tunnel'
check "rrxe loaded from updates/" sh -c "grep -q '^rrxe ' /proc/modules"
check "modprobe -r rrxe" modprobe -r rrxe
check "rrxe unloaded" sh -c '! test -d /sys/module/rrxe'

check "rdma link add loads rrxe by its alias" rdma link add rrxe0 type rrxe netdev eth0
check "rrxe loaded by the alias" loaded rrxe
check "ibv_devinfo -d rrxe0: PORT_ACTIVE" sh -c 'ibv_devinfo -d rrxe0 | grep -q PORT_ACTIVE'
check "ibv_devinfo -d rrxe0: fw_ver is the module's version ($want_version)" \
  sh -c "ibv_devinfo -d rrxe0 | grep -Eq '^\s+fw_ver:\s+$want_version\$'"
check "sysfs fw_ver is the module's version" grep -qx "$want_version" /sys/class/infiniband/rrxe0/fw_ver
check "the provider reports its version ($want_version) with RRXE_PROVIDER_DEBUG" \
  sh -c "RRXE_PROVIDER_DEBUG=1 ibv_devices 2>&1 | grep -q 'librrxe $want_version: match_device'"
check "rdma link delete rrxe0" rdma link delete rrxe0
check "modprobe -r rrxe after the device is gone" modprobe -r rrxe
check "rrxe unloaded again" sh -c '! test -d /sys/module/rrxe'
tap_done
