// SPDX-License-Identifier: GPL-2.0
/* ib_device_ops.resize_user_cq(cq, unsigned int, udata), which replaced resize_cq. */
#include <rdma/ib_verbs.h>
void p(struct ib_device_ops *o) { o->resize_user_cq = NULL; }
