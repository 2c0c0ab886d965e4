// SPDX-License-Identifier: GPL-2.0
/*
 * A hostile process against rrxe's shared queues (TAP output, one host, loopback QPs):
 * it writes garbage into the send queue, the receive queue and the completion queue
 * the kernel shares with it (found through /proc/self/maps), rings the doorbell itself,
 * and checks that the kernel answers with error completions and QPs/CQs in error, never
 * with a crash, and that the device still works for everybody afterwards.
 *
 *   ring_garbage -d DEV -g GIDX
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rrxe-abi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "loop.h"
#include "rings.h"

static struct ibv_mr *mr;
static uint8_t buf[8192];

static void garbage(struct mapping *m, unsigned seed)
{
	uint8_t *p = (uint8_t *)m->start + RRXE_QUEUE_HDR_SIZE;

	srand(seed);
	for (uintptr_t i = 0; i < m->end - m->start - RRXE_QUEUE_HDR_SIZE; i++)
		p[i] = (uint8_t)rand();
}

struct pair {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct mapping cqm, sqm, rqm;
};

/* A CQ and an RC QP connected to itself, with their rings located. */
static void make(struct pair *p)
{
	struct mapping b[MAXMAP], a[MAXMAP], n[MAXMAP];
	int nb, na;
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2 },
		.qp_type = IBV_QPT_RC,
	};

	nb = maps(b);
	p->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!p->cq)
		die("ibv_create_cq");
	na = maps(a);
	if (new_maps(b, nb, a, na, n) != 1)
		die("CQ ring not found in /proc/self/maps");
	p->cqm = n[0];
	qa.send_cq = qa.recv_cq = p->cq;
	p->qp = qp_with_rings(&qa, &p->sqm, &p->rqm);
	loop_init(p->qp);
	to_rts(p->qp, p->qp->qp_num);
}

static void destroy(struct pair *p)
{
	ibv_destroy_qp(p->qp);
	ibv_destroy_cq(p->cq);
}

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr i;

	return ibv_query_qp(qp, &a, IBV_QP_STATE, &i) ? -1 : (int)a.qp_state;
}

/*
 * How long a check waits for the kernel to act on what the process did: a QP's work and a
 * loopback packet's receive run asynchronously, and under TCG, with kmemleak on and the host
 * loaded, a fixed sleep of a few hundred milliseconds is not sure to be enough.
 */
#define WAIT_MS 10000

/* Polls until `n` completions or `ms` milliseconds; returns how many, <0 on a poll error. */
static int drain_for(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	int got = 0;

	for (int i = 0; i < ms && got < n; i++) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (got < n)
			usleep(1000);
	}
	return got;
}

static int drain(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	return drain_for(cq, wc, n, 5000);
}

