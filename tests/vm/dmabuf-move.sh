#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 1
# timeout: 240
# dma-buf MRs over an exporter that moves its buffers (tests/user/dmabuf_move.c, loopback RC
# QPs on one host): the test exporter tests/movebuf/rrxe_movebuf.ko maps without pinning and
# moves an unpinned buffer to new pages when asked, as TTM-based GPU drivers do. An MR pins
# its buffer (a move is refused while it lives), a peer's WRITE lands in the current pages and
# never in retired ones, deregistration unpins; an exporter that cannot pin, or whose vmap
# fails, is refused with its errno and without a kernel warning.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

MOVEBUF_KO=$RRXE_ROOT/tests/movebuf/rrxe_movebuf.ko
check "insmod rrxe_movebuf.ko (make -C tests/movebuf)" insmod "$MOVEBUF_KO"
user_setup
marker="dmabuf-move-marker-$$-$(date +%s%N)"
echo "$marker" > /dev/kmsg
out=$(timeout 200 "$RRXE_USER_BIN/dmabuf_move" -d "$DEV" -g "$GID" 2>&1); rc=$?
relay_tap dmabuf_move "$rc" "$out"
warn=$(dmesg --notime | sed -n "/$marker/,\$p" | grep -a -E 'WARNING:|BUG:|KASAN' | head -n 3)
if [ -z "$warn" ]; then ok "no kernel warning while registering over the test exporter"
else not_ok "no kernel warning while registering over the test exporter"; echo "$warn" | sed 's/^/# /'; fi
user_teardown
check "rmmod rrxe_movebuf" rmmod rrxe_movebuf
tap_done
