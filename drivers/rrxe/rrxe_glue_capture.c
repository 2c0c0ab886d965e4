// SPDX-License-Identifier: GPL-2.0
/*
 * Packet capture: a device's capture netdev (e.g. rrxe0cap), an Ethernet interface that
 * sends and receives nothing; tcpdump and Wireshark open it as any other, and rrxe hands
 * their taps a copy of every RoCEv2 frame the device sends (after its ICRC is written,
 * loopback frames to a QP of this host included, which never reach a netdev) and of every
 * one it receives from the wire (at arrival, before any check). docs/capture.md.
 *
 * Created on demand (the device's debugfs file `capture`, rrxe_glue_debugfs.c), not with
 * the device: a device nobody captures has no extra interface in its namespace, and its
 * data path reads one NULL pointer per packet. Once it exists, a packet costs a call and
 * dev_nit_active() (two list heads) while no tap is open; a copy is made only for taps.
 *
 * The device keeps the capture netdev in a slot (struct net_device __rcu *, in the
 * driver's device data), written only under rtnl: set by rrxe_glue_capture_open once the
 * netdev is registered, cleared by the netdev's ndo_uninit, whoever unregisters it
 * (rrxe_glue_capture_close on request or when the device goes, or the deletion of its
 * network namespace: it is netns_immutable, so the namespace's exit unregisters it instead
 * of moving it to init_net). Readers (the data path) take it in an RCU read section: the
 * unregistration waits for a grace period (synchronize_net) after ndo_uninit before the
 * netdev can be freed.
 */
#include "rrxe_glue_int.h"

/* The capture netdev's private data: the slot of the device that keeps it. */
struct rrxe_capdev {
	struct net_device __rcu **slot;
};

/* The slot as RCU sees it (rrxe_glue.h declares it plainly, for bindgen). */
static struct net_device __rcu **rrxe_cap_slot(struct net_device **slot)
{
	return (struct net_device __rcu __force **)slot;
}

