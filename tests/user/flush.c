// SPDX-License-Identifier: GPL-2.0
/*
 * FLUSH (IBTA 1.5) end to end over rrxe (TAP output, one host, loopback RC QPs): requests
 * written straight into the send queue in the user ABI's RRXE_WR_FLUSH layout (rdma-core
 * 44 has no ibv_wr_flush; a newer provider would write the same WQE), carried on the wire
 * as RC FLUSH with its FETH, checked by the responder against the target MR, and answered:
 *   - a range and a whole-region FLUSH of an MR registered with FLUSH_GLOBAL complete;
 *   - a range past the MR, an MR without flush access, a placement type the MR does not
 *     grant (persistence) and a bad rkey end in a remote access error;
 *   - a responder QP without the flush access asked for: a remote invalid request error
 *     (as rdma_rxe: an operation the QP does not enable);
 *   - a malformed request (no placement type) completes in error locally.
 *
 * With a peer, the responder is the other host's QPs and MRs (any RoCE stack, e.g. rdma_rxe):
 *
 *   flush -d DEV -g GIDX                        one host
 *   flush -d DEV -g GIDX -p PORT -s             the responder (serves the requests)
 *   flush -d DEV -g GIDX -p PORT SERVER_IPV4    the requester (rrxe), the checks
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
#include "rings.h"
#include "sock.h"

/* rdma-core 45+ names: IBV_ACCESS_FLUSH_GLOBAL, IBV_ACCESS_FLUSH_PERSISTENT and IBV_WC_FLUSH
 * (= IB_UVERBS_WC_FLUSH). */
#define ACCESS_FLUSH_GLOBAL (1 << 8)
#define ACCESS_FLUSH_PERSISTENT (1 << 9)
#define WC_FLUSH 8

/* The FLUSH access the responder QP grants: a FLUSH needs it on the QP as on the MR (as
 * rdma_rxe checks: an invalid request otherwise). */
static unsigned int qp_flush_access = ACCESS_FLUSH_GLOBAL | ACCESS_FLUSH_PERSISTENT;

/* Adds qp_flush_access to a responder QP in INIT (INIT -> INIT). */
static void grant_flush(struct ibv_qp *qp)
{
	struct ibv_qp_attr at = { .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						     qp_flush_access };

	if (ibv_modify_qp(qp, &at, IBV_QP_ACCESS_FLAGS))
		die("INIT -> INIT with flush access");
}

static uint8_t tgt[16384], plain[4096];
static struct ibv_mr *tgt_mr, *plain_mr;

/* Where FLUSH requests go: a responder QP and the two MRs (sent over TCP when remote). */
struct target {
	uint32_t qpn;
	union ibv_gid gid;
	uint64_t tgt, plain;
	uint32_t tgt_rkey, plain_rkey;
};

enum which { TGT, PLAIN };

/* The responder side of one request: a fresh RC QP, its address to the requester, which
 * connects, waits for this side's RTR, posts its FLUSH and says when it is done. */
