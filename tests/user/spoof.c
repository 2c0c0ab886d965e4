// SPDX-License-Identifier: GPL-2.0
/*
 * spoof - an RC connection between two hosts, held still where forged packets would be
 * accepted (TAP output; tests/vm/rx-spoof.sh).
 *
 *   spoof -d DEV -g GIDX -p PORT -s            the target (its QP gets the forged packets)
 *   spoof -d DEV -g GIDX -p PORT TARGET_IPV4   the peer; runs $SPOOF_CMD in the middle
 *
 * One RC QP each (PSNs 0, MTU 1024: every message is one packet). The peer SENDs four
 * checked messages and RDMA WRITEs 'W' over the target's written area (PSNs 0-4); the target
 * SENDs one (PSN 0). Then the target posts one receive, a SEND the peer has no receive for
 * (RNR NAKs, retried forever) and an RDMA READ behind it: its responder now expects PSN 5,
 * its requester has PSNs 1 (SEND) and 2 (READ) outstanding. The peer runs
 *   $SPOOF_CMD TARGET_QPN 5 1 2 WRITTEN_AREA_VA RKEY
 * (forged packets for exactly those PSNs) and says when it is done. The target must have
 * seen no completion and its memory must be unchanged. Then the peer posts its receive:
 * the target's SEND and READ complete with the real data, the peer's next SEND lands in the
 * receive posted before, an RDMA WRITE overwrites the written area, and both QPs are still
 * in RTS.
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
#include "sock.h"

/* Offsets in each side's one MR. */
#define RECV_AREA 0	/* 4 x 256 B receives */
#define WRITTEN 1024	/* the target's RDMA WRITE area (256 B) */
#define READ_AREA 2048	/* target: where its READ lands; peer: what it reads (256 B) */
#define SEND_SRC 3072	/* SEND sources */

static uint8_t mem[4096];
static struct ibv_mr *mr;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_wc stash[16];
static int nstash;

struct info {
	uint32_t qpn, rkey;
	uint64_t va;
	union ibv_gid gid;
};

static void fill(uint32_t off, uint32_t len, char c)
{
	for (uint32_t i = 0; i < len; i++)
		mem[off + i] = (uint8_t)(c + i % 7);
}

static int filled(uint32_t off, uint32_t len, char c)
{
	for (uint32_t i = 0; i < len; i++)
		if (mem[off + i] != (uint8_t)(c + i % 7))
			return 0;
	return 1;
}

static int zero(uint32_t off, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (mem[off + i])
			return 0;
	return 1;
}

static void post_recv(uint64_t id, uint32_t off, uint32_t len)
{
	struct ibv_sge sg = { .addr = (uintptr_t)mem + off, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		die("ibv_post_recv");
}

static void post_send(uint64_t id, enum ibv_wr_opcode op, uint32_t off, uint32_t len,
		      uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sg = { .addr = (uintptr_t)mem + off, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(qp, &wr, &bad))
		die("ibv_post_send");
}

/* The completion of WR id (10 s times test_scale() at most, others kept for later); its
 * status, -1 if none. */
static int wait_id(uint64_t id, uint32_t *byte_len)
{
	for (int t = 0, n = 10000 * test_scale(); t < n; t++) {
		struct ibv_wc wc;

		for (int i = 0; i < nstash; i++) {
			if (stash[i].wr_id == id) {
				if (byte_len)
					*byte_len = stash[i].byte_len;
				wc = stash[i];
				stash[i] = stash[--nstash];
				return wc.status;
			}
		}
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			die("ibv_poll_cq");
		if (n == 1 && nstash < 16) {
			stash[nstash++] = wc;
			continue;
		}
		usleep(1000);
	}
	return -1;
}

/* One byte each way over TCP: both sides are at the same step. */
static void sync_step(char c)
{
	char r;

	xfer(&c, 1, 1);
	xfer(&r, 1, 0);
	if (r != c)
		die("out of step");
}

static int qp_state(void)
{
	struct ibv_qp_attr at;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &at, IBV_QP_STATE, &ia))
		return -1;
	return at.qp_state;
}

