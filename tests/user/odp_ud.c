// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand-paging send buffers on UD QPs (TAP output, one host, two UD QPs of this
 * process): what IBV_ODP_SUPPORT_SEND in ud_odp_caps promises.
 *   - query_device_ex advertises SEND (and only SEND) for UD;
 *   - datagrams of 1000 B sent from never-touched pages of an explicit ODP MR and of an
 *     implicit ODP MR over a fresh mapping arrive intact (after the 40-byte GRH area),
 *     each sender's completion successful.
 * The sender waits while its pages are faulted in; nothing is lost on the way.
 *
 *   odp_ud -d DEV -g GIDX
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
#define LEN 1000
#define GRH 40
#define QKEY 0x11111111u

static uint8_t rbuf[PAGE];

static struct ibv_qp *ud_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);

	if (!qp)
		die("ibv_create_qp UD");
	loop_ud_rts(qp, QKEY);
	return qp;
}

static uint8_t *anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

/* One datagram of LEN bytes at laddr (lkey) from a to b, received into rbuf; the send
 * status * 100 + the receive status (negative: a post failed or nothing completed). */
static int datagram(struct ibv_qp *a, struct ibv_cq *cqa, struct ibv_qp *b, struct ibv_cq *cqb,
		    struct ibv_ah *ah, uint32_t rlkey, uint64_t laddr, uint32_t lkey)
{
	struct ibv_sge rs = { (uintptr_t)rbuf, sizeof(rbuf), rlkey };
	struct ibv_recv_wr r = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_sge s = { laddr, LEN, lkey };
	struct ibv_send_wr w = { .wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int st, rst;

	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = b->qp_num;
	w.wr.ud.remote_qkey = QKEY;
	memset(rbuf, 0, sizeof(rbuf));
	if (ibv_post_recv(b, &r, &rbad) || ibv_post_send(a, &w, &bad))
		return -2;
	st = wait_wc(cqa, &wc);
	if (st != IBV_WC_SUCCESS)
		return st < 0 ? st : st * 100;
	rst = wait_wc(cqb, &wc);
	if (rst == IBV_WC_SUCCESS && wc.byte_len != LEN + GRH)
		return -5;
	return rst < 0 ? -4 : rst;
}

int main(int argc, char **argv)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .sgid_index = 0, .hop_limit = 64 } };
	const unsigned int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND;
	struct ibv_device_attr_ex a = { 0 };
	struct ibv_mr *rmr, *mr, *imr;
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *qa, *qb;
	uint8_t *m, *fresh;
	struct ibv_ah *ah;
	uint32_t ud;
	int st;

	loop_open(argc, argv);
	st = ibv_query_device_ex(ctx, NULL, &a);
	ud = a.odp_caps.per_transport_caps.ud_odp_caps;
	ok(!st && ud == IBV_ODP_SUPPORT_SEND, "query_device_ex: UD ODP SEND only (ud 0x%x)", ud);
	m = anon(4 * PAGE);
	fresh = anon(4 * PAGE);
	rmr = ibv_reg_mr(pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	mr = ibv_reg_mr(pd, m, 4 * PAGE, acc);
	imr = ibv_reg_mr(pd, NULL, SIZE_MAX, acc);
	cqa = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cqb = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!rmr || !mr || !imr || !cqa || !cqb)
		die("setup");
	qa = ud_qp(cqa);
	qb = ud_qp(cqb);
	aa.grh.dgid = gid;
	aa.grh.sgid_index = gidx;
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		die("ibv_create_ah");

	/* Untouched pages of the explicit MR: written by the process, never read by rrxe. */
	loop_pattern(m + 2 * PAGE - 300, LEN, 1);
	st = datagram(qa, cqa, qb, cqb, ah, rmr->lkey, (uintptr_t)(m + 2 * PAGE - 300), mr->lkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(rbuf + GRH, m + 2 * PAGE - 300, LEN),
	   "UD SEND of %d B from explicit ODP pages (across a page boundary) arrives (status %d)",
	   LEN, st);
	loop_pattern(fresh + 3 * PAGE + 7, LEN, 2);
	st = datagram(qa, cqa, qb, cqb, ah, rmr->lkey, (uintptr_t)(fresh + 3 * PAGE + 7),
		      imr->lkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(rbuf + GRH, fresh + 3 * PAGE + 7, LEN),
	   "UD SEND of %d B through an implicit ODP lkey arrives (status %d)", LEN, st);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_destroy_cq(cqa);
	ibv_destroy_cq(cqb);
	ok(!ibv_dereg_mr(mr) && !ibv_dereg_mr(imr) && !ibv_dereg_mr(rmr), "dereg the MRs");
	return tap_end();
}
