// SPDX-License-Identifier: GPL-2.0
/* reg_user_mr and reg_user_mr_dmabuf take a struct ib_dmah (DMA handle) argument. */
#include <rdma/ib_verbs.h>
struct ib_mr *f(struct ib_pd *pd, u64 s, u64 l, u64 v, int a, struct ib_dmah *d,
		struct ib_udata *u);
void p(struct ib_device_ops *o) { o->reg_user_mr = f; }
