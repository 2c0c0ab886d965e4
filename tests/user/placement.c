// SPDX-License-Identifier: GPL-2.0
/*
 * Placement errors (TAP output, one host, loopback RC QPs A -> B): a buffer that cannot be
 * read or written is never a silent success, and each side gets the status the IBTA (and
 * rdma_rxe, where it agrees) gives:
 *   - a receive (from the RQ or an SRQ) into a bad lkey, or into an MR without Local Write:
 *     the receive completes with LOC_PROT_ERR, the sender with REM_OP_ERR (NAK remote
 *     operational error);
 *   - a SEND gathered from a bad lkey: LOC_PROT_ERR, nothing reaches B;
 *   - a READ into a bad lkey, an atomic whose result buffer has a bad lkey: LOC_PROT_ERR and
 *     the local buffer untouched;
 *   - a SEND_WITH_INV of a key that cannot be invalidated: the receive completes with
 *     REM_INV_REQ_ERR and without IBV_WC_WITH_INV (the key is still open), the sender
 *     succeeds;
 *   - a large RDMA WRITE whose target MR is deregistered after its first packets landed:
 *     REM_ACCESS_ERR, and nothing is written after that;
 *   - a READ or atomic to a responder with max_dest_rd_atomic 0: REM_INV_REQ_ERR.
 *
 * With PLACEMENT_RXE=1 the device is rdma_rxe, which reports LOC_QP_OP_ERR where the IBTA
 * status is LOC_PROT_ERR (a receive or gather with a bad lkey: rxe's copy_data failure is
 * "malformed WQE"; a failed gather even ends as WR_FLUSH_ERR); those checks expect rxe's
 * status, every other check is the same.
 *
 *   placement -d DEV -g GIDX
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "loop.h"

#define BUF 4096
/* The WRITE whose target goes away: 32 Ki packets at MTU 1024, far more than one run of the
 * device moves before the process gets the CPU back. */
#define BIG (32u << 20)

static uint8_t *src, *dst, *big_src, *big_dst;
static struct ibv_mr *src_mr, *dst_mr, *ro_mr, *big_src_mr;
static int rxe;

/* The status rdma_rxe gives where it differs from the IBTA's. */
static int ibta_or_rxe(int ibta, int rxe_status)
{
	return rxe ? rxe_status : ibta;
}

struct pair {
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
};

/* A fresh connected pair (every error case leaves one in the error state); both QPs grant
 * remote read, write and atomic access. */
static void pair_new_srq(struct pair *p, struct ibv_srq *srq)
{
	struct ibv_qp_attr at = { .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						     IBV_ACCESS_REMOTE_ATOMIC };

	p->cqa = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	p->cqb = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	if (!p->cqa || !p->cqb)
		die("ibv_create_cq");
	p->a = loop_rc_qp(p->cqa, NULL, 1, 0);
	p->b = loop_rc_qp(p->cqb, srq, 1, 0);
	if (ibv_modify_qp(p->a, &at, IBV_QP_ACCESS_FLAGS) || ibv_modify_qp(p->b, &at, IBV_QP_ACCESS_FLAGS))
		die("INIT -> INIT with atomic access");
	to_rts(p->a, p->b->qp_num);
	to_rts(p->b, p->a->qp_num);
}

static void pair_new(struct pair *p)
{
	pair_new_srq(p, NULL);
}

static void pair_free(struct pair *p)
{
	ibv_destroy_qp(p->a);
	ibv_destroy_qp(p->b);
	ibv_destroy_cq(p->cqa);
	ibv_destroy_cq(p->cqb);
}

/* A key no region has: the index part moved far from every key of this process. */
static uint32_t bad_key(uint32_t k)
{
	return k ^ 0x00ffff00;
}

static int post_recv(struct ibv_qp *qp, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr r = { .wr_id = 2, .sg_list = &s, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &r, &bad);
}

/* Posts one signaled WR on A: opcode, local SGE (addr, len, lkey), remote address and key,
 * and the invalidated key (SEND_WITH_INV) or atomic operand. */
