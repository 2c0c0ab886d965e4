#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 600
# XRC between two VMs through librrxe: the stock ibv_xsrq_pingpong (XRC domain, XRC SRQ,
# XRC send and receive QPs; one and multi-packet messages, polling and CQ events), then
# tests/user/xrc on each VM (data through an XRC SRQ checked byte for byte, and the refusals)
# and between the VMs (messages of 1 B to 64 KiB each way, every byte checked, a READ).
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
check "$DEV advertises XRC (IB_DEVICE_XRC)" \
  bash -c "ibv_devinfo -v -d $DEV | grep -q XRC"

pair "ibv_xsrq_pingpong 4 KiB x100" 120 -- \
  ibv_xsrq_pingpong -d @DEV -g @GID -p 18701 -n 100 -s 4096 -- \
  ibv_xsrq_pingpong -d @DEV -g @GID -p 18701 -n 100 -s 4096 @PEER
pair "ibv_xsrq_pingpong 64 KiB x20 (multi-packet messages)" 120 -- \
  ibv_xsrq_pingpong -d @DEV -g @GID -p 18702 -n 20 -s 65536 -- \
  ibv_xsrq_pingpong -d @DEV -g @GID -p 18702 -n 20 -s 65536 @PEER
pair "ibv_xsrq_pingpong 1 KiB x50, CQ events" 120 -- \
  ibv_xsrq_pingpong -d @DEV -g @GID -p 18703 -n 50 -s 1024 -e -- \
  ibv_xsrq_pingpong -d @DEV -g @GID -p 18703 -n 50 -s 1024 -e @PEER
pair "ibv_xsrq_pingpong MTU 1024, 8 KiB x50" 120 -- \
  ibv_xsrq_pingpong -d @DEV -g @GID -p 18704 -n 50 -s 8192 -m 1024 -- \
  ibv_xsrq_pingpong -d @DEV -g @GID -p 18704 -n 50 -s 8192 -m 1024 @PEER

# Two clients on VM 1 share the server's XRC SRQ (a target QP each). The server sends to
# each client's SRQ through either client's connection, so the two client processes must
# share one XRC domain: the tool opens it through /tmp/xrc_domain, which the read-only root
# of the VMs cannot hold, so the clients get a tmpfs /tmp of their own (one mount namespace).
# A checkout under /tmp stays visible: its top directory is bound back into the new /tmp.
if [ "$RRXE_VM" = 0 ]; then
  check "ibv_xsrq_pingpong -c 2: two clients through one XRC SRQ (server)" \
    timeout 120 ibv_xsrq_pingpong -d "$DEV" -g "$GID" -p 18706 -n 50 -s 4096 -c 2
else
  export DEV GID RRXE_PEER_IP RRXE_ROOT NOT_CONNECTED
  export -f until_connected
  check "ibv_xsrq_pingpong -c 2: two clients through one XRC SRQ (clients)" \
    unshare -m bash -c '
      mkdir -p /run/xrc-oldtmp && mount --bind /tmp /run/xrc-oldtmp &&
        mount -t tmpfs none /tmp || exit 1
      case "$RRXE_ROOT/" in
        /tmp/*) top=${RRXE_ROOT#/tmp/}; top=${top%%/*}
                mkdir -p "/tmp/$top" && mount --bind "/run/xrc-oldtmp/$top" "/tmp/$top" || exit 1 ;;
      esac
      c() { until_connected 60 timeout 120 ibv_xsrq_pingpong -d "$DEV" -g "$GID" -p 18706 \
              -n 50 -s 4096 "$RRXE_PEER_IP"; }
      c & a=$!
      c & b=$!
      wait "$a"; ra=$?
      wait "$b"; rb=$?
      [ "$ra" = 0 ] && [ "$rb" = 0 ]'
fi

out=$(timeout 200 "$RRXE_USER_BIN/xrc" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap xrc "$rc" "$out"

# Across the wire: each VM's XRC send QP into the other's XRC SRQ, every byte checked.
if [ "$RRXE_VM" = 0 ]; then peer=(-s); else peer=("$RRXE_PEER_IP"); fi
out=$(timeout 200 "$RRXE_USER_BIN/xrc" -d "$DEV" -g "$GID" -p 18705 "${peer[@]}" 2>&1); rc=$?
relay_tap "xrc (two VMs)" "$rc" "$out"

user_teardown
tap_done