static void target(const struct info *peer)
{
	uint32_t n;
	int st, st2;

	/* Warm-up: four SENDs and a WRITE from the peer, one SEND to it. */
	for (int i = 0; i < 4; i++)
		post_recv(1 + i, RECV_AREA + 256 * i, 256);
	sync_step('a');
	for (int i = 0; i < 4; i++) {
		st = wait_id(1 + i, &n);
		ok(st == IBV_WC_SUCCESS && n == 64 && filled(RECV_AREA + 256 * i, 64, 'a' + i),
		   "warm-up SEND %d from the peer received, checked (status %d, %u bytes)", i, st, n);
	}
	ok(filled(WRITTEN, 256, 'W'), "warm-up RDMA WRITE from the peer landed");
	fill(SEND_SRC, 32, 't');
	post_send(10, IBV_WR_SEND, SEND_SRC, 32, 0, 0);
	st = wait_id(10, NULL);
	ok(st == IBV_WC_SUCCESS, "warm-up SEND to the peer completes (status %d)", st);
	sync_step('b');

	/* Held still: one receive, a SEND stuck in RNR, a READ behind it. */
	memset(mem + RECV_AREA, 0, 256);
	memset(mem + READ_AREA, 0, 256);
	post_recv(20, RECV_AREA, 256);
	fill(SEND_SRC, 64, 'v');
	post_send(21, IBV_WR_SEND, SEND_SRC, 64, 0, 0);
	post_send(22, IBV_WR_RDMA_READ, READ_AREA, 256, peer->va + READ_AREA, peer->rkey);
	usleep(300000);
	st = ibv_poll_cq(cq, 1, &stash[nstash]);
	ok(st == 0, "nothing completes while the peer has no receive (%d)", st);
	if (st > 0)
		nstash++;
	sync_step('i');
	/* ... the peer injects ... */
	sync_step('d');
	st = ibv_poll_cq(cq, 1, &stash[nstash]);
	ok(st == 0, "no completion after the forged packets (%d%s%llu, status %d)", st,
	   st > 0 ? ": wr_id " : "", st > 0 ? (unsigned long long)stash[nstash].wr_id : 0ULL,
	   st > 0 ? stash[nstash].status : 0);
	if (st > 0)
		nstash++;
	ok(filled(WRITTEN, 256, 'W'), "the written area is unchanged");
	ok(zero(RECV_AREA, 256), "the posted receive buffer is untouched");
	ok(zero(READ_AREA, 256), "the READ destination is untouched");
	ok(qp_state() == IBV_QPS_RTS, "the QP is still in RTS (state %d)", qp_state());
	sync_step('c');

	/* The peer posts its receive: everything completes for real. */
	st = wait_id(21, NULL);
	st2 = wait_id(22, &n);
	ok(st == IBV_WC_SUCCESS, "the SEND completes once the peer has a receive (status %d)", st);
	ok(st2 == IBV_WC_SUCCESS && filled(READ_AREA, 256, 'R'),
	   "the RDMA READ completes with the peer's data (status %d)", st2);
	st = wait_id(20, &n);
	ok(st == IBV_WC_SUCCESS && n == 64 && filled(RECV_AREA, 64, 'p'),
	   "the receive posted before takes the peer's real SEND (status %d, %u bytes)", st, n);
	sync_step('w');
	ok(filled(WRITTEN, 256, 'X'), "the peer's next RDMA WRITE landed");
	ok(qp_state() == IBV_QPS_RTS, "the QP ends in RTS (state %d)", qp_state());
	sync_step('e');
}

