// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of rrxe.ko: thin wrappers over static inlines and macros, and the kernel objects
 * that must be statically initialised (rdma_link_ops, notifier_block). Every decision is
 * taken on the Rust side; see rrxe_glue.h.
 */
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/if_arp.h>
#include <linux/if_ether.h>
#include <linux/etherdevice.h>
#include <net/addrconf.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>
#include <net/udp_tunnel.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/ib_umem.h>
#include <linux/highmem.h>
#include <linux/workqueue.h>
#include <linux/timer.h>
#include <linux/random.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/ipv6_stubs.h>
#include <net/route.h>
#include <linux/inetdevice.h>
#include <rdma/ib_cache.h>
#include <net/ip6_route.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include "rrxe_glue.h"

MODULE_ALIAS_RDMA_LINK("rrxe");

struct module *rrxe_glue_this_module(void)
{
	return THIS_MODULE;
}

static struct rdma_link_ops rrxe_link_ops = {
	.type = "rrxe",
	.newlink = rrxe_rs_newlink,
};

static int rrxe_netdev_notify(struct notifier_block *nb, unsigned long event, void *arg)
{
	rrxe_rs_netdev_event(event, netdev_notifier_info_to_dev(arg));
	return NOTIFY_OK;
}

static struct notifier_block rrxe_netdev_notifier = {
	.notifier_call = rrxe_netdev_notify,
};

static struct pernet_operations rrxe_net_ops;

/*
 * The receive path given to rrxe_glue_register(): set there, before any socket exists (the
 * sockets are opened by link add and netdev events, registered below), and never changed.
 */
static rrxe_rx_fn rrxe_rx, rrxe_rx_local;

int rrxe_glue_register(rrxe_rx_fn recv, rrxe_rx_fn recv_local)
{
	int err;

	rrxe_rx = recv;
	rrxe_rx_local = recv_local;
	err = register_pernet_subsys(&rrxe_net_ops);
	if (err)
		return err;
	err = register_netdevice_notifier(&rrxe_netdev_notifier);
	if (err) {
		unregister_pernet_subsys(&rrxe_net_ops);
		return err;
	}
	rdma_link_register(&rrxe_link_ops);
	return 0;
}

void rrxe_glue_unregister(void)
{
	rdma_link_unregister(&rrxe_link_ops);
}

/*
 * Called last on module exit, after every device is gone: no more netdev events, then every
 * namespace's sockets are closed (the pernet exit of each namespace).
 */
