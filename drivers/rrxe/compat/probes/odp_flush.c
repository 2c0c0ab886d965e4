// SPDX-License-Identifier: GPL-2.0
/* The core has the ODP capability bits of FLUSH and ATOMIC WRITE (IB_ODP_SUPPORT_FLUSH). */
#include <rdma/ib_verbs.h>
int p(void) { return IB_ODP_SUPPORT_FLUSH | IB_ODP_SUPPORT_ATOMIC_WRITE; }
