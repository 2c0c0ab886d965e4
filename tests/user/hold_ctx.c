// SPDX-License-Identifier: GPL-2.0
/*
 * A process outside a pod holding verbs objects on the pod's device while the pod goes
 * (shared mode: the device is visible in every namespace):
 *   hold_ctx -d DEV -g GIDX [-t SECONDS]
 * Opens DEV, makes a PD, a CQ on a completion channel (armed) and an RC QP in INIT. Moving
 * the QP to RTR over GIDX, a GID of the pod's netdev (another namespace), fails with
 * ENODEV: the caller's namespace is not the GID's. Then it prints "# holding" and waits up
 * to SECONDS (300) for the device to go: removal wakes the completion channel with an error
 * and raises IBV_EVENT_DEVICE_FATAL (the context is disassociated), and the objects are
 * then destroyed as after any removal. TAP output; exit status 1 if anything failed.
 */
#include <getopt.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <time.h>

#include "tap.h"
#include "gid_path.h"

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *c = NULL;

	for (int i = 0; l && l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			c = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	return c;
}

int main(int argc, char **argv)
{
	const char *name = NULL;
	int idx = -1, secs = 300, o, err, woke = 0, fatal = 0;
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	time_t end;

	while ((o = getopt(argc, argv, "d:g:t:")) != -1) {
		if (o == 'd')
			name = optarg;
		else if (o == 'g')
			idx = atoi(optarg);
		else if (o == 't')
			secs = atoi(optarg);
		else
			return 2;
	}
	if (!name || idx < 0)
		return 2;
	ctx = open_dev(name);
	if (!ctx)
		die("ibv_open_device");
	pd = ibv_alloc_pd(ctx);
	ch = ibv_create_comp_channel(ctx);
	cq = ch ? ibv_create_cq(ctx, 16, NULL, ch, 0) : NULL;
	if (!pd || !cq || ibv_req_notify_cq(cq, 0))
		die("PD, CQ on a completion channel");
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	qp = ibv_create_qp(pd, &qa);
	if (!qp)
		die("ibv_create_qp");
	err = rc_rtr(qp, ctx, idx);
	ok(err == ENODEV, "RTR over GID %d, another namespace's: ENODEV (errno %d, %s)", idx, err,
	   err > 0 ? strerror(err) : "none");
	printf("# holding\n");
	fflush(stdout);

	end = time(NULL) + secs;
	while (time(NULL) < end && !(woke && fatal)) {
		struct pollfd p[2] = {
			{ .fd = ch->fd, .events = POLLIN },
			{ .fd = ctx->async_fd, .events = POLLIN },
		};

		if (poll(p, 2, 1000) <= 0)
			continue;
		if (!woke && (p[0].revents & (POLLIN | POLLERR | POLLHUP))) {
			struct ibv_cq *ecq;
			void *ectx;

			/* No completion can come (nothing was posted): only removal wakes it. */
			if (ibv_get_cq_event(ch, &ecq, &ectx) == 0)
				ibv_ack_cq_events(ecq, 1);
			else
				woke = 1;
		}
		if (!fatal && (p[1].revents & POLLIN)) {
			struct ibv_async_event ev;

			if (ibv_get_async_event(ctx, &ev) == 0) {
				fatal |= ev.event_type == IBV_EVENT_DEVICE_FATAL;
				ibv_ack_async_event(&ev);
			}
		}
	}
	ok(woke, "the completion channel woke with an error when the device went");
	ok(fatal, "IBV_EVENT_DEVICE_FATAL arrived");
	ok(!ibv_destroy_qp(qp) && !ibv_destroy_cq(cq) && !ibv_destroy_comp_channel(ch) &&
	   !ibv_dealloc_pd(pd), "QP, CQ, channel and PD destroyed after the removal");
	ok(!ibv_close_device(ctx), "the context closed");
	return tap_end();
}
