// SPDX-License-Identifier: GPL-2.0
/*
 * The verbs a real application uses beyond the data path's common case, through librrxe on
 * one host (QPs of this process connected to each other; TAP output):
 *   - ibv_query_device_ex / ibv_query_port report the device's limits, and those limits are
 *     enforced: one more SGE, WR, CQE or inline byte is refused with EINVAL, exactly the
 *     maximum works (a 32-SGE RDMA WRITE and a 32-SGE receive, data checked);
 *   - wrong arguments on the data path give the errno a verbs user expects: EINVAL for too
 *     many SGEs, too much inline data or an opcode the QP type lacks, ENOMEM for a full
 *     receive queue (with bad_wr at the first WR not posted), EINVAL for an illegal QP state
 *     transition or MR access flags;
 *   - SRQ: ibv_query_srq and ibv_modify_srq (IBV_SRQ_LIMIT), and the limit event
 *     (IBV_EVENT_SRQ_LIMIT_REACHED) through ibv_get_async_event, which disarms the limit;
 *     200 receives posted at once all land in order, the limit event only when fewer than
 *     the limit are left; ibv_modify_srq IBV_SRQ_MAX_WR grows and shrinks an SRQ with
 *     receives posted, none lost or repeated, and refuses a size they do not fit (EINVAL);
 *   - completion channels: ibv_req_notify_cq for the next completion, and solicited-only
 *     (no event for an unsolicited message, one for IBV_SEND_SOLICITED and one for an
 *     unsuccessful completion);
 *   - UD through the ibv_wr_* API: ibv_wr_set_ud_addr and ibv_wr_set_inline_data_list,
 *     received with the GRH and the sender's QP number (ibv_wc_read_src_qp);
 *   - MRs at a page offset and with an IOVA unrelated to the address: WRITE and READ reach
 *     exactly the bytes named, across pages, and not one byte past the region;
 *   - ibv_wr_local_inv of a type 2B window: writes through it work before, fail after.
 *
 *   verbs_misc -d DEV -g GIDX
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "loop.h"

#define BUF 65536
static uint8_t *src, *dst;
static struct ibv_mr *src_mr, *dst_mr;
static struct ibv_device_attr_ex dx;

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 13 + (i >> 8));
}

/* A connected pair a <-> b, each on its own CQ. */
struct pair {
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
};

static void pair_new(struct pair *p, struct ibv_cq *cqa, struct ibv_srq *srq, uint32_t sge, uint64_t ops)
{
	p->cqa = cqa ? cqa : ibv_create_cq(ctx, 64, NULL, NULL, 0);
	p->cqb = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!p->cqa || !p->cqb)
		die("ibv_create_cq");
	p->a = loop_rc_qp(p->cqa, srq, sge, ops);
	p->b = loop_rc_qp(p->cqb, NULL, sge, ops);
	to_rts(p->a, p->b->qp_num);
	to_rts(p->b, p->a->qp_num);
}

static void pair_free(struct pair *p)
{
	ibv_destroy_qp(p->a);
	ibv_destroy_qp(p->b);
	ibv_destroy_cq(p->cqa);
	ibv_destroy_cq(p->cqb);
}

/* B sends len bytes of src (signaled, with the given flags); returns its completion status. */
static int b_send(struct pair *p, uint32_t len, unsigned int flags)
{
	struct ibv_sge s = { (uintptr_t)src, len, src_mr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED | flags }, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(p->b, &w, &bad))
		return -2;
	return wait_wc(p->cqb, &wc);
}

static int post_recv_dst(struct ibv_qp *qp, struct ibv_srq *srq, uint64_t id, uint32_t off, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)dst + off, len, dst_mr->lkey };
	struct ibv_recv_wr r = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;

	return srq ? ibv_post_srq_recv(srq, &r, &bad) : ibv_post_recv(qp, &r, &bad);
}

