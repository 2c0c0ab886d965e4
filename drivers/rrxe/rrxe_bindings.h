/* SPDX-License-Identifier: GPL-2.0 */
/* Input of the module's own bindgen rule (see Kbuild): what the Rust side may name. */
#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>
#include <rdma/ib_mad.h>

#include <rdma/rrxe-abi.h>
#include <linux/crc32.h>
#include "rrxe_glue.h"