void rrxe_glue_unregister_notifier(void)
{
	unregister_netdevice_notifier(&rrxe_netdev_notifier);
	unregister_pernet_subsys(&rrxe_net_ops);
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

const char *rrxe_glue_ibdev_name(const struct ib_device *ibdev)
{
	return dev_name(&ibdev->dev);
}

void rrxe_glue_mark_name_assigned_by_user(struct ib_device *ibdev)
{
	ib_mark_name_assigned_by_user(ibdev);
}

/* --- sysfs: /sys/class/infiniband/<dev>/hca_type --- */

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

static struct attribute *rrxe_dev_attrs[] = {
	&dev_attr_hca_type.attr,
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

static const struct ib_device_ops rrxe_sysfs_ops = {
	.device_group = &rrxe_dev_attr_group,
	.disassociate_ucontext = rrxe_disassociate_ucontext,
};

/* Adds the device attributes above and disassociate_ucontext; call before ib_register_device(). */
void rrxe_glue_set_sysfs_ops(struct ib_device *ibdev)
{
	ib_set_device_ops(ibdev, &rrxe_sysfs_ops);
}

/* --- UDP tunnel sockets (RoCEv2, port 4791), one pair per network namespace --- */

static int rrxe_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	rrxe_rx(skb);
	return 0;
}

static struct socket *rrxe_udp_open(struct net *net, bool ipv6, u16 port, int *err)
{
	struct udp_port_cfg udp_cfg = {};
	struct udp_tunnel_sock_cfg tnl_cfg = {};
	struct socket *sock;

	udp_cfg.family = ipv6 ? AF_INET6 : AF_INET;
	udp_cfg.ipv6_v6only = ipv6;
	udp_cfg.local_udp_port = htons(port);
	*err = udp_sock_create(net, &udp_cfg, &sock);
	if (*err < 0)
		return NULL;
	tnl_cfg.encap_type = 1;
	tnl_cfg.encap_rcv = rrxe_udp_encap_recv;
	setup_udp_tunnel_sock(net, sock, &tnl_cfg);
	return sock;
}

/*
 * The sockets of one namespace (net_generic storage, zeroed by the core when the namespace
 * or the module appears). Kernel sockets do not hold their namespace: they are released by
 * the namespace's exit below, which runs after every netdev has left it.
 */
struct rrxe_net {
	struct socket *sock4;
	struct socket *sock6;	/* NULL while the namespace has no IPv6 */
};

static unsigned int rrxe_net_id;
/* Guards sock4/sock6 of every namespace; process context only (link add, netdev notifier, pernet exit). */
static DEFINE_MUTEX(rrxe_net_mutex);

/*
 * Opens whichever of ndev's namespace's sockets (IPv4, then IPv6) it does not have yet.
 * Returns 0, or a negative errno with *v6 telling which family failed. A namespace on its
 * way out (no reference can be taken any more) gets none: -ENODEV.
 */
int rrxe_glue_net_open(struct net_device *ndev, u16 port, bool *v6)
{
	struct net *net = maybe_get_net(dev_net(ndev));
	struct rrxe_net *rn;
	int err = 0;

	*v6 = false;
	if (!net)
		return -ENODEV;
	mutex_lock(&rrxe_net_mutex);
	rn = net_generic(net, rrxe_net_id);
	if (!rn->sock4)
		rn->sock4 = rrxe_udp_open(net, false, port, &err);
	if (!err && !rn->sock6) {
		*v6 = true;
		rn->sock6 = rrxe_udp_open(net, true, port, &err);
	}
	mutex_unlock(&rrxe_net_mutex);
	put_net(net);
	return err;
}

static void rrxe_net_exit(struct net *net)
{
	struct rrxe_net *rn = net_generic(net, rrxe_net_id);

	mutex_lock(&rrxe_net_mutex);
	if (rn->sock6)
		udp_tunnel_sock_release(rn->sock6);
	if (rn->sock4)
		udp_tunnel_sock_release(rn->sock4);
	rn->sock4 = NULL;
	rn->sock6 = NULL;
	mutex_unlock(&rrxe_net_mutex);
}

/*
 * A subsystem (not device) pernet: its exit runs after the namespace's netdevs are
 * unregistered or sent back to init_net, so no device of ours receives through it any more.
 */
static struct pernet_operations rrxe_net_ops = {
	.exit = rrxe_net_exit,
	.id = &rrxe_net_id,
	.size = sizeof(struct rrxe_net),
};

/*
 * ndev leaving its namespace: dev_change_net_namespace() sends NETDEV_UNREGISTER with
 * reg_state still NETREG_REGISTERED ("the device is just moving", as macvlan and 8021q
 * check), a real unregistration has it at NETREG_UNREGISTERING.
 */
bool rrxe_glue_netdev_moving(const struct net_device *ndev)
{
	return READ_ONCE(ndev->reg_state) == NETREG_REGISTERED;
}

/*
 * Exclusive mode: puts a device that is not registered yet into ndev's namespace for the
 * RDMA core (its rdma_net, init_net since ib_alloc_device): created inside a namespace, it
 * belongs there and is visible only there. In shared mode it stays in init_net, from where
 * the core shows it in every namespace (compat devices exist only outside init_net);
 * rdma_dev_access_netns() answers for the mode. The caller's netlink socket holds the
 * namespace for the whole `rdma link add`; once registered, the core moves the device back
 * to init_net when the namespace dies.
 */
void rrxe_glue_set_dev_net(struct ib_device *ibdev, const struct net_device *ndev)
{
	struct net *net = dev_net(ndev);

	if (!rdma_dev_access_netns(ibdev, net))
		write_pnet(&ibdev->coredev.rdma_net, net);
}

/* Whether ibdev's RDMA namespace is ndev's network namespace. */
bool rrxe_glue_dev_net_is_ndev(struct ib_device *ibdev, const struct net_device *ndev)
{
	return net_eq(read_pnet(&ibdev->coredev.rdma_net), dev_net(ndev));
}

/* Whether ibdev's RDMA namespace is init_net. */
bool rrxe_glue_dev_net_is_init(struct ib_device *ibdev)
{
	return net_eq(read_pnet(&ibdev->coredev.rdma_net), &init_net);
}

/* --- shared mode: devices above a device's netdev (macvlan, ipvlan, vlan in pods) --- */

static int rrxe_lower_match(struct net_device *lower, struct netdev_nested_priv *priv)
{
	struct ib_device **found = priv->data;
	struct ib_device *ibdev = ib_device_get_by_netdev(lower, RDMA_DRIVER_UNKNOWN);

	if (!ibdev)
		return 0;
	if (ibdev->ops.owner == THIS_MODULE) {
		*found = ibdev;
		return 1;
	}
	ib_device_put(ibdev);
	return 0;
}

/*
 * Our device on one of the devices below ndev (the eth0 of a pod's macvlan or ipvlan), with
 * a reference held for the caller; NULL if there is none.
 */
struct ib_device *rrxe_glue_ib_device_below(struct net_device *ndev)
{
	struct ib_device *found = NULL;
	struct netdev_nested_priv priv = { .data = &found };

	rcu_read_lock();
	netdev_walk_all_lower_dev_rcu(ndev, rrxe_lower_match, &priv);
	rcu_read_unlock();
	return found;
}

struct rrxe_upper_walk {
	struct net_device **out;
	u32 n, max;
};

static int rrxe_upper_collect(struct net_device *upper, struct netdev_nested_priv *priv)
{
	struct rrxe_upper_walk *w = priv->data;

	if (w->n >= w->max)
		return 1;
	dev_hold(upper);
	w->out[w->n++] = upper;
	return 0;
}

/*
 * Up to max devices above ndev (all levels), each with a reference held for the caller, in
 * out[]; returns how many.
 */
u32 rrxe_glue_upper_devs(struct net_device *ndev, struct net_device **out, u32 max)
{
	struct rrxe_upper_walk w = { .out = out, .max = max };
	struct netdev_nested_priv priv = { .data = &w };

	rcu_read_lock();
	netdev_walk_all_upper_dev_rcu(ndev, rrxe_upper_collect, &priv);
	rcu_read_unlock();
	return w.n;
}

/*
 * The netdev of GID index of ibdev's port 1, with a reference held for the caller, if the
 * entry still holds the source address addr (IPv4: 4 bytes, in a v4-mapped GID); NULL if it
 * is gone or changed. rdma_rxe's rxe_init_packet sends every packet through the netdev of
 * its source GID the same way: in shared mode that is a pod's macvlan or ipvlan, in the
 * pod's namespace.
 */
struct net_device *rrxe_glue_gid_netdev(struct ib_device *ibdev, u32 index, bool ipv6,
					const u8 *addr)
{
	const struct ib_gid_attr *attr = rdma_get_gid_attr(ibdev, 1, index);
	struct net_device *ndev = NULL;
	bool same;

	if (IS_ERR(attr))
		return NULL;
	if (ipv6)
		same = !memcmp(attr->gid.raw, addr, 16);
	else
		same = ipv6_addr_v4mapped((const struct in6_addr *)attr->gid.raw) &&
		       !memcmp(attr->gid.raw + 12, addr, 4);
	if (same) {
		rcu_read_lock();
		ndev = rdma_read_gid_attr_ndev_rcu(attr);
		if (IS_ERR(ndev))
			ndev = NULL;
		else
			dev_hold(ndev);
		rcu_read_unlock();
	}
	rdma_put_gid_attr(attr);
	return ndev;
}

/* --- sk_buff access --- */

struct net_device *rrxe_glue_skb_dev(const struct sk_buff *skb)
{
	return skb->dev;
}

int rrxe_glue_skb_linearize(struct sk_buff *skb)
{
	return skb_linearize(skb);
}

/*
 * The IP packet of a received, linearised skb: from the network header to the end of the
 * linear data, and the length of the network header (where the UDP header starts).
 */
const u8 *rrxe_glue_skb_ip_packet(const struct sk_buff *skb, u32 *len, u32 *l3_len)
{
	const u8 *nh = skb_network_header(skb);
	const u8 *th = skb_transport_header(skb);
	const u8 *tail = skb_tail_pointer(skb);

	if (!skb_transport_header_was_set(skb) || th < nh || tail < th)
		return NULL;
	*len = tail - nh;
	*l3_len = th - nh;
	return nh;
}

void rrxe_glue_kfree_skb(struct sk_buff *skb)
{
	kfree_skb(skb);
}

void rrxe_glue_consume_skb(struct sk_buff *skb)
{
	consume_skb(skb);
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

/* --- queue memory shared with userspace --- */

struct rrxe_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	void *vaddr;
	size_t size;
};

/*
 * Zeroed, user-mappable queue memory, charged to the caller's memory cgroup: what
 * vmalloc_user() gives, but with GFP_KERNEL_ACCOUNT pages, so a process that creates many
 * large queues pays for them (vmalloc_user() charges nobody). VM_MAP_PUT_PAGES hands the
 * pages and the array to the area: vfree() releases everything.
 *
 * __GFP_RETRY_MAYFAIL: the size is the caller's choice, so a ring that does not fit under the
 * group's memory.max (or in memory at all) fails with ENOMEM; without it the memcg charge
 * path invokes the OOM killer on the group and kills the caller instead of answering
 * (tests/user/accounting.c: exit 137 and oom_kill 1 before, ENOMEM after).
 */
void *rrxe_glue_vmalloc_user(size_t size)
{
	const gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN;
	unsigned long i, n = PAGE_ALIGN(size) >> PAGE_SHIFT;
	struct page **pages;
	void *va;

	if (!n)
		return NULL;
	pages = kvcalloc(n, sizeof(*pages), gfp);
	if (!pages)
		return NULL;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(gfp | __GFP_ZERO);
		if (!pages[i])
			goto err;
	}
	va = vmap(pages, n, VM_MAP | VM_USERMAP | VM_MAP_PUT_PAGES, PAGE_KERNEL);
	if (va)
		return va;
err:
	while (i--)
		__free_page(pages[i]);
	kvfree(pages);
	return NULL;
}

