#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# smp: 2
# timeout: 240
# Kernel verbs on one VM (tests/kverbs/rrxe_ktest.ko role=srq-drain): a QP on an SRQ gets
# IB_EVENT_COMM_EST for its first request in RTR, and ib_drain_qp on it returns with
# IB_EVENT_QP_LAST_WQE_REACHED received (the core would wait 60 s for it), leaving the SRQ's
# other receives posted; a QP on the SRQ gets the event once per entry into the error state.
# Then the completion vectors (two CPUs: the one test with more than one): one per online
# CPU, a CQ's handler runs on its vector's CPU, a vector past the last is EINVAL.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/kverbs-tap.sh"

if [ ! -f "$KTEST_KO" ]; then
  not_ok "$KTEST_KO is built (make -C tests/kverbs)"
  tap_done; exit
fi
setup() { load_rrxe && rdma link add rrxe0 type rrxe netdev eth0; }
check "rrxe0: driver loaded, link added on eth0" setup
gid=$(retry 30 0.3 gid_index_v4 rrxe0 "$RRXE_MY_IP") || gid=
[ -n "$gid" ] && ok "rrxe0 has a RoCE v2 GID for $RRXE_MY_IP (index $gid)" \
  || not_ok "rrxe0 has a RoCE v2 GID for $RRXE_MY_IP"
res() { rdma resource show 2>/dev/null | sed 's/^[0-9]*: *//' | sort; }
before=$(res)
# The module's own wait bound scales with a slower kernel, like the VM timeouts.
kv_insmod_tap role=srq-drain netdev=eth0 timeout_ms=$((20000 * SCALE))
after=$(res)
if [ "$before" = "$after" ]; then
  ok "no kernel RDMA resources left behind (rdma resource show unchanged)"
else
  not_ok "no kernel RDMA resources left behind"
  echo "$before" | sed 's/^/# before: /'
  echo "$after" | sed 's/^/# after:  /'
fi
check "rrxe0: link deleted" rdma link delete rrxe0
check "rmmod rrxe" rmmod rrxe
tap_done