static void peer(const struct info *tgt)
{
	const char *cmd = getenv("SPOOF_CMD");
	char line[1024];
	uint32_t n;
	int st;

	/* Warm-up. */
	post_recv(1, RECV_AREA, 256);
	fill(READ_AREA, 256, 'R');
	sync_step('a');
	for (int i = 0; i < 4; i++) {
		fill(SEND_SRC + 256 * i, 64, 'a' + i);
		post_send(10 + i, IBV_WR_SEND, SEND_SRC + 256 * i, 64, 0, 0);
		if (i == 2) {
			fill(WRITTEN, 256, 'W');
			post_send(20, IBV_WR_RDMA_WRITE, WRITTEN, 256, tgt->va + WRITTEN, tgt->rkey);
		}
	}
	for (int i = 0; i < 4; i++) {
		st = wait_id(10 + i, NULL);
		ok(st == IBV_WC_SUCCESS, "warm-up SEND %d completes (status %d)", i, st);
	}
	st = wait_id(20, NULL);
	ok(st == IBV_WC_SUCCESS, "warm-up RDMA WRITE completes (status %d)", st);
	st = wait_id(1, &n);
	ok(st == IBV_WC_SUCCESS && n == 32 && filled(RECV_AREA, 32, 't'),
	   "warm-up SEND from the target received, checked (status %d)", st);
	sync_step('b');

	/* The target holds still: its responder expects PSN 5, its SEND is PSN 1, READ 2. */
	sync_step('i');
	snprintf(line, sizeof(line), "%s %u 5 1 2 %#llx %#x", cmd ? cmd : "true", tgt->qpn,
		 (unsigned long long)(tgt->va + WRITTEN), tgt->rkey);
	fflush(stdout);
	st = system(line);
	ok(cmd && st == 0, "the injector ran (%s: %d)", line, st);
	sleep(1);
	sync_step('d');
	sync_step('c');

	memset(mem + RECV_AREA, 0, 256);
	post_recv(2, RECV_AREA, 256);
	st = wait_id(2, &n);
	ok(st == IBV_WC_SUCCESS && n == 64 && filled(RECV_AREA, 64, 'v'),
	   "the target's held SEND arrives, checked (status %d, %u bytes)", st, n);
	fill(SEND_SRC, 64, 'p');
	post_send(30, IBV_WR_SEND, SEND_SRC, 64, 0, 0);
	st = wait_id(30, NULL);
	ok(st == IBV_WC_SUCCESS, "the SEND after the injection completes (status %d)", st);
	fill(WRITTEN, 256, 'X');
	post_send(31, IBV_WR_RDMA_WRITE, WRITTEN, 256, tgt->va + WRITTEN, tgt->rkey);
	st = wait_id(31, NULL);
	ok(st == IBV_WC_SUCCESS, "the RDMA WRITE after the injection completes (status %d)", st);
	sync_step('w');
	ok(qp_state() == IBV_QPS_RTS, "the QP ends in RTS (state %d)", qp_state());
	sync_step('e');
}

int main(int argc, char **argv)
{
	struct info me, them;

	loop_open(argc, argv);
	if (!loop_server && !loop_peer)
		die("usage: -s or a target address");
	mr = ibv_reg_mr(pd, mem, sizeof(mem), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ);
	cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	if (!mr || !cq)
		die("ibv_reg_mr/ibv_create_cq");
	qp = loop_rc_qp(cq, NULL, 1, 0);
	me = (struct info){ .qpn = qp->qp_num, .rkey = mr->rkey, .va = (uintptr_t)mem, .gid = gid };
	sock = tcp_connect(loop_peer, loop_port, loop_server);
	xfer(&me, sizeof(me), 1);
	xfer(&them, sizeof(them), 0);
	/* RNR NAKs of the peer ask for 15 ms (26); RNR retry 7 is forever (IBTA 9.7.5.2.8). */
	to_rts_opts(qp, them.qpn, &them.gid, loop_server ? 1 : 26, 14, 7, 7);
	sync_step('r');
	if (loop_server)
		target(&them);
	else
		peer(&them);
	return tap_end();
}
