#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 1200
# Shared mode with ipvlan pods (see tests/vm/lib/netns-shared.sh).
KIND=ipvlan
. "$RRXE_ROOT/tests/vm/lib/netns-shared.sh"
