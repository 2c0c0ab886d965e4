// SPDX-License-Identifier: GPL-2.0
/*
 * Resource accounting of rrxe's user objects, run inside a cgroup v2
 * group DIR with the memory and rdma controllers on (tests/vm/user-accounting.sh):
 *  - the kernel memory of CQ rings (GFP_KERNEL_ACCOUNT pages) is charged to the group's
 *    memory.current while the CQs live and uncharged when they go;
 *  - with memory.max a little above the current use, creating CQs fails with ENOMEM
 *    before the group exceeds it, and the device still works afterwards;
 *  - the rdma controller's hca_object limit (rdma.max) bounds the objects one group may
 *    create on the device: the first object past it fails with EAGAIN, as the RDMA core's
 *    rdmacg charge answers, and rdma.current counts what lives.
 *
 *   accounting -d DEV -c CGROUP_DIR
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "cgroup.h"

#define NCQ 8
#define MAXCQ 64


static long long read_ll(const char *file)
{
	char p[256];
	long long v = -1;
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", cg, file);
	f = fopen(p, "r");
	if (!f)
		die(p);
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* The value of KEY in rdma.current's line for DEV (e.g. "rrxe0 hca_handle=1 hca_object=3"). */
static long rdma_current(const char *dev, const char *key)
{
	char p[256], line[512];
	long v = -1;
	FILE *f;

	snprintf(p, sizeof(p), "%s/rdma.current", cg);
	f = fopen(p, "r");
	if (!f)
		die(p);
	while (fgets(line, sizeof(line), f)) {
		char *k;

		if (strncmp(line, dev, strlen(dev)) || line[strlen(dev)] != ' ')
			continue;
		k = strstr(line, key);
		if (k && k[strlen(key)] == '=')
			v = strtol(k + strlen(key) + 1, NULL, 10);
	}
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	const char *devname = NULL;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_device_attr da;
	struct ibv_cq *cqs[MAXCQ];
	struct ibv_pd *pd;
	long long m0, m1, m2, ring;
	char buf[128];
	int c, n, err;

	while ((c = getopt(argc, argv, "d:c:")) != -1) {
		if (c == 'd')
			devname = optarg;
		else if (c == 'c')
			cg = optarg;
	}
	if (!devname || !cg)
		die("usage: accounting -d DEV -c CGROUP_DIR");
	list = ibv_get_device_list(NULL);
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), devname))
			ctx = ibv_open_device(list[i]);
	if (!ctx || ibv_query_device(ctx, &da))
		die("open device");
	ring = (long long)da.max_cqe * 64; /* RRXE_CQE_SLOT_SIZE */

	/* 1. CQ rings are charged to the group while they live. */
	m0 = read_ll("memory.current");
	for (n = 0; n < NCQ; n++) {
		cqs[n] = ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0);
		if (!cqs[n])
			die("ibv_create_cq");
	}
	m1 = read_ll("memory.current");
	ok(m1 - m0 >= NCQ * ring * 9 / 10,
	   "%d CQs of %d entries (%lld KiB of rings) raised memory.current by %lld KiB", NCQ,
	   da.max_cqe, NCQ * ring / 1024, (m1 - m0) / 1024);
	for (n = 0; n < NCQ; n++)
		if (ibv_destroy_cq(cqs[n]))
			die("ibv_destroy_cq");
	m2 = read_ll("memory.current");
	ok(m1 - m2 >= NCQ * ring * 9 / 10, "destroying them lowered it by %lld KiB", (m1 - m2) / 1024);

	/* 2. memory.max bounds the kernel memory one group's CQs take: ENOMEM at the limit. */
	snprintf(buf, sizeof(buf), "%lld", m2 + 3 * ring);
	ok(!cg_write("memory.max", buf), "memory.max set to the current use + 3 rings (%s)", buf);
	errno = 0;
	for (n = 0; n < MAXCQ; n++) {
		cqs[n] = ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0);
		if (!cqs[n])
			break;
	}
	err = errno;
	ok(n < MAXCQ && n <= 3 && err == ENOMEM,
	   "creating CQs under memory.max stopped after %d with ENOMEM (errno %d, %s)", n, err,
	   strerror(err));
	ok(read_ll("memory.current") <= m2 + 3 * ring, "memory.current stayed under memory.max");
	while (n > 0)
		ibv_destroy_cq(cqs[--n]);
	ok(!cg_write("memory.max", "max"), "memory.max back to max");
	cqs[0] = ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0);
	ok(cqs[0] != NULL, "a CQ of %d entries is created again without the limit", da.max_cqe);
	if (cqs[0])
		ibv_destroy_cq(cqs[0]);

	/* 3. The rdma controller: hca_object=4 in rdma.max lets this group hold 4 objects. */
	snprintf(buf, sizeof(buf), "%s hca_object=4", devname);
	ok(!cg_write("rdma.max", buf), "rdma.max: %s", buf);
	pd = ibv_alloc_pd(ctx);
	ok(pd != NULL, "a PD (object 1)");
	errno = 0;
	for (n = 0; n < MAXCQ; n++) {
		cqs[n] = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		if (!cqs[n])
			break;
	}
	err = errno;
	ok(n == 3 && err == EAGAIN, "3 CQs (objects 2-4), then the 5th object refused with EAGAIN (%d CQs, errno %d, %s)",
	   n, err, strerror(err));
	ok(rdma_current(devname, "hca_object") == 4, "rdma.current counts 4 hca_objects (%ld)",
	   rdma_current(devname, "hca_object"));
	while (n > 0)
		ibv_destroy_cq(cqs[--n]);
	ok(rdma_current(devname, "hca_object") == 1, "after destroying the CQs it counts 1 (%ld)",
	   rdma_current(devname, "hca_object"));
	cqs[0] = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	ok(cqs[0] != NULL, "a CQ fits under the limit again");
	if (cqs[0])
		ibv_destroy_cq(cqs[0]);
	snprintf(buf, sizeof(buf), "%s hca_object=max", devname);
	ok(!cg_write("rdma.max", buf), "rdma.max: %s", buf);
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return tap_end();
}