void rrxe_glue_vfree(void *addr)
{
	vfree(addr);
}

/*
 * Makes [vaddr, vaddr + size) mappable through the ucontext. On success the entry owns the
 * memory: it is freed by rrxe_glue_mmap_free once the entry is removed and unmapped.
 */
struct rrxe_mmap_entry *rrxe_glue_mmap_entry_insert(struct ib_ucontext *uctx, void *vaddr,
						    size_t size, u64 *offset, int *err)
{
	struct rrxe_mmap_entry *e = kzalloc(sizeof(*e), GFP_KERNEL);

	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	e->vaddr = vaddr;
	e->size = size;
	*err = rdma_user_mmap_entry_insert(uctx, &e->rdma, size);
	if (*err) {
		kfree(e);
		return NULL;
	}
	*offset = rdma_user_mmap_get_offset(&e->rdma);
	return e;
}

void rrxe_glue_mmap_entry_remove(struct rrxe_mmap_entry *e)
{
	rdma_user_mmap_entry_remove(&e->rdma);
}

int rrxe_glue_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *r = rdma_user_mmap_entry_get(uctx, vma);
	struct rrxe_mmap_entry *e;
	int err;

	if (!r)
		return -EINVAL;
	e = container_of(r, struct rrxe_mmap_entry, rdma);
	if (vma->vm_end - vma->vm_start > e->size)
		err = -EINVAL;
	else
		err = remap_vmalloc_range(vma, e->vaddr, 0);
	rdma_user_mmap_entry_put(r);
	return err;
}