static void caps(void)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	const struct ibv_device_attr *o = &dx.orig_attr;

	int ret = ibv_query_device_ex(ctx, NULL, &dx) || ibv_query_device(ctx, &da);

	ok(!ret, "ibv_query_device_ex and ibv_query_device");
	ok(o->max_qp_wr == da.max_qp_wr && o->max_sge == da.max_sge && o->max_cqe == da.max_cqe &&
	   o->max_mr_size == da.max_mr_size && o->device_cap_flags == da.device_cap_flags,
	   "the extended query agrees with the plain one");
	ok(o->max_sge == 32 && o->max_sge_rd >= 1 && o->max_srq_sge == 32,
	   "32 SGEs per WR (max_sge %d, max_srq_sge %d, max_sge_rd %d)", o->max_sge, o->max_srq_sge,
	   o->max_sge_rd);
	ok(o->max_qp_wr > 0 && o->max_cqe > 0 && o->max_srq_wr > 0 && o->max_qp > 0 &&
	   o->max_cq > 0 && o->max_mr > 0 && o->max_pd > 0 && o->max_qp_rd_atom > 0,
	   "queue limits reported (max_qp_wr %d, max_cqe %d, max_srq_wr %d, max_qp_rd_atom %d)",
	   o->max_qp_wr, o->max_cqe, o->max_srq_wr, o->max_qp_rd_atom);
	ok(o->atomic_cap == IBV_ATOMIC_HCA && (o->device_cap_flags & IBV_DEVICE_RC_RNR_NAK_GEN) &&
	   (o->device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS),
	   "atomic_cap HCA, RNR NAK generation, memory management extensions (flags %#x)",
	   o->device_cap_flags);
	ret = ibv_query_port(ctx, 1, &pa);
	ok(ret == 0 && pa.state == IBV_PORT_ACTIVE &&
	   pa.link_layer == IBV_LINK_LAYER_ETHERNET && pa.gid_tbl_len > gidx &&
	   pa.active_mtu <= pa.max_mtu && pa.max_msg_sz >= (1u << 30),
	   "ibv_query_port: active, Ethernet, gid_tbl_len %d, active_mtu %d, max_msg_sz %u",
	   pa.gid_tbl_len, pa.active_mtu, pa.max_msg_sz);
}

static void limits(void)
{
	const struct ibv_device_attr *o = &dx.orig_attr;
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_init_attr q;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = o->max_srq_wr + 1, .max_sge = 1 } };
	struct ibv_qp *qp;
	struct ibv_cq *c2;
	struct ibv_srq *s2;

	if (!cq)
		die("ibv_create_cq");
	q = qa;
	q.cap.max_send_sge = o->max_sge + 1;
	qp = ibv_create_qp(pd, &q);
	ok(!qp && errno == EINVAL, "a QP with max_send_sge %d is refused (EINVAL)", o->max_sge + 1);
	q = qa;
	q.cap.max_recv_sge = o->max_sge + 1;
	qp = ibv_create_qp(pd, &q);
	ok(!qp && errno == EINVAL, "a QP with max_recv_sge %d is refused (EINVAL)", o->max_sge + 1);
	q = qa;
	q.cap.max_send_wr = o->max_qp_wr + 1;
	qp = ibv_create_qp(pd, &q);
	ok(!qp && errno == EINVAL, "a QP with max_send_wr %d is refused (EINVAL)", o->max_qp_wr + 1);
	q = qa;
	q.cap.max_inline_data = 1 << 20;
	qp = ibv_create_qp(pd, &q);
	ok(!qp && errno == EINVAL, "a QP with 1 MiB of inline data is refused (EINVAL)");
	q = qa;
	q.cap.max_send_sge = o->max_sge;
	q.cap.max_recv_sge = o->max_sge;
	qp = ibv_create_qp(pd, &q);
	ok(qp && q.cap.max_send_sge >= (uint32_t)o->max_sge, "a QP with max_sge %d each way is created",
	   o->max_sge);
	if (qp)
		ibv_destroy_qp(qp);
	c2 = ibv_create_cq(ctx, o->max_cqe + 1, NULL, NULL, 0);
	ok(!c2 && errno == EINVAL, "a CQ of %d entries is refused (EINVAL)", o->max_cqe + 1);
	s2 = ibv_create_srq(pd, &sa);
	ok(!s2 && errno == EINVAL, "an SRQ of %d WRs is refused (EINVAL)", o->max_srq_wr + 1);
	ibv_destroy_cq(cq);
}

/* 32 SGEs each way: a WRITE gathering 32 pieces, a SEND scattered into 32 pieces. */
static void many_sges(void)
{
	struct ibv_sge s[32], r[32];
	struct ibv_send_wr w = { .wr_id = 2, .sg_list = s, .num_sge = 32, .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { (uintptr_t)dst, dst_mr->rkey } }, *bad;
	struct ibv_recv_wr rw = { .wr_id = 3, .sg_list = r, .num_sge = 32 }, *rbad;
	struct ibv_wc wc;
	struct pair p;
	uint8_t want[32 * 100];
	int good = 1;

	pair_new(&p, NULL, NULL, 32, 0);
	fill(src, BUF, 5);
	memset(dst, 0, BUF);
	/* Piece i: 100 bytes at src + 1000 * i (gaps between them). */
	for (int i = 0; i < 32; i++) {
		s[i] = (struct ibv_sge){ (uintptr_t)src + 1000 * i, 100, src_mr->lkey };
		memcpy(want + 100 * i, src + 1000 * i, 100);
	}
	ok(ibv_post_send(p.b, &w, &bad) == 0 && wait_wc(p.cqb, &wc) == IBV_WC_SUCCESS &&
	   wc.opcode == IBV_WC_RDMA_WRITE, "a 32-SGE RDMA WRITE completes");
	ok(!memcmp(dst, want, sizeof(want)), "its 3200 bytes landed in order");

	memset(dst, 0, BUF);
	for (int i = 0; i < 32; i++)
		r[i] = (struct ibv_sge){ (uintptr_t)dst + 1000 * i, 100, dst_mr->lkey };
	w.opcode = IBV_WR_SEND;
	for (int i = 0; i < 32; i++)
		s[i] = (struct ibv_sge){ (uintptr_t)src + 100 * i, 100, src_mr->lkey };
	good = ibv_post_recv(p.a, &rw, &rbad) == 0 && ibv_post_send(p.b, &w, &bad) == 0 &&
	       wait_wc(p.cqa, &wc) == IBV_WC_SUCCESS;
	ok(good && wc.byte_len == 3200, "a 3200-byte SEND into a 32-SGE receive (byte_len %u)",
	   wc.byte_len);
	good = 1;
	for (int i = 0; i < 32; i++)
		good &= !memcmp(dst + 1000 * i, src + 100 * i, 100) && dst[1000 * i + 100] == 0;
	ok(good, "each receive SGE got its 100 bytes, nothing past them");
	wait_wc(p.cqb, &wc);
	pair_free(&p);
}

