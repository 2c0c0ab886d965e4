#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 300
# dma-buf memory regions through librrxe (tests/user/dmabuf.c, loopback RC QPs on one host):
# ibv_reg_dmabuf_mr over a udmabuf (a sealed memfd), RDMA WRITE/SEND/READ/FETCH_ADD through it
# checked byte for byte in the memfd, accesses past its end refused, an MR at a non-zero
# offset, bad fds and ranges refused with the kernel's errnos, the buffer released at
# deregistration (debugfs dma_buf/bufinfo).
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
if [ -c /dev/udmabuf ]; then ok "/dev/udmabuf exists (CONFIG_UDMABUF)"
else not_ok "/dev/udmabuf exists (CONFIG_UDMABUF)"; fi
user_setup
out=$(timeout 200 "$RRXE_USER_BIN/dmabuf" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap dmabuf "$rc" "$out"
user_teardown
tap_done
