#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 600
# User verbs over rrxe between two VMs through librrxe: the rdma-core example programs
# (RC, UC, UD and SRQ ping-pong with data checking) and the librdmacm ones (rping with
# verification, ucmatose, rdma_server/rdma_client).
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"

user_setup
check "ibv_devinfo -d $DEV opens the device through librrxe" ibv_devinfo -d "$DEV"

pair "ibv_rc_pingpong 4 KiB x100, checked" 120 -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18601 -n 100 -s 4096 -c -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18601 -n 100 -s 4096 -c @PEER
pair "ibv_rc_pingpong 64 KiB x20, checked" 120 -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18602 -n 20 -s 65536 -c -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18602 -n 20 -s 65536 -c @PEER
pair "ibv_uc_pingpong 1 KiB x100, checked" 120 -- \
  ibv_uc_pingpong -d @DEV -g @GID -p 18603 -n 100 -s 1024 -c -- \
  ibv_uc_pingpong -d @DEV -g @GID -p 18603 -n 100 -s 1024 -c @PEER
pair "ibv_ud_pingpong 512 B x100, checked" 120 -- \
  ibv_ud_pingpong -d @DEV -g @GID -p 18604 -n 100 -s 512 -c -- \
  ibv_ud_pingpong -d @DEV -g @GID -p 18604 -n 100 -s 512 -c @PEER
pair "ibv_srq_pingpong 4 QPs x100, checked" 180 -- \
  ibv_srq_pingpong -d @DEV -g @GID -p 18605 -q 4 -n 100 -s 4096 -c -- \
  ibv_srq_pingpong -d @DEV -g @GID -p 18605 -q 4 -n 100 -s 4096 -c @PEER
pair "rping -V -C 100" 120 -- \
  rping -s -a "$RRXE_MY_IP" -p 18606 -V -C 100 -- \
  rping -c -a @PEER -p 18606 -V -C 100
pair "ucmatose 2 connections x10 messages" 120 -- \
  ucmatose -p 18607 -c 2 -C 10 -- \
  ucmatose -s @PEER -p 18607 -c 2 -C 10
pair "rdma_server / rdma_client" 60 -- \
  rdma_server -p 18608 -- \
  rdma_client -s @PEER -p 18608

user_teardown
tap_done
