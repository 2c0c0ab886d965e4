// SPDX-License-Identifier: GPL-2.0
/* counter_bind_qp(counter, qp, port) and counter_unbind_qp(qp, port): the port is passed. */
#include <rdma/ib_verbs.h>
int f(struct rdma_counter *c, struct ib_qp *q, u32 port);
int g(struct ib_qp *q, u32 port);
void p(struct ib_device_ops *o) { o->counter_bind_qp = f; o->counter_unbind_qp = g; }
