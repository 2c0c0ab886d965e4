// SPDX-License-Identifier: GPL-2.0
/*
 * What librrxe, which posts without a system call, does where rdma_rxe's kernel check would
 * answer (one host, QPs of this process connected to each other; TAP output):
 *   - posting against the QP state, with rdma_rxe's return values (rxe_post_send: EINVAL below
 *     RTS; rxe_post_recv: EINVAL in RESET; bad_wr at the first WR): ibv_post_send,
 *     ibv_post_recv and ibv_wr_complete in RESET, INIT, RTR, RTS, in ERROR set by
 *     ibv_modify_qp (accepted, completed with IBV_WC_WR_FLUSH_ERR at once, receives too) and
 *     in ERROR entered by the kernel (retries exceeded: sends accepted and flushed before
 *     and after ibv_query_qp, receives after it); a
 *     request refused in one state is never executed later, a receive posted in INIT is
 *     used once the QP runs;
 *   - a legacy ibv_post_send on a QP with an open ibv_wr_start batch waits for the batch's
 *     ibv_wr_complete (both land, batch first);
 *   - ibv_resize_cq: refused sizes (above max_cqe, below the pending completions) leave
 *     the CQ and its pending completions as they were; a successful resize keeps them; a
 *     resize whose new ring cannot be mapped (RLIMIT_AS) returns ENOMEM, polling then fails
 *     instead of showing an empty CQ, and once mapping works again every pending
 *     completion is there.
 *
 *   qp_state -d DEV -g GIDX
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "loop.h"

#define BUF 65536
#define LEN 256
static uint8_t *src, *dst;
static struct ibv_mr *src_mr, *dst_mr;
static struct ibv_device_attr dattr;

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 5));
}

static const char *state_name(int s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERROR" };

	return s >= 0 && s <= 6 ? n[s] : "?";
}

/* Two SENDs of LEN bytes of src at offset off (wr_ids id, id + 1); returns ibv_post_send's
 * value, *bad its bad_wr (1-based index in the list, 0 for NULL). */
static int post_two_sends(struct ibv_qp *qp, uint64_t id, uint32_t off, int *bad_idx)
{
	struct ibv_sge s[2] = { { (uintptr_t)src + off, LEN, src_mr->lkey },
				{ (uintptr_t)src + off + LEN, LEN, src_mr->lkey } };
	struct ibv_send_wr w[2] = {
		{ .wr_id = id, .sg_list = &s[0], .num_sge = 1, .opcode = IBV_WR_SEND,
		  .send_flags = IBV_SEND_SIGNALED, .next = &w[1] },
		{ .wr_id = id + 1, .sg_list = &s[1], .num_sge = 1, .opcode = IBV_WR_SEND,
		  .send_flags = IBV_SEND_SIGNALED },
	}, *bad = NULL;
	int rc = ibv_post_send(qp, &w[0], &bad);

	*bad_idx = bad == &w[0] ? 1 : bad == &w[1] ? 2 : bad ? -1 : 0;
	return rc;
}

/* Two receives of LEN bytes into dst at offset off (wr_ids id, id + 1). */
static int post_two_recvs(struct ibv_qp *qp, uint64_t id, uint32_t off, int *bad_idx)
{
	struct ibv_sge s[2] = { { (uintptr_t)dst + off, LEN, dst_mr->lkey },
				{ (uintptr_t)dst + off + LEN, LEN, dst_mr->lkey } };
	struct ibv_recv_wr w[2] = {
		{ .wr_id = id, .sg_list = &s[0], .num_sge = 1, .next = &w[1] },
		{ .wr_id = id + 1, .sg_list = &s[1], .num_sge = 1 },
	}, *bad = NULL;
	int rc = ibv_post_recv(qp, &w[0], &bad);

	*bad_idx = bad == &w[0] ? 1 : bad == &w[1] ? 2 : bad ? -1 : 0;
	return rc;
}

