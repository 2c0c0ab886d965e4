# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Common body of the kernel-verbs tests (tests/kverbs/rrxe_ktest.ko) between two VMs: VM 0
# loads the module as the server, VM 1 as the client; the module runs the whole test in its
# init and logs TAP lines "rrxe_ktest: ok N - ...", which become this script's TAP.
# Source it after tests/vm/lib/guest-lib.sh with:
#   KV_DEV          the RDMA link name (rxe0, rrxe0)
#   kv_dev_setup    a function: load the driver and add the link on eth0
#   kv_dev_teardown (optional) a function: delete the link (default: rdma link delete $KV_DEV)
#   KTEST_ARGS      (optional) extra module parameters, e.g. "iters=1 sizes=1,4096"
#   kv_before_insmod (optional) a function run just before insmod
#   kv_after_test   (optional) a function run after rmmod, before teardown (may print TAP)
. "$RRXE_ROOT/tests/vm/lib/kverbs-tap.sh"
declare -F kv_dev_teardown >/dev/null || kv_dev_teardown() { rdma link delete "$KV_DEV"; }

if [ ! -f "$KTEST_KO" ]; then
  not_ok "$KTEST_KO is built (make -C tests/kverbs)"
  tap_done; exit
fi
check "$KV_DEV: driver loaded, link added on eth0" kv_dev_setup
gid=$(retry 30 0.3 gid_index_v4 "$KV_DEV" "$RRXE_MY_IP") || gid=
[ -n "$gid" ] && ok "$KV_DEV has a RoCE v2 GID for $RRXE_MY_IP (index $gid)" \
  || not_ok "$KV_DEV has a RoCE v2 GID for $RRXE_MY_IP"

# Kernel RDMA resources (pd/cq/qp/cm_id/mr counts) before the test, to detect leaks.
kv_res() { rdma resource show 2>/dev/null | sed 's/^[0-9]*: *//' | sort; }
res_before=$(kv_res)
echo "$res_before" | sed 's/^/# resources before: /'

if [ "$RRXE_VM" = 0 ]; then
  args="role=server addr=$RRXE_MY_IP"
else
  args="role=client addr=$RRXE_PEER_IP"
fi
# The module's own wait bound (20 s) scales with a slower kernel, like the VM timeouts.
args="timeout_ms=$((20000 * SCALE)) $args"
declare -F kv_before_insmod >/dev/null && kv_before_insmod
# shellcheck disable=SC2086
kv_insmod_tap $args $KTEST_ARGS
res_after=$(kv_res)
if [ "$res_before" = "$res_after" ]; then
  ok "no kernel RDMA resources left behind (rdma resource show unchanged)"
else
  not_ok "no kernel RDMA resources left behind"
  echo "$res_before" | sed 's/^/# before: /'
  echo "$res_after" | sed 's/^/# after:  /'
fi
declare -F kv_after_test >/dev/null && kv_after_test
check "$KV_DEV: link deleted" kv_dev_teardown
tap_done
