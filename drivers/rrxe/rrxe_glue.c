// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of rrxe.ko: thin wrappers over static inlines and macros, and the kernel objects
 * that must be statically initialised (rdma_link_ops, notifier_block). Every decision is
 * taken on the Rust side; see rrxe_glue.h.
 */
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/if_arp.h>
#include <net/addrconf.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>
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

int rrxe_glue_register(void)
{
	int err = register_netdevice_notifier(&rrxe_netdev_notifier);

	if (err)
		return err;
	rdma_link_register(&rrxe_link_ops);
	return 0;
}

void rrxe_glue_unregister(void)
{
	rdma_link_unregister(&rrxe_link_ops);
}

/* Called last on module exit, after every device is gone. */
void rrxe_glue_unregister_notifier(void)
{
	unregister_netdevice_notifier(&rrxe_netdev_notifier);
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
