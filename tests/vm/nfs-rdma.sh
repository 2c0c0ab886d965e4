#!/bin/bash
# vms: 2
# timeout: 900
# NFS over RDMA on rrxe. VM 0 runs knfsd exporting a tmpfs (NFSv4.2, RDMA transport on port
# 20049, as the kernel's svcrdma listens there); VM 1 mounts it with `-o rdma,port=20049`,
# runs fio with crc32c verification, copies a 64 MiB file there and back and compares
# checksums, then unmounts while I/O runs and mounts again and verifies.
# Steps across the VMs are ordered with peer_wait/peer_signal (guest-lib.sh).
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
setup_dev() { load_rrxe && rdma link add rrxe0 type rrxe netdev eth0; }
check "rrxe0 on eth0" setup_dev
retry 30 0.3 gid_index_v4 rrxe0 "$RRXE_MY_IP" >/dev/null
MNT=/run/mnt

server_up() {
  # The root file system is a read-only 9p: nfs-utils' state goes to a tmpfs.
  mount -t tmpfs nfsstate /var/lib/nfs && mkdir -p /var/lib/nfs/v4recovery /run/export &&
    touch /var/lib/nfs/etab /var/lib/nfs/rmtab &&
    mount -t tmpfs -o size=256m export /run/export &&
    kmod nfsd && kmod rpcrdma &&
    { mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd; } &&
    { rpcbind -w 2>/dev/null || true; } &&
    exportfs -o rw,no_root_squash,insecure,fsid=0,no_subtree_check "*:/run/export" &&
    rpc.mountd --no-nfs-version 3 2>/dev/null &&
    # A short grace period: NFSv4 refuses OPENs for 90 s after a start by default.
    rpc.nfsd --no-nfs-version 3 --grace-time 10 --lease-time 10 --rdma=20049 2 &&
    grep -q 'rdma 20049' /proc/fs/nfsd/portlist
}

if [ "$RRXE_VM" = 0 ]; then
  check "knfsd exporting a tmpfs, RDMA on port 20049" server_up
  echo "# portlist: $(paste -sd' ' /proc/fs/nfsd/portlist 2>/dev/null)"
  peer_signal 17101
  check "the client is done (it signals)" peer_wait 17102 700
  check "nfsd stopped" rpc.nfsd 0
  exportfs -ua 2>/dev/null
  check "rdma link delete rrxe0" rdma link delete rrxe0
else
  kmod rpcrdma
  kmod nfsv4
  mkdir -p "$MNT"
  mnt() { mount -t nfs4 -o rdma,port=20049,vers=4.2 "$RRXE_PEER_IP:/" "$MNT"; }
  check "the server is up (it signals)" peer_wait 17101 300
  check "mount -o rdma,port=20049 over rrxe" retry 20 1 mnt
  # Without the mount the steps below would test the local directory: stop here.
  mountpoint -q "$MNT" || { peer_signal 17102; tap_done; exit; }
  grep " $MNT " /proc/mounts | sed 's/^/# /'
  grep -q "proto=rdma" <<<"$(grep " $MNT " /proc/mounts)" && ok "the mount's transport is rdma" ||
    not_ok "the mount's transport is rdma"
  check "fio randrw 4 KiB and 128 KiB, crc32c verify" timeout 300 fio --directory="$MNT" \
    --name=a --bs=4k --size=8m --name=b --bs=128k --size=32m --rw=randrw --ioengine=libaio \
    --direct=1 --iodepth=16 --verify=crc32c --verify_fatal=1 --do_verify=1 --output-format=terse
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
  wait "$bg"
  ok "the writer returned (exit $?)"
  check "mount again" retry 20 1 mnt
  mountpoint -q "$MNT" || { peer_signal 17102; tap_done; exit; }
  rm -f "$MNT/load"
  check "the 64 MiB file still matches after the remount" sh -c "[ \"\$(timeout 300 sha256sum < $MNT/big)\" = '$sum' ]"
  check "fio 64 KiB, crc32c verify after the remount" timeout 300 fio --directory="$MNT" \
    --name=c --bs=64k --size=16m --rw=randrw --ioengine=libaio --direct=1 --iodepth=16 \
    --verify=crc32c --verify_fatal=1 --do_verify=1 --output-format=terse
  check "umount" timeout 120 umount "$MNT"
  peer_signal 17102
  check "rdma link delete rrxe0" rdma link delete rrxe0
fi
tap_done