static struct ibv_qp *ud_qp(struct ibv_cq *cq, uint64_t ops);

static void wrong_args(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 4, .max_send_sge = 2, .max_recv_sge = 1,
			 .max_inline_data = 32 },
	};
	struct ibv_qp *qp = cq ? ibv_create_qp(pd, &qa) : NULL;
	struct ibv_sge s[3] = { { (uintptr_t)src, 8, src_mr->lkey }, { (uintptr_t)src, 8, src_mr->lkey },
				{ (uintptr_t)src, 8, src_mr->lkey } };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = s, .num_sge = 3, .opcode = IBV_WR_SEND }, *bad;
	struct ibv_recv_wr r[70], *rbad = NULL;
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_RTS };
	uint32_t n;
	struct ibv_mr *m;
	int ret;

	if (!qp)
		die("ibv_create_qp");
	ret = ibv_modify_qp(qp, &at, IBV_QP_STATE);
	ok(ret == EINVAL, "modify_qp RESET -> RTS is refused: EINVAL (%d)", ret);
	/* In RTS (connected to itself, nothing is sent), so that the QP state, which refuses
	 * with EINVAL too below RTS (tests/user/qp_state.c), does not answer for the checks. */
	loop_init(qp);
	to_rts(qp, qp->qp_num);
	bad = NULL;
	ret = ibv_post_send(qp, &w, &bad);
	ok(ret == EINVAL && bad == &w, "post_send with 3 SGEs on a 2-SGE QP: EINVAL, bad_wr set (%d)", ret);
	s[0].length = qa.cap.max_inline_data + 1;
	w.num_sge = 1;
	w.send_flags = IBV_SEND_INLINE;
	bad = NULL;
	ret = ibv_post_send(qp, &w, &bad);
	ok(ret == EINVAL && bad == &w, "post_send of %u inline bytes on a %u-byte QP: EINVAL (%d)",
	   s[0].length, qa.cap.max_inline_data, ret);

	/* The receive queue holds what the QP reported; one more is ENOMEM. */
	n = qa.cap.max_recv_wr;
	if (n + 1 > sizeof(r) / sizeof(r[0]))
		n = sizeof(r) / sizeof(r[0]) - 1;
	for (uint32_t i = 0; i <= n; i++)
		r[i] = (struct ibv_recv_wr){ .wr_id = i, .sg_list = s, .num_sge = 1,
					     .next = i < n ? &r[i + 1] : NULL };
	s[0].length = 8;
	ret = ibv_post_recv(qp, r, &rbad);
	ok(ret == ENOMEM && rbad == &r[n], "post_recv of %u WRs on a %u-deep queue: ENOMEM, bad_wr at WR %ld (%d)",
	   n + 1, qa.cap.max_recv_wr, rbad ? (long)(rbad - r) : -1L, ret);

	ibv_destroy_qp(qp);

	{
		qp = ud_qp(cq, 0);
		w.opcode = IBV_WR_RDMA_WRITE;
		w.send_flags = 0;
		bad = NULL;
		ret = ibv_post_send(qp, &w, &bad);
		ok(ret == EINVAL && bad == &w, "RDMA WRITE on a UD QP: EINVAL (%d)", ret);
		ibv_destroy_qp(qp);
	}
	m = ibv_reg_mr(pd, src, 4096, IBV_ACCESS_REMOTE_WRITE);
	ok(!m && errno == EINVAL, "an MR with remote write but not local write is refused (EINVAL)");
	if (m)
		ibv_dereg_mr(m);
	ibv_destroy_cq(cq);
}

