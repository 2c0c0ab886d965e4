// SPDX-License-Identifier: GPL-2.0
/*
 * The rules around registrations and object limits over rrxe (TAP output, one host, two RC
 * QPs of this process connected to each other):
 *   - ibv_rereg_mr: CHANGE_ACCESS adds and removes remote write (the WRITE lands, then is
 *     refused), CHANGE_TRANSLATION moves the region (data lands in the new buffer only),
 *     CHANGE_PD moves it to another PD (a QP of the old PD is refused, one of the new PD
 *     lands), each keeping the lkey and rkey (as mlx5 does: a peer's rkey follows the new
 *     rights); a region with a window bound to it cannot be reregistered;
 *   - a window grants remote write on a region registered with only LOCAL_WRITE | MW_BIND
 *     (IBTA: the region needs Local Write, not remote rights), type 1 and type 2B;
 *   - key tags are not a sequence; a key (and its slot) just freed is not the next one
 *     handed out, for regions and windows; QPNs of consecutive creates are not
 *     consecutive; a failed modify_qp keeps none of its attributes; the path MTU is
 *     clamped to the port's active MTU;
 *   - the advertised max_pd, max_srq and max_mw are enforced (EINVAL past them).
 *
 *   mr_rules -d DEV -g GIDX
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

#define LEN 16384
static uint8_t src[LEN], tgt[LEN], tgt2[LEN];
static struct ibv_mr *src_mr;

struct conn {
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
};

/* A connected pair in the current global pd (an access error leaves a pair in error). */
static void conn_new(struct conn *c)
{
	c->cqa = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	c->cqb = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	if (!c->cqa || !c->cqb)
		die("ibv_create_cq");
	c->a = loop_rc_qp(c->cqa, NULL, 1, 0);
	c->b = loop_rc_qp(c->cqb, NULL, 1, 0);
	to_rts(c->a, c->b->qp_num);
	to_rts(c->b, c->a->qp_num);
}

static void conn_free(struct conn *c)
{
	ibv_destroy_qp(c->a);
	ibv_destroy_qp(c->b);
	ibv_destroy_cq(c->cqa);
	ibv_destroy_cq(c->cqb);
}

/* RDMA WRITE of len bytes of src (lkey) by QP A to raddr/rkey; the completion status. */
static int write_with(struct conn *c, uint32_t lkey, uint32_t rkey, void *raddr, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)src, len, lkey };
	struct ibv_send_wr w = { .wr_id = 7, .sg_list = &s, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { (uintptr_t)raddr, rkey } }, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(c->a, &w, &bad))
		return -2;
	return wait_wc(c->cqa, &wc);
}

static int write_to(struct conn *c, uint32_t rkey, void *raddr, uint32_t len)
{
	return write_with(c, src_mr->lkey, rkey, raddr, len);
}

static void fill(uint8_t seed)
{
	for (int i = 0; i < LEN; i++)
		src[i] = (uint8_t)(seed + i * 7);
}