/* Nothing is sent through the capture netdev: whatever is (a user's packet socket) is dropped and counted. */
static netdev_tx_t rrxe_capdev_xmit(struct sk_buff *skb, struct net_device *dev)
{
	DEV_STATS_INC(dev, tx_dropped);
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

/* Unregistration, under rtnl: the device's data path no longer finds the netdev. */
static void rrxe_capdev_uninit(struct net_device *dev)
{
	struct rrxe_capdev *c = netdev_priv(dev);

	if (rtnl_dereference(*c->slot) == dev)
		RCU_INIT_POINTER(*c->slot, NULL);
}

static const struct net_device_ops rrxe_capdev_ops = {
	.ndo_start_xmit = rrxe_capdev_xmit,
	.ndo_uninit = rrxe_capdev_uninit,
};

static void rrxe_capdev_setup(struct net_device *dev)
{
	ether_setup(dev);
	dev->netdev_ops = &rrxe_capdev_ops;
	dev->needs_free_netdev = true;
	/* No ARP, no multicast, no IPv6 link-local address: it sends nothing of its own. */
	dev->flags |= IFF_NOARP;
	dev->flags &= ~IFF_MULTICAST;
	dev->priv_flags |= IFF_NO_QUEUE | IFF_NO_ADDRCONF;
	/* It stays in its namespace and goes with it (see above). */
	dev->netns_immutable = true;
	/* Frames of any IB MTU (4096 bytes of payload) are handed to its taps. */
	dev->max_mtu = ETH_MAX_MTU;
	dev->mtu = ETH_MAX_MTU;
	eth_hw_addr_random(dev);
}

/*
 * Creates, registers and brings up the capture netdev of ib in ib's network namespace,
 * named <ib>cap if that is a valid interface name there, else rrxecap<N>; sets *slot. Does
 * nothing if the device has one already. Process context; takes rtnl. 0 or a negative
 * errno (-ENODEV: the namespace is going away).
 */
int rrxe_glue_capture_open(struct ib_device *ib, struct net_device **rslot)
{
	struct net_device __rcu **slot = rrxe_cap_slot(rslot);
	char name[IFNAMSIZ];
	struct net_device *dev;
	struct rrxe_capdev *c;
	unsigned char assign = NET_NAME_PREDICTABLE;
	struct net *net;
	int err;

	/* ib->name, not dev_name(): a rename rewrites the former in place, frees the latter. */
	if (snprintf(name, sizeof(name), "%scap", ib->name) >= (int)sizeof(name) ||
	    !dev_valid_name(name)) {
		strscpy(name, "rrxecap%d", sizeof(name));
		assign = NET_NAME_ENUM;
	}
	net = maybe_get_net(read_pnet(&ib->coredev.rdma_net));
	if (!net)
		return -ENODEV;
	dev = alloc_netdev(sizeof(*c), name, assign, rrxe_capdev_setup);
	if (!dev) {
		put_net(net);
		return -ENOMEM;
	}
	c = netdev_priv(dev);
	c->slot = slot;
	dev_net_set(dev, net);
	rtnl_lock();
	if (rtnl_dereference(*slot)) {
		rtnl_unlock();
		free_netdev(dev);
		put_net(net);
		return 0;
	}
	err = register_netdevice(dev);
	if (err) {
		rtnl_unlock();
		free_netdev(dev);
		put_net(net);
		return err;
	}
	rcu_assign_pointer(*slot, dev);
	/* Up, so that capture tools open it without a step of their own. */
	err = dev_open(dev, NULL);
	if (err)
		unregister_netdevice(dev);
	rtnl_unlock();
	put_net(net);
	return err;
}

/* Unregisters the capture netdev in *slot, if any (its ndo_uninit clears the slot). Takes rtnl. */
void rrxe_glue_capture_close(struct net_device **rslot)
{
	struct net_device __rcu **slot = rrxe_cap_slot(rslot);
	struct net_device *dev;

	rtnl_lock();
	dev = rtnl_dereference(*slot);
	if (dev)
		unregister_netdevice(dev);
	rtnl_unlock();
}

/* The capture netdev's name into buf (len bytes, NUL-terminated); its length, 0 if none. */
size_t rrxe_glue_capture_name(struct net_device **rslot, char *buf, size_t len)
{
	struct net_device __rcu **slot = rrxe_cap_slot(rslot);
	struct net_device *dev;
	ssize_t n = 0;

	if (!len)
		return 0;
	buf[0] = '\0';
	rtnl_lock();
	dev = rtnl_dereference(*slot);
	if (dev)
		n = strscpy(buf, dev->name, len);
	rtnl_unlock();
	return n > 0 ? n : 0;
}

/*
 * Hands the capture netdev's taps a copy of skb as an Ethernet frame: its IP datagram
 * (network header to the end; the caller guarantees the network header is set and not
 * after skb->data) behind an Ethernet header. For a frame that came from the wire with an
 * Ethernet header (wire set), its addresses; for one that has none yet (sent, or passed
 * between two devices of this host), the MAC of skb->dev as both. Returns 0 if there is no
 * capture netdev or no tap, 1 if a copy was handed over, -ENOMEM if none could be made.
 * Any context; bottom halves are disabled around the taps (packet sockets take their
 * queue locks as in the receive softirq).
 */
int rrxe_glue_capture_skb(struct net_device **rslot, struct sk_buff *skb, bool wire)
{
	struct net_device __rcu **slot = rrxe_cap_slot(rslot);
	int nhoff = skb_network_offset(skb);
	struct net_device *cap;
	struct sk_buff *copy;
	struct ethhdr *eth;
	int ret = 0, len;
	u8 ver;

	rcu_read_lock();
	cap = rcu_dereference(*slot);
	if (!cap || !dev_nit_active(cap))
		goto out;
	len = skb->len - nhoff;
	if (nhoff > 0 || len <= 0 || -nhoff > (int)skb_headroom(skb))
		goto out;
	copy = alloc_skb(NET_IP_ALIGN + ETH_HLEN + len, GFP_ATOMIC | __GFP_NOWARN);
	if (!copy) {
		DEV_STATS_INC(cap, rx_dropped);
		ret = -ENOMEM;
		goto out;
	}
	skb_reserve(copy, NET_IP_ALIGN + ETH_HLEN);
	if (skb_copy_bits(skb, nhoff, skb_put(copy, len), len)) {
		kfree_skb(copy);
		goto out;
	}
	skb_reset_network_header(copy);
	ver = copy->data[0] >> 4;
	eth = skb_push(copy, ETH_HLEN);
	skb_reset_mac_header(copy);
	if (wire && skb_mac_header_was_set(skb) && skb_mac_header_len(skb) >= ETH_HLEN) {
		memcpy(eth->h_dest, eth_hdr(skb)->h_dest, ETH_ALEN);
		memcpy(eth->h_source, eth_hdr(skb)->h_source, ETH_ALEN);
	} else if (skb->dev && skb->dev->addr_len == ETH_ALEN) {
		memcpy(eth->h_dest, skb->dev->dev_addr, ETH_ALEN);
		memcpy(eth->h_source, skb->dev->dev_addr, ETH_ALEN);
	} else {
		eth_zero_addr(eth->h_dest);
		eth_zero_addr(eth->h_source);
	}
	eth->h_proto = htons(ver == 6 ? ETH_P_IPV6 : ETH_P_IP);
	copy->protocol = eth->h_proto;
	copy->dev = cap;
	DEV_STATS_INC(cap, rx_packets);
	DEV_STATS_ADD(cap, rx_bytes, copy->len);
	local_bh_disable();
	dev_queue_xmit_nit(copy, cap);
	local_bh_enable();
	consume_skb(copy);
	ret = 1;
out:
	rcu_read_unlock();
	return ret;
}