void rrxe_glue_mmap_free(struct rdma_user_mmap_entry *r)
{
	struct rrxe_mmap_entry *e = container_of(r, struct rrxe_mmap_entry, rdma);

	vfree(e->vaddr);
	kfree(e);
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

/* --- memory regions --- */

struct ib_umem *rrxe_glue_umem_get(struct ib_device *dev, u64 start, u64 length, int access,
				   int *err)
{
	struct ib_umem *umem = ib_umem_get(dev, start, length, access);

	if (IS_ERR(umem)) {
		*err = PTR_ERR(umem);
		return NULL;
	}
	return umem;
}

void rrxe_glue_umem_release(struct ib_umem *umem)
{
	ib_umem_release(umem);
}

u64 rrxe_glue_umem_address(struct ib_umem *umem)
{
	return umem->address;
}

u32 rrxe_glue_umem_offset(struct ib_umem *umem)
{
	return ib_umem_offset(umem);
}

/* Fills pages[0..max) with the umem's pages in order; returns how many it has. */
size_t rrxe_glue_umem_pages(struct ib_umem *umem, struct page **pages, size_t max)
{
	struct sg_page_iter it;
	size_t n = 0;

	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (n < max)
			pages[n] = sg_page_iter_page(&it);
		n++;
	}
	return n;
}