static void rereg_access(void)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, tgt, LEN, IBV_ACCESS_LOCAL_WRITE);
	struct conn c;
	uint32_t old_rkey, old_lkey;
	int st, r;

	if (!mr)
		die("ibv_reg_mr tgt");
	conn_new(&c);
	st = write_to(&c, mr->rkey, tgt, 4096);
	ok(st == IBV_WC_REM_ACCESS_ERR, "WRITE to a LOCAL_WRITE-only region: REM_ACCESS_ERR (%d)", st);
	conn_free(&c);

	/*
	 * The keys stay across a rereg, as mlx5 keeps them: a peer that holds the rkey (old_rkey
	 * here, never re-read from mr) gets the new rights, no more and no less.
	 */
	old_rkey = mr->rkey;
	old_lkey = mr->lkey;
	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ok(r == 0, "rereg CHANGE_ACCESS adding REMOTE_WRITE succeeds (%d, errno %d)", r, errno);
	ok(mr->rkey == old_rkey && mr->lkey == old_lkey,
	   "rereg CHANGE_ACCESS kept the lkey and rkey (%#x %#x, were %#x %#x)", mr->lkey, mr->rkey,
	   old_lkey, old_rkey);
	conn_new(&c);
	fill(1);
	memset(tgt, 0, LEN);
	st = write_to(&c, old_rkey, tgt, 4096);
	ok(st == IBV_WC_SUCCESS && !memcmp(tgt, src, 4096),
	   "a WRITE with the rkey from before the rereg lands (%d)", st);
	conn_free(&c);

	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE);
	ok(r == 0, "rereg CHANGE_ACCESS removing REMOTE_WRITE succeeds (%d)", r);
	ok(mr->rkey == old_rkey && mr->lkey == old_lkey, "rereg kept the keys again");
	conn_new(&c);
	memset(tgt, 0xee, LEN);
	st = write_to(&c, old_rkey, tgt, 4096);
	ok(st == IBV_WC_REM_ACCESS_ERR && tgt[0] == 0xee && tgt[4095] == 0xee,
	   "after removing REMOTE_WRITE a WRITE with the same rkey is refused and lands nothing (%d)",
	   st);
	conn_free(&c);

	/* Translation: the region now covers tgt2; tgt is no longer reached. */
	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS, NULL,
			 tgt2, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ok(r == 0, "rereg CHANGE_TRANSLATION to another buffer succeeds (%d)", r);
	ok(mr->rkey == old_rkey && mr->lkey == old_lkey, "rereg CHANGE_TRANSLATION kept the keys");
	conn_new(&c);
	fill(2);
	memset(tgt, 0xee, LEN);
	memset(tgt2, 0, LEN);
	st = write_to(&c, mr->rkey, tgt2, LEN);
	ok(st == IBV_WC_SUCCESS && !memcmp(tgt2, src, LEN) && tgt[0] == 0xee && tgt[LEN - 1] == 0xee,
	   "WRITE lands in the new buffer, the old one untouched (%d)", st);
	st = write_to(&c, mr->rkey, tgt, 64);
	ok(st == IBV_WC_REM_ACCESS_ERR, "the old buffer's address is outside the region now (%d)", st);
	conn_free(&c);

	/* PD: QPs of the old PD are refused, QPs of the new one reach it. */
	struct ibv_pd *pd1 = pd, *pd2 = ibv_alloc_pd(ctx);
	if (!pd2)
		die("ibv_alloc_pd");
	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	ok(r == 0, "rereg CHANGE_PD succeeds (%d)", r);
	ok(mr->rkey == old_rkey && mr->lkey == old_lkey, "rereg CHANGE_PD kept the keys");
	conn_new(&c);
	st = write_to(&c, mr->rkey, tgt2, 64);
	ok(st == IBV_WC_REM_ACCESS_ERR, "a QP of the old PD is refused (%d)", st);
	conn_free(&c);
	pd = pd2;
	struct ibv_mr *src2 = ibv_reg_mr(pd2, src, LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!src2)
		die("ibv_reg_mr src in pd2");
	conn_new(&c);
	fill(3);
	st = write_with(&c, src2->lkey, mr->rkey, tgt2, LEN);
	ok(st == IBV_WC_SUCCESS && !memcmp(tgt2, src, LEN), "a QP of the new PD lands (%d)", st);
	conn_free(&c);
	ibv_dereg_mr(src2);
	pd = pd1;
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd2);
}

/* Windows on a region with only LOCAL_WRITE | MW_BIND; rereg refused while one is bound. */
static void windows_on_local_region(void)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, tgt, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1), *mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct conn c;
	struct ibv_wc wc;
	int st, r;

	if (!mr || !mw1 || !mw2)
		die("reg/alloc_mw");
	conn_new(&c);
	struct ibv_mw_bind b = {
		.wr_id = 11, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = (uintptr_t)tgt, .length = 4096,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE },
	};
	r = ibv_bind_mw(c.b, mw1, &b);
	st = r ? -2 : wait_wc(c.cqb, &wc);
	ok(st == IBV_WC_SUCCESS, "type 1 bind with REMOTE_WRITE on a LOCAL_WRITE|MW_BIND region (%d)", st);
	fill(4);
	memset(tgt, 0, LEN);
	st = write_to(&c, mw1->rkey, tgt, 4096);
	ok(st == IBV_WC_SUCCESS && !memcmp(tgt, src, 4096), "WRITE through the type 1 window lands (%d)", st);

	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ);
	ok(r != 0 && errno == EINVAL, "rereg of a region with a bound window: EINVAL (%d, errno %d)",
	   r, errno);

	uint32_t rkey2 = ibv_inc_rkey(mw2->rkey);
	struct ibv_send_wr w = { .wr_id = 12, .opcode = IBV_WR_BIND_MW,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	w.bind_mw.mw = mw2;
	w.bind_mw.rkey = rkey2;
	w.bind_mw.bind_info.mr = mr;
	w.bind_mw.bind_info.addr = (uintptr_t)tgt + 4096;
	w.bind_mw.bind_info.length = 4096;
	w.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	r = ibv_post_send(c.b, &w, &bad);
	st = r ? -2 : wait_wc(c.cqb, &wc);
	ok(st == IBV_WC_SUCCESS, "type 2B bind WR with REMOTE_WRITE on the same region (%d)", st);
	fill(5);
	memset(tgt, 0, LEN);
	st = write_to(&c, rkey2, tgt + 4096, 4096);
	ok(st == IBV_WC_SUCCESS && !memcmp(tgt + 4096, src, 4096),
	   "WRITE through the type 2B window lands (%d)", st);
	st = write_to(&c, mr->rkey, tgt, 64);
	ok(st == IBV_WC_REM_ACCESS_ERR, "the region's own rkey still grants nothing remote (%d)", st);
	conn_free(&c);
	ibv_dealloc_mw(mw1);
	ibv_dealloc_mw(mw2);
	ibv_dereg_mr(mr);
}

