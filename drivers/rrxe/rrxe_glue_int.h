/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel headers the C glue files (rrxe_glue*.c) use, in one place, and the glue's
 * interface with Rust. Not seen by bindgen (it reads rrxe_bindings.h).
 */
#ifndef RRXE_GLUE_INT_H
#define RRXE_GLUE_INT_H

#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/if_arp.h>
#include <linux/if_ether.h>
#include <linux/etherdevice.h>
#include <net/addrconf.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>
#include <rdma/rdma_counter.h>
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
#include <net/route.h>
#include <net/dst_cache.h>
#include <net/sch_generic.h>
#include <linux/inetdevice.h>
#include <linux/igmp.h>
#include <rdma/ib_cache.h>
#include <net/ip6_route.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <linux/nsproxy.h>
#include "rrxe_glue_compat.h"
#include "rrxe_glue.h"

#endif