static void srq_limit(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	struct ibv_srq_attr a = {};
	struct ibv_async_event ev;
	struct ibv_wc wc;
	struct pair p;
	int got = 0, good = 1, ret;

	ok(srq != NULL, "ibv_create_srq of 16");
	if (!srq)
		return;
	ret = ibv_query_srq(srq, &a);
	ok(ret == 0 && a.max_wr >= 16 && a.srq_limit == 0,
	   "ibv_query_srq: max_wr %u, srq_limit %u", a.max_wr, a.srq_limit);
	a.srq_limit = 4;
	ok(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT) == 0, "ibv_modify_srq IBV_SRQ_LIMIT 4");
	memset(&a, 0, sizeof(a));
	ret = ibv_query_srq(srq, &a);
	ok(ret == 0 && a.srq_limit == 4, "ibv_query_srq reads the limit back (%u)",
	   a.srq_limit);
	a.srq_limit = 100000;
	ret = ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT);
	ok(ret == EINVAL, "a limit above max_wr is refused: EINVAL (%d)", ret);

	pair_new(&p, NULL, srq, 1, 0);
	for (int i = 0; i < 8; i++)
		if (post_recv_dst(NULL, srq, 100 + i, 256 * i, 256))
			die("ibv_post_srq_recv");
	fill(src, 64, 9);
	ok(!loop_readable(ctx->async_fd, 0), "no async event while 8 receives are posted");
	for (int i = 0; i < 5; i++)
		good &= b_send(&p, 64, 0) == IBV_WC_SUCCESS;
	for (int i = 0; i < 5 && wait_wc(p.cqa, &wc) == IBV_WC_SUCCESS; i++)
		got += wc.qp_num == p.a->qp_num && wc.wr_id == (uint64_t)(100 + i) &&
		       !memcmp(dst + 256 * i, src, 64);
	ok(good && got == 5, "5 SENDs landed in the SRQ's buffers in order (%d)", got);
	ret = loop_readable(ctx->async_fd, 5000) && ibv_get_async_event(ctx, &ev) == 0;
	ok(ret && ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq,
	   "IBV_EVENT_SRQ_LIMIT_REACHED once 3 < 4 receives are left (event %d)",
	   ret ? (int)ev.event_type : -1);
	if (ret)
		ibv_ack_async_event(&ev);
	memset(&a, 0, sizeof(a));
	ret = ibv_query_srq(srq, &a);
	ok(ret == 0 && a.srq_limit == 0, "the event disarmed the limit (%u)",
	   a.srq_limit);
	pair_free(&p);
	ok(ibv_destroy_srq(srq) == 0, "ibv_destroy_srq");
}

/*
 * More receives posted at once than the kernel copies from the SRQ's shared queue per take
 * (it pulls a bounded batch each time, with interrupts on): all land, in order, and the
 * limit counts the ones not yet pulled as posted (no early event).
 */
#define DEEP 200
static void srq_deep(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 256, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	struct ibv_srq_attr a = { .srq_limit = 20 };
	struct ibv_async_event ev;
	struct ibv_wc wc;
	struct pair p;
	int good = 1, got = 0, early, ret;

	if (!srq || ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT))
		die("ibv_create_srq 256 / limit 20");
	pair_new(&p, NULL, srq, 1, 0);
	for (int i = 0; i < DEEP; i++)
		if (post_recv_dst(NULL, srq, 1000 + i, 256 * i, 256))
			die("ibv_post_srq_recv");
	fill(src, 64, 11);
	/* Each receive completion is polled as it comes (the CQ has 64 entries). */
	for (int i = 0; i < DEEP - 20; i++) {
		good &= b_send(&p, 64, 0) == IBV_WC_SUCCESS;
		got += wait_wc(p.cqa, &wc) == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)(1000 + i) &&
		       !memcmp(dst + 256 * i, src, 64);
	}
	ok(good && got == DEEP - 20, "%d receives posted at once: %d SENDs land in order (%d)",
	   DEEP, DEEP - 20, got);
	early = loop_readable(ctx->async_fd, 0);
	ok(!early, "no limit event while 20 of them are left (limit 20)");
	ok(b_send(&p, 64, 0) == IBV_WC_SUCCESS && wait_wc(p.cqa, &wc) == IBV_WC_SUCCESS &&
	   wc.wr_id == (uint64_t)(1000 + DEEP - 20), "one more SEND lands");
	ret = loop_readable(ctx->async_fd, 5000) && ibv_get_async_event(ctx, &ev) == 0;
	ok(ret && ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq,
	   "then IBV_EVENT_SRQ_LIMIT_REACHED (19 < 20 left; event %d)",
	   ret ? (int)ev.event_type : -1);
	if (ret)
		ibv_ack_async_event(&ev);
	pair_free(&p);
	ok(ibv_destroy_srq(srq) == 0, "ibv_destroy_srq (deep)");
}

