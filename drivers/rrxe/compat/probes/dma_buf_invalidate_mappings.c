// SPDX-License-Identifier: GPL-2.0
/*
 * A dma-buf importer's notification callback is invalidate_mappings (older trees:
 * move_notify, which every dynamic importer must set).
 */
#include <linux/dma-buf.h>
static void f(struct dma_buf_attachment *a) { }
void p(struct dma_buf_attach_ops *o) { o->invalidate_mappings = f; }