/* Copies len bytes between buf and page at off (off + len <= PAGE_SIZE). */
void rrxe_glue_page_copy(struct page *page, u32 off, void *buf, u32 len, bool to_page)
{
	void *va;

	if (off >= PAGE_SIZE || len > PAGE_SIZE - off)
		return;
	va = kmap_local_page(page);
	if (to_page)
		memcpy(va + off, buf, len);
	else
		memcpy(buf, va + off, len);
	kunmap_local(va);
}

/*
 * Whether [addr, addr + len) is memory of the kernel's linear map, page by page: what a
 * kernel consumer's DMA address is on a virtual-DMA device (ib_dma_map_* hand out
 * page_address()). Checked before a DMA MR is accessed, so a wrong address (from a peer
 * using an unsafe global rkey, or a buggy consumer) fails the access instead of faulting.
 */
bool rrxe_glue_kva_valid(u64 addr, u64 len)
{
	u64 last, p;

	if (!len)
		return true;
	if (check_add_overflow(addr, len - 1, &last))
		return false;
	for (p = addr & PAGE_MASK; ; p += PAGE_SIZE) {
		if (!virt_addr_valid((void *)(uintptr_t)p))
			return false;
		if (p >= (last & PAGE_MASK))
			return true;
	}
}

/* The kernel address of page + off for an 8-byte atomic, mapped until unmap. */
u64 *rrxe_glue_page_map_u64(struct page *page, u32 off)
{
	if (off > PAGE_SIZE - 8 || (off & 7))
		return NULL;
	return kmap_local_page(page) + off;
}

void rrxe_glue_page_unmap(void *addr)
{
	kunmap_local(addr);
}

/* FRMR: records each page address of a mapped scatterlist through set_page. */
int rrxe_glue_sg_to_pages(struct ib_mr *mr, struct scatterlist *sg, int nents,
			  unsigned int *sg_offset, int (*set_page)(struct ib_mr *, u64))
{
	return ib_sg_to_pages(mr, sg, nents, sg_offset, set_page);
}

/* --- address vectors --- */

int rrxe_glue_ah_attr_to_av(const struct rdma_ah_attr *attr, struct rrxe_kav *av)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid_attr;
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
		memcpy(av->dip, grh->dgid.raw, 16);
	} else {
		/* IPv4-mapped GIDs: ::ffff:a.b.c.d */
		memcpy(av->sip, sgid_attr->gid.raw + 12, 4);
		memcpy(av->dip, grh->dgid.raw + 12, 4);
	}
	memcpy(av->dmac, attr->roce.dmac, ETH_ALEN);
	av->hop_limit = grh->hop_limit;
	av->flow_label = grh->flow_label;
	av->traffic_class = grh->traffic_class;
	av->sgid_index = grh->sgid_index;
	av->sl = rdma_ah_get_sl(attr);
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
	struct rrxe_timer *rt = from_timer(rt, t, timer);

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
 * The high-priority pool: a QP's work preempts the (often busy-polling) process that
 * woke it instead of waiting for that process's time slice to end.
 */