/*
 * ibv_modify_srq IBV_SRQ_MAX_WR (as rdma_rxe resizes): N receives posted, one SEND taken
 * (so the kernel has copied WQEs out of the shared queue), a resize up, N more posted:
 * every one of the 2N SENDs lands once, in posting order, with its data. A shrink below
 * the posted count and a size below the armed limit are refused (EINVAL) and change
 * nothing; the limit survives the resize and fires after it; a shrink once they are
 * taken works, and the smaller SRQ is full at its new size.
 */
#define RSZ 16
static int srq_send_check(struct pair *p, int i, int slot)
{
	struct ibv_wc wc;

	fill(src, 64, (uint8_t)(40 + i));
	if (b_send(p, 64, 0) != IBV_WC_SUCCESS || wait_wc(p->cqa, &wc) != IBV_WC_SUCCESS)
		return 0;
	return wc.wr_id == (uint64_t)(3000 + i) && wc.byte_len == 64 &&
	       !memcmp(dst + 256 * slot, src, 64);
}

static void srq_resize(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = RSZ, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	struct ibv_srq_attr a = { .srq_limit = 2 };
	struct ibv_async_event ev;
	struct pair p;
	int got = 0, ret;

	if (!srq || ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT))
		die("ibv_create_srq 16 / limit 2");
	ok(dx.orig_attr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE,
	   "the device reports IBV_DEVICE_SRQ_RESIZE");
	pair_new(&p, NULL, srq, 1, 0);
	for (int i = 0; i < RSZ; i++)
		if (post_recv_dst(NULL, srq, 3000 + i, 256 * i, 256))
			die("ibv_post_srq_recv");
	ret = post_recv_dst(NULL, srq, 9999, 0, 256);
	ok(ret == ENOMEM, "%d receives fill the SRQ: one more is ENOMEM (%d)", RSZ, ret);
	ok(srq_send_check(&p, 0, 0), "the first SEND lands in the first receive");

	a.max_wr = 1;
	ret = ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR);
	ok(ret == EINVAL, "a resize to 1, below the armed limit 2, is EINVAL (%d)", ret);
	a.max_wr = dx.orig_attr.max_srq_wr + 1;
	ret = ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR);
	ok(ret == EINVAL, "a resize to max_srq_wr + 1 is EINVAL (%d)", ret);
	a.max_wr = 4 * RSZ;
	ret = ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR);
	ok(ret == 0, "ibv_modify_srq IBV_SRQ_MAX_WR %d with %d receives posted (%d)", 4 * RSZ,
	   RSZ - 1, ret);
	memset(&a, 0, sizeof(a));
	ret = ibv_query_srq(srq, &a);
	ok(ret == 0 && a.max_wr >= 4 * RSZ && a.srq_limit == 2,
	   "ibv_query_srq: max_wr %u, the limit kept (%u)", a.max_wr, a.srq_limit);
	ret = 0;
	for (int i = RSZ; i < 2 * RSZ; i++)
		ret |= post_recv_dst(NULL, srq, 3000 + i, 256 * i, 256);
	ok(ret == 0, "%d more receives posted after the resize", RSZ);
	a.max_wr = RSZ;
	ret = ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR);
	ok(ret == EINVAL, "a shrink to %d with %d posted is EINVAL (%d)", RSZ, 2 * RSZ - 1, ret);
	for (int i = 1; i < 2 * RSZ; i++)
		got += srq_send_check(&p, i, i);
	ok(got == 2 * RSZ - 1, "the other %d SENDs land once each, in order, data intact (%d)",
	   2 * RSZ - 1, got);
	{
		struct ibv_wc wc;

		ok(ibv_poll_cq(p.cqa, 1, &wc) == 0, "no receive completion left over");
	}
	ret = loop_readable(ctx->async_fd, 5000) && ibv_get_async_event(ctx, &ev) == 0;
	ok(ret && ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq,
	   "IBV_EVENT_SRQ_LIMIT_REACHED after the resize (event %d)",
	   ret ? (int)ev.event_type : -1);
	if (ret)
		ibv_ack_async_event(&ev);

	a.max_wr = RSZ;
	ret = ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR);
	memset(&a, 0, sizeof(a));
	ok(ret == 0 && ibv_query_srq(srq, &a) == 0 && a.max_wr == RSZ,
	   "a shrink to %d with none posted works (%d, max_wr %u)", RSZ, ret, a.max_wr);
	ret = 0;
	for (int i = 2 * RSZ; i < 3 * RSZ; i++)
		ret |= post_recv_dst(NULL, srq, 3000 + i, 256 * (i - 2 * RSZ), 256);
	ok(ret == 0 && post_recv_dst(NULL, srq, 9999, 0, 256) == ENOMEM,
	   "the shrunk SRQ takes %d receives, then ENOMEM", RSZ);
	got = 0;
	for (int i = 2 * RSZ; i < 3 * RSZ; i++)
		got += srq_send_check(&p, i, i - 2 * RSZ);
	ok(got == RSZ, "%d SENDs land in them in order (%d)", RSZ, got);
	pair_free(&p);
	ok(ibv_destroy_srq(srq) == 0, "ibv_destroy_srq (resized)");
}

