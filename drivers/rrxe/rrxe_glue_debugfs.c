// SPDX-License-Identifier: GPL-2.0
/*
 * debugfs: /sys/kernel/debug/rrxe/<dev>/faults, the fault injection rules of a device.
 * Reading lists the rules with their counts; writing adds rules or clears them. And
 * /sys/kernel/debug/rrxe/<dev>/capture, its capture netdev (rrxe_glue_capture.c): reading
 * gives its name (empty without one), writing 1 creates it, 0 removes it. And, read-only,
 * /sys/kernel/debug/rrxe/<dev>/tx_room: what the netdev's transmit queues hold and the room
 * a QP's run sees (rrxe_glue_netdev_tx_show). The faults' and capture's text is the
 * driver's (Rust, through the functions given to rrxe_glue_debugfs_init); this file only
 * moves bytes between user space and those functions and checks the writer's right.
 */
#include <linux/debugfs.h>
#include <linux/capability.h>
#include <linux/slab.h>
#include "rrxe_glue_int.h"

/* The largest listing and the largest write, in bytes. */
#define RRXE_DEBUGFS_BUF 8192

static struct dentry *rrxe_debugfs_root;
/* Set at module init, before any file exists, and never changed. */
static struct rrxe_debugfs_fns rrxe_fns;

void rrxe_glue_debugfs_init(const struct rrxe_debugfs_fns *fns)
{
	rrxe_fns = *fns;
	/* debugfs failures are not errors: the driver works without its files. */
	rrxe_debugfs_root = debugfs_create_dir("rrxe", NULL);
}

void rrxe_glue_debugfs_exit(void)
{
	debugfs_remove(rrxe_debugfs_root);
	rrxe_debugfs_root = NULL;
}

static ssize_t rrxe_debugfs_read(struct file *file, char __user *ubuf, size_t count,
				 loff_t *ppos, rrxe_debugfs_show_fn show)
{
	struct ib_device *ib = file->private_data;
	ssize_t ret;
	size_t len;
	char *buf;

	buf = kmalloc(RRXE_DEBUGFS_BUF, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	len = show(ib, buf, RRXE_DEBUGFS_BUF);
	ret = simple_read_from_buffer(ubuf, count, ppos, buf, min_t(size_t, len, RRXE_DEBUGFS_BUF));
	kfree(buf);
	return ret;
}

/*
 * One write is one set of commands, taken whole or refused whole: it must start at offset
 * 0 and fit RRXE_DEBUGFS_BUF. Only a writer with CAP_NET_ADMIN in the user namespace of
 * the device's network namespace may change rules or the capture netdev (checked against
 * the opener's credentials, as for a netlink socket).
 */
static ssize_t rrxe_debugfs_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos, rrxe_debugfs_write_fn write)
{
	struct ib_device *ib = file->private_data;
	char *buf;
	int err;

	if (!file_ns_capable(file, read_pnet(&ib->coredev.rdma_net)->user_ns, CAP_NET_ADMIN))
		return -EPERM;
	if (*ppos != 0 || count > RRXE_DEBUGFS_BUF)
		return -EINVAL;
	buf = memdup_user(ubuf, count);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	err = write(ib, buf, count);
	kfree(buf);
	if (err)
		return err;
	*ppos += count;
	return count;
}

static ssize_t rrxe_faults_read(struct file *file, char __user *ubuf, size_t count,
				loff_t *ppos)
{
	return rrxe_debugfs_read(file, ubuf, count, ppos, rrxe_fns.faults_show);
}

static ssize_t rrxe_faults_write_op(struct file *file, const char __user *ubuf,
				    size_t count, loff_t *ppos)
{
	return rrxe_debugfs_write(file, ubuf, count, ppos, rrxe_fns.faults_write);
}

static const struct file_operations rrxe_faults_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = rrxe_faults_read,
	.write = rrxe_faults_write_op,
	.llseek = default_llseek,
};

static ssize_t rrxe_capture_read(struct file *file, char __user *ubuf, size_t count,
				 loff_t *ppos)
{
	return rrxe_debugfs_read(file, ubuf, count, ppos, rrxe_fns.capture_show);
}

/* The same right as for the fault rules: CAP_NET_ADMIN where the device's netdevs are. */
static ssize_t rrxe_capture_write_op(struct file *file, const char __user *ubuf,
				     size_t count, loff_t *ppos)
{
	return rrxe_debugfs_write(file, ubuf, count, ppos, rrxe_fns.capture_write);
}

static const struct file_operations rrxe_capture_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = rrxe_capture_read,
	.write = rrxe_capture_write_op,
	.llseek = default_llseek,
};

static ssize_t rrxe_tx_room_read(struct file *file, char __user *ubuf, size_t count,
				 loff_t *ppos)
{
	return rrxe_debugfs_read(file, ubuf, count, ppos, rrxe_glue_netdev_tx_show);
}

static const struct file_operations rrxe_tx_room_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = rrxe_tx_room_read,
	.llseek = default_llseek,
};

struct dentry *rrxe_glue_debugfs_add(struct ib_device *ib)
{
	struct dentry *dir;

	if (IS_ERR_OR_NULL(rrxe_debugfs_root))
		return NULL;
	dir = debugfs_create_dir(dev_name(&ib->dev), rrxe_debugfs_root);
	if (IS_ERR(dir))
		return NULL;
	debugfs_create_file("faults", 0600, dir, ib, &rrxe_faults_fops);
	debugfs_create_file("capture", 0600, dir, ib, &rrxe_capture_fops);
	debugfs_create_file("tx_room", 0400, dir, ib, &rrxe_tx_room_fops);
	return dir;
}

void rrxe_glue_debugfs_remove(struct dentry *dir)
{
	/* Waits for the file operations in progress: none runs after this returns. */
	debugfs_remove(dir);
}
