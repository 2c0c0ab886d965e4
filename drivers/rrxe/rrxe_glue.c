// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of rrxe.ko: thin wrappers over static inlines and macros, and the kernel objects
 * that must be statically initialised. Every decision is taken on the Rust side; see
 * rrxe_glue.h. By concept: this file (device, udata, sysfs, counters, locks, address vectors,
 * events), rrxe_glue_net.c, rrxe_glue_mem.c, rrxe_glue_task.c.
 */
#include "rrxe_glue_int.h"

MODULE_ALIAS_RDMA_LINK("rrxe");
MODULE_AUTHOR("rrxe developers");
MODULE_VERSION(RRXE_VERSION);

/*
 * A new ib_device of size bytes, zeroed but for the core's own initialisation. Its struct
 * device gets a 64-bit DMA mask: it is the device rrxe attaches to dma-bufs with, and an
 * exporter may DMA-map its pages for that device (rrxe_glue_mem.c, struct rrxe_dmabuf). The
 * mask changes nothing else: the core's DMA for rrxe is virtual (no dma_device).
 */
struct ib_device *rrxe_glue_alloc_device(size_t size)
{
	struct ib_device *ibdev = rrxe_ib_alloc_device(size);

	/* Cannot fail on a device without DMA ops (dma-direct supports a 64-bit mask). */
	if (ibdev)
		WARN_ON_ONCE(dma_coerce_mask_and_coherent(&ibdev->dev, DMA_BIT_MASK(64)));
	return ibdev;
}

/*
 * ib_register_device with no DMA device (the core then uses virtual DMA, as for every
 * software device). The core refuses a name in use with -ENFILE (its answer for a full
 * "%d" pattern too): a name without a pattern was taken, -EEXIST, as the early check
 * (rrxe_glue_ib_device_name_exists) answers where the tree allows it.
 */
int rrxe_glue_register_device(struct ib_device *ibdev, const char *name)
{
	int err = ib_register_device(ibdev, name, NULL);

	if (err == -ENFILE && !strchr(name, '%'))
		err = -EEXIST;
	return err;
}

/*
 * Whether an RDMA device is called name now (an early, clearly logged refusal at link
 * add). A tree without ib_device_get_by_name answers false: its ib_register_device still
 * refuses a name in use (with -ENFILE, which the Rust glue turns into -EEXIST).
 */
bool rrxe_glue_ib_device_name_exists(const char *name)
{
#ifdef RRXE_HAVE_IB_DEVICE_GET_BY_NAME
	struct ib_device *dev = ib_device_get_by_name(name, RDMA_DRIVER_UNKNOWN);

	if (!dev)
		return false;
	ib_device_put(dev);
	return true;
#else
	return false;
#endif
}

struct module *rrxe_glue_this_module(void)
{
	return THIS_MODULE;
}

bool rrxe_glue_netdev_is_ether(const struct net_device *ndev)
{
	return ndev->type == ARPHRD_ETHER && !(ndev->flags & IFF_LOOPBACK);
}

bool rrxe_glue_netdev_oper_up(const struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev);
}

unsigned int rrxe_glue_netdev_mtu(const struct net_device *ndev)
{
	return READ_ONCE(ndev->mtu);
}

/*
 * How many packets ndev's transmit queues hold. A queue's packets are its skbs or, if more,
 * its bytes in full-sized packets: one skb may carry a chain of packets
 * (rrxe_glue_tx_chain). A root qdisc that is not multiqueue (netem, prio, htb, tbf; not mq
 * or mqprio) is the qdisc of every transmit queue: it is counted once, not once per queue.
 * An mq root gives each queue a child of its own: those are added up.
 */
static unsigned int rrxe_glue_netdev_tx_queued(struct net_device *ndev)
{
	unsigned int mtu = max(READ_ONCE(ndev->mtu), 68U), queued = 0, i;
	struct Qdisc *prev = NULL;

	rcu_read_lock_bh();
	for (i = 0; i < ndev->real_num_tx_queues; i++) {
		struct Qdisc *q = rcu_dereference_bh(netdev_get_tx_queue(ndev, i)->qdisc);
		__u32 qlen, backlog;

		/* A shared root is the same pointer on every queue, so on consecutive ones. */
		if (!q || q == prev)
			continue;
		prev = q;
		qdisc_qstats_qlen_backlog(q, &qlen, &backlog);
		queued += max(qlen, backlog / mtu);
	}
	rcu_read_unlock_bh();
	return queued;
}

