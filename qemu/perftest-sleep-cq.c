// SPDX-License-Identifier: GPL-2.0
/*
 * LD_PRELOAD shim for the benchmark's completion-event rows (scripts/bench.sh): a process
 * that polls a CQ sleeps until a completion arrives instead of spinning.
 *
 * perftest's own -e does not serve: perftest 4.5 (Debian bookworm) refuses it for
 * ib_write_bw ("Events feature not available on WRITE verb"), and where it takes it, it
 * waits for an event, re-arms the CQ and polls at most 16 completions, so a run whose last
 * completions came more than 16 at a time before the re-arm waits forever (no new
 * completion, no event; perftest_resources.c's run_iter_bw and ctx_notify_events). With
 * this shim preloaded, every CQ the program creates without a completion channel gets one
 * of its own, and a poll of such a CQ that finds it empty arms the CQ, polls once more (a
 * completion may have arrived before the arm) and, if it is still empty, sleeps until the
 * next completion's event or WAIT_MS, then polls. The program runs without -e; CQs created
 * with a channel of the program's own are left alone.
 *
 * The wait is bounded because programs also poll to find a CQ empty: perftest's ib_send_bw
 * server polls its receive CQ until a poll returns nothing, also after the last message,
 * and an unbounded wait there never ends. A wait that ends without a completion costs the
 * program one more trip around its loop; in a bandwidth run completions come far more
 * often, so the bound is met only at the run's end.
 *
 * ibv_poll_cq() is inline: it calls the context's ops.poll_cq, which the shim replaces with
 * its own for the contexts of the CQs it creates. Single-threaded programs only (perftest's
 * bandwidth tests): the table of the shim's channels is not locked.
 *
 * Built by scripts/bench.sh: cc -shared -fPIC -O2 -o perftest-sleep-cq.so perftest-sleep-cq.c
 * -libverbs. Linked against libibverbs so that its calls bind to the current symbol
 * versions: unlinked, ibv_get_cq_event() bound to its IBVERBS_1.0 compatibility version,
 * which takes the old CQ layout, and the first event crashed the program.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <infiniband/verbs.h>

typedef struct ibv_cq *(*create_cq_fn)(struct ibv_context *, int, void *,
					struct ibv_comp_channel *, int);
typedef int (*destroy_cq_fn)(struct ibv_cq *);
typedef int (*poll_cq_fn)(struct ibv_cq *, int, struct ibv_wc *);

/* How long a poll of an empty CQ waits for a completion, in milliseconds. */
#define WAIT_MS 10

/* The channels the shim made (perftest -q 64 makes one or two CQs per process). */
#define MAX_CHANNELS 256
static struct ibv_comp_channel *channels[MAX_CHANNELS];
static int nchannels;
/* The provider's poll_cq (one provider per process). */
static poll_cq_fn provider_poll;

/* The index of ch in the table, or -1. */
static int ours(const struct ibv_comp_channel *ch)
{
	int i;

	for (i = 0; ch && i < nchannels; i++)
		if (channels[i] == ch)
			return i;
	return -1;
}

static int sleeping_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct ibv_cq *ev_cq;
	struct pollfd pfd;
	void *ev_ctx;
	int got = provider_poll(cq, n, wc);

	if (got != 0 || ours(cq->channel) < 0)
		return got;
	if (ibv_req_notify_cq(cq, 0))
		return 0;
	got = provider_poll(cq, n, wc);
	if (got != 0)
		return got;
	pfd.fd = cq->channel->fd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	if (poll(&pfd, 1, WAIT_MS) != 1)
		return 0;
	/* An event of an earlier arm is taken too: then the poll below may find nothing. */
	if (ibv_get_cq_event(cq->channel, &ev_cq, &ev_ctx))
		return 0;
	ibv_ack_cq_events(ev_cq, 1);
	return provider_poll(cq, n, wc);
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	static create_cq_fn real;
	struct ibv_comp_channel *own = NULL;
	struct ibv_cq *cq;

	if (!real)
		real = (create_cq_fn)dlvsym(RTLD_NEXT, "ibv_create_cq", "IBVERBS_1.1");
	if (!real)
		return NULL;
	/* Past the table's size a CQ stays as the program made it (it is then polled). */
	if (!channel && nchannels < MAX_CHANNELS)
		own = ibv_create_comp_channel(context);
	cq = real(context, cqe, cq_context, channel ? channel : own, comp_vector);
	if (!cq) {
		if (own)
			ibv_destroy_comp_channel(own);
		return NULL;
	}
	if (own) {
		channels[nchannels++] = own;
		if (context->ops.poll_cq != sleeping_poll) {
			provider_poll = context->ops.poll_cq;
			context->ops.poll_cq = sleeping_poll;
		}
	}
	return cq;
}

/* A CQ's own channel goes with it (after the CQ: a channel with a CQ on it is busy). */
int ibv_destroy_cq(struct ibv_cq *cq)
{
	static destroy_cq_fn real;
	struct ibv_comp_channel *ch = cq->channel;
	int i = ours(ch), ret;

	if (!real)
		real = (destroy_cq_fn)dlvsym(RTLD_NEXT, "ibv_destroy_cq", "IBVERBS_1.1");
	if (!real)
		return ENOSYS;
	ret = real(cq);
	if (ret == 0 && i >= 0) {
		channels[i] = channels[--nchannels];
		ibv_destroy_comp_channel(ch);
	}
	return ret;
}