static void key_tags(void)
{
	struct ibv_mr *m[16];
	int seq = 1;

	for (int i = 0; i < 16; i++)
		if (!(m[i] = ibv_reg_mr(pd, tgt, 64, IBV_ACCESS_LOCAL_WRITE)))
			die("ibv_reg_mr");
	/* Counting tags gave tag(i+1) = tag(i) + 1; random ones do so 15 times in a row with
	 * probability 2^-120. */
	for (int i = 1; i < 16; i++)
		seq &= (m[i]->lkey & 0xff) == ((m[i - 1]->lkey + 1) & 0xff);
	ok(!seq, "the key tags of 16 registrations are not a sequence (%#x %#x %#x ...)",
	   m[0]->lkey, m[1]->lkey, m[2]->lkey);
	for (int i = 0; i < 16; i++)
		ibv_dereg_mr(m[i]);
}

/*
 * Numbers that can be guessed: dereg + reg of one region (and dealloc + alloc of one
 * window) KEY_ROUNDS times never gives back the key just freed, nor its slot (key >> 8,
 * the index part of rrxe's and rdma_rxe's keys): slots are reused only after many others
 * (a stale key of the PD would otherwise reach the next registration 1 time in 256). And
 * the QPNs of 16 QPs created one after the other are not consecutive numbers.
 */
