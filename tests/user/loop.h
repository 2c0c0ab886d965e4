/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Loopback helpers for the single-process test programs: open a device by name, RC QPs of
 * this process connected to each other through the device's own GID, and waiting for one
 * completion. Include after tap.h.
 */
#ifndef RRXE_TEST_LOOP_H
#define RRXE_TEST_LOOP_H

#include <infiniband/verbs.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "scale.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int gidx;
/* Two-host programs: -p PORT, and -s (server) or a peer address as the last argument. */
static int loop_port = 18990, loop_server;
/* The responder resources (max_dest_rd_atomic) to_rts_gid gives a QP. */
static uint8_t loop_dest_rd_atomic = 1;
static const char *loop_peer;

/* Parses -d DEV -g GIDX [-p PORT] [-s | PEER], opens DEV (or the first device), allocates
 * pd, reads gid. */
static inline void loop_open(int argc, char **argv)
{
	const char *dev = NULL;
	struct ibv_device **list;
	int opt;

	while ((opt = getopt(argc, argv, "d:g:p:s")) != -1) {
		if (opt == 'd')
			dev = optarg;
		else if (opt == 'g')
			gidx = atoi(optarg);
		else if (opt == 'p')
			loop_port = atoi(optarg);
		else if (opt == 's')
			loop_server = 1;
	}
	if (optind < argc)
		loop_peer = argv[optind];
	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(NULL);
	for (int i = 0; list && list[i]; i++)
		if (!ctx && (!dev || !strcmp(ibv_get_device_name(list[i]), dev)))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("no device");
	pd = ibv_alloc_pd(ctx);
	if (!pd || ibv_query_gid(ctx, 1, gidx, &gid))
		die("pd/gid");
}

/* Moves a new RC QP to INIT, with remote read/write access. */
static inline void loop_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr at = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};

	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("INIT");
}

/* A new RC QP, still in RESET: 32 WRs each way of sge SGEs, on cq (and srq, if any); with
 * ops != 0 an extended QP with those send ops. */
static inline struct ibv_qp *loop_rc_qp_reset(struct ibv_cq *cq, struct ibv_srq *srq, uint32_t sge, uint64_t ops)
{
	struct ibv_qp_init_attr_ex qa = {
		.send_cq = cq, .recv_cq = cq, .srq = srq,
		.cap = { .max_send_wr = 32, .max_recv_wr = srq ? 0 : 32, .max_send_sge = sge,
			 .max_recv_sge = srq ? 0 : sge, .max_inline_data = 64 },
		.qp_type = IBV_QPT_RC, .pd = pd, .send_ops_flags = ops,
		.comp_mask = IBV_QP_INIT_ATTR_PD | (ops ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0),
	};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &qa);

	if (!qp)
		die("ibv_create_qp_ex RC");
	return qp;
}

/* An RC QP in INIT (loop_rc_qp_reset, then loop_init). */
static inline struct ibv_qp *loop_rc_qp(struct ibv_cq *cq, struct ibv_srq *srq, uint32_t sge, uint64_t ops)
{
	struct ibv_qp *qp = loop_rc_qp_reset(cq, srq, sge, ops);

	loop_init(qp);
	return qp;
}

/* Moves an RC QP in INIT to RTR, connected to QP dest at GID dgid, with the given RNR timer
 * (sent in this QP's RNR NAKs). */
static inline void loop_rtr_opts(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *dgid,
				 uint8_t min_rnr_timer)
{
	struct ibv_qp_attr at = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dest,
		.max_dest_rd_atomic = loop_dest_rd_atomic, .min_rnr_timer = min_rnr_timer,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *dgid, .sgid_index = gidx, .hop_limit = 64 } },
	};

	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR");
}

/* Moves an RC QP in INIT to RTR, connected to QP dest at GID dgid. */
static inline void loop_rtr(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *dgid)
{
	loop_rtr_opts(qp, dest, dgid, 1);
}

