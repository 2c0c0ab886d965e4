// SPDX-License-Identifier: GPL-2.0
/* _ib_alloc_device takes the device's network namespace. */
#include <rdma/ib_verbs.h>
struct ib_device *p(size_t size) { return _ib_alloc_device(size, &init_net); }