/* One SEND of LEN bytes of src at off through ibv_wr_*; ibv_wr_complete's value. */
static int wr_api_send(struct ibv_qp *qp, uint64_t id, uint32_t off)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);

	ibv_wr_start(x);
	x->wr_id = id;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src + off, LEN);
	return ibv_wr_complete(x);
}

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr at;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &at, IBV_QP_STATE, &ia))
		return -1;
	return at.qp_state;
}

static void modify_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr at = { .qp_state = s };

	if (ibv_modify_qp(qp, &at, IBV_QP_STATE))
		die("ibv_modify_qp");
}

/* The next completion of cq matches wr_id and status (and, for a successful receive,
 * LEN bytes equal to src at soff landed in dst at doff). */
static void expect_wc(struct ibv_cq *cq, const char *what, uint64_t wr_id, int status,
		      int recv, uint32_t doff, uint32_t soff)
{
	struct ibv_wc wc;
	int st = wait_wc(cq, &wc);

	if (st < 0) {
		ok(0, "%s: completion of wr_id %llu (none within 5 s)", what,
		   (unsigned long long)wr_id);
		return;
	}
	if (recv && status == IBV_WC_SUCCESS)
		ok(wc.wr_id == wr_id && st == status && wc.byte_len == LEN &&
		   !memcmp(dst + doff, src + soff, LEN),
		   "%s: wr_id %llu %s, %u bytes, data equal (got wr_id %llu %s, %u bytes)", what,
		   (unsigned long long)wr_id, ibv_wc_status_str(status), LEN,
		   (unsigned long long)wc.wr_id, ibv_wc_status_str(st), wc.byte_len);
	else
		ok(wc.wr_id == wr_id && st == status, "%s: wr_id %llu %s (got wr_id %llu %s)", what,
		   (unsigned long long)wr_id, ibv_wc_status_str(status),
		   (unsigned long long)wc.wr_id, ibv_wc_status_str(st));
}

static void expect_empty(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;
	int n;

	usleep(50000);
	n = ibv_poll_cq(cq, 1, &wc);
	ok(n == 0, "%s: no completion (poll %d, wr_id %llu)", what, n,
	   n > 0 ? (unsigned long long)wc.wr_id : 0ULL);
}

/* Sends refused and receives accepted or refused as rdma_rxe does, for a QP in state st. */
static void refused(struct ibv_qp *qp, struct ibv_cq *cq, int st)
{
	const char *sn = state_name(st);
	int bad, rc;

	ok(qp_state(qp) == st, "%s: ibv_query_qp says %s", sn, sn);
	rc = post_two_sends(qp, 900 + st * 10, 0, &bad);
	ok(rc == EINVAL && bad == 1, "%s: ibv_post_send returns EINVAL with bad_wr at the first WR (got %d, bad_wr %d)",
	   sn, rc, bad);
	rc = wr_api_send(qp, 905 + st * 10, 0);
	ok(rc == EINVAL, "%s: ibv_wr_complete returns EINVAL (got %d)", sn, rc);
	if (st == IBV_QPS_RESET) {
		rc = post_two_recvs(qp, 800, 0, &bad);
		ok(rc == EINVAL && bad == 1, "%s: ibv_post_recv returns EINVAL with bad_wr at the first WR (got %d, bad_wr %d)",
		   sn, rc, bad);
	}
	expect_empty(cq, sn);
}