#define KEY_ROUNDS 100
static void guessable_numbers(void)
{
	struct ibv_mr *m = ibv_reg_mr(pd, tgt, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct ibv_mw *w = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	int same_key = 0, same_slot = 0, mw_same_key = 0, mw_same_slot = 0, steps = 0;
	struct ibv_qp *qp[16];
	struct ibv_cq *cq;

	if (!m || !w)
		die("ibv_reg_mr/ibv_alloc_mw");
	for (int i = 0; i < KEY_ROUNDS; i++) {
		uint32_t lkey = m->lkey, rkey = m->rkey, wkey = w->rkey;

		if (ibv_dereg_mr(m) || ibv_dealloc_mw(w))
			die("ibv_dereg_mr/ibv_dealloc_mw");
		m = ibv_reg_mr(pd, tgt, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		w = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
		if (!m || !w)
			die("ibv_reg_mr/ibv_alloc_mw again");
		same_key += m->lkey == lkey || m->rkey == rkey;
		same_slot += (m->lkey >> 8) == (lkey >> 8);
		mw_same_key += w->rkey == wkey;
		mw_same_slot += (w->rkey >> 8) == (wkey >> 8);
	}
	ok(same_key == 0, "%d x dereg+reg: never the lkey/rkey just freed (%d times)", KEY_ROUNDS,
	   same_key);
	ok(same_slot == 0, "%d x dereg+reg: never the slot just freed (%d times)", KEY_ROUNDS,
	   same_slot);
	ok(mw_same_key == 0, "%d x dealloc+alloc MW: never the rkey just freed (%d times)",
	   KEY_ROUNDS, mw_same_key);
	ok(mw_same_slot == 0, "%d x dealloc+alloc MW: never the slot just freed (%d times)",
	   KEY_ROUNDS, mw_same_slot);
	ibv_dealloc_mw(w);
	ibv_dereg_mr(m);

	if (!(cq = ibv_create_cq(ctx, 8, NULL, NULL, 0)))
		die("ibv_create_cq");
	for (int i = 0; i < 16; i++)
		if (!(qp[i] = loop_rc_qp(cq, NULL, 1, 0)))
			die("loop_rc_qp");
	/* Counting from a random start gave 15 steps of +1; drawing at random among ~4080
	 * free numbers gives 8 or more with probability below 10^-20. */
	for (int i = 1; i < 16; i++)
		steps += qp[i]->qp_num == qp[i - 1]->qp_num + 1;
	ok(steps < 8, "QPNs of 16 consecutive creates are not consecutive (%d steps of +1: %u %u %u ...)",
	   steps, qp[0]->qp_num, qp[1]->qp_num, qp[2]->qp_num);
	for (int i = 0; i < 16; i++)
		ibv_destroy_qp(qp[i]);
	ibv_destroy_cq(cq);
}

static void modify_rules(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp *qp, *peer;
	struct ibv_qp_attr at, got;
	struct ibv_qp_init_attr ia;
	struct ibv_port_attr pa;
	int r;

	if (!cq)
		die("cq");
	qp = loop_rc_qp(cq, NULL, 1, 0);
	peer = loop_rc_qp(cq, NULL, 1, 0);
	printf("# first-qpn %u\n", qp->qp_num);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = IBV_MTU_1024;
	at.dest_qp_num = 0x123;
	at.min_rnr_timer = 40; /* out of range (0..31) */
	at.ah_attr.is_global = 1;
	at.ah_attr.port_num = 1;
	at.ah_attr.grh.dgid = gid;
	at.ah_attr.grh.sgid_index = gidx;
	at.ah_attr.grh.hop_limit = 64;
	r = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	ok(r == EINVAL, "modify to RTR with min_rnr_timer 40: EINVAL (%d)", r);
	memset(&got, 0, sizeof(got));
	r = ibv_query_qp(qp, &got, IBV_QP_STATE | IBV_QP_DEST_QPN, &ia);
	ok(r == 0 && got.qp_state == IBV_QPS_INIT && got.dest_qp_num == 0,
	   "the failed modify kept nothing: state %d, dest QPN %#x", got.qp_state, got.dest_qp_num);

	if (ibv_query_port(ctx, 1, &pa))
		die("query_port");
	at.min_rnr_timer = 1;
	at.path_mtu = IBV_MTU_4096;
	at.dest_qp_num = peer->qp_num;
	r = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	memset(&got, 0, sizeof(got));
	ibv_query_qp(qp, &got, IBV_QP_PATH_MTU, &ia);
	ok(r == 0 && (int)got.path_mtu == (int)pa.active_mtu,
	   "path MTU 4096 asked on a port with active MTU %d: the QP uses %d", pa.active_mtu,
	   got.path_mtu);
	ibv_destroy_qp(qp);
	ibv_destroy_qp(peer);
	ibv_destroy_cq(cq);
}

/* Allocates with make() until it fails; returns how many were made and frees them. */
static int fill_up(int max, void *(*make)(void), void (*undo)(void *), int *err)
{
	void **objs = calloc(max + 2, sizeof(*objs));
	int n = 0;

	if (!objs)
		die("calloc");
	*err = 0;
	while (n < max + 2) {
		errno = 0;
		objs[n] = make();
		if (!objs[n]) {
			*err = errno;
			break;
		}
		n++;
	}
	for (int i = 0; i < n; i++)
		undo(objs[i]);
	free(objs);
	return n;
}

static void *mk_pd(void) { return ibv_alloc_pd(ctx); }
static void rm_pd(void *p) { ibv_dealloc_pd(p); }
static void *mk_mw(void) { return ibv_alloc_mw(pd, IBV_MW_TYPE_1); }
static void rm_mw(void *p) { ibv_dealloc_mw(p); }
static void *mk_srq(void)
{
	struct ibv_srq_init_attr a = { .attr = { .max_wr = 1, .max_sge = 1 } };

	return ibv_create_srq(pd, &a);
}
static void rm_srq(void *p) { ibv_destroy_srq(p); }

static void limits(void)
{
	struct ibv_device_attr da;
	int n, err;

	if (ibv_query_device(ctx, &da))
		die("query_device");
	n = fill_up(da.max_pd, mk_pd, rm_pd, &err);
	/* Kernel consumers (the MAD layer) hold a few PDs of the device too. */
	ok(n < da.max_pd && n >= da.max_pd - 16 && err == EINVAL,
	   "PDs: %d more than this process's first, then EINVAL (%d); max_pd %d", n, err, da.max_pd);
	n = fill_up(da.max_srq, mk_srq, rm_srq, &err);
	ok(n == da.max_srq && err == EINVAL, "SRQs: exactly max_srq (%d of %d), then EINVAL (%d)", n,
	   da.max_srq, err);
	n = fill_up(da.max_mw, mk_mw, rm_mw, &err);
	ok(n == da.max_mw && err == EINVAL, "MWs: exactly max_mw (%d of %d), then EINVAL (%d)", n,
	   da.max_mw, err);
	n = fill_up(4, mk_srq, rm_srq, &err);
	ok(n == 6, "after freeing them, objects can be created again (%d SRQs)", n);
}

int main(int argc, char **argv)
{
	loop_open(argc, argv);
	if (getenv("MR_RULES_QPN_ONLY")) {
		struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
		struct ibv_qp *qp = cq ? loop_rc_qp(cq, NULL, 1, 0) : NULL;

		printf("# first-qpn %u\n", qp ? qp->qp_num : 0);
		return 0;
	}
	src_mr = ibv_reg_mr(pd, src, LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!src_mr)
		die("ibv_reg_mr src");
	rereg_access();
	windows_on_local_region();
	key_tags();
	guessable_numbers();
	modify_rules();
	limits();
	return tap_end();
}
