#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 1200
# Shared mode with macvlan pods (see tests/vm/lib/netns-shared.sh).
KIND=macvlan
. "$RRXE_ROOT/tests/vm/lib/netns-shared.sh"
