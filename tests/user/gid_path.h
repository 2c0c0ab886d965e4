/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An RC QP's path over one GID of this host (each address vector sends to its own source
 * GID, so the core resolves its MAC at once): gid_av(), qp_state(), rc_rtr(). For the
 * programs that check which GIDs a caller may use (netns_gid, hold_ctx).
 */
#ifndef RRXE_TEST_GID_PATH_H
#define RRXE_TEST_GID_PATH_H

#include <infiniband/verbs.h>
#include <string.h>

#include "tap.h"

/* An address vector from GID idx of port 1 to itself. */
static struct ibv_ah_attr gid_av(struct ibv_context *ctx, int idx)
{
	struct ibv_ah_attr a = { .port_num = 1, .is_global = 1 };

	a.grh.sgid_index = idx;
	a.grh.hop_limit = 64;
	if (ibv_query_gid(ctx, 1, idx, &a.grh.dgid))
		die("ibv_query_gid");
	return a;
}

/* The QP's state, or -1. */
static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr i;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &i))
		return -1;
	return a.qp_state;
}

/* Moves a new RC QP to INIT, then to RTR with source GID idx: 0 or the errno. */
static int rc_rtr(struct ibv_qp *qp, struct ibv_context *ctx, int idx)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	if (qp_state(qp) == IBV_QPS_RESET &&
	    ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("ibv_modify_qp INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr = gid_av(ctx, idx);
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER);
}

#endif
