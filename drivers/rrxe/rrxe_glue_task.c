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
	/* The transmit completions that queue it (rrxe_glue_work_tx_flight), or NULL. */
	struct rrxe_tx_flight *flight;
};

/*
 * A QP's packets in flight: charged when handed to the IP layer, discharged when the skb is
 * freed (the device sent it, or a qdisc or the IP layer dropped it). The QP stops sending at
 * a high mark and asks for its work item to be queued once fewer than a low mark are left
 * (rrxe_glue_tx_flight_wait): pacing by transmit completion, as rdma_rxe's
 * RXE_INFLIGHT_SKBS_PER_QP_HIGH/LOW and TCP small queues do, instead of a timer.
 *
 * A charged skb points to it from skb_shinfo()->destructor_arg, with rrxe_tx_dtor as its
 * destructor and no socket. The field is free on these skbs: the glue builds them linear,
 * without SKBFL_ZEROCOPY_ENABLE, the only flag under which the core reads it (as a ubuf_info),
 * and a clone (a packet tap's) shares it but gets no destructor.
 */
struct rrxe_tx_flight {
	/*
	 * Guards work. Taken by a destructor that queues the work (softirq or process context,
	 * interrupts on or off: irqsave) and by rrxe_tx_flight_detach; the section is a load and
	 * a queue_work_on. Nothing nests in it.
	 */
	spinlock_t lock;
	/* Queued below the low mark; NULL once the work is cancelled or freed. */
	struct rrxe_work *work;
	/* The work item's reference, and one per charged skb not yet freed. */
	refcount_t ref;
	atomic_t inflight;
	/* Queue the work once inflight falls below this; 0: nobody waits. */
	atomic_t low;
	/* Where to queue it (rrxe_glue_work_queue_on's hint). */
	unsigned int cpu;
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

struct rrxe_work *rrxe_glue_work_new(void (*fn)(void *ctx), void *ctx)
{
	struct rrxe_work *w = kzalloc(sizeof(*w), GFP_KERNEL);

	if (!w)
		return NULL;
	INIT_WORK(&w->work, rrxe_work_fn);
	w->fn = fn;
	w->ctx = ctx;
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

/* The CPU the caller runs on now: a hint, stale as soon as it is read (preemption). */
unsigned int rrxe_glue_this_cpu(void)
{
	return raw_smp_processor_id();
}

/*
 * Charged skbs of the whole module not yet freed: module exit waits for them
 * (rrxe_tx_flight_drain), since their destructor is this module's code.
 */
static atomic_long_t rrxe_tx_skbs = ATOMIC_LONG_INIT(0);

static void rrxe_tx_flight_put(struct rrxe_tx_flight *f)
{
	if (refcount_dec_and_test(&f->ref))
		kfree(f);
}

/* From now on no transmit completion queues w. */
static void rrxe_tx_flight_detach(struct rrxe_work *w)
{
	struct rrxe_tx_flight *f = w->flight;
	unsigned long flags;

	if (!f)
		return;
	spin_lock_irqsave(&f->lock, flags);
	f->work = NULL;
	spin_unlock_irqrestore(&f->lock, flags);
}

/*
 * Waits for a running instance and frees; the caller made sure nothing queues it again (the
 * transmit completions are detached here: the skbs still in flight keep only the counter).
 */
void rrxe_glue_work_free(struct rrxe_work *w)
{
	rrxe_tx_flight_detach(w);
	cancel_work_sync(&w->work);
	if (w->flight)
		rrxe_tx_flight_put(w->flight);
	kfree(w);
}

/*
 * Gives w a counter of packets in flight whose completions can queue it (process context;
 * once per work item). NULL: no memory.
 */
struct rrxe_tx_flight *rrxe_glue_work_tx_flight(struct rrxe_work *w)
{
	struct rrxe_tx_flight *f;

	if (w->flight)
		return w->flight;
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return NULL;
	spin_lock_init(&f->lock);
	f->work = w;
	refcount_set(&f->ref, 1);
	w->flight = f;
	return f;
}

static void rrxe_tx_dtor(struct sk_buff *skb)
{
	struct rrxe_tx_flight *f = skb_shinfo(skb)->destructor_arg;
	/* Fully ordered: against the waiter's store of low and load of inflight. */
	int left = atomic_dec_return(&f->inflight);
	int low = atomic_read(&f->low);
	unsigned long flags;

	/* One destructor takes the wait (the cmpxchg) and queues the work. */
	if (low && left < low && atomic_cmpxchg(&f->low, low, 0) == low) {
		spin_lock_irqsave(&f->lock, flags);
		if (f->work)
			rrxe_glue_work_queue_on(f->work, READ_ONCE(f->cpu));
		spin_unlock_irqrestore(&f->lock, flags);
	}
	rrxe_tx_flight_put(f);
	/*
	 * Last: module exit waits for this count, then for an RCU grace period (free_module
	 * waits for one too), which a destructor running with bottom halves off (a device's
	 * completion, a qdisc's drop or reset) is inside of.
	 */
	atomic_long_dec(&rrxe_tx_skbs);
}

/* Charges skb (a linear skb the glue built, no destructor yet) to f. */
void rrxe_tx_flight_charge(struct sk_buff *skb, struct rrxe_tx_flight *f)
{
	atomic_long_inc(&rrxe_tx_skbs);
	refcount_inc(&f->ref);
	atomic_inc(&f->inflight);
	skb_shinfo(skb)->destructor_arg = f;
	skb->destructor = rrxe_tx_dtor;
}

/*
 * Module exit, once no device is left (nothing charges skbs any more): waits until every
 * charged skb is freed. Devices free sent skbs as they complete them, and a qdisc reset (the
 * netdev down or without carrier) frees queued ones, so this ends; it says so every 5 s
 * while it waits.
 */
void rrxe_tx_flight_drain(void)
{
	unsigned int ms = 0;

	while (atomic_long_read(&rrxe_tx_skbs) > 0) {
		msleep(10);
		ms += 10;
		if (ms % 5000 == 0)
			pr_warn("rrxe: unloading: waiting for %ld sent packets to be freed by their devices\n",
				atomic_long_read(&rrxe_tx_skbs));
	}
}

/* The packets in flight now (a snapshot). */
u32 rrxe_glue_tx_flight_count(struct rrxe_tx_flight *f)
{
	return max(atomic_read(&f->inflight), 0);
}

/*
 * Asks for f's work to be queued on cpu once fewer than low packets are in flight. False if
 * that is already so: nothing stays armed and the caller goes on sending.
 */
bool rrxe_glue_tx_flight_wait(struct rrxe_tx_flight *f, u32 low, unsigned int cpu)
{
	int l = min_t(u32, low, INT_MAX);

	if (!l)
		return false;
	WRITE_ONCE(f->cpu, cpu);
	atomic_set(&f->low, l);
	/* The store of low before the load of inflight (the destructor: the reverse). */
	smp_mb();
	if (atomic_read(&f->inflight) < l) {
		/* Disarmed; or a destructor took it and queued the work: a spare run. */
		atomic_cmpxchg(&f->low, l, 0);
		return false;
	}
	return true;
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

/* Cancels w for good: transmit completions no longer queue it either. */
void rrxe_glue_work_cancel_sync(struct rrxe_work *w)
{
	rrxe_tx_flight_detach(w);
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
