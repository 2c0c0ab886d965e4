// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of rrxe.ko, networking: the link type and netdev notifier registration, the
 * RoCEv2 UDP sockets of each network namespace, the devices above a netdev (shared mode),
 * skb access and transmit. See rrxe_glue.h.
 */
#include "rrxe_glue_int.h"

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
	rrxe_setup_udp_tunnel_sock(net, sock, &tnl_cfg);
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
		rrxe_udp_tunnel_sock_release(rn->sock6);
	if (rn->sock4)
		rrxe_udp_tunnel_sock_release(rn->sock4);
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

/* ndev's identity: its namespace's cookie and its ifindex (struct rrxe_ndev_id). */
struct rrxe_ndev_id rrxe_glue_ndev_id(const struct net_device *ndev)
{
	u64 cookie = dev_net(ndev)->net_cookie;
	struct rrxe_ndev_id id = {
		.net_lo = lower_32_bits(cookie),
		.net_hi = upper_32_bits(cookie),
		.ifindex = ndev->ifindex,
	};

	return id;
}

/*
 * The cookie of the calling task's network namespace (a system call's: the verbs of a
 * user process). False for a task without namespaces (exiting).
 */
bool rrxe_glue_current_net(u64 *cookie)
{
	struct nsproxy *ns = current->nsproxy;

	if (!ns)
		return false;
	*cookie = ns->net_ns->net_cookie;
	return true;
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
 * The netdev of ibdev's port 1 (NULL without one), without a reference, for a caller inside
 * an RCU read-side section, which keeps it live: the core publishes the pointer with
 * rcu_assign_pointer (ib_device_set_netdev) and frees a netdev only after a grace period
 * that follows its unregistration. ib_device_get_netdev reads the same pointer under
 * pdata->netdev_lock, a spinlock it takes with bottom halves on, so it may not be called
 * in softirq context, where the receive path's runs are.
 */
struct net_device *rrxe_glue_ibdev_netdev_rcu(struct ib_device *ibdev)
{
	if (!ibdev->port_data)
		return NULL;
	return rcu_dereference(ibdev->port_data[1].netdev);
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

/*
 * An RCU read-side section for Rust (rcu_read_lock and rcu_read_unlock are inlines): a
 * transmit that uses a source netdev kept without a reference runs inside one (see
 * IbDev::with_gid_netdev in glue/net.rs).
 */
void rrxe_glue_rcu_read_lock(void)
{
	rcu_read_lock();
}

void rrxe_glue_rcu_read_unlock(void)
{
	rcu_read_unlock();
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

/*
 * The length of a received packet's IP datagram (IP header to the end), linear or not:
 * rdma_rxe's count of received bytes (skb->len - skb_network_offset(skb) in rxe_rcv).
 * Handed to us at the UDP header (the network offset is negative) or, from this host, at
 * the IP header.
 */
u32 rrxe_glue_skb_ip_len(const struct sk_buff *skb)
{
	s64 len = (s64)skb->len - skb_network_offset(skb);

	return clamp_t(s64, len, 0, U32_MAX);
}

void rrxe_glue_kfree_skb(struct sk_buff *skb)
{
	kfree_skb(skb);
}

void rrxe_glue_consume_skb(struct sk_buff *skb)
{
	consume_skb(skb);
}

/*
 * A clone of a received skb for one more QP of a multicast group (the data is shared and
 * only read), or NULL without memory. Receive path: atomic.
 */
struct sk_buff *rrxe_glue_skb_clone(struct sk_buff *skb)
{
	return skb_clone(skb, GFP_ATOMIC);
}

/* --- multicast groups of a netdev --- */

/*
 * Joins ndev to the IP multicast group of mgid (an IPv4-mapped 224.0.0.0/4 address or an
 * IPv6 ff00::/8 one), the way rdma_cm joins the IPv4 group of a RoCE v2 multicast id
 * (cma_igmp_send): a membership of the device, counted by the kernel, not of a socket. It
 * sends the IGMP or MLD report, and programs the netdev's multicast MAC filter (dev_mc_add
 * of 01:00:5e:.. or 33:33:..), so the group's datagrams reach the IP layer, which then
 * delivers them to the RoCE v2 UDP sockets. rdma_rxe adds only the MAC (dev_mc_add of the
 * IPv6 mapping of every GID) and joins no IP group. Process context (it sleeps).
 */
int rrxe_glue_mc_join(struct net_device *ndev, const u8 *mgid)
{
	const struct in6_addr *a = (const struct in6_addr *)mgid;
	struct in_device *in_dev;

	if (ipv6_addr_v4mapped(a)) {
		rtnl_lock();
		in_dev = __in_dev_get_rtnl(ndev);
		if (in_dev)
			ip_mc_inc_group(in_dev, a->s6_addr32[3]);
		rtnl_unlock();
		return in_dev ? 0 : -ENODEV;
	}
#if IS_ENABLED(CONFIG_IPV6)
	return ipv6_dev_mc_inc(ndev, a);
#else
	return -EAFNOSUPPORT;
#endif
}

/* Leaves what rrxe_glue_mc_join joined (one membership of the device's count). */
void rrxe_glue_mc_leave(struct net_device *ndev, const u8 *mgid)
{
	const struct in6_addr *a = (const struct in6_addr *)mgid;
	struct in_device *in_dev;

	if (ipv6_addr_v4mapped(a)) {
		rtnl_lock();
		in_dev = __in_dev_get_rtnl(ndev);
		if (in_dev)
			ip_mc_dec_group(in_dev, a->s6_addr32[3]);
		rtnl_unlock();
		return;
	}
#if IS_ENABLED(CONFIG_IPV6)
	ipv6_dev_mc_dec(ndev, a);
#endif
}

/*
 * Drops what a received skb holds of the network stack beyond its data: its route and its
 * conntrack entry (a packet kept for long would keep its namespace's conntrack from being
 * emptied when the namespace goes).
 */
void rrxe_glue_skb_release_refs(struct sk_buff *skb)
{
	skb_dst_drop(skb);
	nf_reset_ct(skb);
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
	dev = rrxe_ipv6_dev_find(net, (const struct in6_addr *)addr);
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

/* --- transmit --- */

/*
 * An skb for an IP packet of ip_len bytes on ndev (headroom for the link layer); *data
 * points at the IP header the caller writes. NULL if no memory.
 *
 * netdev_alloc_skb: from about 320 bytes up to a page, the data comes from this CPU's
 * page-fragment cache (a pointer bump; freeing drops a page reference), as for drivers'
 * receive buffers; smaller and larger ones from kmalloc. rdma_rxe uses alloc_skb, whose
 * kmalloc-2k data took the slab's slow path about once per slab of 16 objects
 * (__slab_alloc_node was 3.6 % of the sending VM). __GFP_NOMEMALLOC: netdev_alloc_skb adds
 * __GFP_MEMALLOC while swap over the network is set up, reserves meant for receiving swap
 * traffic, not for our transmits (alloc_skb would not touch them either). A kept skb keeps
 * its fragment's whole page (32 KiB) alive: a QP's receive backlog (RX_RING skbs) of local
 * packets can hold that many pages.
 */
struct sk_buff *rrxe_glue_tx_alloc(struct net_device *ndev, u32 ip_len, bool ipv6, u8 **data)
{
	struct sk_buff *skb = __netdev_alloc_skb(ndev, LL_RESERVED_SPACE(ndev) + ip_len +
						 ndev->needed_tailroom,
						 GFP_ATOMIC | __GFP_NOMEMALLOC);

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
 * A connected QP's route to its peer, kept between packets: the kernel's dst_cache, one
 * entry per CPU, each checked against route changes (the route generation) when it is used,
 * as the UDP tunnels keep theirs. A route lookup per packet was 15 % of the sending VM's
 * samples during ib_write_bw on the lockdep kernel (rdma_rxe keeps an RC QP's route in its
 * socket, rxe_find_route). IPv4 and IPv6 alike; a cache holds routes of one family at a
 * time (its QP's address vector; modify resets it when that changes), and an entry of the
 * other family is not used.
 */
struct rrxe_route {
#if IS_ENABLED(CONFIG_DST_CACHE)
	struct dst_cache cache;
#endif
	int unused;
};

/* A new, empty cache (process context), or NULL (no memory). */
struct rrxe_route *rrxe_glue_route_new(void)
{
	struct rrxe_route *r = kzalloc(sizeof(*r), GFP_KERNEL);

	if (!r)
		return NULL;
#if IS_ENABLED(CONFIG_DST_CACHE)
	if (dst_cache_init(&r->cache, GFP_KERNEL)) {
		kfree(r);
		return NULL;
	}
#endif
	return r;
}

/*
 * Forgets the cached routes (the QP's destination changed). The caller guarantees no
 * concurrent use: it holds the QP's engine lock, under which every send runs.
 */
void rrxe_glue_route_reset(struct rrxe_route *r)
{
#if IS_ENABLED(CONFIG_DST_CACHE)
	dst_cache_reset_now(&r->cache);
#endif
}

/* Frees the cache and the routes it holds (the QP gone; any context: free_percpu and
 * dst_release may be called in atomic context). */
void rrxe_glue_route_free(struct rrxe_route *r)
{
	if (!r)
		return;
#if IS_ENABLED(CONFIG_DST_CACHE)
	dst_cache_destroy(&r->cache);
#endif
	kfree(r);
}

/*
 * Whether a route may be kept for (and taken from the cache by) a QP sending through ndev:
 * it leaves through ndev, or through the loopback device of ndev's namespace (to a QP of
 * this host). Not any IFF_LOOPBACK device: rt_flush_dev moves the uncached routes of a
 * device going away (or leaving the namespace) to blackhole_netdev, which has the flag.
 */
static bool rrxe_route_dev_ok(const struct dst_entry *dst, const struct net_device *ndev)
{
	return dst->dev == ndev || dst->dev == dev_net(ndev)->loopback_dev;
}

/*
 * The cached route from saddr out of ndev (or through loopback, to a QP of this host),
 * with a reference, or NULL. A route through another device (the netdev moved, a pod's
 * macvlan) or from another address is not used.
 */
static struct rtable *rrxe_route_get4(struct rrxe_route *r, struct net_device *ndev,
				      __be32 saddr)
{
#if IS_ENABLED(CONFIG_DST_CACHE)
	struct rtable *rt;
	__be32 s = 0;

	/* The per-CPU entry is used with bottom halves off (dst_cache's rule). */
	local_bh_disable();
	rt = dst_cache_get_ip4(&r->cache, &s);
	local_bh_enable();
	if (rt && (rt->dst.ops->family != AF_INET || !rrxe_route_dev_ok(&rt->dst, ndev) ||
		   s != saddr)) {
		ip_rt_put(rt);
		rt = NULL;
	}
	return rt;
#else
	return NULL;
#endif
}

static void rrxe_route_set4(struct rrxe_route *r, struct rtable *rt, __be32 saddr)
{
#if IS_ENABLED(CONFIG_DST_CACHE)
	local_bh_disable();
	dst_cache_set_ip4(&r->cache, &rt->dst, saddr);
	local_bh_enable();
#endif
}

#if IS_ENABLED(CONFIG_IPV6)
/* rrxe_route_get4 for IPv6: the cached IPv6 route from *saddr, with a reference, or NULL. */
static struct dst_entry *rrxe_route_get6(struct rrxe_route *r, struct net_device *ndev,
					 const struct in6_addr *saddr)
{
#if IS_ENABLED(CONFIG_DST_CACHE)
	struct in6_addr s = {};
	struct dst_entry *dst;

	local_bh_disable();
	dst = dst_cache_get_ip6(&r->cache, &s);
	local_bh_enable();
	if (dst && (dst->ops->family != AF_INET6 || !rrxe_route_dev_ok(dst, ndev) ||
		    !ipv6_addr_equal(&s, saddr))) {
		dst_release(dst);
		dst = NULL;
	}
	return dst;
#else
	return NULL;
#endif
}

static void rrxe_route_set6(struct rrxe_route *r, struct dst_entry *dst,
			    const struct in6_addr *saddr)
{
#if IS_ENABLED(CONFIG_DST_CACHE)
	local_bh_disable();
	dst_cache_set_ip6(&r->cache, dst, saddr);
	local_bh_enable();
#endif
}
#endif

/*
 * Packets of one flow sent as one skb: a UDP GSO skb of the fraglist kind (SKB_GSO_UDP_L4 |
 * SKB_GSO_FRAGLIST). The head is the first packet, the others hang on its frag_list in
 * order; each was built whole, headers and ICRC, as if sent alone. The first device's
 * validate_xmit_skb splits it back into those packets (skb_segment_list: no copy, no
 * checksum; the head's UDP length set back to its own), and its driver gets them as one
 * burst (xmit_more on all but the last: virtio-net notifies the device once).
 * inet_gso_segment rewrites each IPv4 packet's tot_len, checksum and id: the id becomes the
 * head's plus the packet's index, which the caller wrote already (the ICRC covers the id).
 *
 * The chain never leaves the first device whole (rrxe_glue_tx_chain_seal): its members keep
 * their own IP and UDP headers where GRO's keep only their payload, so anything that read
 * it as one datagram (generic XDP or a tc program that linearises it, which sends it to
 * skb_segment's cut every gso_size bytes; a packet socket on a veth) would see other bytes
 * than the packets. Before the split the IP layer sees the chain as one datagram with the
 * head's headers: netfilter's OUTPUT and POSTROUTING rules that rewrite headers (TTL, DSCP)
 * change the head's alone (the ICRC masks both), and length or rate matches count the
 * chain as one packet; a tc egress program on the first device runs before the split too.
 *
 * rrxe_glue_tx_chain hangs seg after *tail (NULL: the first) and accounts for it in head.
 */
void rrxe_glue_tx_chain(struct sk_buff *head, struct sk_buff **tail, struct sk_buff *seg)
{
	if (*tail)
		(*tail)->next = seg;
	else
		skb_shinfo(head)->frag_list = seg;
	seg->next = NULL;
	*tail = seg;
	head->len += seg->len;
	head->data_len += seg->len;
	head->truesize += seg->truesize;
}

/*
 * Makes head, with segs packets in all (2 or more, chained by rrxe_glue_tx_chain), a GSO
 * skb. gso_size is the head's own UDP payload, as skb_segment_list's geometry check wants;
 * the UDP length becomes the whole one, as GRO leaves it (the IP layer's view until the
 * split). CHECKSUM_NONE, the truth (RoCEv2's UDP checksum is 0): netif_needs_gso then
 * has every device split the chain, even one that takes fraglist GSO skbs whole (veth,
 * macvlan, ipvlan, a bridge: see above). __skb_gso_segment's bad-offload warning is for a
 * CHECKSUM_NONE skb cut into new ones; skb_segment_list returns the head itself.
 */
void rrxe_glue_tx_chain_seal(struct sk_buff *head, u16 segs)
{
	struct skb_shared_info *sh = skb_shinfo(head);
	unsigned int thoff = skb_transport_offset(head);

	sh->gso_size = skb_headlen(head) - thoff - sizeof(struct udphdr);
	sh->gso_type = SKB_GSO_UDP_L4 | SKB_GSO_FRAGLIST;
	sh->gso_segs = segs;
	udp_hdr(head)->len = htons(head->len - thoff);
	head->ip_summed = CHECKSUM_NONE;
}

/*
 * A chained skb (rrxe_glue_tx_chain) to a destination on this host: its packets one by one
 * to our receive path, each as rrxe_glue_tx_send gives a single one (bottom halves off).
 */
static void rrxe_tx_local_chain(struct sk_buff *head)
{
	struct sk_buff *seg = skb_shinfo(head)->frag_list, *next;
	unsigned int thoff = skb_transport_offset(head);

	skb_shinfo(head)->frag_list = NULL;
	for (next = seg; next; next = next->next)
		head->truesize -= next->truesize;
	head->len = skb_headlen(head);
	head->data_len = 0;
	skb_gso_reset(head);
	udp_hdr(head)->len = htons(head->len - thoff);
	head->ip_summed = CHECKSUM_NONE;
	head->pkt_type = PACKET_HOST;
	rrxe_rx_local(head);
	for (; seg; seg = next) {
		next = seg->next;
		seg->next = NULL;
		seg->pkt_type = PACKET_HOST;
		rrxe_rx_local(seg);
	}
}

/*
 * Routes and sends a fully built IP packet (headers and ICRC written by the caller), or a
 * chain of them (rrxe_glue_tx_chain_seal).
 * Consumes the skb. Returns 0 or a negative errno (no route, ...). route: the QP's route
 * cache (connected QPs, with the QP's engine lock held), or NULL.
 */
int rrxe_glue_tx_send(struct sk_buff *skb, bool ipv6, const u8 *sip, const u8 *dip,
		      struct rrxe_route *route)
{
	struct net_device *ndev = skb->dev;
	struct net *net = dev_net(ndev);
	struct dst_entry *dst;
	int ret;

	if (!ipv6) {
		struct flowi4 fl = {};
		struct rtable *rt = NULL;

		fl.flowi4_oif = ndev->ifindex;
		memcpy(&fl.saddr, sip, 4);
		memcpy(&fl.daddr, dip, 4);
		fl.flowi4_proto = IPPROTO_UDP;
		if (route)
			rt = rrxe_route_get4(route, ndev, fl.saddr);
		if (!rt) {
			rt = ip_route_output_key(net, &fl);
			if (IS_ERR(rt)) {
				kfree_skb(skb);
				return PTR_ERR(rt);
			}
			/*
			 * Kept whether it leaves through ndev or, to a destination on this host,
			 * through loopback: such a route is allocated for each lookup (an oif
			 * route to a local address is not cached by the FIB) and freed after an
			 * RCU grace period: keeping it took two QPs of this host, one CPU each,
			 * from 72 to 92 MB/s (ib_write_bw 64 KiB, benchmark kernel). dst_cache
			 * drops it when the routes or addresses change.
			 */
			if (route && rrxe_route_dev_ok(&rt->dst, ndev))
				rrxe_route_set4(route, rt, fl.saddr);
		}
		dst = &rt->dst;
	} else {
#if IS_ENABLED(CONFIG_IPV6)
		struct flowi6 fl6 = {};

		fl6.flowi6_oif = ndev->ifindex;
		memcpy(&fl6.saddr, sip, 16);
		memcpy(&fl6.daddr, dip, 16);
		fl6.flowi6_proto = IPPROTO_UDP;
		dst = route ? rrxe_route_get6(route, ndev, &fl6.saddr) : NULL;
		if (!dst) {
			dst = rrxe_ip6_dst_lookup_flow(net, &fl6);
			if (IS_ERR(dst)) {
				kfree_skb(skb);
				return PTR_ERR(dst);
			}
			/* Kept as an IPv4 route is (above). */
			if (route && rrxe_route_dev_ok(dst, ndev))
				rrxe_route_set6(route, dst, &fl6.saddr);
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
		local_bh_disable();
		if (skb_has_frag_list(skb)) {
			rrxe_tx_local_chain(skb);
		} else {
			skb->pkt_type = PACKET_HOST;
			rrxe_rx_local(skb);
		}
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
