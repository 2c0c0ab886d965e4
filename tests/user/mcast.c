// SPDX-License-Identifier: GPL-2.0
/*
 * UD multicast on one host (TAP output): a sender QP and two receiver QPs of this process,
 * the group's datagrams looped back by the IP layer to the device's own socket.
 *   - ibv_attach_mcast of both receivers: 0 (and 0 again for one already attached);
 *     a unicast GID is refused (EINVAL);
 *   - a datagram of 700 B sent to the group (an AH to the group's GID, destination QPN
 *     0xFFFFFF) arrives at both receivers intact, after the 40-byte GRH area, with the
 *     sender's QPN as source;
 *   - after ibv_detach_mcast of one receiver, two more datagrams arrive at the other and
 *     none at the detached one; detaching it again: EINVAL;
 *   - ibv_destroy_qp of a QP still attached: EBUSY (IBTA o10-2.2.3), the QP still works;
 *   - with -k the program then exits with that QP attached: the kernel detaches it (the VM
 *     test checks that the netdev left the group and kmemleak finds nothing).
 *
 *   mcast -d DEV -g GIDX -m GROUP [-k]     (GROUP: an IPv4 or IPv6 multicast address)
 *
 * With -s N it only sends: N datagrams of 512 bytes to the group with the RDMA CM's UDP
 * Q_Key, each waited for (its send completion) before the next, for mckey receivers on
 * another host. (mckey's own sender posts its sends unsignaled and exits at once; an
 * rdma_rxe sender then flushes most of them with its QP before they leave.)
 *
 *   mcast -d DEV -g GIDX -m GROUP -s N
 */
#define _GNU_SOURCE
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

#define LEN 700
#define GRH 40
#define QKEY 0x22222222u
#define MCAST_QPN 0xffffffu
/* What mckey's receivers take: its default message size, rdma_cm's RDMA_UDP_QKEY. */
#define MCKEY_LEN 512
#define RDMA_UDP_QKEY 0x01234567u

static uint8_t sbuf[LEN], rbuf[2][LEN + GRH];
static struct ibv_mr *smr, *rmr[2];

static struct ibv_qp *ud_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);

	if (!qp)
		die("ibv_create_qp UD");
	loop_ud_rts(qp, QKEY);
	return qp;
}

static int post_recv(struct ibv_qp *qp, int i)
{
	struct ibv_sge s = { (uintptr_t)rbuf[i], sizeof(rbuf[i]), rmr[i]->lkey };
	struct ibv_recv_wr r = { .wr_id = 10 + i, .sg_list = &s, .num_sge = 1 }, *bad;

	memset(rbuf[i], 0, sizeof(rbuf[i]));
	return ibv_post_recv(qp, &r, &bad);
}

static uint32_t send_len = LEN, send_qkey = QKEY;