static int post(struct pair *p, enum ibv_wr_opcode op, void *addr, uint32_t len, uint32_t lkey,
		uint64_t raddr, uint32_t rkey, uint32_t inv, uint64_t add)
{
	struct ibv_sge s = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.wr.atomic.remote_addr = raddr;
		w.wr.atomic.rkey = rkey;
		w.wr.atomic.compare_add = add;
	} else {
		w.wr.rdma.remote_addr = raddr;
		w.wr.rdma.rkey = rkey;
	}
	if (op == IBV_WR_SEND_WITH_INV)
		w.invalidate_rkey = inv;
	return ibv_post_send(p->a, &w, &bad);
}

static int all(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

/* B posts a receive into (addr, lkey); A sends 100 bytes. */
static void recv_into(const char *what, void *addr, uint32_t lkey)
{
	struct ibv_wc wa = {}, wb = {};
	struct pair p;
	int sa, sb;

	pair_new(&p);
	memset(dst, 0x5a, BUF);
	if (post_recv(p.b, addr, 256, lkey) || post(&p, IBV_WR_SEND, src, 100, src_mr->lkey, 0, 0, 0, 0))
		die("post");
	sb = wait_wc_ms(p.cqb, &wb, 5000);
	sa = wait_wc_ms(p.cqa, &wa, 5000);
	ok(sb == ibta_or_rxe(IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_QP_OP_ERR) && wb.wr_id == 2,
	   "%s: the receive completes with %s (status %d)", what,
	   rxe ? "LOC_QP_OP_ERR (rxe)" : "LOC_PROT_ERR", sb);
	ok(sa == IBV_WC_REM_OP_ERR, "%s: the sender gets REM_OP_ERR (status %d)", what, sa);
	ok(all(dst, BUF, 0x5a), "%s: nothing was written", what);
	pair_free(&p);
}

/* The same through a shared receive queue (the receive WQE comes from the SRQ). */
static void srq_recv_into_bad_lkey(void)
{
	struct ibv_srq_init_attr sa_init = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa_init);
	struct ibv_sge s = { (uintptr_t)dst, 256, bad_key(dst_mr->lkey) };
	struct ibv_recv_wr r = { .wr_id = 3, .sg_list = &s, .num_sge = 1 }, *bad;
	struct ibv_wc wa = {}, wb = {};
	struct pair p;
	int sa, sb;

	if (!srq)
		die("ibv_create_srq");
	pair_new_srq(&p, srq);
	memset(dst, 0x5a, BUF);
	if (ibv_post_srq_recv(srq, &r, &bad) || post(&p, IBV_WR_SEND, src, 100, src_mr->lkey, 0, 0, 0, 0))
		die("post");
	sb = wait_wc_ms(p.cqb, &wb, 5000);
	sa = wait_wc_ms(p.cqa, &wa, 5000);
	ok(sb == ibta_or_rxe(IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_QP_OP_ERR) && wb.wr_id == 3,
	   "an SRQ receive into a bad lkey completes with %s (status %d)",
	   rxe ? "LOC_QP_OP_ERR (rxe)" : "LOC_PROT_ERR", sb);
	ok(sa == IBV_WC_REM_OP_ERR && all(dst, BUF, 0x5a),
	   "an SRQ receive into a bad lkey: the sender gets REM_OP_ERR, nothing written (status %d)", sa);
	pair_free(&p);
	ibv_destroy_srq(srq);
}

/* A responder given no resources for READ and atomic requests (max_dest_rd_atomic 0)
 * refuses them: an invalid request (rdma_rxe: "too many RDMA/atomic requests"). */
static void no_responder_resources(void)
{
	struct ibv_wc wa = {};
	struct pair p;
	int st;

	for (int atomic = 0; atomic < 2; atomic++) {
		loop_dest_rd_atomic = 0;
		pair_new(&p);
		loop_dest_rd_atomic = 1;
		memset(src, 0x22, BUF);
		if (atomic)
			st = post(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, src, 8, src_mr->lkey, (uintptr_t)dst,
				  dst_mr->rkey, 0, 1);
		else
			st = post(&p, IBV_WR_RDMA_READ, src, 64, src_mr->lkey, (uintptr_t)dst, dst_mr->rkey,
				  0, 0);
		st = st ? -2 : wait_wc_ms(p.cqa, &wa, 5000);
		ok(st == IBV_WC_REM_INV_REQ_ERR && all(src, BUF, 0x22),
		   "%s to a responder with max_dest_rd_atomic 0: REM_INV_REQ_ERR (status %d)",
		   atomic ? "FETCH_ADD" : "READ", st);
		pair_free(&p);
	}
}

