// SPDX-License-Identifier: GPL-2.0
/* The reworked ODP umem (6.16 and later): map.pfn_list of HMM pfns, no dma_list. */
#include <linux/hmm.h>
#include <rdma/ib_umem_odp.h>
unsigned long p(struct ib_umem_odp *u) { return u->map.pfn_list[0] & HMM_PFN_VALID; }
