// SPDX-License-Identifier: GPL-2.0
/*
 * The QP's affiliated asynchronous events through ibv_get_async_event (one host, QPs of this
 * process connected to each other; TAP output): each event a process can provoke arrives
 * once, for the right QP, and nothing else arrives with it:
 *   - IBV_EVENT_COMM_EST: a QP in RTR receives its first SEND (none later in RTS);
 *   - IBV_EVENT_QP_LAST_WQE_REACHED: a QP on an SRQ moved to ERR, once per entry (none for
 *     ERR -> ERR, none for a QP with its own receive queue);
 *   - IBV_EVENT_SQ_DRAINED: a QP moved to SQD with IBV_QP_EN_SQD_ASYNC_NOTIFY, once the
 *     WRITE it had started is complete; a WRITE posted in SQD waits for RTS (then lands);
 *     ibv_query_qp says SQD, not draining; a move to SQD without the flag raises nothing;
 *   - IBV_EVENT_QP_ACCESS_ERR: the responder of an RDMA WRITE to an MR without remote write
 *     (the requester completes with IBV_WC_REM_ACCESS_ERR);
 *   - IBV_EVENT_QP_REQ_ERR: the responder of an RDMA READ its QP does not allow
 *     (IBV_WC_REM_INV_REQ_ERR);
 *   - IBV_EVENT_QP_FATAL: a QP whose shared send queue shows an impossible producer index.
 *
 *   async_events -d DEV -g GIDX
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "loop.h"
#include "rings.h"

#define BUF (256 * 1024)
static uint8_t *src, *dst;
static struct ibv_mr *src_mr, *dst_mr;

/*
 * The next affiliated async event within ms milliseconds into *ev (to be acknowledged);
 * 0 if none came. The port's unaffiliated events (a GID added when an address appears on
 * the netdev) may come at any time: they are acknowledged and skipped.
 */
static int next_event(struct ibv_async_event *ev, int ms)
{
	for (;;) {
		if (!loop_readable(ctx->async_fd, ms) || ibv_get_async_event(ctx, ev))
			return 0;
		switch (ev->event_type) {
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_LID_CHANGE:
		case IBV_EVENT_PKEY_CHANGE:
		case IBV_EVENT_GID_CHANGE:
		case IBV_EVENT_SM_CHANGE:
		case IBV_EVENT_CLIENT_REREGISTER:
			printf("# (skipped the port event %s)\n", ibv_event_type_str(ev->event_type));
			ibv_ack_async_event(ev);
			continue;
		default:
			return 1;
		}
	}
}

/* The next async event, within 5 s: it must be `type` for `qp` (acknowledged). */
static void expect_event(enum ibv_event_type type, struct ibv_qp *qp, const char *what)
{
	struct ibv_async_event ev;
	int got = next_event(&ev, 5000 * test_scale());

	ok(got && ev.event_type == type && ev.element.qp == qp, "%s: %s for QP %u (got %s%s)",
	   what, ibv_event_type_str(type), qp->qp_num,
	   got ? ibv_event_type_str(ev.event_type) : "nothing",
	   got && ev.element.qp != qp ? " for another object" : "");
	if (got)
		ibv_ack_async_event(&ev);
}

/* No async event is pending (one that is gets read and named). */
static void no_event(const char *what)
{
	struct ibv_async_event ev;
	int got = next_event(&ev, 0);

	ok(!got, "%s: no async event (got %s)", what, got ? ibv_event_type_str(ev.event_type) : "none");
	if (got)
		ibv_ack_async_event(&ev);
}

static int modify_state(struct ibv_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr at = { .qp_state = st };

	return ibv_modify_qp(qp, &at, IBV_QP_STATE);
}

/* qp sends len bytes of src at off (signaled); its completion's status. */
static int send_from(struct ibv_qp *qp, struct ibv_cq *cq, uint32_t off, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)src + off, len, src_mr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(qp, &w, &bad))
		return -2;
	return wait_wc(cq, &wc);
}

static int post_srq_recv(struct ibv_srq *srq, uint64_t id, uint32_t off, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)dst + off, len, dst_mr->lkey };
	struct ibv_recv_wr r = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(srq, &r, &bad);
}