static void channel(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq = ch ? ibv_create_cq(ctx, 64, NULL, ch, 0) : NULL, *evcq;
	struct ibv_wc wc;
	struct pair p;
	void *evctx;
	int ret;

	ok(cq != NULL, "ibv_create_comp_channel and a CQ on it");
	if (!cq)
		return;
	pair_new(&p, cq, NULL, 1, 0);
	for (int i = 0; i < 4; i++)
		post_recv_dst(p.a, NULL, i, 256 * i, 256);
	ok(ibv_req_notify_cq(cq, 0) == 0, "ibv_req_notify_cq (next completion)");
	ok(!loop_readable(ch->fd, 200), "no event before anything completes");
	ok(b_send(&p, 32, 0) == IBV_WC_SUCCESS, "a SEND");
	ret = loop_readable(ch->fd, 5000) && ibv_get_cq_event(ch, &evcq, &evctx) == 0;
	ok(ret && evcq == cq, "ibv_get_cq_event reports the CQ");
	if (ret)
		ibv_ack_cq_events(cq, 1);
	ok(ibv_poll_cq(cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV,
	   "and the receive is in it");

	ok(ibv_req_notify_cq(cq, 1) == 0, "ibv_req_notify_cq (solicited only)");
	ok(b_send(&p, 32, 0) == IBV_WC_SUCCESS && wait_wc(cq, &wc) == IBV_WC_SUCCESS,
	   "an unsolicited SEND is received");
	ok(!loop_readable(ch->fd, 300), "with no event");
	ok(b_send(&p, 32, IBV_SEND_SOLICITED) == IBV_WC_SUCCESS, "a SEND with IBV_SEND_SOLICITED");
	ret = loop_readable(ch->fd, 5000) && ibv_get_cq_event(ch, &evcq, &evctx) == 0;
	ok(ret && evcq == cq, "wakes the solicited-only waiter");
	if (ret)
		ibv_ack_cq_events(cq, 1);
	ok(ibv_poll_cq(cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS,
	   "its receive completed");

	/* An unsuccessful completion counts as solicited (ibv_req_notify_cq(3)). */
	ok(ibv_req_notify_cq(cq, 1) == 0, "ibv_req_notify_cq (solicited only) again");
	{
		struct ibv_sge sg = { (uintptr_t)src, 16, src_mr->lkey };
		struct ibv_send_wr w = { .wr_id = 9, .sg_list = &sg, .num_sge = 1,
					 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
					 .wr.rdma = { (uintptr_t)dst, 0xdead00 } }, *bad;

		ret = ibv_post_send(p.a, &w, &bad) == 0 && loop_readable(ch->fd, 5000) &&
		      ibv_get_cq_event(ch, &evcq, &evctx) == 0;
	}
	ok(ret && evcq == cq, "a failed RDMA WRITE (bad rkey) wakes the solicited-only waiter");
	if (ret)
		ibv_ack_cq_events(cq, 1);
	ret = ibv_poll_cq(cq, 1, &wc);
	ok(ret == 1 && wc.wr_id == 9 && wc.status == IBV_WC_REM_ACCESS_ERR,
	   "its completion: remote access error (status %d)", ret == 1 ? (int)wc.status : -1);
	pair_free(&p);
	ok(ibv_destroy_comp_channel(ch) == 0, "ibv_destroy_comp_channel");
}

static struct ibv_qp *ud_qp(struct ibv_cq *cq, uint64_t ops)
{
	struct ibv_qp_init_attr_ex qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD, .pd = pd,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.send_ops_flags = ops,
		.comp_mask = IBV_QP_INIT_ATTR_PD | (ops ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0),
	};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &qa);

	if (!qp)
		die("ibv_create_qp UD");
	loop_ud_rts(qp, 0x11111111);
	return qp;
}