static void serve_one(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *qp;
	struct target me = { .gid = gid, .tgt = (uintptr_t)tgt, .plain = (uintptr_t)plain,
			     .tgt_rkey = tgt_mr->rkey, .plain_rkey = plain_mr->rkey }, them;
	char c;

	if (!cq)
		die("ibv_create_cq");
	qp = loop_rc_qp(cq, NULL, 1, 0);
	grant_flush(qp);
	me.qpn = qp->qp_num;
	xfer(&me, sizeof(me), 1);
	xfer(&them, sizeof(them), 0);
	to_rts_gid(qp, them.qpn, &them.gid);
	/* Ready: a request arriving before RTR would be dropped. */
	c = 'r';
	xfer(&c, 1, 1);
	xfer(&c, 1, 0);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

/*
 * On a fresh pair (A, whose SQ is located, and a responder QP B: of this host, or of the
 * peer when remote), A posts one FLUSH of B's memory: the MR `which` at offset off, len
 * bytes, its rkey XORed with rkey_xor. The status of the completion (-1: none), its
 * opcode in *opcode.
 */
static int flush_once(uint8_t type, uint8_t level, enum which which, uint64_t off, uint32_t len,
		      uint32_t rkey_xor, int *opcode)
{
	struct ibv_cq *cqa = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq *cqb = NULL;
	struct ibv_qp_init_attr qa = {
		.send_cq = cqa, .recv_cq = cqa, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct mapping sq, rq;
	struct ibv_qp *a, *b = NULL;
	struct target t, me = { .gid = gid };
	volatile struct rrxe_queue_hdr *h;
	struct rrxe_send_wqe *w;
	struct ibv_wc wc = {};
	uint32_t prod;
	int st;
	char c = 'd';

	if (!cqa)
		die("ibv_create_cq");
	a = qp_with_rings(&qa, &sq, &rq);
	loop_init(a);
	if (loop_peer) {
		xfer(&t, sizeof(t), 0);
		me.qpn = a->qp_num;
		xfer(&me, sizeof(me), 1);
		xfer(&c, 1, 0);
	} else {
		cqb = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		if (!cqb)
			die("ibv_create_cq");
		b = loop_rc_qp(cqb, NULL, 1, 0);
		grant_flush(b);
		t = (struct target){ b->qp_num, gid, (uintptr_t)tgt, (uintptr_t)plain,
				     tgt_mr->rkey, plain_mr->rkey };
		to_rts(b, a->qp_num);
	}
	to_rts_gid(a, t.qpn, &t.gid);
	h = hdr(&sq);
	prod = h->producer;
	if (prod != 0)
		die("a fresh SQ's producer index is not 0");
	w = (struct rrxe_send_wqe *)(sq.start + RRXE_QUEUE_HDR_SIZE);
	memset(w, 0, sizeof(*w));
	w->wr_id = 77;
	w->opcode = RRXE_WR_FLUSH;
	w->send_flags = RRXE_SEND_SIGNALED;
	w->wr.flush.remote_addr = level == RRXE_FLUSH_MR ? 0 : (which == TGT ? t.tgt : t.plain) + off;
	w->wr.flush.length = len;
	w->wr.flush.rkey = (which == TGT ? t.tgt_rkey : t.plain_rkey) ^ rkey_xor;
	w->wr.flush.type = type;
	w->wr.flush.level = level;
	__atomic_store_n(&h->producer, prod + 1, __ATOMIC_RELEASE);
	if (doorbell(a))
		die("doorbell");
	st = wait_wc(cqa, &wc);
	*opcode = st < 0 ? -1 : (int)wc.opcode;
	if (st >= 0 && wc.wr_id != 77)
		st = -3;
	if (loop_peer)
		xfer(&c, 1, 1);
	ibv_destroy_qp(a);
	ibv_destroy_cq(cqa);
	if (b) {
		ibv_destroy_qp(b);
		ibv_destroy_cq(cqb);
	}
	return st;
}

#define NCASES 9

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex dx;
	int st, op;

	loop_open(argc, argv);
	tgt_mr = ibv_reg_mr(pd, tgt, sizeof(tgt), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    ACCESS_FLUSH_GLOBAL);
	ok(tgt_mr != NULL, "an MR registered with FLUSH_GLOBAL access (errno %d)", tgt_mr ? 0 : errno);
	plain_mr = ibv_reg_mr(pd, plain, sizeof(plain), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!tgt_mr || !plain_mr)
		die("ibv_reg_mr");
	if (loop_server || loop_peer)
		sock = tcp_connect(loop_peer, loop_port, loop_server);
	if (loop_server) {
		/* The responder only (it may be another RoCE stack than rrxe). */
		for (int i = 0; i < NCASES; i++)
			serve_one();
		ok(1, "served %d FLUSH requesters", NCASES);
		return tap_end();
	}
	st = ibv_query_device_ex(ctx, NULL, &dx);
	/* IB_UVERBS_DEVICE_FLUSH_GLOBAL and IB_UVERBS_DEVICE_ATOMIC_WRITE */
	ok(st == 0 && (dx.device_cap_flags_ex & (1ull << 38)) && (dx.device_cap_flags_ex & (1ull << 40)),
	   "the device reports FLUSH_GLOBAL and ATOMIC_WRITE (flags_ex %#llx)",
	   (unsigned long long)dx.device_cap_flags_ex);

	st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_RANGE, TGT, 4096, 4096, 0, &op);
	ok(st == IBV_WC_SUCCESS && op == WC_FLUSH,
	   "FLUSH of a 4 KiB range to global visibility completes (status %d, opcode %d)", st, op);
	st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_MR, TGT, 0, 0, 0, &op);
	ok(st == IBV_WC_SUCCESS && op == WC_FLUSH,
	   "FLUSH of the whole MR (VA and length 0, not used) completes (status %d)", st);
	st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_RANGE, TGT, 0, sizeof(tgt), 0, &op);
	ok(st == IBV_WC_SUCCESS, "FLUSH of exactly the MR's range completes (status %d)", st);
	st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_RANGE, TGT, 8192, 8193, 0, &op);
	ok(st == IBV_WC_REM_ACCESS_ERR, "a range one byte past the MR: remote access error (status %d)", st);
	st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_RANGE, PLAIN, 0, 64, 0, &op);
	ok(st == IBV_WC_REM_ACCESS_ERR, "an MR without flush access: remote access error (status %d)", st);
	st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_MR, PLAIN, 0, 0, 0, &op);
	ok(st == IBV_WC_REM_ACCESS_ERR, "the same, whole-MR: remote access error (status %d)", st);
	st = flush_once(RRXE_FLUSH_PERSISTENT, RRXE_FLUSH_RANGE, TGT, 0, 64, 0, &op);
	ok(st == IBV_WC_REM_ACCESS_ERR,
	   "persistence from an MR that grants only global visibility: remote access error (status %d)", st);
	st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_RANGE, TGT, 0, 64, 0x5a00, &op);
	ok(st == IBV_WC_REM_ACCESS_ERR, "a bad rkey: remote access error (status %d)", st);
	st = flush_once(0, RRXE_FLUSH_RANGE, TGT, 0, 64, 0, &op);
	ok(st > 0 && st != IBV_WC_REM_ACCESS_ERR,
	   "a FLUSH WQE with no placement type completes in error locally (status %d)", st);
	if (!loop_peer) {
		/* The MR grants the flush, the responder QP does not (one host only: a peer's QPs
		 * always grant it). */
		qp_flush_access = 0;
		st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_RANGE, TGT, 0, 64, 0, &op);
		ok(st == IBV_WC_REM_INV_REQ_ERR,
		   "a QP without flush access: remote invalid request error (status %d)", st);
		qp_flush_access = ACCESS_FLUSH_GLOBAL;
		st = flush_once(RRXE_FLUSH_PERSISTENT, RRXE_FLUSH_RANGE, TGT, 0, 64, 0, &op);
		ok(st == IBV_WC_REM_INV_REQ_ERR,
		   "a QP granting global visibility only, asked for persistence: remote invalid request "
		   "error (status %d)", st);
	}
	ibv_dereg_mr(tgt_mr);
	ibv_dereg_mr(plain_mr);
	return tap_end();
}
