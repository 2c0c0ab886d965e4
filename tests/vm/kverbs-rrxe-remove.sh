#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 300
# Teardown under traffic: the kernel-verbs test moves 1 MiB transfers between the VMs over
# rrxe when VM 1 deletes its link (`rdma link delete`) and VM 0 unloads rrxe.ko (`rmmod`)
# with the device and its QPs in use. Both must finish (the test module sees its device go
# away), leave no RDMA device behind, and the kernels must not splat.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
KO=$RRXE_ROOT/tests/kverbs/rrxe_ktest.ko
setup_dev() { load_rrxe && rdma link add rrxe0 type rrxe netdev eth0; }
check "rrxe0 on eth0" setup_dev
retry 30 0.3 gid_index_v4 rrxe0 "$RRXE_MY_IP" >/dev/null
if [ "$RRXE_VM" = 0 ]; then
  args="role=server addr=$RRXE_MY_IP"
else
  args="role=client addr=$RRXE_PEER_IP"
fi
timeout -s KILL 200 insmod "$KO" $args iters=40 sizes=1048576 ud=0 timeout_ms=$((10000 * SCALE)) >/run/insmod.out 2>&1 &
ins=$!
sleep 8
if [ "$RRXE_VM" = 0 ]; then
  check "rmmod rrxe while its device carries traffic" timeout 120 rmmod rrxe
else
  check "rdma link delete rrxe0 while it carries traffic" timeout 120 rdma link delete rrxe0
fi
wait "$ins"
ok "the test module's insmod returned once its device went away"
dmesg | grep -a 'rrxe_ktest: ' | tail -n 3 | sed 's/^/# /'
check "no RDMA device left" sh -c '[ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]'
lsmod | grep -q rrxe_ktest && check "rmmod rrxe_ktest" rmmod rrxe_ktest
if [ "$RRXE_VM" = 1 ]; then check "rmmod rrxe" rmmod rrxe; fi
tap_done
