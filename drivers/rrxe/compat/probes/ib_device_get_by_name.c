// SPDX-License-Identifier: GPL-2.0
/* ib_device_get_by_name (removed in 7.x). */
#include <rdma/ib_verbs.h>
struct ib_device *p(void) { return ib_device_get_by_name("x", RDMA_DRIVER_UNKNOWN); }
