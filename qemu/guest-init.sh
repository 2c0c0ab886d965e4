#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# PID 1 of a harness VM (see run-vms; on a cached root filesystem, qemu/rootfs-init execs it):
# mounts the basics over the read-only 9p root, brings up eth0, lays the libibverbs driver
# overlay, runs the test script, reports its exit status on the second serial port and
# powers off.
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs shm /dev/shm
mount -t tmpfs run /run
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/run/home TMPDIR=/run/tmp LANG=C
mkdir -p "$HOME" "$TMPDIR"
exec > /dev/ttyS1 2>&1
echo "RRXE-BOOTED $(cut -d' ' -f1 /proc/uptime)"
# shellcheck disable=SC1090
set -a
. "$rrxe_env"
set +a
hostname "vm$RRXE_VM"
[ -z "${RRXE_ROOTFS:-}" ] ||
  echo "# root filesystem: $RRXE_ROOTFS (Debian $(cat /etc/debian_version), rdma-core $(dpkg-query -W -f='${Version}' rdma-core 2>/dev/null))"
ip link set lo up
ip link set eth0 up
ip addr add "$RRXE_MY_IP/24" dev eth0
# IPv6 link-local addresses need DAD to finish before they are usable as GIDs.
ip -6 addr add "fd77::$((RRXE_VM + 1))/64" dev eth0 nodad 2>/dev/null

# libibverbs driver files: the root's, plus ours pointing at the provider built for this
# root (run-vms: RRXE_PROVIDER_DIR; libibverbs loads librrxe-rdmavN.so for its own ABI N).
mkdir -p /run/libibverbs.d
cp /etc/libibverbs.d/*.driver /run/libibverbs.d/ 2>/dev/null
RRXE_PROVIDER_DIR=${RRXE_PROVIDER_DIR:-$RRXE_ROOT/build/provider}
if compgen -G "$RRXE_PROVIDER_DIR/librrxe-rdmav*.so" >/dev/null; then
  echo "driver $RRXE_PROVIDER_DIR/librrxe" > /run/libibverbs.d/rrxe.driver
fi
mount --bind /run/libibverbs.d /etc/libibverbs.d

cd /run || true
bash "$RRXE_SCRIPT" "${RRXE_ARGS[@]}"
rc=$?
echo "RRXE-EXIT $rc"
sync
# Reboot at once (QEMU runs with -no-reboot, so it exits). The kernel has no ACPI, so a
# power-off would only halt.
echo b > /proc/sysrq-trigger
while :; do read -r -t 10 _ < /dev/console || :; done