void rrxe_glue_work_queue(struct rrxe_work *w)
{
	queue_work(system_highpri_wq, &w->work);
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

void rrxe_glue_skb_smac(const struct sk_buff *skb, u8 *mac)
{
	if (skb_mac_header_was_set(skb) && skb_mac_header_len(skb) >= ETH_HLEN)
		memcpy(mac, eth_hdr(skb)->h_source, ETH_ALEN);
	else
		memset(mac, 0, ETH_ALEN);
}

/*
 * The device that owns the local address addr (IPv4: 4 bytes) in ndev's namespace, with a
 * reference held for the caller (NULL if the address is not local). For a packet one of our
 * QPs sends to an address of this host: it arrives at the device that owns the destination.
 */
struct net_device *rrxe_glue_local_addr_dev(struct net_device *ndev, bool ipv6, const u8 *addr)
{
	struct net *net = dev_net(ndev);
	struct net_device *dev = NULL;

	if (!ipv6) {
		__be32 a;

		memcpy(&a, addr, 4);
		return __ip_dev_find(net, a, true);
	}
#if IS_ENABLED(CONFIG_IPV6)
	rcu_read_lock();
	dev = ipv6_stub->ipv6_dev_find(net, (const struct in6_addr *)addr, NULL);
	if (IS_ERR(dev))
		dev = NULL;
	if (dev)
		dev_hold(dev);
	rcu_read_unlock();
#endif
	return dev;
}

/*
 * Whether gid is a RoCE v2 GID of ibdev's port 1 on ndev: the lookup rdma_rxe's
 * rxe_chk_dgid makes for every received packet.
 */
bool rrxe_glue_has_roce_gid(struct ib_device *ibdev, const u8 *gid, struct net_device *ndev)
{
	const struct ib_gid_attr *attr;

	attr = rdma_find_gid_by_port(ibdev, (const union ib_gid *)gid,
				     IB_GID_TYPE_ROCE_UDP_ENCAP, 1, ndev);
	if (IS_ERR(attr))
		return false;
	rdma_put_gid_attr(attr);
	return true;
}

/* Stops the timer for good (it cannot be re-armed) and frees it. */
void rrxe_glue_timer_free(struct rrxe_timer *t)
{
	timer_shutdown_sync(&t->timer);
	kfree(t);
}

/* --- transmit --- */

/*
 * An skb for an IP packet of ip_len bytes on ndev (headroom for the link layer); *data
 * points at the IP header the caller writes. NULL if no memory.
 */
struct sk_buff *rrxe_glue_tx_alloc(struct net_device *ndev, u32 ip_len, bool ipv6, u8 **data)
{
	struct sk_buff *skb = alloc_skb(LL_RESERVED_SPACE(ndev) + ip_len + ndev->needed_tailroom,
					GFP_ATOMIC);

	if (!skb)
		return NULL;
	skb_reserve(skb, LL_RESERVED_SPACE(ndev));
	skb_reset_network_header(skb);
	*data = skb_put(skb, ip_len);
	skb_set_transport_header(skb, ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr));
	skb->protocol = htons(ipv6 ? ETH_P_IPV6 : ETH_P_IP);
	skb->dev = ndev;
	skb->ip_summed = CHECKSUM_NONE;
	return skb;
}

/*
 * Routes and sends a fully built IP packet (headers and ICRC written by the caller).
 * Consumes the skb. Returns 0 or a negative errno (no route, ...).
 */