/*
 * How many more packets ndev's transmit queues should be given now: they count as full at
 * half of tx_queue_len (beyond tx_queue_len a qdisc drops what it is given). A device
 * without a queue length has room for all.
 */
unsigned int rrxe_glue_netdev_tx_room(struct net_device *ndev)
{
	unsigned int limit = READ_ONCE(ndev->tx_queue_len) / 2, queued;

	if (!limit)
		return UINT_MAX;
	queued = rrxe_glue_netdev_tx_queued(ndev);
	return queued < limit ? limit - queued : 0;
}

/*
 * The text of debugfs rrxe/<dev>/tx_room: the device's netdev, what its queues hold and
 * the room a QP's run sees, as rrxe_glue_netdev_tx_room counts them. Returns its length.
 */
size_t rrxe_glue_netdev_tx_show(struct ib_device *ib, char *buf, size_t len)
{
	struct net_device *ndev = ib_device_get_netdev(ib, 1);
	unsigned int limit, queued;
	int n;

	if (!ndev)
		return scnprintf(buf, len, "netdev none\n");
	limit = READ_ONCE(ndev->tx_queue_len) / 2;
	queued = rrxe_glue_netdev_tx_queued(ndev);
	if (limit)
		n = scnprintf(buf, len, "netdev %s\nqueues %u\nqueued %u\nlimit %u\nroom %u\n",
			      netdev_name(ndev), ndev->real_num_tx_queues, queued, limit,
			      queued < limit ? limit - queued : 0);
	else
		n = scnprintf(buf, len, "netdev %s\nqueues %u\nqueued %u\nlimit none\nroom all\n",
			      netdev_name(ndev), ndev->real_num_tx_queues, queued);
	dev_put(ndev);
	return n;
}

void rrxe_glue_netdev_eui64(const struct net_device *ndev, u8 *guid)
{
	addrconf_addr_eui48(guid, ndev->dev_addr);
}

const char *rrxe_glue_netdev_name(const struct net_device *ndev)
{
	return netdev_name(ndev);
}

void rrxe_glue_netdev_put(struct net_device *ndev)
{
	dev_put(ndev);
}

void rrxe_glue_netdev_hold(struct net_device *ndev)
{
	dev_hold(ndev);
}

u32 rrxe_glue_random_u32(void)
{
	return get_random_u32();
}

void rrxe_glue_synchronize_rcu(void)
{
	synchronize_rcu();
}

void rrxe_glue_ib_get_device(struct ib_device *ibdev)
{
	get_device(&ibdev->dev);
}

void rrxe_glue_ib_put_device(struct ib_device *ibdev)
{
	put_device(&ibdev->dev);
}

void rrxe_glue_port_event(struct ib_device *ibdev, u32 port, int event)
{
	struct ib_event ev = {
		.device = ibdev,
		.element.port_num = port,
		.event = event,
	};

	ib_dispatch_event(&ev);
}

void rrxe_glue_set_node_desc(struct ib_device *ibdev, const char *desc)
{
	strscpy(ibdev->node_desc, desc, sizeof(ibdev->node_desc));
}

size_t rrxe_glue_udata_inlen(const struct ib_udata *udata)
{
	return udata ? udata->inlen : 0;
}

size_t rrxe_glue_udata_outlen(const struct ib_udata *udata)
{
	return udata ? udata->outlen : 0;
}

int rrxe_glue_copy_to_udata(struct ib_udata *udata, const void *src, size_t len)
{
	if (!udata)
		return 0;
	return ib_copy_to_udata(udata, (void *)src, min(len, udata->outlen));
}

int rrxe_glue_copy_from_udata(void *dst, struct ib_udata *udata, size_t len)
{
	if (!udata)
		return -EINVAL;
	return ib_copy_from_udata(dst, udata, min(len, udata->inlen));
}