/* Sends one datagram of send_len bytes (pattern seed) to the group; its send status. */
static int send_one(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_ah *ah, uint8_t seed)
{
	struct ibv_sge s = { (uintptr_t)sbuf, send_len, smr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	loop_pattern(sbuf, send_len, seed);
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = MCAST_QPN;
	w.wr.ud.remote_qkey = send_qkey;
	if (ibv_post_send(qp, &w, &bad))
		return -2;
	return wait_wc(cq, &wc);
}

/* Receiver i's next datagram: 1 if it arrived intact from src_qp with pattern seed. */
static int got(struct ibv_cq *cq, int i, uint32_t src_qp, uint8_t seed)
{
	struct ibv_wc wc;
	uint8_t want[LEN];

	if (wait_wc(cq, &wc) != IBV_WC_SUCCESS) {
		printf("# receiver %d: no completion\n", i);
		return 0;
	}
	loop_pattern(want, LEN, seed);
	if (wc.wr_id != (uint64_t)(10 + i) || wc.byte_len != LEN + GRH || wc.src_qp != src_qp ||
	    !(wc.wc_flags & IBV_WC_GRH) || memcmp(rbuf[i] + GRH, want, LEN)) {
		printf("# receiver %d: wr_id %llu byte_len %u src_qp %u flags %#x\n", i,
		       (unsigned long long)wc.wr_id, wc.byte_len, wc.src_qp, wc.wc_flags);
		return 0;
	}
	return 1;
}

int main(int argc, char **argv)
{
	const char *group = NULL;
	union ibv_gid mgid = {}, ucast;
	struct ibv_cq *scq, *rcq[2];
	struct ibv_qp *s, *r[2];
	struct ibv_ah *ah;
	struct ibv_wc wc;
	int keep = 0, sends = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-m") && i + 1 < argc)
			group = argv[i + 1];
		if (!strcmp(argv[i], "-k"))
			keep = 1;
		if (!strcmp(argv[i], "-s") && i + 1 < argc)
			sends = atoi(argv[i + 1]);
	}
	/* loop_open's getopt must not see -m/-k: pass it -d and -g only. */
	{
		char *a[5] = { argv[0] };
		int n = 1;

		for (int i = 1; i + 1 < argc; i++)
			if (!strcmp(argv[i], "-d") || !strcmp(argv[i], "-g")) {
				a[n++] = argv[i];
				a[n++] = argv[i + 1];
			}
		loop_open(n, a);
	}
	if (!group)
		die("-m GROUP");
	if (inet_pton(AF_INET6, group, mgid.raw) != 1) {
		mgid.raw[10] = mgid.raw[11] = 0xff;
		if (inet_pton(AF_INET, group, mgid.raw + 12) != 1)
			die("GROUP is not an address");
	}
	scq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	rcq[0] = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	rcq[1] = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!scq || !rcq[0] || !rcq[1])
		die("ibv_create_cq");
	smr = ibv_reg_mr(pd, sbuf, sizeof(sbuf), 0);
	rmr[0] = ibv_reg_mr(pd, rbuf[0], sizeof(rbuf[0]), IBV_ACCESS_LOCAL_WRITE);
	rmr[1] = ibv_reg_mr(pd, rbuf[1], sizeof(rbuf[1]), IBV_ACCESS_LOCAL_WRITE);
	if (!smr || !rmr[0] || !rmr[1])
		die("ibv_reg_mr");
	s = ud_qp(scq);
	if (sends > 0) {
		struct ibv_ah_attr sa = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = mgid, .sgid_index = gidx, .hop_limit = 1 },
		};
		int sent = 0;

		ah = ibv_create_ah(pd, &sa);
		if (!ah)
			die("ibv_create_ah to the group");
		send_len = MCKEY_LEN;
		send_qkey = RDMA_UDP_QKEY;
		while (sent < sends && send_one(s, scq, ah, sent) == IBV_WC_SUCCESS)
			sent++;
		ok(sent == sends, "%d of %d datagrams sent to the group", sent, sends);
		ibv_destroy_qp(s);
		ibv_destroy_ah(ah);
		return tap_end();
	}
	r[0] = ud_qp(rcq[0]);
	r[1] = ud_qp(rcq[1]);

	ok(ibv_attach_mcast(r[0], &mgid, 0) == 0, "attach receiver 0");
	ok(ibv_attach_mcast(r[1], &mgid, 0) == 0, "attach receiver 1");
	ok(ibv_attach_mcast(r[1], &mgid, 0) == 0, "attach receiver 1 again: 0");
	ucast = gid;
	errno = 0;
	ok(ibv_attach_mcast(r[0], &ucast, 0) == EINVAL || errno == EINVAL,
	   "attach to a unicast GID: EINVAL");

	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = mgid, .sgid_index = gidx, .hop_limit = 1 },
	};
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		die("ibv_create_ah to the group");

	for (int i = 0; i < 2; i++)
		if (post_recv(r[i], i))
			die("post_recv");
	ok(send_one(s, scq, ah, 1) == IBV_WC_SUCCESS, "send to the group");
	ok(got(rcq[0], 0, s->qp_num, 1), "receiver 0 got the datagram, data equal");
	ok(got(rcq[1], 1, s->qp_num, 1), "receiver 1 got the datagram, data equal");

	ok(ibv_detach_mcast(r[0], &mgid, 0) == 0, "detach receiver 0");
	if (post_recv(r[0], 0) || post_recv(r[1], 1))
		die("post_recv");
	ok(send_one(s, scq, ah, 2) == IBV_WC_SUCCESS, "send to the group again");
	ok(got(rcq[1], 1, s->qp_num, 2), "receiver 1 got the second datagram");
	/* A third datagram: once receiver 1 has it, the second one's delivery to the whole
	 * group is over (one packet's copies are handed out in one pass). */
	if (post_recv(r[1], 1))
		die("post_recv");
	ok(send_one(s, scq, ah, 3) == IBV_WC_SUCCESS, "send a third datagram");
	ok(got(rcq[1], 1, s->qp_num, 3), "receiver 1 got the third datagram");
	ok(ibv_poll_cq(rcq[0], 1, &wc) == 0, "the detached receiver 0 got nothing");
	errno = 0;
	{
		int rc = ibv_detach_mcast(r[0], &mgid, 0);

		ok(rc == EINVAL || (rc && errno == EINVAL), "detach receiver 0 again: EINVAL (%d)",
		   rc);
	}

	{
		int rc = ibv_destroy_qp(r[1]);

		ok(rc == EBUSY, "destroy of an attached QP: EBUSY (%d)", rc);
	}
	if (post_recv(r[1], 1))
		die("post_recv");
	ok(send_one(s, scq, ah, 4) == IBV_WC_SUCCESS, "send after the refused destroy");
	ok(got(rcq[1], 1, s->qp_num, 4), "receiver 1 still receives");
	if (keep) {
		printf("# exiting with receiver 1 attached\n");
		return tap_end();
	}
	ok(ibv_detach_mcast(r[1], &mgid, 0) == 0, "detach receiver 1");
	ok(ibv_destroy_qp(r[1]) == 0, "destroy receiver 1");
	ibv_destroy_qp(r[0]);
	ibv_destroy_qp(s);
	ibv_destroy_ah(ah);
	return tap_end();
}