int rrxe_glue_tx_send(struct sk_buff *skb, bool ipv6, const u8 *sip, const u8 *dip)
{
	struct net_device *ndev = skb->dev;
	struct net *net = dev_net(ndev);
	struct dst_entry *dst;
	int ret;

	if (!ipv6) {
		struct flowi4 fl = {};
		struct rtable *rt;

		fl.flowi4_oif = ndev->ifindex;
		memcpy(&fl.saddr, sip, 4);
		memcpy(&fl.daddr, dip, 4);
		fl.flowi4_proto = IPPROTO_UDP;
		rt = ip_route_output_key(net, &fl);
		if (IS_ERR(rt)) {
			kfree_skb(skb);
			return PTR_ERR(rt);
		}
		dst = &rt->dst;
	} else {
#if IS_ENABLED(CONFIG_IPV6)
		struct flowi6 fl6 = {};

		fl6.flowi6_oif = ndev->ifindex;
		memcpy(&fl6.saddr, sip, 16);
		memcpy(&fl6.daddr, dip, 16);
		fl6.flowi6_proto = IPPROTO_UDP;
		dst = ipv6_stub->ipv6_dst_lookup_flow(net, NULL, &fl6, NULL);
		if (IS_ERR(dst)) {
			kfree_skb(skb);
			return PTR_ERR(dst);
		}
#else
		kfree_skb(skb);
		return -EAFNOSUPPORT;
#endif
	}
	if (dst->dev->flags & IFF_LOOPBACK) {
		/*
		 * Both ends on this host (the destination is one of our addresses): the packet
		 * goes straight to our receive path, as if it had arrived on the netdev. The IP
		 * layer would drop it there as a martian (a local source on a non-loopback
		 * device). Receive runs with bottom halves off, as in softirq.
		 */
		dst_release(dst);
		skb->pkt_type = PACKET_HOST;
		local_bh_disable();
		rrxe_rx_local(skb);
		local_bh_enable();
		return 0;
	}
	skb_dst_set(skb, dst);
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
	if (!ipv6)
		ret = ip_local_out(net, NULL, skb);
	else
		ret = ip6_local_out(net, NULL, skb);
	/* A positive NET_XMIT_DROP is a drop by the qdisc (full queue): report it. */
	ret = net_xmit_eval(ret);
	return ret > 0 ? -ENOBUFS : ret;
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

/* --- dma-buf memory regions (reg_user_mr_dmabuf) --- */
#include <linux/dma-buf.h>
#include <linux/iosys-map.h>

MODULE_IMPORT_NS(DMA_BUF);

/*
 * A dma-buf an MR is registered over (one reference), and the kernel mapping of the whole
 * buffer its accesses go through once rrxe_glue_dmabuf_vmap succeeded.
 */
struct rrxe_dmabuf {
	struct dma_buf *buf;
	struct iosys_map map;
};

/* Takes a reference on the dma-buf of fd: returns it and its size, or NULL with *err set. */
struct rrxe_dmabuf *rrxe_glue_dmabuf_get(int fd, u64 *size, int *err)
{
	struct rrxe_dmabuf *d = kzalloc(sizeof(*d), GFP_KERNEL);
	struct dma_buf *buf;

	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	buf = dma_buf_get(fd);
	if (IS_ERR(buf)) {
		kfree(d);
		*err = PTR_ERR(buf);
		return NULL;
	}
	d->buf = buf;
	*size = buf->size;
	return d;
}

/*
 * Maps the whole buffer into the kernel for CPU access (the exporter keeps its backing in
 * place while the mapping exists). Returns the address, or NULL with *err set:
 * -EOPNOTSUPP for an exporter without vmap or one whose mapping is I/O memory (which plain
 * loads and stores may not touch). At most one mapping per rrxe_dmabuf.
 */
void *rrxe_glue_dmabuf_vmap(struct rrxe_dmabuf *d, int *err)
{
	int ret;

	if (!iosys_map_is_null(&d->map)) {
		*err = -EINVAL;
		return NULL;
	}
	if (!d->buf->ops->vmap) {
		pr_warn_once("rrxe: dma-buf exporter %s has no vmap: its buffers cannot back an MR\n",
			     d->buf->exp_name);
		*err = -EOPNOTSUPP;
		return NULL;
	}
	ret = dma_buf_vmap_unlocked(d->buf, &d->map);
	if (ret) {
		iosys_map_clear(&d->map);
		*err = ret;
		return NULL;
	}
	if (d->map.is_iomem) {
		dma_buf_vunmap_unlocked(d->buf, &d->map);
		iosys_map_clear(&d->map);
		pr_warn_once("rrxe: dma-buf exporter %s maps I/O memory: its buffers cannot back an MR\n",
			     d->buf->exp_name);
		*err = -EOPNOTSUPP;
		return NULL;
	}
	return d->map.vaddr;
}

/* Unmaps (if mapped) and drops the reference. Process context. */
void rrxe_glue_dmabuf_release(struct rrxe_dmabuf *d)
{
	if (!iosys_map_is_null(&d->map))
		dma_buf_vunmap_unlocked(d->buf, &d->map);
	dma_buf_put(d->buf);
	kfree(d);
}