static void states(void)
{
	struct ibv_cq *cqa = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *cqb = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	uint64_t ops = IBV_QP_EX_WITH_SEND;
	struct ibv_qp *a, *b;
	int rc, bad;

	if (!cqa || !cqb)
		die("ibv_create_cq");
	a = loop_rc_qp_reset(cqa, NULL, 1, ops);
	b = loop_rc_qp_reset(cqb, NULL, 1, ops);
	refused(a, cqa, IBV_QPS_RESET);

	loop_init(a);
	loop_init(b);
	refused(a, cqa, IBV_QPS_INIT);
	/* Receives from INIT on (C10-97.2.1): a's 200/201 and b's 100/101 wait for RTS. */
	rc = post_two_recvs(a, 200, 0, &bad);
	ok(rc == 0 && bad == 0, "INIT: ibv_post_recv of 2 WRs returns 0 (got %d)", rc);
	rc = post_two_recvs(b, 100, 4096, &bad);
	ok(rc == 0 && bad == 0, "INIT: ibv_post_recv on the peer returns 0 (got %d)", rc);

	loop_rtr(a, b->qp_num, &gid);
	loop_rtr(b, a->qp_num, &gid);
	refused(a, cqa, IBV_QPS_RTR);
	rc = post_two_recvs(a, 202, 2 * LEN, &bad);
	ok(rc == 0 && bad == 0, "RTR: ibv_post_recv returns 0 (got %d)", rc);

	loop_rts(a);
	loop_rts(b);
	ok(qp_state(a) == IBV_QPS_RTS, "RTS: ibv_query_qp says RTS");
	rc = post_two_sends(a, 1, 0, &bad);
	ok(rc == 0 && bad == 0, "RTS: ibv_post_send of 2 WRs returns 0 (got %d)", rc);
	expect_wc(cqa, "RTS send", 1, IBV_WC_SUCCESS, 0, 0, 0);
	expect_wc(cqa, "RTS send", 2, IBV_WC_SUCCESS, 0, 0, 0);
	/* The peer's receives posted in INIT get exactly the two sends (none of the refused
	 * ones: they would have come first). */
	expect_wc(cqb, "receive posted in INIT", 100, IBV_WC_SUCCESS, 1, 4096, 0);
	expect_wc(cqb, "receive posted in INIT", 101, IBV_WC_SUCCESS, 1, 4096 + LEN, LEN);
	expect_empty(cqb, "RTS: the refused sends were never executed");
	rc = post_two_recvs(b, 102, 8192, &bad);
	ok(rc == 0, "RTS: ibv_post_recv returns 0 (got %d)", rc);
	rc = wr_api_send(a, 3, 2 * LEN);
	ok(rc == 0, "RTS: ibv_wr_complete returns 0 (got %d)", rc);
	expect_wc(cqa, "RTS ibv_wr_send", 3, IBV_WC_SUCCESS, 0, 0, 0);
	expect_wc(cqb, "RTS ibv_wr_send received", 102, IBV_WC_SUCCESS, 1, 8192, 2 * LEN);
	rc = wr_api_send(a, 4, 3 * LEN);
	ok(rc == 0, "RTS: a second ibv_wr_complete returns 0 (got %d)", rc);
	expect_wc(cqa, "RTS ibv_wr_send", 4, IBV_WC_SUCCESS, 0, 0, 0);
	expect_wc(cqb, "RTS ibv_wr_send received", 103, IBV_WC_SUCCESS, 1, 8192 + LEN, 3 * LEN);
	/* b -> a uses a's receive posted in INIT. */
	rc = post_two_sends(b, 10, 4 * LEN, &bad);
	ok(rc == 0, "RTS: the peer's ibv_post_send returns 0 (got %d)", rc);
	expect_wc(cqb, "peer send", 10, IBV_WC_SUCCESS, 0, 0, 0);
	expect_wc(cqb, "peer send", 11, IBV_WC_SUCCESS, 0, 0, 0);
	expect_wc(cqa, "a's receive posted in INIT", 200, IBV_WC_SUCCESS, 1, 0, 4 * LEN);
	expect_wc(cqa, "a's receive posted in INIT", 201, IBV_WC_SUCCESS, 1, LEN, 5 * LEN);

	/* ERROR by ibv_modify_qp: the outstanding receives (202, 203) flush; new requests are
	 * taken and complete flushed. */
	modify_state(a, IBV_QPS_ERR);
	ok(qp_state(a) == IBV_QPS_ERR, "ERROR: ibv_query_qp says ERROR");
	expect_wc(cqa, "ERROR: outstanding receive", 202, IBV_WC_WR_FLUSH_ERR, 1, 0, 0);
	expect_wc(cqa, "ERROR: outstanding receive", 203, IBV_WC_WR_FLUSH_ERR, 1, 0, 0);
	rc = post_two_sends(a, 20, 0, &bad);
	ok(rc == 0 && bad == 0, "ERROR: ibv_post_send returns 0 (got %d)", rc);
	expect_wc(cqa, "ERROR: send", 20, IBV_WC_WR_FLUSH_ERR, 0, 0, 0);
	expect_wc(cqa, "ERROR: send", 21, IBV_WC_WR_FLUSH_ERR, 0, 0, 0);
	rc = post_two_recvs(a, 210, 0, &bad);
	ok(rc == 0 && bad == 0, "ERROR: ibv_post_recv returns 0 (got %d)", rc);
	expect_wc(cqa, "ERROR: receive", 210, IBV_WC_WR_FLUSH_ERR, 1, 0, 0);
	expect_wc(cqa, "ERROR: receive", 211, IBV_WC_WR_FLUSH_ERR, 1, 0, 0);
	rc = wr_api_send(a, 22, 0);
	ok(rc == 0, "ERROR: ibv_wr_complete returns 0 (got %d)", rc);
	expect_wc(cqa, "ERROR: ibv_wr_send", 22, IBV_WC_WR_FLUSH_ERR, 0, 0, 0);

	/* ERROR entered by the kernel: a (in ERROR) answers nothing, so b's send exhausts its
	 * retries and b goes to ERROR without any modify of ours. Posting still works and
	 * flushes, before and after ibv_query_qp has seen the state. */
	rc = post_two_sends(b, 30, 0, &bad);
	ok(rc == 0, "kernel ERROR: the send that fails returns 0 (got %d)", rc);
	expect_wc(cqb, "kernel ERROR: send to a dead peer", 30, IBV_WC_RETRY_EXC_ERR, 0, 0, 0);
	expect_wc(cqb, "kernel ERROR: the next send", 31, IBV_WC_WR_FLUSH_ERR, 0, 0, 0);
	rc = post_two_sends(b, 32, 0, &bad);
	ok(rc == 0 && bad == 0, "kernel ERROR: ibv_post_send before any query returns 0 (got %d)", rc);
	expect_wc(cqb, "kernel ERROR: send", 32, IBV_WC_WR_FLUSH_ERR, 0, 0, 0);
	expect_wc(cqb, "kernel ERROR: send", 33, IBV_WC_WR_FLUSH_ERR, 0, 0, 0);
	ok(qp_state(b) == IBV_QPS_ERR, "kernel ERROR: ibv_query_qp says ERROR (got %s)",
	   state_name(qp_state(b)));
	/* Receives posted in ERROR flush at once once the provider knows the state (here from
	 * the query; librxe leaves them to the next packet or modify). */
	rc = post_two_recvs(b, 110, 0, &bad);
	ok(rc == 0 && bad == 0, "kernel ERROR: ibv_post_recv after the query returns 0 (got %d)", rc);
	expect_wc(cqb, "kernel ERROR: receive", 110, IBV_WC_WR_FLUSH_ERR, 1, 0, 0);
	expect_wc(cqb, "kernel ERROR: receive", 111, IBV_WC_WR_FLUSH_ERR, 1, 0, 0);
	rc = wr_api_send(b, 34, 0);
	ok(rc == 0, "kernel ERROR: ibv_wr_complete after the query returns 0 (got %d)", rc);
	expect_wc(cqb, "kernel ERROR: ibv_wr_send", 34, IBV_WC_WR_FLUSH_ERR, 0, 0, 0);

	/* Back to RESET: refused again. */
	modify_state(a, IBV_QPS_RESET);
	refused(a, cqa, IBV_QPS_RESET);

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(cqa);
	ibv_destroy_cq(cqb);
}

