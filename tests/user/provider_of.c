// SPDX-License-Identifier: GPL-2.0
/*
 * Which libibverbs provider serves an RDMA device: opens DEV and prints the file name of
 * the shared object its ibv_post_send lives in (librrxe-rdmavN.so, librxe-rdmavN.so, ...).
 * Exit status 1 (and a message) if DEV is not in libibverbs' device list (no provider
 * claimed it) or cannot be opened.
 *
 *   provider_of DEV
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	Dl_info info;
	const char *base;
	int found = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: provider_of DEV\n");
		return 2;
	}
	list = ibv_get_device_list(NULL);
	for (int i = 0; list && list[i]; i++) {
		if (strcmp(ibv_get_device_name(list[i]), argv[1]))
			continue;
		found = 1;
		ctx = ibv_open_device(list[i]);
		break;
	}
	if (!ctx) {
		fprintf(stderr, "provider_of: %s %s\n", argv[1],
			found ? "cannot be opened" : "is not in the device list");
		return 1;
	}
	if (!dladdr((void *)ctx->ops.post_send, &info) || !info.dli_fname) {
		fprintf(stderr, "provider_of: no shared object for %s's post_send\n", argv[1]);
		return 1;
	}
	base = strrchr(info.dli_fname, '/');
	printf("%s\n", base ? base + 1 : info.dli_fname);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
