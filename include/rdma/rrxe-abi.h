/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * rrxe user ABI: the contract between rrxe.ko and librrxe-rdmav34.so.
 *
 * Both sides build from this one header (the kernel through the module's
 * bindgen rule, the provider through its own mirror with layout tests).
 * Every structure is fixed-size, naturally aligned and padded explicitly;
 * new fields only go at the end, and a change that is not backward
 * compatible bumps RRXE_UVERBS_ABI_VERSION.
 */
#ifndef RRXE_ABI_H
#define RRXE_ABI_H

#include <linux/types.h>

/* Reported as the uverbs ABI version of every rrxe device. */
#define RRXE_UVERBS_ABI_VERSION 1

/* Driver-private response of alloc_ucontext (GET_CONTEXT). */
struct rrxe_alloc_ucontext_resp {
	__u32 abi_version;	/* RRXE_UVERBS_ABI_VERSION */
	__u32 reserved;
};

#endif /* RRXE_ABI_H */