static void ud_wr_api(void)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 16, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_IMM,
	};
	struct ibv_cq_ex *rcq = ibv_create_cq_ex(ctx, &ca);
	struct ibv_cq *scq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .dgid = gid, .sgid_index = gidx, .hop_limit = 64 } };
	struct ibv_poll_cq_attr pa = {};
	struct ibv_qp *s, *r;
	struct ibv_qp_ex *sx;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct ibv_data_buf parts[2] = { { (void *)"inline list, ", 13 }, { (void *)"two parts", 9 } };
	int ret, n = 0;

	if (!rcq || !scq)
		die("UD CQs");
	s = ud_qp(scq, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
	r = ud_qp(ibv_cq_ex_to_cq(rcq), 0);
	sx = ibv_qp_to_qp_ex(s);
	ah = ibv_create_ah(pd, &aa);
	ok(sx && ah, "a UD QP with the ibv_wr_* API, and an AH to this host's GID");
	if (!sx || !ah)
		return;
	memset(dst, 0, 1024);
	post_recv_dst(r, NULL, 1, 0, 40 + 256);
	post_recv_dst(r, NULL, 2, 512, 40 + 256);
	fill(src, 100, 3);

	ibv_wr_start(sx);
	sx->wr_id = 11;
	sx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(sx);
	ibv_wr_set_ud_addr(sx, ah, r->qp_num, 0x11111111);
	ibv_wr_set_inline_data_list(sx, 2, parts);
	sx->wr_id = 12;
	ibv_wr_send_imm(sx, htonl(0xabcd1234));
	ibv_wr_set_ud_addr(sx, ah, r->qp_num, 0x11111111);
	ibv_wr_set_sge(sx, src_mr->lkey, (uintptr_t)src, 100);
	ret = ibv_wr_complete(sx);
	ok(ret == 0, "ibv_wr_send + set_ud_addr + set_inline_data_list, send_imm + set_sge (%d)", ret);
	for (int i = 0; i < 2; i++)
		n += wait_wc(scq, &wc) == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)(11 + i);
	ok(n == 2, "both sends completed (%d)", n);

	n = 0;
	for (int tries = 0, started = 0; n < 2 && tries < 5000;) {
		ret = started ? ibv_next_poll(rcq) : ibv_start_poll(rcq, &pa);
		if (ret == ENOENT) {
			if (started)
				ibv_end_poll(rcq);
			started = 0;
			tries++;
			usleep(1000);
			continue;
		}
		if (ret)
			break;
		started = 1;
		if (n == 0) {
			ok(rcq->status == IBV_WC_SUCCESS && rcq->wr_id == 1 &&
			   ibv_wc_read_byte_len(rcq) == 40 + 22 && ibv_wc_read_src_qp(rcq) == s->qp_num &&
			   (ibv_wc_read_wc_flags(rcq) & IBV_WC_GRH),
			   "the inline-list datagram: 40 + 22 bytes, GRH, from QP %u", ibv_wc_read_src_qp(rcq));
			ok(!memcmp(dst + 40, "inline list, two parts", 22), "its two parts arrived in order");
		} else {
			ok(rcq->status == IBV_WC_SUCCESS && rcq->wr_id == 2 &&
			   ibv_wc_read_byte_len(rcq) == 40 + 100 &&
			   (ibv_wc_read_wc_flags(rcq) & IBV_WC_WITH_IMM) &&
			   ntohl(ibv_wc_read_imm_data(rcq)) == 0xabcd1234 &&
			   !memcmp(dst + 512 + 40, src, 100),
			   "the SGE datagram with immediate data arrived intact");
		}
		if (++n == 2)
			ibv_end_poll(rcq);
	}
	ok(n == 2, "two datagrams received (%d)", n);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(s);
	ibv_destroy_qp(r);
	ibv_destroy_cq(ibv_cq_ex_to_cq(rcq));
	ibv_destroy_cq(scq);
}

/*
 * MRs whose start is not page aligned, and one whose IOVA is unrelated to its address: RDMA
 * WRITE and READ through them reach exactly the bytes the IOVA arithmetic names, across
 * page boundaries, and nothing outside the region.
 */
