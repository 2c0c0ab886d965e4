/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel interfaces that differ between the trees rrxe builds against, one wrapper a
 * difference, chosen by what drivers/rrxe/compat/probe.sh found in the tree
 * (rrxe_compat.h), never by version number. The glue calls these; the rest of the glue and
 * all of Rust see one signature on every kernel. Included by rrxe_glue_int.h after the
 * kernel headers.
 */
#ifndef RRXE_GLUE_COMPAT_H
#define RRXE_GLUE_COMPAT_H

#include "rrxe_compat.h"
#ifdef RRXE_HAVE_IPV6_STUBS
#include <net/ipv6_stubs.h>
#endif

/* The UDP tunnel socket's setup and release: by struct socket, or by its struct sock. */
static inline void rrxe_setup_udp_tunnel_sock(struct net *net, struct socket *sock,
					      struct udp_tunnel_sock_cfg *cfg)
{
#ifdef RRXE_HAVE_UDP_TUNNEL_SOCKET
	setup_udp_tunnel_sock(net, sock, cfg);
#else
	setup_udp_tunnel_sock(net, sock->sk, cfg);
#endif
}

static inline void rrxe_udp_tunnel_sock_release(struct socket *sock)
{
#ifdef RRXE_HAVE_UDP_TUNNEL_SOCKET
	udp_tunnel_sock_release(sock);
#else
	udp_tunnel_sock_release(sock->sk);
#endif
}

#if IS_ENABLED(CONFIG_IPV6)
/* The netdev with IPv6 address addr in net (RCU read side), or NULL/ERR_PTR. */
static inline struct net_device *rrxe_ipv6_dev_find(struct net *net, const struct in6_addr *addr)
{
#ifdef RRXE_HAVE_IPV6_STUBS
	return ipv6_stub->ipv6_dev_find(net, addr, NULL);
#else
	return ipv6_dev_find(net, addr, NULL);
#endif
}

/* An IPv6 route for fl6 (a dst or ERR_PTR). */
static inline struct dst_entry *rrxe_ip6_dst_lookup_flow(struct net *net, struct flowi6 *fl6)
{
#ifdef RRXE_HAVE_IPV6_STUBS
	return ipv6_stub->ipv6_dst_lookup_flow(net, NULL, fl6, NULL);
#else
	return ip6_dst_lookup_flow(net, NULL, fl6, NULL);
#endif
}
#endif

/* The structure around a timer, from the timer (from_timer was renamed). */
#ifndef RRXE_HAVE_TIMER_CONTAINER_OF
#define timer_container_of(var, callback_timer, timer_fieldname) \
	from_timer(var, callback_timer, timer_fieldname)
#endif

/* Pins [addr, addr + size) of the calling process (ib_umem_get was renamed). */
static inline struct ib_umem *rrxe_ib_umem_get(struct ib_device *dev, unsigned long addr,
					       size_t size, int access)
{
#ifdef RRXE_HAVE_IB_UMEM_GET_VA
	return ib_umem_get_va(dev, addr, size, access);
#else
	return ib_umem_get(dev, addr, size, access);
#endif
}

/* Importing a symbol namespace: a bare name in older trees, a string literal in newer ones. */
#ifdef RRXE_HAVE_MODULE_IMPORT_NS_IDENT
#define RRXE_MODULE_IMPORT_NS_DMA_BUF MODULE_IMPORT_NS(DMA_BUF)
#else
#define RRXE_MODULE_IMPORT_NS_DMA_BUF MODULE_IMPORT_NS("DMA_BUF")
#endif

/*
 * The importer ops of rrxe's pinned dma-buf attachments (rrxe_glue_mem.c). Trees with
 * move_notify require it of every dynamic importer (dma_buf_dynamic_attach WARNs and fails
 * without it) but never call it for a pinned attachment: rrxe sets fn, which only warns, as
 * the core's ib_umem_dmabuf_attach_pinned_ops does. Trees with invalidate_mappings make it
 * optional and call it on a pinned attachment to revoke the buffer, promising the exporter
 * that the importer stops touching it within bounded time; rrxe cannot (its MR accesses
 * run without the reservation lock), so it leaves the op unset, as the core's pinned
 * importers do there, and exporters that must revoke refuse the attachment.
 */
#ifdef RRXE_HAVE_DMA_BUF_INVALIDATE_MAPPINGS
#define RRXE_DMA_BUF_PINNED_MOVE_NOTIFY(fn)
#else
#define RRXE_DMA_BUF_PINNED_MOVE_NOTIFY(fn) .move_notify = (fn),
#endif

/* A new ib_device of size bytes (in init_net, as ib_alloc_device makes it). */
static inline struct ib_device *rrxe_ib_alloc_device(size_t size)
{
#ifdef RRXE_HAVE_IB_ALLOC_DEVICE_NET
	return _ib_alloc_device(size, &init_net);
#else
	return _ib_alloc_device(size);
#endif
}

#endif