/*
 * A response at an address the command named (modify_srq has no driver output buffer;
 * rdma_rxe answers its resize the same way, through mmap_info_addr).
 */
int rrxe_glue_copy_to_user_addr(u64 addr, const void *src, size_t len)
{
	return copy_to_user(u64_to_user_ptr(addr), src, len) ? -EFAULT : 0;
}

/*
 * The device's name: ib_device::name, which a rename rewrites in place (strscpy under the
 * core's devices_rwsem), never freed while the device lives; not dev_name(), the kobject's
 * name, which a rename frees at once (kobject_rename) under a lock rrxe's paths do not take.
 */
const char *rrxe_glue_ibdev_name(const struct ib_device *ibdev)
{
	return ibdev->name;
}

void rrxe_glue_mark_name_assigned_by_user(struct ib_device *ibdev)
{
	ib_mark_name_assigned_by_user(ibdev);
}

/* --- sysfs: /sys/class/infiniband/<dev>/hca_type and parent --- */

/*
 * "rrxe", whatever the device is called: librrxe's match_device reads it, so the provider
 * binds to rrxe devices by what they are and not by their name (`rdma link add NAME`,
 * `rdma dev set OLD name NEW`). The attribute is named like mlx4/mlx5's hca_type and added
 * the same way, through ib_device_ops.device_group.
 */
static ssize_t hca_type_show(struct device *device, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "rrxe\n");
}
static DEVICE_ATTR_RO(hca_type);

/*
 * /sys/class/infiniband/<dev>/parent: the name of the device's netdev, as rdma_rxe's
 * attribute of that name (rxe_verbs.c), which scripts read to pair a software RoCE device
 * with its netdev (sysfs has no `device` link for it: the device is virtual, as rdma_rxe's).
 * The netdev is held while its name is printed (rdma_rxe drops it first); while the device
 * has no netdev the read fails with ENODEV, where rdma_rxe prints "(null)".
 */
static ssize_t parent_show(struct device *device, struct device_attribute *attr, char *buf)
{
	struct net_device *ndev = ib_device_get_netdev(rdma_device_to_ibdev(device), 1);
	ssize_t len;

	if (!ndev)
		return -ENODEV;
	len = sysfs_emit(buf, "%s\n", netdev_name(ndev));
	dev_put(ndev);
	return len;
}
static DEVICE_ATTR_RO(parent);

static struct attribute *rrxe_dev_attrs[] = {
	&dev_attr_hca_type.attr,
	&dev_attr_parent.attr,
	NULL,
};

static const struct attribute_group rrxe_dev_attr_group = {
	.attrs = rrxe_dev_attrs,
};

/*
 * Nothing to undo when the core disassociates a user context (device unregistered, or moved
 * to another namespace in exclusive mode, while a process has it open): the core destroys
 * the context's objects through our destroy ops, and the queue memory the process mapped
 * (vmalloc pages inserted by remap_vmalloc_range, each holding a page reference, no vm_ops
 * of ours) stays valid, orphaned, until it unmaps it. Having the op is what lets the core
 * do both without waiting for the process to exit; its next verb fails with EIO and it gets
 * IB_EVENT_DEVICE_FATAL.
 */
static void rrxe_disassociate_ucontext(struct ib_ucontext *uctx)
{
}

/* RRXE_VERSION ("major.minor.patch") as major << 32 | minor << 16 | patch. */
u64 rrxe_glue_module_version_raw(void)
{
	unsigned int v[3] = {};

	if (sscanf(RRXE_VERSION, "%u.%u.%u", &v[0], &v[1], &v[2]) < 1)
		return 0;
	return (u64)(v[0] & 0xffff) << 32 | (u64)(v[1] & 0xffff) << 16 | (v[2] & 0xffff);
}

/* The "firmware" version in sysfs (fw_ver): the module's version. */
static void rrxe_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	strscpy(str, RRXE_VERSION, IB_FW_VERSION_NAME_MAX);
}

static const struct ib_device_ops rrxe_sysfs_ops = {
	.device_group = &rrxe_dev_attr_group,
	.disassociate_ucontext = rrxe_disassociate_ucontext,
	.get_dev_fw_str = rrxe_get_dev_fw_str,
};

