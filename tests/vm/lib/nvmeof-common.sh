# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# NVMe over Fabrics between the two VMs (source after guest-lib.sh), for nvmeof.sh (and its
# interop variants) and kmemleak-ulp.sh. The target (VM 0) exports a memory-backed null_blk
# namespace through nvmet-rdma on $RRXE_MY_IP:$PORT; the host (VM 1) connects with
# `nvme connect -t rdma` and checks data with fio.
NQN=nqn.2026-11.io.rrxe:nvmeof-test
PORT=4420
CFG=/sys/kernel/config/nvmet

# Target: the subsystem with its namespace, and an RDMA port exporting it. NVMET_RDMA_ARGS:
# module parameters for nvmet-rdma (nvmeof-srq.sh: use_srq=1).
nvmet_up() {
  # shellcheck disable=SC2086
  kmod null_blk nr_devices=1 memory_backed=1 gb=1 &&
    kmod nvmet && kmod nvmet-rdma ${NVMET_RDMA_ARGS:-} &&
    { mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config; } &&
    mkdir "$CFG/subsystems/$NQN" &&
    echo 1 > "$CFG/subsystems/$NQN/attr_allow_any_host" &&
    mkdir "$CFG/subsystems/$NQN/namespaces/1" &&
    echo /dev/nullb0 > "$CFG/subsystems/$NQN/namespaces/1/device_path" &&
    echo 1 > "$CFG/subsystems/$NQN/namespaces/1/enable" &&
    mkdir "$CFG/ports/1" &&
    echo rdma > "$CFG/ports/1/addr_trtype" &&
    echo ipv4 > "$CFG/ports/1/addr_adrfam" &&
    echo "$RRXE_MY_IP" > "$CFG/ports/1/addr_traddr" &&
    echo "$PORT" > "$CFG/ports/1/addr_trsvcid" &&
    ln -s "$CFG/subsystems/$NQN" "$CFG/ports/1/subsystems/$NQN"
}
# Target: the port, namespace and subsystem removed, the modules unloaded. Call it after the
# target's `rdma link delete`: on the device's removal nvmet-rdma drops its listener itself.
# Removing the port first makes nvmet destroy the listening cm_id under nvmet_config_sem, and
# lockdep reports a circular dependency against the CM handler's handler_mutex whenever an
# I/O queue's connect command was run from the CM handler (nvmet-rdma's own locking, seen
# with rdma_rxe as the target: nothing of rrxe is in either chain).
nvmet_down() {
  rm -f "$CFG/ports/1/subsystems/$NQN" && rmdir "$CFG/ports/1" &&
    echo 0 > "$CFG/subsystems/$NQN/namespaces/1/enable" &&
    rmdir "$CFG/subsystems/$NQN/namespaces/1" && rmdir "$CFG/subsystems/$NQN" &&
    rmmod nvmet_rdma nvmet null_blk
}

# Host: the namespace's block device once connected.
ns_dev() {
  local d
  for d in /sys/class/nvme/nvme*; do
    [ "$(cat "$d/subsysnqn" 2>/dev/null)" = "$NQN" ] || continue
    for n in "$d"/nvme*n1; do [ -e "$n" ] && { echo "/dev/${n##*/}"; return 0; }; done
  done
  return 1
}
# nvme_connect [OPTION...]: to the target on $RRXE_PEER_IP, with a read/default and a write
# I/O queue (the guests have one CPU); waits (at most 30 s x SCALE) for the namespace.
nvme_connect() {
  nvme connect -t rdma -n "$NQN" -a "$RRXE_PEER_IP" -s "$PORT" -i 1 -W 1 "$@" >/dev/null &&
    retry 60 0.5 ns_dev >/dev/null
}
# fio_verify BS SIZE: mixed random read/write on the namespace at queue depth 32, every
# block checked (crc32c).
fio_verify() {
  timeout 300 fio --name=verify --filename="$(ns_dev)" --ioengine=libaio --direct=1 \
    --rw=randrw --bs="$1" --size="$2" --iodepth=32 --verify=crc32c --verify_fatal=1 \
    --do_verify=1 --randrepeat=0 --output-format=terse
}