/* A receive completion on cq for wr_id id whose len bytes at dst + off equal src + soff. */
static int received(struct ibv_cq *cq, uint64_t id, uint32_t off, uint32_t soff, uint32_t len)
{
	struct ibv_wc wc;

	return wait_wc(cq, &wc) == IBV_WC_SUCCESS && wc.wr_id == id && wc.byte_len == len &&
	       !memcmp(dst + off, src + soff, len);
}

/*
 * A (on an SRQ) and B (its own receive queue): A's first SEND in RTR, then Last WQE Reached
 * when A goes to ERR.
 */
static void comm_est_and_last_wqe(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	struct ibv_cq *cqa = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_cq *cqb = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_qp *a, *b;

	if (!srq || !cqa || !cqb)
		die("SRQ, CQs");
	a = loop_rc_qp(cqa, srq, 1, 0);
	b = loop_rc_qp(cqb, NULL, 1, 0);
	for (int i = 0; i < 4; i++)
		if (post_srq_recv(srq, 100 + i, 4096 * i, 4096))
			die("ibv_post_srq_recv");
	loop_rtr(a, b->qp_num, &gid);
	to_rts(b, a->qp_num);
	no_event("A in RTR, B in RTS, nothing sent yet");

	loop_pattern(src, 8192, 3);
	ok(send_from(b, cqb, 0, 1000) == IBV_WC_SUCCESS && received(cqa, 100, 0, 0, 1000),
	   "a SEND from B lands in A's first SRQ receive while A is in RTR");
	expect_event(IBV_EVENT_COMM_EST, a, "A's first request in RTR");
	loop_rts(a);
	ok(send_from(b, cqb, 1000, 2000) == IBV_WC_SUCCESS &&
	   received(cqa, 101, 4096, 1000, 2000),
	   "A in RTS: a second SEND lands in the second SRQ receive");

	/* Raised by the modify itself: nothing else came before it (no second COMM_EST). */
	ok(modify_state(a, IBV_QPS_ERR) == 0, "A (on the SRQ) to ERR");
	expect_event(IBV_EVENT_QP_LAST_WQE_REACHED, a, "A entered ERR");
	no_event("after A's Last WQE Reached");
	ok(modify_state(a, IBV_QPS_ERR) == 0, "A from ERR to ERR");
	no_event("A was in ERR already");
	ok(modify_state(a, IBV_QPS_RESET) == 0, "A to RESET");
	loop_init(a);
	ok(modify_state(a, IBV_QPS_ERR) == 0, "A to INIT, then ERR");
	expect_event(IBV_EVENT_QP_LAST_WQE_REACHED, a, "A entered ERR again");
	ok(modify_state(b, IBV_QPS_ERR) == 0, "B (its own receive queue) to ERR");
	no_event("B is on no SRQ");

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_srq(srq);
	ibv_destroy_cq(cqa);
	ibv_destroy_cq(cqb);
}

/* A signaled RDMA WRITE from src + off to dst + off by p's A; ibv_post_send's value. */
static int write_a(struct loop_pair *p, uint64_t id, uint32_t off, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)src + off, len, src_mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { (uintptr_t)dst + off, dst_mr->rkey } }, *bad;

	return ibv_post_send(p->a, &w, &bad);
}