/* Adds the device attributes above and disassociate_ucontext; call before ib_register_device(). */
void rrxe_glue_set_sysfs_ops(struct ib_device *ibdev)
{
	ib_set_device_ops(ibdev, &rrxe_sysfs_ops);
}

/* --- hardware counters (rdma statistic) --- */

struct rdma_hw_stats *rrxe_glue_alloc_hw_stats(const struct rdma_stat_desc *descs, int num)
{
	return rdma_alloc_hw_stats_struct(descs, num, RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

void rrxe_glue_hw_stats_set(struct rdma_hw_stats *stats, int index, u64 value)
{
	if (index >= 0 && index < stats->num_counters)
		stats->value[index] = value;
}

/* Hides counter index from a stats structure's readers (`rdma statistic qp` skips it). */
void rrxe_glue_hw_stats_hide(struct rdma_hw_stats *stats, int index)
{
	if (index >= 0 && index < stats->num_counters)
		set_bit(index, stats->is_disabled);
}

/* --- per-QP counters: the core's struct rdma_counter --- */

struct ib_device *rrxe_glue_counter_device(const struct rdma_counter *counter)
{
	return counter->device;
}

u32 rrxe_glue_counter_id(const struct rdma_counter *counter)
{
	return counter->id;
}

void rrxe_glue_counter_set_id(struct rdma_counter *counter, u32 id)
{
	counter->id = id;
}

/* Adds delta to the counter's value at index (its stats are allocated before any bind). */
void rrxe_glue_counter_add(struct rdma_counter *counter, int index, u64 delta)
{
	struct rdma_hw_stats *stats = counter->stats;

	if (stats && index >= 0 && index < stats->num_counters)
		stats->value[index] += delta;
}

/* The counter a QP is bound to (NULL if none); the driver sets it in bind and unbind. */
struct rdma_counter *rrxe_glue_qp_counter(const struct ib_qp *qp)
{
	return qp->counter;
}

void rrxe_glue_qp_set_counter(struct ib_qp *qp, struct rdma_counter *counter)
{
	qp->counter = counter;
}

/* --- driver attributes of restrack entries (rdma resource show -dd) --- */

/* Opens the RDMA_NLDEV_ATTR_DRIVER nest the rdma_nl_put_driver_* helpers fill. */
struct nlattr *rrxe_glue_nl_driver_begin(struct sk_buff *msg)
{
	return nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
}

void rrxe_glue_nl_driver_end(struct sk_buff *msg, struct nlattr *nest)
{
	nla_nest_end(msg, nest);
}

void rrxe_glue_nl_driver_cancel(struct sk_buff *msg, struct nlattr *nest)
{
	nla_nest_cancel(msg, nest);
}

/* --- locking: spin_lock_irqsave is a macro --- */

unsigned long rrxe_glue_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void rrxe_glue_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}

void rrxe_glue_spin_lock_bh(spinlock_t *lock)
{
	spin_lock_bh(lock);
}

void rrxe_glue_spin_unlock_bh(spinlock_t *lock)
{
	spin_unlock_bh(lock);
}

/* spin_trylock_irqsave: true with *flags saved and the lock held, or false (IRQs as before). */
bool rrxe_glue_spin_trylock_irqsave(spinlock_t *lock, unsigned long *flags)
{
	return spin_trylock_irqsave(lock, *flags);
}

bool rrxe_glue_spin_trylock_bh(spinlock_t *lock)
{
	return spin_trylock_bh(lock);
}

/* A lockdep assertion that lock is held (nothing without lockdep). */
void rrxe_glue_spin_assert_held(spinlock_t *lock)
{
	lockdep_assert_held(lock);
}

/* The monotonic clock, in ns (any context but NMI). */
u64 rrxe_glue_ktime_get_ns(void)
{
	return ktime_get_ns();
}

struct ib_ucontext *rrxe_glue_udata_ucontext(struct ib_udata *udata)
{
	if (!udata)
		return NULL;
	return container_of(udata, struct uverbs_attr_bundle, driver_udata)->context;
}

struct ib_udata *rrxe_glue_attrs_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

void rrxe_glue_cq_event(struct ib_cq *cq, int event)
{
	struct ib_event ev = {
		.device = cq->device,
		.element.cq = cq,
		.event = event,
	};

	if (cq->event_handler)
		cq->event_handler(&ev, cq->cq_context);
}

void rrxe_glue_cq_comp(struct ib_cq *cq)
{
	if (cq->comp_handler)
		cq->comp_handler(cq, cq->cq_context);
}

/*
 * A CQ's completion vector: the CPU its completion handler runs on, as a NIC's interrupt
 * of that vector would run it (kernel ULPs spread their CQs over the vectors to spread the
 * handlers over the CPUs). Vector v is the v-th CPU of cpumask_local_spread, fixed when the
 * CQ is made; the device has one vector per online CPU at its registration.
 */
struct rrxe_cq_vec {
	struct work_struct work;	/* runs the handler on cpu; one pending at most */
	struct ib_cq *cq;
	unsigned int cpu;
};

static void rrxe_cq_vec_work(struct work_struct *w)
{
	struct rrxe_cq_vec *v = container_of(w, struct rrxe_cq_vec, work);

	rrxe_glue_cq_comp(v->cq);
}

struct rrxe_cq_vec *rrxe_glue_cq_vec_new(struct ib_cq *cq, u32 vector)
{
	struct rrxe_cq_vec *v = kzalloc(sizeof(*v), GFP_KERNEL);

