// SPDX-License-Identifier: GPL-2.0
/*
 * The source GID of a user's address vector must be in the caller's network namespace:
 *   netns_gid -d DEV -g OWN -x FOREIGN
 * OWN is the index of a GID of this namespace, FOREIGN that of a GID whose netdev is in
 * another namespace (another pod's, on the same shared device). With FOREIGN, ibv_modify_qp
 * to RTR (an RC QP's path) and ibv_create_ah fail with ENODEV, the RDMA CM's errno for a
 * GID of another namespace, and the QP stays in INIT; with OWN both succeed. Each address
 * vector sends to its own source GID (this host), so the core resolves its MAC at once.
 */
#include <getopt.h>
#include <infiniband/verbs.h>
#include "tap.h"
#include "gid_path.h"

int main(int argc, char **argv)
{
	const char *name = NULL;
	int own = -1, foreign = -1, c, n, err;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_ah_attr a;

	while ((c = getopt(argc, argv, "d:g:x:")) != -1) {
		switch (c) {
		case 'd': name = optarg; break;
		case 'g': own = atoi(optarg); break;
		case 'x': foreign = atoi(optarg); break;
		default: return 2;
		}
	}
	if (!name || own < 0 || foreign < 0)
		return 2;
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("ibv_open_device");
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	if (!cq)
		die("ibv_alloc_pd/ibv_create_cq");
	struct ibv_qp_init_attr qi = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	qp = ibv_create_qp(pd, &qi);
	if (!qp)
		die("ibv_create_qp");

	err = rc_rtr(qp, ctx, foreign);
	ok(err == ENODEV, "modify_qp to RTR from another namespace's GID %d: ENODEV (got %d %s)",
	   foreign, err, strerror(err));
	ok(qp_state(qp) == IBV_QPS_INIT, "the QP stays in INIT (state %d)", qp_state(qp));
	err = rc_rtr(qp, ctx, own);
	ok(err == 0, "modify_qp to RTR from this namespace's GID %d (got %d %s)", own, err,
	   strerror(err));
	ok(qp_state(qp) == IBV_QPS_RTR, "the QP is in RTR (state %d)", qp_state(qp));

	a = gid_av(ctx, foreign);
	errno = 0;
	ah = ibv_create_ah(pd, &a);
	err = errno;
	ok(!ah && err == ENODEV, "create_ah from another namespace's GID %d: ENODEV (got %s, %d %s)",
	   foreign, ah ? "an AH" : "NULL", err, strerror(err));
	if (ah)
		ibv_destroy_ah(ah);
	a = gid_av(ctx, own);
	ah = ibv_create_ah(pd, &a);
	ok(ah != NULL, "create_ah from this namespace's GID %d (%s)", own,
	   ah ? "ok" : strerror(errno));
	if (ah)
		ibv_destroy_ah(ah);

	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return tap_end();
}
