#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 600
# append: kmemleak=on
# Leak check of the kernel consumers' paths (kmemleak.sh covers user verbs): with kmemleak on,
# VM 0 runs an nvmet-rdma target (nvmeof-common.sh) and knfsd with an RDMA listener
# (nfs-rdma-common.sh) on rrxe; VM 1 connects with `nvme connect -t rdma`, runs a short fio
# crc32c verify and disconnects, then mounts the export over RDMA, writes and reads back
# with verification and unmounts. Both sides stop their services, delete the link (VM 0
# removes the nvmet port and subsystem after it, as nvmeof.sh does: nvmet_down says why)
# and check for leaks, then unload rrxe and the RDMA consumers' modules and check again.
# kmemleak must report no unreferenced object from after the VM came up (kml_start clears
# what boot left).
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/kmemleak.sh"
. "$RRXE_ROOT/tests/vm/lib/nvmeof-common.sh"
. "$RRXE_ROOT/tests/vm/lib/nfs-rdma-common.sh"

kml_start || { tap_done; exit; }
setup_dev() { load_rrxe && rdma link add rrxe0 type rrxe netdev eth0; }
check "rrxe0 on eth0" setup_dev
retry 30 0.3 gid_index_v4 rrxe0 "$RRXE_MY_IP" >/dev/null

if [ "$RRXE_VM" = 0 ]; then
  check "nvmet target with an RDMA port on $RRXE_MY_IP:$PORT" nvmet_up
  check "knfsd exporting a tmpfs, RDMA on port 20049" nfs_server_up
  peer_signal 17201
  check "the host is done with NVMe-oF and NFS (it signals)" peer_wait 17202 400
  check "nfsd stopped, export withdrawn" nfs_server_down
  check "rdma link delete rrxe0" rdma link delete rrxe0
  check "nvmet port and subsystem removed, modules unloaded" nvmet_down
  kml_check "after nvmet-rdma and NFS over RDMA serving, and link delete (rrxe loaded)"
  check "rmmod rpcrdma rrxe" rmmod rpcrdma rrxe
  kml_check "after rmmod rpcrdma rrxe"
else
  kmod nvme-rdma
  kmod rpcrdma
  kmod nfsv4
  check "the target and the NFS server are up (it signals)" peer_wait 17201 300
  check "nvme connect -t rdma (2 I/O queues)" nvme_connect
  check "fio randrw 4 KiB, qd 32, crc32c verify" fio_verify 4k 8m
  check "nvme disconnect" timeout 120 nvme disconnect -n "$NQN"
  check "mount -o rdma,port=20049" retry 20 1 nfs_mount
  nfs_mounted_or_stop 17202
  check "the mount's transport is rdma" nfs_on_rdma
  check "fio randrw 4 KiB and 128 KiB in the mount, crc32c verify" nfs_fio_verify \
    --name=a --bs=4k --size=4m --name=b --bs=128k --size=16m
  check "umount" timeout 120 umount "$MNT"
  peer_signal 17202
  check "rdma link delete rrxe0" rdma link delete rrxe0
  kml_check "after NVMe-oF and NFS over RDMA I/O, and link delete (rrxe loaded)"
  check "rmmod nvme_rdma rpcrdma rrxe" rmmod nvme_rdma rpcrdma rrxe
  kml_check "after rmmod nvme_rdma rpcrdma rrxe"
fi
tap_done
