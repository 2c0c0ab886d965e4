// SPDX-License-Identifier: GPL-2.0
/*
 * Memory windows over rrxe (TAP output, one host): two RC QPs of this process connected to
 * each other. QP B owns a target buffer registered with IBV_ACCESS_MW_BIND; QP A reaches it
 * only through windows:
 *   - type 1: ibv_bind_mw, RDMA WRITE/READ inside the window, the old rkey and accesses
 *     outside the window or beyond its rights fail, unbinding;
 *   - type 2B: IBV_WR_BIND_MW work requests, a second bind without invalidation fails,
 *     LOCAL_INV and SEND_WITH_INV revoke it, and only the QP it is bound to may use it;
 *   - a region without MW_BIND cannot be bound; windows deallocate;
 *   - the extended API: ibv_wr_bind_mw, and ibv_wr_atomic_write (8 bytes land as given).
 * Every data transfer is checked byte for byte.
 *
 *   mw -d DEV -g GIDX
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "loop.h"

#define TGT 8192
static struct ibv_mr *src_mr, *tgt_mr, *plain_mr;
static uint8_t src[4096], tgt[TGT], plain[4096];

struct conn {
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
};

/* A fresh connected pair (an access error leaves a pair in the error state); with ops != 0
 * both QPs are extended QPs with those send ops. */
static void conn_new_ops(struct conn *c, uint64_t ops)
{
	c->cqa = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	c->cqb = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	if (!c->cqa || !c->cqb)
		die("ibv_create_cq");
	c->a = loop_rc_qp(c->cqa, NULL, 1, ops);
	c->b = loop_rc_qp(c->cqb, NULL, 1, ops);
	to_rts(c->a, c->b->qp_num);
	to_rts(c->b, c->a->qp_num);
}

static void conn_new(struct conn *c)
{
	conn_new_ops(c, 0);
}

static void conn_free(struct conn *c)
{
	ibv_destroy_qp(c->a);
	ibv_destroy_qp(c->b);
	ibv_destroy_cq(c->cqa);
	ibv_destroy_cq(c->cqb);
}

/* RDMA WRITE or READ of len bytes by QP A between src and raddr (rkey); the status. */
static int rdma(struct conn *c, enum ibv_wr_opcode op, uint32_t rkey, void *raddr, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)src, len, src_mr->lkey };
	struct ibv_send_wr w = { .wr_id = 7, .sg_list = &s, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { (uintptr_t)raddr, rkey } }, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(c->a, &w, &bad))
		return -2;
	return wait_wc(c->cqa, &wc);
}

/* A type 1 bind through QP B; the completion's status (-2: the verb failed). */
static int bind1(struct conn *c, struct ibv_mw *mw, struct ibv_mr *m, void *addr, uint64_t len,
		 unsigned int access)
{
	struct ibv_mw_bind b = {
		.wr_id = 11, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = m, .addr = (uintptr_t)addr, .length = len,
			       .mw_access_flags = access },
	};
	struct ibv_wc wc;
	int st;

	if (ibv_bind_mw(c->b, mw, &b))
		return -2;
	st = wait_wc(c->cqb, &wc);
	if (st == IBV_WC_SUCCESS && wc.opcode != IBV_WC_BIND_MW)
		return -3;
	return st;
}

/* A type 2B bind work request on QP B under rkey; the completion's status. */
static int bind2(struct conn *c, struct ibv_mw *mw, uint32_t rkey, void *addr, uint64_t len,
		 unsigned int access)
{
	struct ibv_send_wr w = { .wr_id = 12, .opcode = IBV_WR_BIND_MW,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	w.bind_mw.mw = mw;
	w.bind_mw.rkey = rkey;
	w.bind_mw.bind_info.mr = tgt_mr;
	w.bind_mw.bind_info.addr = (uintptr_t)addr;
	w.bind_mw.bind_info.length = len;
	w.bind_mw.bind_info.mw_access_flags = access;
	if (ibv_post_send(c->b, &w, &bad))
		return -2;
	return wait_wc(c->cqb, &wc);
}

static int local_inv(struct conn *c, uint32_t rkey)
{
	struct ibv_send_wr w = { .wr_id = 13, .opcode = IBV_WR_LOCAL_INV,
				 .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey }, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(c->b, &w, &bad))
		return -2;
	return wait_wc(c->cqb, &wc);
}

