// SPDX-License-Identifier: GPL-2.0
/*
 * FLUSH (IBTA 1.5) end to end over rrxe (TAP output, one host, loopback RC QPs): requests
 * written straight into the send queue in the user ABI's RRXE_WR_FLUSH layout (rdma-core
 * 44 has no ibv_wr_flush; a newer provider would write the same WQE), carried on the wire
 * as RC FLUSH with its FETH, checked by the responder against the target MR, and answered:
 *   - a range and a whole-region FLUSH of an MR registered with FLUSH_GLOBAL complete;
 *   - a range past the MR, an MR without flush access, a placement type the MR does not
 *     grant (persistence) and a bad rkey end in a remote access error;
 *   - a malformed request (no placement type) completes in error locally.
 *
 *   flush -d DEV -g GIDX
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

/* rdma-core 45+ names: IBV_ACCESS_FLUSH_GLOBAL and IBV_WC_FLUSH (= IB_UVERBS_WC_FLUSH). */
#define ACCESS_FLUSH_GLOBAL (1 << 8)
#define WC_FLUSH 8

static uint8_t tgt[16384], plain[4096];
static struct ibv_mr *tgt_mr, *plain_mr;

/*
 * On a fresh pair (A, whose SQ is located, and B), A posts one FLUSH of B's memory; the
 * status of its completion (-1: none), its opcode in *opcode.
 */
static int flush_once(uint8_t type, uint8_t level, uint64_t va, uint32_t len, uint32_t rkey,
		      int *opcode)
{
	struct ibv_cq *cqa = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq *cqb = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {
		.send_cq = cqa, .recv_cq = cqa, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct mapping sq, rq;
	struct ibv_qp *a, *b;
	volatile struct rrxe_queue_hdr *h;
	struct rrxe_send_wqe *w;
	struct ibv_wc wc = {};
	uint32_t prod;
	int st;

	if (!cqa || !cqb)
		die("ibv_create_cq");
	a = qp_with_rings(&qa, &sq, &rq);
	loop_init(a);
	b = loop_rc_qp(cqb, NULL, 1, 0);
	to_rts(a, b->qp_num);
	to_rts(b, a->qp_num);
	h = hdr(&sq);
	prod = h->producer;
	if (prod != 0)
		die("a fresh SQ's producer index is not 0");
	w = (struct rrxe_send_wqe *)(sq.start + RRXE_QUEUE_HDR_SIZE);
	memset(w, 0, sizeof(*w));
	w->wr_id = 77;
	w->opcode = RRXE_WR_FLUSH;
	w->send_flags = RRXE_SEND_SIGNALED;
	w->wr.flush.remote_addr = va;
	w->wr.flush.length = len;
	w->wr.flush.rkey = rkey;
	w->wr.flush.type = type;
	w->wr.flush.level = level;
	__atomic_store_n(&h->producer, prod + 1, __ATOMIC_RELEASE);
	if (doorbell(a))
		die("doorbell");
	st = wait_wc(cqa, &wc);
	*opcode = st < 0 ? -1 : (int)wc.opcode;
	if (st >= 0 && wc.wr_id != 77)
		st = -3;
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(cqa);
	ibv_destroy_cq(cqb);
	return st;
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex dx;
	uintptr_t t;
	int st, op;

	loop_open(argc, argv);
	st = ibv_query_device_ex(ctx, NULL, &dx);
	/* IB_UVERBS_DEVICE_FLUSH_GLOBAL and IB_UVERBS_DEVICE_ATOMIC_WRITE */
	ok(st == 0 && (dx.device_cap_flags_ex & (1ull << 38)) && (dx.device_cap_flags_ex & (1ull << 40)),
	   "the device reports FLUSH_GLOBAL and ATOMIC_WRITE (flags_ex %#llx)",
	   (unsigned long long)dx.device_cap_flags_ex);
	tgt_mr = ibv_reg_mr(pd, tgt, sizeof(tgt), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    ACCESS_FLUSH_GLOBAL);
	ok(tgt_mr != NULL, "an MR registered with FLUSH_GLOBAL access (errno %d)", tgt_mr ? 0 : errno);
	plain_mr = ibv_reg_mr(pd, plain, sizeof(plain), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!tgt_mr || !plain_mr)
		die("ibv_reg_mr");
	t = (uintptr_t)tgt;

	st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_RANGE, t + 4096, 4096, tgt_mr->rkey, &op);
	ok(st == IBV_WC_SUCCESS && op == WC_FLUSH,
	   "FLUSH of a 4 KiB range to global visibility completes (status %d, opcode %d)", st, op);
	st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_MR, 0, 0, tgt_mr->rkey, &op);
	ok(st == IBV_WC_SUCCESS && op == WC_FLUSH,
	   "FLUSH of the whole MR (VA and length 0, not used) completes (status %d)", st);
	st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_RANGE, t, sizeof(tgt), tgt_mr->rkey, &op);
	ok(st == IBV_WC_SUCCESS, "FLUSH of exactly the MR's range completes (status %d)", st);
	st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_RANGE, t + 8192, 8193, tgt_mr->rkey, &op);
	ok(st == IBV_WC_REM_ACCESS_ERR, "a range one byte past the MR: remote access error (status %d)", st);
	st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_RANGE, (uintptr_t)plain, 64, plain_mr->rkey, &op);
	ok(st == IBV_WC_REM_ACCESS_ERR, "an MR without flush access: remote access error (status %d)", st);
	st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_MR, 0, 0, plain_mr->rkey, &op);
	ok(st == IBV_WC_REM_ACCESS_ERR, "the same, whole-MR: remote access error (status %d)", st);
	st = flush_once(RRXE_FLUSH_PERSISTENT, RRXE_FLUSH_RANGE, t, 64, tgt_mr->rkey, &op);
	ok(st == IBV_WC_REM_ACCESS_ERR,
	   "persistence from an MR that grants only global visibility: remote access error (status %d)", st);
	st = flush_once(RRXE_FLUSH_GLOBAL, RRXE_FLUSH_RANGE, t, 64, tgt_mr->rkey ^ 0x5a00, &op);
	ok(st == IBV_WC_REM_ACCESS_ERR, "a bad rkey: remote access error (status %d)", st);
	st = flush_once(0, RRXE_FLUSH_RANGE, t, 64, tgt_mr->rkey, &op);
	ok(st > 0 && st != IBV_WC_REM_ACCESS_ERR,
	   "a FLUSH WQE with no placement type completes in error locally (status %d)", st);
	ibv_dereg_mr(tgt_mr);
	ibv_dereg_mr(plain_mr);
	return tap_end();
}