	if (!v)
		return NULL;
	INIT_WORK(&v->work, rrxe_cq_vec_work);
	v->cq = cq;
	v->cpu = cpumask_local_spread(vector, NUMA_NO_NODE);
	return v;
}

/*
 * The CQ's handler, now if this code runs on the vector's CPU (the only case with one
 * CPU), else from a work item queued on that CPU (a CPU gone offline since runs it on
 * another: queue_work_on's kernel-doc). An event that finds the work still queued merges
 * with it: the handler means "look at the CQ", and the consumer re-arms after it looked.
 * Preemption is off around the direct call so that the check stays true during it; the
 * handlers of the core (ib_cq's softirq and workqueue modes) and of uverbs only queue work
 * or take spinlocks, as they do when a NIC's interrupt calls them.
 */
void rrxe_glue_cq_vec_comp(struct rrxe_cq_vec *v)
{
	if (get_cpu() == v->cpu) {
		rrxe_glue_cq_comp(v->cq);
		put_cpu();
		return;
	}
	put_cpu();
	queue_work_on(v->cpu, system_highpri_wq, &v->work);
}

/* Waits until a queued handler call has run (process context). */
void rrxe_glue_cq_vec_flush(struct rrxe_cq_vec *v)
{
	flush_work(&v->work);
}

/*
 * At the CQ's destruction (no QP uses it any more, the core saw to it): a queued handler
 * call is dropped, a running one waited for.
 */
void rrxe_glue_cq_vec_free(struct rrxe_cq_vec *v)
{
	cancel_work_sync(&v->work);
	kfree(v);
}

u32 rrxe_glue_num_online_cpus(void)
{
	return num_online_cpus();
}

/* --- address vectors --- */

int rrxe_glue_ah_attr_to_av(const struct rdma_ah_attr *attr, struct rrxe_kav *av)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid_attr;
	struct net_device *ndev;
	int type;

	memset(av, 0, sizeof(*av));
	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE || !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(attr);
	sgid_attr = grh->sgid_attr;
	if (!sgid_attr)
		return -EINVAL;
	type = rdma_gid_attr_network_type(sgid_attr);
	if (type != RDMA_NETWORK_IPV4 && type != RDMA_NETWORK_IPV6)
		return -EINVAL;
	av->ipv6 = type == RDMA_NETWORK_IPV6;
	memcpy(av->dgid, grh->dgid.raw, 16);
	if (av->ipv6) {
		memcpy(av->sip, sgid_attr->gid.raw, 16);
	} else {
		/* IPv4-mapped GIDs: ::ffff:a.b.c.d */
		memcpy(av->sip, sgid_attr->gid.raw + 12, 4);
	}
	memcpy(av->dmac, attr->roce.dmac, ETH_ALEN);
	av->hop_limit = grh->hop_limit;
	av->flow_label = grh->flow_label;
	av->traffic_class = grh->traffic_class;
	av->sgid_index = grh->sgid_index;
	av->sl = rdma_ah_get_sl(attr);
	/*
	 * The source GID's netdev (in shared mode a pod's macvlan or ipvlan, in the pod's
	 * namespace), as the core reads it: a GID deleted since the core resolved it gives
	 * EINVAL, one without a netdev ENODEV (rdma_read_gid_attr_ndev_rcu).
	 */
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(sgid_attr);
	if (IS_ERR(ndev)) {
		rcu_read_unlock();
		return PTR_ERR(ndev);
	}
	av->src = rrxe_glue_ndev_id(ndev);
	rcu_read_unlock();
	return 0;
}