static void send_from_bad_lkey(void)
{
	struct ibv_wc wa = {}, wb = {};
	struct pair p;
	int sa, sb;

	pair_new(&p);
	memset(dst, 0x5a, BUF);
	if (post_recv(p.b, dst, 256, dst_mr->lkey) ||
	    post(&p, IBV_WR_SEND, src, 100, bad_key(src_mr->lkey), 0, 0, 0, 0))
		die("post");
	sa = wait_wc_ms(p.cqa, &wa, 5000);
	/* rdma_rxe marks the WQE LOC_QP_OP_ERR (copy_data: -EINVAL) but moves the QP to the error
	 * state before its completer reports it, which then flushes it: WR_FLUSH_ERR. */
	ok(rxe ? (sa == IBV_WC_LOC_QP_OP_ERR || sa == IBV_WC_WR_FLUSH_ERR) : sa == IBV_WC_LOC_PROT_ERR,
	   "a SEND gathered from a bad lkey completes with %s (status %d)",
	   rxe ? "LOC_QP_OP_ERR or WR_FLUSH_ERR (rxe)" : "LOC_PROT_ERR", sa);
	sb = wait_wc_ms(p.cqb, &wb, 300);
	ok(sb == -1 && all(dst, BUF, 0x5a), "nothing reaches the receiver (status %d)", sb);
	pair_free(&p);
}

static void read_into_bad_lkey(void)
{
	struct ibv_wc wa = {};
	struct pair p;
	int sa;

	pair_new(&p);
	memset(dst, 0x5a, BUF);
	memset(src, 0x11, BUF);
	/* A reads B's src... through dst_mr's rkey: A's local buffer (src) has a bad lkey. */
	if (post(&p, IBV_WR_RDMA_READ, src, 512, bad_key(src_mr->lkey), (uintptr_t)dst, dst_mr->rkey, 0, 0))
		die("post");
	sa = wait_wc_ms(p.cqa, &wa, 5000);
	ok(sa == IBV_WC_LOC_PROT_ERR, "a READ into a bad lkey completes with LOC_PROT_ERR (status %d)", sa);
	ok(all(src, BUF, 0x11), "the READ's local buffer is untouched");
	pair_free(&p);
}

static void atomic_result(int good)
{
	struct ibv_wc wa = {};
	uint64_t *remote = (uint64_t *)(dst + 64), *local = (uint64_t *)(src + 128);
	struct pair p;
	int sa;

	pair_new(&p);
	*remote = 1000;
	memset(src, 0x22, BUF);
	if (post(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, local, 8, good ? src_mr->lkey : bad_key(src_mr->lkey),
		 (uintptr_t)remote, dst_mr->rkey, 0, 5))
		die("post");
	sa = wait_wc_ms(p.cqa, &wa, 5000);
	if (good) {
		ok(sa == IBV_WC_SUCCESS && *local == 1000 && *remote == 1005,
		   "FETCH_ADD into a good lkey: the original value lands (status %d, %llu)", sa,
		   (unsigned long long)*local);
	} else {
		ok(sa == IBV_WC_LOC_PROT_ERR,
		   "FETCH_ADD whose result buffer has a bad lkey completes with LOC_PROT_ERR (status %d)", sa);
		ok(all(src, BUF, 0x22), "the atomic's local buffer is untouched");
	}
	pair_free(&p);
}

