#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 900
# NFS over RDMA on rrxe. VM 0 runs knfsd exporting a tmpfs (NFSv4.2, RDMA transport on port
# 20049, as the kernel's svcrdma listens there); VM 1 mounts it with `-o rdma,port=20049`,
# runs fio with crc32c verification, copies a 64 MiB file there and back and compares
# checksums, then unmounts while I/O runs and mounts again and verifies.
# Steps across the VMs are ordered with peer_wait/peer_signal (guest-lib.sh); the server's
# and client's steps are in lib/nfs-rdma-common.sh (kmemleak-ulp.sh uses them too).
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/nfs-rdma-common.sh"
setup_dev() { load_rrxe && rdma link add rrxe0 type rrxe netdev eth0; }
check "rrxe0 on eth0" setup_dev
retry 30 0.3 gid_index_v4 rrxe0 "$RRXE_MY_IP" >/dev/null

if [ "$RRXE_VM" = 0 ]; then
  check "knfsd exporting a tmpfs, RDMA on port 20049" nfs_server_up
  echo "# portlist: $(paste -sd' ' /proc/fs/nfsd/portlist 2>/dev/null)"
  peer_signal 17101
  check "the client is done (it signals)" peer_wait 17102 700
  nfs_diag server  # comments only: read them when the client reports a failure
  check "nfsd stopped, export withdrawn" nfs_server_down
  check "rdma link delete rrxe0" rdma link delete rrxe0
else
  kmod rpcrdma
  kmod nfsv4
  check "the server is up (it signals)" peer_wait 17101 300
  check "mount -o rdma,port=20049 over rrxe" retry 20 1 nfs_mount
  nfs_mounted_or_stop 17102
  grep " $MNT " /proc/mounts | sed 's/^/# /'
  check "the mount's transport is rdma" nfs_on_rdma
  check "fio randrw 4 KiB and 128 KiB, crc32c verify" nfs_fio_verify \
    --name=a --bs=4k --size=8m --name=b --bs=128k --size=32m
  head -c 64M /dev/urandom > /run/big
  sum=$(sha256sum < /run/big)
  check "a 64 MiB file copied to the export" timeout 300 cp /run/big "$MNT/big"
  echo 3 > /proc/sys/vm/drop_caches
  check "copied back, the checksum matches" sh -c "[ \"\$(timeout 300 sha256sum < $MNT/big)\" = '$sum' ]"
  # Unmount while a writer runs: the writer fails or finishes; the unmount does not hang.
  timeout 120 dd if=/dev/zero of="$MNT/load" bs=1M count=120 conv=fsync >/dev/null 2>&1 &
  bg=$!
  sleep 3
  check "umount -l while a writer runs" timeout 120 umount -l "$MNT"
  wait "$bg"; rc=$?
  [ "$rc" != 124 ] && ok "the writer returned (exit $rc)" || not_ok "the writer hung after umount -l"
  check "mount again" retry 20 1 nfs_mount
  nfs_mounted_or_stop 17102
  rm -f "$MNT/load"
  check "the 64 MiB file still matches after the remount" sh -c "[ \"\$(timeout 300 sha256sum < $MNT/big)\" = '$sum' ]"
  check "fio randrw 64 KiB, crc32c verify after the remount" nfs_fio_verify \
    --name=c --bs=64k --size=16m
  check "umount" timeout 120 umount "$MNT"
  [ "$TAP_FAILED" = 0 ] || nfs_diag client
  peer_signal 17102
  check "rdma link delete rrxe0" rdma link delete rrxe0
fi
tap_done