static void sq_drained(void)
{
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1 };
	struct ibv_qp_init_attr ia;
	struct loop_pair p;
	struct ibv_wc wc;
	int ret;

	loop_pair_new(&p, 0);
	loop_pattern(src, BUF, 11);
	memset(dst, 0, BUF);
	/* 128 KiB: 128 packets, still going out when the QP moves to SQD. */
	ok(write_a(&p, 1, 0, 128 * 1024) == 0, "a 128 KiB WRITE posted on A");
	ret = ibv_modify_qp(p.a, &at, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY);
	ok(ret == 0, "A to SQD with IBV_QP_EN_SQD_ASYNC_NOTIFY (%d)", ret);
	ok(write_a(&p, 2, 128 * 1024, 4096) == 0, "a 4 KiB WRITE posted on A in SQD");
	expect_event(IBV_EVENT_SQ_DRAINED, p.a, "A drained");
	ok(wait_wc(p.cqa, &wc) == IBV_WC_SUCCESS && wc.wr_id == 1 &&
	   !memcmp(dst, src, 128 * 1024), "the WRITE started before SQD completed, data landed");
	ok(ibv_poll_cq(p.cqa, 1, &wc) == 0, "the WRITE posted in SQD has not completed");
	ok(dst[128 * 1024] == 0 && !memcmp(dst + 128 * 1024, dst + 128 * 1024 + 1, 4095),
	   "and has not landed");
	memset(&at, 0, sizeof(at));
	ret = ibv_query_qp(p.a, &at, IBV_QP_STATE, &ia);
	ok(ret == 0 && at.qp_state == IBV_QPS_SQD && !at.sq_draining,
	   "ibv_query_qp: SQD (%d), not draining (%d)", at.qp_state, at.sq_draining);
	ok(modify_state(p.a, IBV_QPS_RTS) == 0, "A back to RTS");
	ok(wait_wc(p.cqa, &wc) == IBV_WC_SUCCESS && wc.wr_id == 2 &&
	   !memcmp(dst + 128 * 1024, src + 128 * 1024, 4096),
	   "the WRITE posted in SQD completes in RTS, data landed");
	/* Nothing outstanding: drained at once, in the modify; no event without the flag. */
	ok(modify_state(p.a, IBV_QPS_SQD) == 0, "A to SQD without the flag");
	no_event("SQD without IBV_QP_EN_SQD_ASYNC_NOTIFY");
	ok(modify_state(p.a, IBV_QPS_RTS) == 0 && write_a(&p, 3, 0, 64) == 0 &&
	   wait_wc(p.cqa, &wc) == IBV_WC_SUCCESS && wc.wr_id == 3, "A back to RTS writes again");
	loop_pair_free(&p);
}

/* A's request fails at B's responder: A completes with `status`, B gets `type`. */
static void responder_error(unsigned int access, enum ibv_wr_opcode op, uint32_t rkey,
			    enum ibv_wc_status status, enum ibv_event_type type, const char *what)
{
	struct loop_pair p;
	int st;

	loop_pair_new(&p, access);
	st = loop_post_a(&p, op, (uintptr_t)src, 64, src_mr->lkey, (uintptr_t)dst, rkey);
	ok(st == (int)status, "%s: A completes with %s (%s)", what, ibv_wc_status_str(status),
	   st >= 0 ? ibv_wc_status_str(st) : "no completion");
	expect_event(type, p.b, what);
	no_event(what);
	loop_pair_free(&p);
}

static void fatal(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct mapping sqm, rqm;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr at;
	struct ibv_qp *qp;

	if (!cq)
		die("ibv_create_cq");
	qa.send_cq = qa.recv_cq = cq;
	qp = qp_with_rings(&qa, &sqm, &rqm);
	loop_init(qp);
	hdr(&sqm)->producer = hdr(&sqm)->consumer + 0x7fffffffu;
	ok(doorbell(qp) == 0, "doorbell over a send queue with an impossible producer index");
	expect_event(IBV_EVENT_QP_FATAL, qp, "a corrupt send queue");
	ok(ibv_query_qp(qp, &at, IBV_QP_STATE, &ia) == 0 && at.qp_state == IBV_QPS_ERR,
	   "the QP is in ERR");
	no_event("after the QP's fatal error");
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

int main(int argc, char **argv)
{
	struct ibv_mr *ro;

	loop_open(argc, argv);
	src = aligned_alloc(4096, BUF);
	dst = aligned_alloc(4096, BUF);
	if (!src || !dst)
		die("buffers");
	src_mr = ibv_reg_mr(pd, src, BUF, IBV_ACCESS_LOCAL_WRITE);
	dst_mr = ibv_reg_mr(pd, dst, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ);
	/* The same memory, without remote write. */
	ro = ibv_reg_mr(pd, dst, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!src_mr || !dst_mr || !ro)
		die("ibv_reg_mr");
	no_event("the device opened");
	comm_est_and_last_wqe();
	sq_drained();
	responder_error(0, IBV_WR_RDMA_WRITE, ro->rkey, IBV_WC_REM_ACCESS_ERR,
			IBV_EVENT_QP_ACCESS_ERR, "an RDMA WRITE to an MR without remote write");
	responder_error(IBV_ACCESS_REMOTE_WRITE, IBV_WR_RDMA_READ, dst_mr->rkey,
			IBV_WC_REM_INV_REQ_ERR, IBV_EVENT_QP_REQ_ERR,
			"an RDMA READ the responder's QP does not allow");
	fatal();
	ibv_dereg_mr(ro);
	ibv_dereg_mr(src_mr);
	ibv_dereg_mr(dst_mr);
	return tap_end();
}
