# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# NFS over RDMA between the two VMs (source after guest-lib.sh), for nfs-rdma.sh and
# kmemleak-ulp.sh. The server (VM 0) runs knfsd exporting a tmpfs (NFSv4.2, RDMA on port
# 20049, where the kernel's svcrdma listens); the client (VM 1) mounts it on $MNT.
MNT=/run/mnt

# Server: knfsd up, exporting a 256 MiB tmpfs, listening for RDMA on port 20049.
nfs_server_up() {
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
# Server: nfsd's threads and listeners stopped, the export withdrawn.
nfs_server_down() { rpc.nfsd 0 && { exportfs -ua 2>/dev/null || true; }; }

# Client: the server's export mounted on $MNT over RDMA.
nfs_mount() {
  mkdir -p "$MNT" && mount -t nfs4 -o rdma,port=20049,vers=4.2 "$RRXE_PEER_IP:/" "$MNT"
}
# nfs_mounted_or_stop PORT: without the mount the steps after it would test the local
# directory: unless $MNT is mounted, signal the server on PORT (it waits for the client) and
# end the script.
nfs_mounted_or_stop() {
  mountpoint -q "$MNT" && return 0
  peer_signal "$1"; tap_done; exit
}
# The mount's transport is RDMA (and not a fallback to TCP).
nfs_on_rdma() { grep " $MNT " /proc/mounts | grep -q proto=rdma; }
# nfs_fio_verify JOB-OPTION...: fio in $MNT, each job (--name=N --bs=B --size=S) mixed random
# read/write with direct I/O at queue depth 16, every block checked (crc32c). The shared
# options come first: on fio's command line an option after a --name belongs to that job.
nfs_fio_verify() {
  timeout 300 fio --directory="$MNT" --rw=randrw --ioengine=libaio --direct=1 --iodepth=16 \
    --verify=crc32c --verify_fatal=1 --do_verify=1 --output-format=terse "$@"
}
# nfs_diag WHO: as TAP comments, what a stalled transfer leaves behind: rrxe0's non-zero
# counters, its QPs' states, the mount's RPC transport line (client) or nfsd's thread pool
# (server), and the kernel log's last lines. The scripts call it when a step failed.
nfs_diag() {
  echo "# $1 diagnostics:"
  rdma statistic show link rrxe0/1 2>/dev/null | tr ' ' '\n' | awk 'p && $1 != 0 {print n "=" $1} {n = $1; p = ($1 ~ /^[a-z_]+$/)}' |
    paste -sd' ' | fold -w 160 | sed 's/^/#   counters: /'
  rdma res show qp link rrxe0/1 2>/dev/null | sed 's/^/#   /'
  grep -A2 " $MNT " /proc/self/mountstats 2>/dev/null | grep -E 'xprt:' | sed 's/^[[:space:]]*/#   /'
  [ -r /proc/fs/nfsd/pool_stats ] && sed 's/^/#   pool_stats: /' /proc/fs/nfsd/pool_stats
  dmesg | tail -n 15 | sed 's/^/#   /'
}
