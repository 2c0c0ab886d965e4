/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For test programs that act on rrxe's shared queues directly: where this process's queue
 * mappings are (/proc/self/maps), their headers, a QP created with its rings located, and
 * the doorbell. Include after tap.h and loop.h.
 */
#ifndef RRXE_TEST_RINGS_H
#define RRXE_TEST_RINGS_H

#include <rdma/ib_user_verbs.h>
#include <rdma/rrxe-abi.h>
#include <stdio.h>

/* The uverbs mappings of this process, in address order. */
#define MAXMAP 64
struct mapping {
	uintptr_t start, end;
	unsigned long off;	/* the mmap offset: the kernel hands them out in creation order */
};

static inline int maps(struct mapping *m)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		die("/proc/self/maps");
	while (n < MAXMAP && fgets(line, sizeof(line), f)) {
		if (!strstr(line, "/dev/infiniband/uverbs"))
			continue;
		if (sscanf(line, "%lx-%lx %*s %lx", &m[n].start, &m[n].end, &m[n].off) == 3)
			n++;
	}
	fclose(f);
	return n;
}

/* The mappings in `after` that are not in `before` (the queues just created). */
static inline int new_maps(struct mapping *before, int nb, struct mapping *after, int na,
		    struct mapping *out)
{
	int n = 0;

	for (int i = 0; i < na; i++) {
		int seen = 0;

		for (int j = 0; j < nb; j++)
			seen |= before[j].start == after[i].start;
		if (!seen)
			out[n++] = after[i];
	}
	return n;
}

static inline volatile struct rrxe_queue_hdr *hdr(struct mapping *m)
{
	return (volatile struct rrxe_queue_hdr *)m->start;
}

/* ibv_create_qp, with the new QP's SQ and RQ mappings. */
static inline struct ibv_qp *qp_with_rings(struct ibv_qp_init_attr *qa, struct mapping *sq,
					   struct mapping *rq)
{
	struct mapping b[MAXMAP], a[MAXMAP], n[MAXMAP];
	int nb = maps(b), na;
	struct ibv_qp *qp = ibv_create_qp(pd, qa);

	if (!qp)
		die("ibv_create_qp");
	na = maps(a);
	if (new_maps(b, nb, a, na, n) != 2)
		die("SQ/RQ rings not found in /proc/self/maps");
	/* The kernel creates the SQ before the RQ: the lower mmap offset is the SQ's. */
	*sq = n[0].off < n[1].off ? n[0] : n[1];
	*rq = n[0].off < n[1].off ? n[1] : n[0];
	return qp;
}

/* The doorbell, as the provider rings it: POST_SEND with no work requests. */
static inline int doorbell(struct ibv_qp *qp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} c = {};
	struct ib_uverbs_post_send_resp resp = {};

	c.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	c.hdr.in_words = sizeof(c) / 4;
	c.hdr.out_words = sizeof(resp) / 4;
	c.cmd.response = (uintptr_t)&resp;
	c.cmd.qp_handle = qp->handle;
	c.cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
	return write(ctx->cmd_fd, &c, sizeof(c)) == sizeof(c) ? 0 : -errno;
}

#endif
