// SPDX-License-Identifier: GPL-2.0
/* ib_umem_get_va (7.x); older trees have ib_umem_get with the same arguments. */
#include <rdma/ib_umem.h>
struct ib_umem *p(struct ib_device *d) { return ib_umem_get_va(d, 0, 0, 0); }