/* A legit send to itself completes with the data in place. */
static int works(struct pair *p, const char *what)
{
	struct ibv_sge rs = { (uintptr_t)buf + 4096, 64, mr->lkey }, ss = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *brw;
	struct ibv_send_wr sw = { .wr_id = 2, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bsw;
	struct ibv_wc wc[2];
	int n;

	snprintf((char *)buf, 64, "alive: %s", what);
	memset(buf + 4096, 0, 64);
	if (ibv_post_recv(p->qp, &rw, &brw) || ibv_post_send(p->qp, &sw, &bsw))
		return 0;
	n = drain(p->cq, wc, 2);
	return n == 2 && !wc[0].status && !wc[1].status && !memcmp(buf, buf + 4096, 64);
}

int main(int argc, char **argv)
{
	struct ibv_wc wc[64];
	struct pair p;
	int n, bad;

	loop_open(argc, argv);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr || ibv_query_gid(ctx, 1, gidx, &gid))
		die("pd/mr/gid");

	make(&p);
	ok(works(&p, "before"), "a loopback QP works before the garbage");
	destroy(&p);

	/* 1. Random send WQEs, published by a producer index 3 ahead, then the doorbell. */
	make(&p);
	garbage(&p.sqm, 1);
	hdr(&p.sqm)->producer = hdr(&p.sqm)->consumer + 3;
	ok(doorbell(p.qp) == 0, "doorbell over 3 random send WQEs accepted");
	n = drain(p.cq, wc, 3);
	bad = 0;
	for (int i = 0; i < n; i++)
		bad += wc[i].status != IBV_WC_SUCCESS;
	ok(n >= 1 && bad >= 1, "random send WQEs complete in error (%d completions, %d errors)", n, bad);
	ok(qp_state(p.qp) == IBV_QPS_ERR, "the QP is in the error state (%d)", qp_state(p.qp));
	destroy(&p);

	/* 1b. One well-formed WQE but for its opcode: an error completion, the QP in error,
	 * and the SQ's error word set, so that the provider refuses later posts at once. */
	make(&p);
	{
		struct rrxe_send_wqe *w = (struct rrxe_send_wqe *)(p.sqm.start + RRXE_QUEUE_HDR_SIZE);
		struct ibv_send_wr sw = { .wr_id = 8, .opcode = IBV_WR_SEND };
		struct ibv_send_wr *bsw;

		memset(w, 0, sizeof(*w));
		w->wr_id = 0x5eed;
		w->opcode = 0x7777;
		w->send_flags = RRXE_SEND_SIGNALED;
		__atomic_store_n(&hdr(&p.sqm)->producer, hdr(&p.sqm)->consumer + 1, __ATOMIC_RELEASE);
		ok(doorbell(p.qp) == 0, "doorbell over a WQE with opcode 0x7777 accepted");
		n = drain(p.cq, wc, 1);
		ok(n == 1 && wc[0].wr_id == 0x5eed && wc[0].status == IBV_WC_LOC_QP_OP_ERR,
		   "it completes with IBV_WC_LOC_QP_OP_ERR (%d completions, status %d)", n,
		   n ? (int)wc[0].status : -1);
		ok(qp_state(p.qp) == IBV_QPS_ERR, "the QP is in the error state (%d)", qp_state(p.qp));
		ok(hdr(&p.sqm)->error != 0, "the SQ's error word is set");
		ok(ibv_post_send(p.qp, &sw, &bsw) != 0, "a later ibv_post_send is refused");
	}
	destroy(&p);

	/* 2. An impossible producer index (far more than a full queue ahead). */
	make(&p);
	hdr(&p.sqm)->producer = hdr(&p.sqm)->consumer + 0x7fffffffu;
	ok(doorbell(p.qp) == 0, "doorbell with an impossible producer index accepted");
	for (int ms = 0; ms < WAIT_MS && qp_state(p.qp) != IBV_QPS_ERR; ms++)
		usleep(1000);
	ok(qp_state(p.qp) == IBV_QPS_ERR, "the QP is in the error state (%d)", qp_state(p.qp));
	destroy(&p);

	/* 3. Random receive WQEs, then a legit send that needs one. */
	make(&p);
	garbage(&p.rqm, 2);
	hdr(&p.rqm)->producer = hdr(&p.rqm)->consumer + 4;
	{
		struct ibv_sge ss = { (uintptr_t)buf, 64, mr->lkey };
		struct ibv_send_wr sw = { .wr_id = 9, .sg_list = &ss, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bsw;

		ok(ibv_post_send(p.qp, &sw, &bsw) == 0, "a send to the QP with random receive WQEs");
	}
	n = drain(p.cq, wc, 2);
	bad = 0;
	for (int i = 0; i < n; i++)
		bad += wc[i].status != IBV_WC_SUCCESS;
	ok(n >= 1 && bad >= 1, "it ends in error completions (%d completions, %d errors)", n, bad);
	ok(qp_state(p.qp) == IBV_QPS_ERR, "the QP is in the error state (%d)", qp_state(p.qp));
	destroy(&p);

	/* 4. A CQ consumer index far ahead of the producer: the CQ reports overflow. */
	make(&p);
	hdr(&p.cqm)->consumer = hdr(&p.cqm)->producer + 1000;
	{
		struct ibv_sge ss = { (uintptr_t)buf, 64, mr->lkey };
		struct ibv_send_wr sw = { .wr_id = 9, .sg_list = &ss, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED }, *bsw;

		sw.wr.rdma.remote_addr = (uintptr_t)buf + 4096;
		sw.wr.rdma.rkey = mr->rkey;
		ibv_post_send(p.qp, &sw, &bsw);
	}
	/* The WRITE's completion comes after its loopback ACK: wait for the CQ's error word. */
	for (int ms = 0; ms < WAIT_MS && !hdr(&p.cqm)->error; ms++)
		usleep(1000);
	ok(ibv_poll_cq(p.cq, 4, wc) < 0, "polling a CQ whose consumer index was corrupted fails");
	ok(hdr(&p.cqm)->error != 0, "the CQ's error word is set");
	destroy(&p);

	/* 5. Garbage everywhere at once, repeatedly. */
	for (unsigned round = 0; round < 20; round++) {
		make(&p);
		garbage(&p.sqm, 100 + round);
		garbage(&p.rqm, 200 + round);
		garbage(&p.cqm, 300 + round);
		srand(400 + round);
		hdr(&p.sqm)->producer = (uint32_t)rand();
		hdr(&p.rqm)->producer = (uint32_t)rand();
		hdr(&p.cqm)->consumer = (uint32_t)rand();
		doorbell(p.qp);
		usleep(20000);
		drain_for(p.cq, wc, 1, 10);
		destroy(&p);
		printf("# round %u done\n", round);
	}
	ok(1, "20 rounds of random rings and indices survived");

	make(&p);
	ok(works(&p, "after"), "a new loopback QP still works after all of it");
	destroy(&p);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_end();
}