void rrxe_glue_av_to_ah_attr(const struct rrxe_kav *av, struct rdma_ah_attr *attr)
{
	union ib_gid dgid;

	memcpy(dgid.raw, av->dgid, sizeof(dgid.raw));
	memset(attr, 0, sizeof(*attr));
	attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_grh(attr, &dgid, av->flow_label, av->sgid_index, av->hop_limit,
			av->traffic_class);
	rdma_ah_set_sl(attr, av->sl);
	rdma_ah_set_port_num(attr, 1);
	memcpy(attr->roce.dmac, av->dmac, ETH_ALEN);
}

/* --- queue pairs --- */

void rrxe_glue_decode_send_wr(const struct ib_send_wr *wr, struct rrxe_kwr *out)
{
	memset(out, 0, sizeof(*out));
	out->wr_id = wr->wr_id;
	out->sg_list = wr->sg_list;
	out->num_sge = wr->num_sge < 0 ? 0 : wr->num_sge;
	out->opcode = wr->opcode;
	out->send_flags = wr->send_flags;
	out->ex = wr->ex.invalidate_rkey;
	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
	case IB_WR_RDMA_READ_WITH_INV:
		out->remote_addr = rdma_wr(wr)->remote_addr;
		out->rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		out->remote_addr = atomic_wr(wr)->remote_addr;
		out->compare_add = atomic_wr(wr)->compare_add;
		out->swap = atomic_wr(wr)->swap;
		out->rkey = atomic_wr(wr)->rkey;
		break;
	case IB_WR_REG_MR:
		out->reg_mr = reg_wr(wr)->mr;
		out->reg_key = reg_wr(wr)->key;
		out->reg_access = reg_wr(wr)->access;
		break;
	default:
		break;
	}
}

/* UD fields live in struct ib_ud_wr: only valid for UD/GSI QPs. */
void rrxe_glue_decode_ud_wr(const struct ib_send_wr *wr, struct rrxe_kwr *out)
{
	out->ah = ud_wr(wr)->ah;
	out->remote_qpn = ud_wr(wr)->remote_qpn;
	out->remote_qkey = ud_wr(wr)->remote_qkey;
}

/*
 * An affiliated asynchronous event of a QP, to the handler the core installed (its own,
 * which completes ib_drain_qp's wait for Last WQE Reached and calls the consumer's; uverbs'
 * for a user QP; the shared-QP one for an XRC target). Any context: those handlers take
 * only interrupt-safe locks, as hardware drivers call them from interrupts.
 */
void rrxe_glue_qp_event(struct ib_qp *qp, int event)
{
	struct ib_event ev = {
		.device = qp->device,
		.element.qp = qp,
		.event = event,
	};

	if (qp->event_handler)
		qp->event_handler(&ev, qp->qp_context);
}

void rrxe_glue_srq_event(struct ib_srq *srq, int event)
{
	struct ib_event ev = {
		.device = srq->device,
		.element.srq = srq,
		.event = event,
	};

	if (srq->event_handler)
		srq->event_handler(&ev, srq->srq_context);
}

/*
 * Error-path diagnostics: dynamic debug (enable with
 * echo 'module rrxe +p' > /sys/kernel/debug/dynamic_debug/control), rate-limited.
 */
void rrxe_glue_dbg(const char *dev, const char *what, u64 a, u64 b)
{
	net_dbg_ratelimited("rrxe %s: %s (%llx, %llx)\n", dev, what, a, b);
}