/* A connected pair a <-> b on cqa (cqe entries) and cqb. */
struct pair {
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
};

static void pair_new(struct pair *p, int cqe)
{
	p->cqa = ibv_create_cq(ctx, cqe, NULL, NULL, 0);
	p->cqb = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!p->cqa || !p->cqb)
		die("ibv_create_cq");
	p->a = loop_rc_qp(p->cqa, NULL, 1, IBV_QP_EX_WITH_SEND);
	p->b = loop_rc_qp(p->cqb, NULL, 1, IBV_QP_EX_WITH_SEND);
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

struct racer {
	struct ibv_qp *qp;
	atomic_int done;
	int rc;
};

static void *legacy_post(void *arg)
{
	struct racer *r = arg;
	struct ibv_sge s = { (uintptr_t)src + LEN, LEN, src_mr->lkey };
	struct ibv_send_wr w = { .wr_id = 51, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;

	r->rc = ibv_post_send(r->qp, &w, &bad);
	atomic_store(&r->done, 1);
	return NULL;
}

static void batch_lock(void)
{
	struct pair p;
	struct racer r = { 0 };
	struct ibv_qp_ex *x;
	pthread_t t;
	int waited, rc;

	pair_new(&p, 64);
	memset(dst + 4096, 0, 2 * LEN);
	if (post_two_recvs(p.b, 1000, 4096, &rc))
		die("ibv_post_recv");
	x = ibv_qp_to_qp_ex(p.a);
	r.qp = p.a;
	ibv_wr_start(x);
	x->wr_id = 50;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src, LEN);
	if (pthread_create(&t, NULL, legacy_post, &r))
		die("pthread_create");
	usleep(300000);
	waited = !atomic_load(&r.done);
	ok(waited, "batch lock: ibv_post_send from another thread waits while an ibv_wr_start batch is open");
	rc = ibv_wr_complete(x);
	pthread_join(t, NULL);
	ok(rc == 0 && r.rc == 0, "batch lock: ibv_wr_complete and the waiting ibv_post_send return 0 (got %d, %d)",
	   rc, r.rc);
	expect_wc(p.cqa, "batch lock: the batch's send first", 50, IBV_WC_SUCCESS, 0, 0, 0);
	expect_wc(p.cqa, "batch lock: then the legacy send", 51, IBV_WC_SUCCESS, 0, 0, 0);
	expect_wc(p.cqb, "batch lock: received", 1000, IBV_WC_SUCCESS, 1, 4096, 0);
	expect_wc(p.cqb, "batch lock: received", 1001, IBV_WC_SUCCESS, 1, 4096 + LEN, LEN);
	pair_free(&p);
}

