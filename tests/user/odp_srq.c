// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand-paging receive buffers behind a shared receive queue (TAP output, one host, RC
 * QPs of this process connected to each other): what IBV_ODP_SUPPORT_SRQ_RECV promises.
 *   - query_device_ex advertises SRQ_RECV for RC;
 *   - SENDs of 10000 B (several packets) received through an SRQ into never-touched pages
 *     of an explicit ODP MR, three times at other offsets, each checked byte for byte;
 *   - a receive WQE of two SGEs, one in the explicit ODP MR and one in an implicit ODP MR
 *     over a fresh mapping, both untouched: the message is split across them exactly.
 * The QPs retry RNR without limit: the responder answers RNR NAK while it faults the pages.
 *
 *   odp_srq -d DEV -g GIDX
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "loop.h"

#define PAGE 4096
#define SIZE (16 * PAGE)
#define MSG 10000

static uint8_t src[SIZE];

static uint8_t *anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

/* A SEND of len bytes from src by a, received through srq into sges; both statuses
 * packed as send * 100 + recv (negative: a post failed or nothing completed). */
static int send_srq(struct ibv_qp *a, struct ibv_cq *cqa, struct ibv_srq *srq,
		    struct ibv_cq *cqb, struct ibv_sge *sges, int nsge, uint32_t lkey,
		    uint32_t len, uint32_t *got)
{
	struct ibv_recv_wr r = { .wr_id = 1, .sg_list = sges, .num_sge = nsge }, *rbad;
	struct ibv_sge s = { (uintptr_t)src, len, lkey };
	struct ibv_send_wr w = { .wr_id = 2, .sg_list = &s, .num_sge = 1,
				 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc = { 0 };
	int st, rst;

	if (ibv_post_srq_recv(srq, &r, &rbad) || ibv_post_send(a, &w, &bad))
		return -2;
	st = wait_wc(cqa, &wc);
	if (st != IBV_WC_SUCCESS)
		return st < 0 ? st : st * 100;
	rst = wait_wc(cqb, &wc);
	*got = wc.byte_len;
	return rst < 0 ? -4 : rst;
}

int main(int argc, char **argv)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 2 } };
	const unsigned int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND;
	struct ibv_device_attr_ex a = { 0 };
	struct ibv_mr *smr, *mr, *imr;
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *qa, *qb;
	struct ibv_srq *srq;
	uint8_t *m, *fresh;
	uint32_t got = 0;
	int st;

	loop_open(argc, argv);
	st = ibv_query_device_ex(ctx, NULL, &a);
	ok(!st && (a.odp_caps.per_transport_caps.rc_odp_caps & IBV_ODP_SUPPORT_SRQ_RECV),
	   "query_device_ex: RC ODP SRQ_RECV (rc 0x%x)",
	   a.odp_caps.per_transport_caps.rc_odp_caps);
	m = anon(SIZE);
	fresh = anon(16 * PAGE);
	smr = ibv_reg_mr(pd, src, SIZE, IBV_ACCESS_LOCAL_WRITE);
	mr = ibv_reg_mr(pd, m, SIZE, acc);
	imr = ibv_reg_mr(pd, NULL, SIZE_MAX, acc);
	ok(smr && mr && imr, "MRs: pinned source, explicit and implicit ODP (errno %d)",
	   smr && mr && imr ? 0 : errno);
	srq = ibv_create_srq(pd, &sa);
	cqa = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	cqb = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	if (!smr || !mr || !imr || !srq || !cqa || !cqb)
		die("setup");
	qa = loop_rc_qp(cqa, NULL, 1, 0);
	qb = loop_rc_qp(cqb, srq, 1, 0);
	to_rts_opts(qa, qb->qp_num, &gid, 1, 14, 7, 7);
	to_rts_opts(qb, qa->qp_num, &gid, 1, 14, 7, 7);

	for (int i = 0; i < 3; i++) {
		size_t off = (size_t)i * 5 * PAGE + 100 + i;
		struct ibv_sge r = { (uintptr_t)(m + off), MSG, mr->lkey };

		loop_pattern(src, MSG, (uint8_t)(i + 1));
		st = send_srq(qa, cqa, srq, cqb, &r, 1, smr->lkey, MSG, &got);
		ok(st == IBV_WC_SUCCESS && got == MSG && !memcmp(m + off, src, MSG) &&
		   m[off - 1] == 0 && m[off + MSG] == 0,
		   "SEND of %d B through the SRQ into untouched ODP pages at +%zu (status %d, %u B)",
		   MSG, off, st, got);
	}
	{
		struct ibv_sge r[2] = {
			{ (uintptr_t)(m + 15 * PAGE + 10), 3000, mr->lkey },
			{ (uintptr_t)(fresh + 7 * PAGE + 5), MSG, imr->lkey },
		};

		loop_pattern(src, MSG, 9);
		st = send_srq(qa, cqa, srq, cqb, r, 2, smr->lkey, MSG, &got);
		ok(st == IBV_WC_SUCCESS && got == MSG && !memcmp(m + 15 * PAGE + 10, src, 3000) &&
		   !memcmp(fresh + 7 * PAGE + 5, src + 3000, MSG - 3000),
		   "SEND split over two SGEs (explicit and implicit ODP, untouched) through the SRQ (status %d, %u B)",
		   st, got);
	}
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_destroy_srq(srq);
	ibv_destroy_cq(cqa);
	ibv_destroy_cq(cqb);
	ok(!ibv_dereg_mr(mr) && !ibv_dereg_mr(imr) && !ibv_dereg_mr(smr), "dereg the MRs");
	return tap_end();
}