static void mr_offsets(void)
{
	const size_t off = 123, len = 3 * 4096 + 500;
	/* uverbs wants the IOVA at the same offset within its page as the address. */
	const uint64_t iova = 0x7000000000ull + off;
	uint8_t *big = aligned_alloc(4096, 5 * 4096);
	struct ibv_mr *odd, *moved;
	struct ibv_sge s = { (uintptr_t)src, 0, src_mr->lkey };
	struct ibv_send_wr w = { .wr_id = 4, .sg_list = &s, .num_sge = 1,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	struct pair p;
	int st;

	if (!big)
		die("buffer");
	memset(big, 0, 5 * 4096);
	odd = ibv_reg_mr(pd, big + off, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ);
	moved = ibv_reg_mr_iova(pd, big + off, len, iova, IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	ok(odd && moved, "MRs at page offset %zu, one with IOVA %#llx (errno %d)", off,
	   (unsigned long long)iova, odd && moved ? 0 : errno);
	if (!odd || !moved)
		return;
	pair_new(&p, NULL, NULL, 1, 0);

	/* 6000 bytes written from 1000 bytes into the odd MR: pages 0-2 of it. */
	fill(src, 6000, 21);
	s.length = 6000;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.wr.rdma.remote_addr = (uintptr_t)big + off + 1000;
	w.wr.rdma.rkey = odd->rkey;
	st = ibv_post_send(p.b, &w, &bad) ? -2 : wait_wc(p.cqb, &wc);
	ok(st == IBV_WC_SUCCESS && !memcmp(big + off + 1000, src, 6000) && big[off + 999] == 0 &&
	   big[off + 7000] == 0, "a 6000-byte WRITE at offset 1000 of the unaligned MR lands exactly there");

	/* Through the moved IOVA: the same bytes, addressed as iova + 1000. */
	memset(src, 0, 6000);
	w.opcode = IBV_WR_RDMA_READ;
	w.wr.rdma.remote_addr = iova + 1000;
	w.wr.rdma.rkey = moved->rkey;
	st = ibv_post_send(p.b, &w, &bad) ? -2 : wait_wc(p.cqb, &wc);
	ok(st == IBV_WC_SUCCESS && !memcmp(src, big + off + 1000, 6000),
	   "a READ at IOVA + 1000 of the other MR brings back those bytes (status %d)", st);

	/* The last byte of the region, then one byte past it. */
	s.length = 1;
	w.opcode = IBV_WR_RDMA_WRITE;
	src[0] = 0xa5;
	w.wr.rdma.remote_addr = iova + len - 1;
	st = ibv_post_send(p.b, &w, &bad) ? -2 : wait_wc(p.cqb, &wc);
	ok(st == IBV_WC_SUCCESS && big[off + len - 1] == 0xa5,
	   "a WRITE to the region's last byte (IOVA + %zu) works", len - 1);
	w.wr.rdma.remote_addr = iova + len;
	st = ibv_post_send(p.b, &w, &bad) ? -2 : wait_wc(p.cqb, &wc);
	ok(st == IBV_WC_REM_ACCESS_ERR && big[off + len] == 0,
	   "one byte past it: remote access error, nothing written (status %d)", st);
	pair_free(&p);
	ibv_dereg_mr(odd);
	ibv_dereg_mr(moved);
	free(big);
}

static void local_inv(void)
{
	const uint64_t ops = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV |
			     IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND;
	struct ibv_mr *win_mr = ibv_reg_mr(pd, dst, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND |
					   IBV_ACCESS_REMOTE_WRITE);
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind_info bi;
	struct ibv_qp_ex *ax;
	struct ibv_sge s = { (uintptr_t)src, 64, src_mr->lkey };
	struct ibv_send_wr w = { .wr_id = 5, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	struct pair p;
	uint32_t rkey;
	int st;

	ok(win_mr && mw, "an MR with MW_BIND and a type 2 window");
	if (!win_mr || !mw)
		return;
	pair_new(&p, NULL, NULL, 1, ops);
	ax = ibv_qp_to_qp_ex(p.a);
	rkey = ibv_inc_rkey(mw->rkey);
	bi = (struct ibv_mw_bind_info){ .mr = win_mr, .addr = (uintptr_t)dst + 4096, .length = 4096,
					.mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	ibv_wr_start(ax);
	ax->wr_id = 21;
	ax->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(ax, mw, rkey, &bi);
	ok(ibv_wr_complete(ax) == 0 && wait_wc(p.cqa, &wc) == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW,
	   "ibv_wr_bind_mw on QP A");
	fill(src, 64, 77);
	memset(dst, 0, BUF);
	w.wr.rdma.remote_addr = (uintptr_t)dst + 4096;
	w.wr.rdma.rkey = rkey;
	ok(ibv_post_send(p.b, &w, &bad) == 0 && wait_wc(p.cqb, &wc) == IBV_WC_SUCCESS &&
	   !memcmp(dst + 4096, src, 64), "QP B writes through the window");
	ibv_wr_start(ax);
	ax->wr_id = 22;
	ax->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(ax, rkey);
	st = ibv_wr_complete(ax) ? -2 : wait_wc(p.cqa, &wc);
	ok(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV && wc.wr_id == 22,
	   "ibv_wr_local_inv completes (status %d, opcode %d)", st, wc.opcode);
	memset(dst, 0, BUF);
	ok(ibv_post_send(p.b, &w, &bad) == 0 && wait_wc(p.cqb, &wc) == IBV_WC_REM_ACCESS_ERR &&
	   dst[4096] == 0, "a write through the invalidated window fails: remote access error, nothing written");
	pair_free(&p);
	ibv_dealloc_mw(mw);
	ibv_dereg_mr(win_mr);
}

int main(int argc, char **argv)
{
	loop_open(argc, argv);
	src = aligned_alloc(4096, BUF);
	dst = aligned_alloc(4096, BUF);
	if (!src || !dst)
		die("buffers");
	src_mr = ibv_reg_mr(pd, src, BUF, IBV_ACCESS_LOCAL_WRITE);
	dst_mr = ibv_reg_mr(pd, dst, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!src_mr || !dst_mr)
		die("ibv_reg_mr");
	caps();
	limits();
	many_sges();
	wrong_args();
	srq_limit();
	srq_deep();
	srq_resize();
	channel();
	ud_wr_api();
	mr_offsets();
	local_inv();
	return tap_end();
}
