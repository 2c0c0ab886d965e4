// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of rrxe.ko, deferred work and timers calling back into Rust with a context
 * pointer. See rrxe_glue.h.
 */
#include "rrxe_glue_int.h"

/* --- deferred work and timers, calling back into Rust with a context pointer --- */

struct rrxe_work {
	struct work_struct work;
	void (*fn)(void *ctx);
	void *ctx;
};

struct rrxe_timer {
	struct timer_list timer;
	void (*fn)(void *ctx, unsigned long id);
	void *ctx;
	unsigned long id;
};

static void rrxe_work_fn(struct work_struct *w)
{
	struct rrxe_work *rw = container_of(w, struct rrxe_work, work);

	rw->fn(rw->ctx);
}

static void rrxe_timer_fn(struct timer_list *t)
{
	struct rrxe_timer *rt = timer_container_of(rt, t, timer);

	rt->fn(rt->ctx, rt->id);
}

static struct rrxe_work *rrxe_work_alloc(void (*fn)(void *ctx), void *ctx)
{
	struct rrxe_work *w = kzalloc(sizeof(*w), GFP_KERNEL);

	if (!w)
		return NULL;
	w->fn = fn;
	w->ctx = ctx;
	return w;
}

/*
 * A work item for the process-context workqueues. INIT_WORK gives each call site its own
 * lockdep class: a process work item's completion is taken with softirqs on, a bottom-half
 * one's (rrxe_glue_work_new_bh) in softirq context, so they must not share one.
 */
struct rrxe_work *rrxe_glue_work_new(void (*fn)(void *ctx), void *ctx)
{
	struct rrxe_work *w = rrxe_work_alloc(fn, ctx);

	if (w)
		INIT_WORK(&w->work, rrxe_work_fn);
	return w;
}

/* A work item for rrxe_glue_work_queue_bh only (its own lockdep class, see above). */
struct rrxe_work *rrxe_glue_work_new_bh(void (*fn)(void *ctx), void *ctx)
{
	struct rrxe_work *w = rrxe_work_alloc(fn, ctx);

	if (w)
		INIT_WORK(&w->work, rrxe_work_fn);
	return w;
}

/*
 * Queues w on cpu's pool of the high-priority workqueue, or this CPU's if cpu is not online
 * (high priority: a QP's work preempts the, often busy-polling, process that woke it instead
 * of waiting for that process's time slice to end). cpu is a hint from rrxe_glue_this_cpu();
 * any value is accepted: the check keeps out a CPU that was never online (whose pool has no
 * worker: the work would never run). It races with hotplug, harmlessly: work queued on a CPU that has just
 * gone offline runs on another one (queue_work_on's kernel-doc).
 */
void rrxe_glue_work_queue_on(struct rrxe_work *w, unsigned int cpu)
{
	if (cpu < nr_cpu_ids && cpu_online(cpu))
		queue_work_on(cpu, system_highpri_wq, &w->work);
	else
		queue_work(system_highpri_wq, &w->work);
}

/*
 * Queues w on this CPU's bottom-half workqueue (system_bh_wq, Linux 6.9 and later): it runs
 * in softirq context on this CPU once the softirq that queued it (the receive path's NAPI
 * poll) ends its pass, so everything that pass queued for w is handled by one run. Called
 * with bottom halves off; a pending w is not queued twice.
 */
void rrxe_glue_work_queue_bh(struct rrxe_work *w)
{
	queue_work(system_bh_wq, &w->work);
}

/* Whether the caller runs as a softirq (not merely with bottom halves off). */
bool rrxe_glue_in_serving_softirq(void)
{
	return in_serving_softirq();
}

/* The CPU the caller runs on now: a hint, stale as soon as it is read (preemption). */
unsigned int rrxe_glue_this_cpu(void)
{
	return raw_smp_processor_id();
}

/* Waits for a running instance and frees; the caller made sure nothing queues it again. */
void rrxe_glue_work_free(struct rrxe_work *w)
{
	cancel_work_sync(&w->work);
	kfree(w);
}

struct rrxe_timer *rrxe_glue_timer_new(void (*fn)(void *ctx, unsigned long id), void *ctx,
				       unsigned long id)
{
	struct rrxe_timer *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return NULL;
	timer_setup(&t->timer, rrxe_timer_fn, 0);
	t->fn = fn;
	t->ctx = ctx;
	t->id = id;
	return t;
}

void rrxe_glue_timer_arm(struct rrxe_timer *t, u64 usecs)
{
	mod_timer(&t->timer, jiffies + max(1UL, usecs_to_jiffies(usecs)));
}

void rrxe_glue_timer_cancel(struct rrxe_timer *t)
{
	timer_delete(&t->timer);
}

void rrxe_glue_work_cancel_sync(struct rrxe_work *w)
{
	cancel_work_sync(&w->work);
}

void rrxe_glue_timer_shutdown(struct rrxe_timer *t)
{
	timer_shutdown_sync(&t->timer);
}

void rrxe_glue_timer_free(struct rrxe_timer *t)
{
	timer_shutdown_sync(&t->timer);
	kfree(t);
}