/* Moves an RC QP in RTR to RTS with the given local ACK timeout and retry counts. */
static inline void loop_rts_opts(struct ibv_qp *qp, uint8_t timeout, uint8_t retry_cnt,
				 uint8_t rnr_retry)
{
	struct ibv_qp_attr at = {
		.qp_state = IBV_QPS_RTS, .timeout = timeout, .retry_cnt = retry_cnt,
		.rnr_retry = rnr_retry, .max_rd_atomic = 1,
	};

	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

/* Moves an RC QP in RTR to RTS (retry and RNR retry counts 2). */
static inline void loop_rts(struct ibv_qp *qp)
{
	loop_rts_opts(qp, 10, 2, 2);
}

/* Moves an RC QP in INIT to RTS, connected to QP dest at GID dgid, both PSNs 0, with the
 * given RNR timer (sent in this QP's RNR NAKs), local ACK timeout and retry counts. */
static inline void to_rts_opts(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *dgid,
			       uint8_t min_rnr_timer, uint8_t timeout, uint8_t retry_cnt,
			       uint8_t rnr_retry)
{
	loop_rtr_opts(qp, dest, dgid, min_rnr_timer);
	loop_rts_opts(qp, timeout, retry_cnt, rnr_retry);
}

/* Moves an RC QP in INIT to RTS, connected to QP dest at GID dgid. */
static inline void to_rts_gid(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *dgid)
{
	loop_rtr(qp, dest, dgid);
	loop_rts(qp);
}

/* Moves a new UD QP (in RESET) to RTS with Q_Key qkey. */
static inline void loop_ud_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey };

	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("UD QP INIT");
	at.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &at, IBV_QP_STATE))
		die("UD QP RTR");
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 0;
	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD QP RTS");
}

/* Fills len bytes with a pattern that differs with seed and along the buffer. */
static inline void loop_pattern(uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 13 + (i >> 8));
}

/* Moves an RC QP in INIT to RTS, connected to QP dest of this host. */
static inline void to_rts(struct ibv_qp *qp, uint32_t dest)
{
	to_rts_gid(qp, dest, &gid);
}

/* One completion from cq within ms milliseconds (times test_scale()); its status, or -1 on
 * timeout. */
static inline int wait_wc_ms(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	ms *= test_scale();
	for (int i = 0; i < ms; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return -1;
		if (n == 1)
			return wc->status;
		usleep(1000);
	}
	return -1;
}

/* Whether fd becomes readable within ms milliseconds (an event channel's or the device's
 * async event fd). */
static inline int loop_readable(int fd, int ms)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	return poll(&pf, 1, ms) == 1;
}

/* One completion from cq (5 s at most); its status, or -1 on timeout. */
static inline int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return wait_wc_ms(cq, wc, 5000);
}

/* Two RC QPs of this process connected to each other, each on its own CQ. An error
 * completion leaves a pair in the error state: the caller makes a new one. */
struct loop_pair {
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
};

/* A new connected pair; with access != 0 both QPs grant that remote access (IBV_ACCESS_*)
 * in place of loop_init's remote read and write; local ACK timeout, retry and RNR retry
 * counts as given. */
static inline void loop_pair_new_opts(struct loop_pair *p, unsigned int access, uint8_t timeout,
				      uint8_t retry_cnt, uint8_t rnr_retry)
{
	struct ibv_qp_attr at = { .qp_access_flags = access };

	p->cqa = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	p->cqb = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	if (!p->cqa || !p->cqb)
		die("ibv_create_cq");
	p->a = loop_rc_qp(p->cqa, NULL, 1, 0);
	p->b = loop_rc_qp(p->cqb, NULL, 1, 0);
	if (access && (ibv_modify_qp(p->a, &at, IBV_QP_ACCESS_FLAGS) ||
		       ibv_modify_qp(p->b, &at, IBV_QP_ACCESS_FLAGS)))
		die("INIT -> INIT access flags");
	to_rts_opts(p->a, p->b->qp_num, &gid, 1, timeout, retry_cnt, rnr_retry);
	to_rts_opts(p->b, p->a->qp_num, &gid, 1, timeout, retry_cnt, rnr_retry);
}

/* A new connected pair (loop_pair_new_opts with loop_rts's timeout and counts). */
static inline void loop_pair_new(struct loop_pair *p, unsigned int access)
{
	loop_pair_new_opts(p, access, 10, 2, 2);
}

/* Work request op by QP A of c with one local SGE (laddr, len, lkey) and remote (raddr,
 * rkey), signaled; the completion's status (-2: the post failed, -1: no completion). */
static inline int loop_post_a(struct loop_pair *c, enum ibv_wr_opcode op, uint64_t laddr,
			      uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge s = { laddr, len, lkey };
	struct ibv_send_wr w = { .wr_id = 7, .sg_list = &s, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { raddr, rkey } }, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(c->a, &w, &bad))
		return -2;
	return wait_wc(c->cqa, &wc);
}

static inline void loop_pair_free(struct loop_pair *p)
{
	ibv_destroy_qp(p->a);
	ibv_destroy_qp(p->b);
	ibv_destroy_cq(p->cqa);
	ibv_destroy_cq(p->cqb);
}

#endif