/* A writes a fresh pattern through rkey at off in the window at win; it must land there. */
static int write_lands(struct conn *c, uint32_t rkey, uint8_t *at, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		src[i] = (uint8_t)(seed + i * 7);
	memset(tgt, 0, sizeof(tgt));
	return rdma(c, IBV_WR_RDMA_WRITE, rkey, at, len) == IBV_WC_SUCCESS && !memcmp(at, src, len);
}

int main(int argc, char **argv)
{
	const unsigned int rw = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_device_attr da;
	struct ibv_mw *mw1, *mw2;
	struct conn c, d;
	uint32_t old, k;
	int st;

	loop_open(argc, argv);
	if (ibv_query_device(ctx, &da))
		die("ibv_query_device");
	src_mr = ibv_reg_mr(pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	tgt_mr = ibv_reg_mr(pd, tgt, sizeof(tgt), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND |
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	plain_mr = ibv_reg_mr(pd, plain, sizeof(plain), IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_REMOTE_WRITE);
	if (!src_mr || !tgt_mr || !plain_mr)
		die("ibv_reg_mr");

	ok((da.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
	   (da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && da.max_mw > 0,
	   "the device reports memory windows type 1 and 2B (max_mw %d)", da.max_mw);
	mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	ok(mw1 && mw2, "ibv_alloc_mw type 1 and type 2");
	if (!mw1 || !mw2)
		die("ibv_alloc_mw");

	/* Type 1. */
	conn_new(&c);
	old = mw1->rkey;
	st = bind1(&c, mw1, tgt_mr, tgt + 4096, 1024, rw);
	ok(st == IBV_WC_SUCCESS && mw1->rkey != old,
	   "type 1: ibv_bind_mw completes (IBV_WC_BIND_MW, status %d), rkey 0x%x -> 0x%x", st,
	   old, mw1->rkey);
	ok(write_lands(&c, mw1->rkey, tgt + 4096 + 100, 64, 1),
	   "type 1: RDMA WRITE of 64 B inside the window lands");
	memset(src, 0, 64);
	st = rdma(&c, IBV_WR_RDMA_READ, mw1->rkey, tgt + 4096 + 100, 64);
	ok(st == IBV_WC_SUCCESS && !memcmp(src, tgt + 4096 + 100, 64),
	   "type 1: RDMA READ of 64 B inside the window returns the data (status %d)", st);
	st = rdma(&c, IBV_WR_RDMA_WRITE, old, tgt + 4096, 8);
	ok(st == IBV_WC_REM_ACCESS_ERR, "type 1: the rkey before the bind is refused (status %d)", st);
	conn_free(&c);

	conn_new(&c);
	memset(tgt, 0, sizeof(tgt));
	st = rdma(&c, IBV_WR_RDMA_WRITE, mw1->rkey, tgt + 4096 - 8, 16);
	ok(st == IBV_WC_REM_ACCESS_ERR && !tgt[4096 - 8],
	   "type 1: a WRITE starting before the window is refused, nothing written (status %d)", st);
	conn_free(&c);

	conn_new(&c);
	st = rdma(&c, IBV_WR_RDMA_WRITE, mw1->rkey, tgt + 4096 + 1024 - 8, 16);
	ok(st == IBV_WC_REM_ACCESS_ERR && !tgt[4096 + 1024],
	   "type 1: a WRITE running past the window is refused (status %d)", st);
	conn_free(&c);

	conn_new(&c);
	st = bind1(&c, mw1, tgt_mr, tgt, 512, IBV_ACCESS_REMOTE_READ);
	ok(st == IBV_WC_SUCCESS, "type 1: rebind read-only over another range (status %d)", st);
	st = rdma(&c, IBV_WR_RDMA_WRITE, mw1->rkey, tgt, 8);
	ok(st == IBV_WC_REM_ACCESS_ERR, "type 1: a WRITE through a read-only window is refused (status %d)", st);
	conn_free(&c);

	/* As rdma_rxe and mlx5: Local Write among a bind's flags is accepted, and the window
	 * still grants only its remote rights. */
	conn_new(&c);
	st = bind1(&c, mw1, tgt_mr, tgt, 512, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE);
	ok(st == IBV_WC_SUCCESS,
	   "type 1: a bind with IBV_ACCESS_LOCAL_WRITE beside remote read succeeds (status %d)", st);
	memset(src, 0, 64);
	st = rdma(&c, IBV_WR_RDMA_READ, mw1->rkey, tgt, 64);
	ok(st == IBV_WC_SUCCESS && !memcmp(src, tgt, 64),
	   "type 1: RDMA READ through that window returns the data (status %d)", st);
	st = rdma(&c, IBV_WR_RDMA_WRITE, mw1->rkey, tgt, 8);
	ok(st == IBV_WC_REM_ACCESS_ERR,
	   "type 1: a WRITE through it is refused: Local Write grants no remote right (status %d)", st);
	conn_free(&c);

	conn_new(&c);
	st = bind1(&c, mw1, plain_mr, plain, 512, rw);
	ok(st == IBV_WC_MW_BIND_ERR,
	   "type 1: binding to a region without IBV_ACCESS_MW_BIND fails (status %d)", st);
	st = bind1(&c, mw1, NULL, NULL, 0, 0);
	ok(st == IBV_WC_SUCCESS, "type 1: a zero-length bind unbinds (status %d)", st);
	st = rdma(&c, IBV_WR_RDMA_READ, mw1->rkey, tgt, 8);
	ok(st == IBV_WC_REM_ACCESS_ERR, "type 1: the unbound window's rkey is refused (status %d)", st);
	conn_free(&c);

	/* Type 2B. */
	conn_new(&c);
	k = ibv_inc_rkey(mw2->rkey);
	st = bind2(&c, mw2, k, tgt + 2048, 2048, rw);
	ok(st == IBV_WC_SUCCESS, "type 2B: IBV_WR_BIND_MW completes (status %d)", st);
	ok(write_lands(&c, k, tgt + 2048 + 2000, 48, 2),
	   "type 2B: RDMA WRITE of 48 B through the window lands");
	st = bind2(&c, mw2, ibv_inc_rkey(k), tgt, 64, rw);
	ok(st == IBV_WC_MW_BIND_ERR,
	   "type 2B: binding a bound window again fails (status %d)", st);
	conn_free(&c);

	conn_new(&c);
	conn_new(&d);
	k = ibv_inc_rkey(k);
	/* The window was bound to the destroyed QP: destroying it unbound the window. */
	st = bind2(&c, mw2, k, tgt, 4096, rw);
	ok(st == IBV_WC_SUCCESS, "type 2B: a window of a destroyed QP can be bound again (status %d)", st);
	st = rdma(&d, IBV_WR_RDMA_WRITE, k, tgt, 8);
	ok(st == IBV_WC_REM_ACCESS_ERR,
	   "type 2B: another QP cannot use a window bound to this one (status %d)", st);
	conn_free(&d);
	ok(write_lands(&c, k, tgt + 100, 32, 3), "type 2B: the QP it is bound to can");
	st = local_inv(&c, k);
	ok(st == IBV_WC_SUCCESS, "type 2B: LOCAL_INV of the window completes (status %d)", st);
	st = rdma(&c, IBV_WR_RDMA_WRITE, k, tgt, 8);
	ok(st == IBV_WC_REM_ACCESS_ERR, "type 2B: the invalidated rkey is refused (status %d)", st);
	conn_free(&c);

	conn_new(&c);
	k = ibv_inc_rkey(k);
	st = bind2(&c, mw2, k, tgt, 4096, rw);
	ok(st == IBV_WC_SUCCESS, "type 2B: bound again after LOCAL_INV (status %d)", st);
	{
		struct ibv_sge rs = { (uintptr_t)tgt + 4096, 64, tgt_mr->lkey };
		struct ibv_recv_wr r = { .wr_id = 21, .sg_list = &rs, .num_sge = 1 }, *brw;
		struct ibv_sge ss = { (uintptr_t)src, 16, src_mr->lkey };
		struct ibv_send_wr w = { .wr_id = 22, .sg_list = &ss, .num_sge = 1,
					 .opcode = IBV_WR_SEND_WITH_INV,
					 .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = k }, *bsw;
		struct ibv_wc wa, wb;
		int sa = -2, sb = -2;

		if (!ibv_post_recv(c.b, &r, &brw) && !ibv_post_send(c.a, &w, &bsw)) {
			sa = wait_wc(c.cqa, &wa);
			sb = wait_wc(c.cqb, &wb);
		}
		ok(sa == IBV_WC_SUCCESS && sb == IBV_WC_SUCCESS && (wb.wc_flags & IBV_WC_WITH_INV) &&
		   wb.invalidated_rkey == k,
		   "type 2B: SEND_WITH_INV arrives with IBV_WC_WITH_INV and the rkey (status %d/%d)",
		   sa, sb);
	}
	st = rdma(&c, IBV_WR_RDMA_WRITE, k, tgt, 8);
	ok(st == IBV_WC_REM_ACCESS_ERR, "type 2B: the remotely invalidated rkey is refused (status %d)", st);
	conn_free(&c);

	conn_new(&c);
	k = ibv_inc_rkey(k);
	st = bind2(&c, mw2, k, tgt, 4096, rw | IBV_ACCESS_LOCAL_WRITE);
	ok(st == IBV_WC_SUCCESS,
	   "type 2B: a bind with IBV_ACCESS_LOCAL_WRITE beside remote read/write succeeds (status %d)",
	   st);
	ok(write_lands(&c, k, tgt + 200, 32, 5), "type 2B: RDMA WRITE through that window lands");
	st = local_inv(&c, k);
	ok(st == IBV_WC_SUCCESS, "type 2B: LOCAL_INV of that window completes (status %d)", st);
	conn_free(&c);

	conn_new(&c);
	{
		struct ibv_send_wr w = { .wr_id = 31, .opcode = IBV_WR_BIND_MW }, *bad;

		w.bind_mw.mw = mw1;
		w.bind_mw.rkey = ibv_inc_rkey(mw1->rkey);
		w.bind_mw.bind_info.mr = tgt_mr;
		w.bind_mw.bind_info.length = 64;
		w.bind_mw.bind_info.addr = (uintptr_t)tgt;
		ok(ibv_post_send(c.b, &w, &bad) == EINVAL,
		   "a type 1 window cannot be bound with a work request (EINVAL)");
	}
	conn_free(&c);

	/* The extended API. */
	conn_new_ops(&c, IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_BIND_MW |
		     IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_ATOMIC_WRITE);
	{
		struct ibv_qp_ex *bx = ibv_qp_to_qp_ex(c.b), *ax = ibv_qp_to_qp_ex(c.a);
		struct ibv_mw_bind_info info = { .mr = tgt_mr, .addr = (uintptr_t)tgt + 1024,
						 .length = 1024, .mw_access_flags = rw };
		const uint8_t v[8] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };
		struct ibv_wc wc;
		int r;

		k = ibv_inc_rkey(k);
		ibv_wr_start(bx);
		bx->wr_id = 41;
		bx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_bind_mw(bx, mw2, k, &info);
		r = ibv_wr_complete(bx);
		st = r ? -2 : wait_wc(c.cqb, &wc);
		ok(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW,
		   "ibv_wr_bind_mw of a type 2 window completes (ret %d, status %d)", r, st);
		ok(write_lands(&c, k, tgt + 1024 + 512, 40, 4),
		   "ibv_wr_bind_mw: RDMA WRITE through the window lands");

		memset(tgt, 0, 128);
		ibv_wr_start(ax);
		ax->wr_id = 42;
		ax->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(ax, tgt_mr->rkey, (uintptr_t)tgt + 64, v);
		r = ibv_wr_complete(ax);
		st = r ? -2 : wait_wc(c.cqa, &wc);
		ok(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_ATOMIC_WRITE && !memcmp(tgt + 64, v, 8) &&
		   !tgt[63] && !tgt[72],
		   "ibv_wr_atomic_write: the 8 bytes land in order, nothing around them (ret %d, status %d)",
		   r, st);
		ibv_wr_start(ax);
		ax->wr_id = 43;
		ax->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(ax, tgt_mr->rkey, (uintptr_t)tgt + 68, v);
		r = ibv_wr_complete(ax);
		st = r ? -2 : wait_wc(c.cqa, &wc);
		ok(st > 0 && !tgt[68 + 4], "ibv_wr_atomic_write to an unaligned address fails (status %d)", st);
	}
	conn_free(&c);

	ok(ibv_dealloc_mw(mw1) == 0 && ibv_dealloc_mw(mw2) == 0, "ibv_dealloc_mw of both windows");
	ibv_dereg_mr(src_mr);
	ibv_dereg_mr(tgt_mr);
	ibv_dereg_mr(plain_mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_end();
}