/* n signaled sends a -> b (wr_ids id.., LEN bytes of src at i * LEN), each received into a
 * receive posted just before (data checked); their send completions stay on cqa. */
static uint64_t recv_id = 2000;

static void sends_pending(struct pair *p, int n, uint64_t id)
{
	for (int i = 0; i < n; i++, recv_id++) {
		uint32_t doff = 4096 + (uint32_t)(recv_id % 8) * LEN;
		struct ibv_sge rs = { (uintptr_t)dst + doff, LEN, dst_mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = recv_id, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge s = { (uintptr_t)src + i * LEN, LEN, src_mr->lkey };
		struct ibv_send_wr w = { .wr_id = id + i, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

		memset(dst + doff, 0, LEN);
		if (ibv_post_recv(p->b, &rw, &rbad) || ibv_post_send(p->a, &w, &bad))
			die("ibv_post_recv/ibv_post_send");
		expect_wc(p->cqb, "resize: message received", recv_id, IBV_WC_SUCCESS, 1, doff,
			  i * LEN);
	}
}

/* The n completions id.. are on cqa, in order, and nothing more. */
static void drain(struct pair *p, const char *what, int n, uint64_t id)
{
	for (int i = 0; i < n; i++)
		expect_wc(p->cqa, what, id + i, IBV_WC_SUCCESS, 0, 0, 0);
	expect_empty(p->cqa, what);
}

static size_t vm_size(void)
{
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%lu", &pages) != 1)
		die("/proc/self/statm");
	fclose(f);
	return pages * (size_t)sysconf(_SC_PAGESIZE);
}

static void resize(void)
{
	struct rlimit old, tight;
	struct ibv_wc wc;
	struct pair p;
	int rc, n;

	pair_new(&p, 16);
	/* Above the device's max_cqe: refused by the kernel, the ring stays. */
	sends_pending(&p, 2, 60);
	rc = ibv_resize_cq(p.cqa, dattr.max_cqe + 1);
	ok(rc == EINVAL, "resize to max_cqe + 1 (%d) returns EINVAL (got %d)", dattr.max_cqe + 1, rc);
	drain(&p, "after the refused resize, pending completions", 2, 60);
	sends_pending(&p, 1, 62);
	drain(&p, "after the refused resize, a new completion", 1, 62);

	/* Fewer entries than completions pending: refused, all still there. */
	sends_pending(&p, 4, 70);
	rc = ibv_resize_cq(p.cqa, 1);
	ok(rc == EINVAL, "resize to 1 entry with 4 completions pending returns EINVAL (got %d)", rc);
	drain(&p, "after the refused shrink", 4, 70);

	/* A resize that works keeps what is pending. */
	sends_pending(&p, 3, 80);
	rc = ibv_resize_cq(p.cqa, 256);
	ok(rc == 0 && p.cqa->cqe >= 256, "resize to 256 returns 0 (got %d, cqe %d)", rc, p.cqa->cqe);
	drain(&p, "after the resize", 3, 80);

	/* The kernel moves the CQ to a new ring that this process cannot map (no address
	 * space left under RLIMIT_AS): ENOMEM, and polling fails rather than read the old,
	 * dead ring as empty; with the limit lifted, the next poll maps the ring and finds
	 * every completion. */
	sends_pending(&p, 2, 90);
	if (getrlimit(RLIMIT_AS, &old))
		die("getrlimit");
	tight = old;
	tight.rlim_cur = vm_size() + (1 << 20);
	if (setrlimit(RLIMIT_AS, &tight))
		die("setrlimit");
	rc = ibv_resize_cq(p.cqa, 65536);
	n = ibv_poll_cq(p.cqa, 1, &wc);
	if (setrlimit(RLIMIT_AS, &old))
		die("setrlimit");
	ok(rc == ENOMEM, "resize to 65536 entries without address space for the ring returns ENOMEM (got %d)", rc);
	ok(n < 0, "polling the CQ whose ring is not mapped fails (got %d)", n);
	drain(&p, "once the ring can be mapped", 2, 90);
	sends_pending(&p, 2, 92);
	drain(&p, "and new completions", 2, 92);
	pair_free(&p);
}

int main(int argc, char **argv)
{
	loop_open(argc, argv);
	src = aligned_alloc(4096, BUF);
	dst = aligned_alloc(4096, BUF);
	if (!src || !dst)
		die("buffers");
	fill(src, BUF, 3);
	memset(dst, 0, BUF);
	src_mr = ibv_reg_mr(pd, src, BUF, IBV_ACCESS_LOCAL_WRITE);
	dst_mr = ibv_reg_mr(pd, dst, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!src_mr || !dst_mr || ibv_query_device(ctx, &dattr))
		die("ibv_reg_mr/ibv_query_device");
	states();
	batch_lock();
	resize();
	return tap_end();
}
