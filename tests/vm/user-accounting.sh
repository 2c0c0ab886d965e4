#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 600
# Resource accounting (tests/user/accounting.c) in a cgroup v2 group with the memory and rdma
# controllers: CQ ring memory charged to the group and uncharged on destroy, memory.max
# answered with ENOMEM (not the OOM killer), rdma.max's hca_object limit answered with
# EAGAIN and counted in rdma.current. Then on-demand paging (tests/user/odp_accounting.c)
# in its own group: an ODP MR past odp_max_bytes refused with ENOMEM and counted, the host
# unaffected, rrxe's ODP page table charged to the group, and no implicit ODP child left
# behind by a READ sweep over a PROT_NONE range.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
CG=/sys/fs/cgroup
mountpoint -q $CG || mount -t cgroup2 none $CG
check "memory and rdma controllers enabled for child groups" \
  sh -c "echo '+memory +rdma' > $CG/cgroup.subtree_control"
mkdir -p $CG/tenant
out=$(timeout 200 sh -c "echo \$\$ > $CG/tenant/cgroup.procs && exec $RRXE_USER_BIN/accounting -d $DEV -c $CG/tenant" 2>&1); rc=$?
relay_tap accounting "$rc" "$out"
grep -E '^(oom|oom_kill) ' $CG/tenant/memory.events | paste -sd' ' | sed 's/^/# memory.events: /'
check "no OOM kill in the group" sh -c "grep -qx 'oom_kill 0' $CG/tenant/memory.events"
rmdir $CG/tenant
mkdir -p $CG/odp
out=$(timeout 250 sh -c "echo \$\$ > $CG/odp/cgroup.procs && exec $RRXE_USER_BIN/odp_accounting -d $DEV -g $GID -c $CG/odp" 2>&1); rc=$?
relay_tap odp_accounting "$rc" "$out"
check "no OOM kill in the ODP group" sh -c "grep -qx 'oom_kill 0' $CG/odp/memory.events"
rmdir $CG/odp
user_teardown
tap_done
