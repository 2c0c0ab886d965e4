// SPDX-License-Identifier: GPL-2.0
/*
 * The core allocates a struct rdma_counter with the driver's size (size_rdma_counter) and
 * calls counter_init on it, unconditionally, before counter_alloc_stats.
 */
#include <rdma/ib_verbs.h>
void p(struct ib_device_ops *o) { o->counter_init = NULL; o->size_rdma_counter = 0; }