static void send_with_inv_bad_key(void)
{
	struct ibv_wc wa = {}, wb = {};
	struct pair p;
	int sa, sb;

	pair_new(&p);
	/* dst_mr is an ordinary user MR: not a key a SEND_WITH_INV may invalidate (only a
	 * fast-registration MR or a type 2 window can be). Then a key nothing has. */
	for (int i = 0; i < 2; i++) {
		uint32_t k = i == 0 ? dst_mr->rkey : bad_key(dst_mr->rkey);

		if (i == 1) {
			pair_free(&p);
			pair_new(&p);
		}
		memset(&wb, 0, sizeof(wb));
		if (post_recv(p.b, dst, 256, dst_mr->lkey) ||
		    post(&p, IBV_WR_SEND_WITH_INV, src, 16, src_mr->lkey, 0, 0, k, 0))
			die("post");
		sb = wait_wc_ms(p.cqb, &wb, 5000);
		sa = wait_wc_ms(p.cqa, &wa, 5000);
		ok(sb == IBV_WC_REM_INV_REQ_ERR && !(wb.wc_flags & IBV_WC_WITH_INV),
		   "SEND_WITH_INV of %s: the receive completes with REM_INV_REQ_ERR, without WITH_INV "
		   "(status %d, flags %#x)", i ? "an unknown key" : "a user MR's key", sb, wb.wc_flags);
		ok(sa == IBV_WC_SUCCESS, "SEND_WITH_INV of %s: the sender's SEND was delivered (status %d)",
		   i ? "an unknown key" : "a user MR's key", sa);
	}
	pair_free(&p);
	/* The MR was not invalidated: a new pair writes into it. */
	pair_new(&p);
	memset(dst, 0, BUF);
	memset(src, 0x33, BUF);
	sa = post(&p, IBV_WR_RDMA_WRITE, src, 64, src_mr->lkey, (uintptr_t)dst, dst_mr->rkey, 0, 0) ? -2 :
	     wait_wc_ms(p.cqa, &wa, 5000);
	ok(sa == IBV_WC_SUCCESS && all(dst, 64, 0x33), "the MR is still open: a WRITE lands (status %d)", sa);
	pair_free(&p);
}

static void write_then_dereg(void)
{
	struct ibv_mr *m = ibv_reg_mr(pd, big_dst, BIG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	volatile uint8_t *first = big_dst;
	struct ibv_wc wa = {}, wb = {};
	struct pair p;
	int sa, spins = 0, derr;
	size_t landed = 0;

	if (!m)
		die("ibv_reg_mr 32 MiB");
	pair_new(&p);
	memset(big_dst, 0x5a, BIG);
	memset(big_src, 0x77, BIG);
	if (post(&p, IBV_WR_RDMA_WRITE, big_src, BIG, big_src_mr->lkey, (uintptr_t)big_dst, m->rkey, 0, 0))
		die("post");
	/* The first packet has landed (the rkey was good for it): the MR goes. */
	while (*first == 0x5a && spins++ < 200000)
		usleep(50);
	derr = ibv_dereg_mr(m);
	ok(*first == 0x77 && derr == 0, "the WRITE's first packet landed, then the MR was deregistered (%d)",
	   derr);
	sa = wait_wc_ms(p.cqa, &wa, 60000);
	ok(sa == IBV_WC_REM_ACCESS_ERR, "the WRITE completes with REM_ACCESS_ERR (status %d)", sa);
	while (landed < BIG && big_dst[landed] == 0x77)
		landed++;
	ok(landed < BIG && all(big_dst + landed, BIG - landed, 0x5a),
	   "nothing after the deregistration was written (%zu of %u bytes landed, all before it)",
	   landed, BIG);
	ok(wait_wc_ms(p.cqb, &wb, 100) == -1, "the responder completes nothing (it posted no receive)");
	pair_free(&p);
}

int main(int argc, char **argv)
{
	const char *e = getenv("PLACEMENT_RXE");

	rxe = e && *e == '1';
	loop_open(argc, argv);
	src = aligned_alloc(4096, BUF);
	dst = aligned_alloc(4096, BUF);
	big_src = aligned_alloc(4096, BIG);
	big_dst = aligned_alloc(4096, BIG);
	if (!src || !dst || !big_src || !big_dst)
		die("buffers");
	src_mr = ibv_reg_mr(pd, src, BUF, IBV_ACCESS_LOCAL_WRITE);
	dst_mr = ibv_reg_mr(pd, dst, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	/* The same memory, readable remotely but without Local Write. */
	ro_mr = ibv_reg_mr(pd, dst, BUF, IBV_ACCESS_REMOTE_READ);
	big_src_mr = ibv_reg_mr(pd, big_src, BIG, 0);
	if (!src_mr || !dst_mr || !ro_mr || !big_src_mr)
		die("ibv_reg_mr");
	printf("device %s%s\n", ibv_get_device_name(ctx->device), rxe ? " (rdma_rxe statuses)" : "");
	recv_into("a receive into a bad lkey", dst, bad_key(dst_mr->lkey));
	recv_into("a receive into an MR without LOCAL_WRITE", dst, ro_mr->lkey);
	srq_recv_into_bad_lkey();
	send_from_bad_lkey();
	read_into_bad_lkey();
	atomic_result(1);
	atomic_result(0);
	send_with_inv_bad_key();
	no_responder_resources();
	write_then_dereg();
	return tap_end();
}
