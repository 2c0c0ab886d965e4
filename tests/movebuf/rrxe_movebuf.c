// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_movebuf: a test dma-buf exporter whose buffers move, the way a TTM-based GPU driver's
 * GTT buffers do: its vmap op maps the current backing without pinning it, and a move (asked
 * through MOVEBUF_MOVE on /dev/rrxe_movebuf) copies the contents to new pages and retires the
 * old ones, unless the buffer is pinned (dma_buf_pin on a dynamic attachment), when the move
 * is refused with EBUSY. An importer that holds only a vmap across a move keeps writing into
 * the retired pages.
 *
 * Retired pages are filled with a poison byte and kept until the buffer is released, so a
 * test can see, without KASAN, whether anything wrote into pages the exporter has given up
 * (MOVEBUF_STATE.retired_touched). With free_retired=1 they are freed at once instead, and a
 * KASAN kernel reports such a write as a use-after-free (the backing is kmalloc memory, and
 * vmap hands out its linear-map address).
 *
 * Flags at creation make a buffer that cannot be pinned (pin fails with EOPNOTSUPP) or whose
 * vmap fails (ENOMEM). Interface: tests/user/movebuf.h. Used by tests/vm/dmabuf-move.sh.
 *
 * Locking: a buffer's state (backing, counts, retired list) is guarded by its dma-buf's
 * reservation lock, which the dma-buf core holds around pin, unpin, vmap and vunmap and the
 * ioctls below take; attach and detach (called without it) take it too. Release runs when
 * the last reference is gone.
 */
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/fs.h>
#include <linux/iosys-map.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "movebuf.h"

#define MOVEBUF_MAX_SIZE (1u << 20)
#define MOVEBUF_POISON 0x6b

static bool free_retired;
module_param(free_retired, bool, 0644);
MODULE_PARM_DESC(free_retired,
		 "free a moved buffer's old pages at once (for KASAN) instead of keeping them poisoned");

struct movebuf_retired {
	struct list_head node;
	void *mem;
};

struct movebuf {
	size_t size;
	u32 flags;
	void *backing; /* current pages (kmalloc: physically contiguous, linear-mapped) */
	u32 pins, vmaps, attachments, moves, retired;
	struct list_head retired_list; /* struct movebuf_retired */
};

static const struct dma_buf_ops movebuf_ops;

static int movebuf_attach(struct dma_buf *buf, struct dma_buf_attachment *a)
{
	struct movebuf *mb = buf->priv;

	dma_resv_lock(buf->resv, NULL);
	mb->attachments++;
	dma_resv_unlock(buf->resv);
	return 0;
}

static void movebuf_detach(struct dma_buf *buf, struct dma_buf_attachment *a)
{
	struct movebuf *mb = buf->priv;

	dma_resv_lock(buf->resv, NULL);
	mb->attachments--;
	dma_resv_unlock(buf->resv);
}

static int movebuf_pin(struct dma_buf_attachment *a)
{
	struct movebuf *mb = a->dmabuf->priv;

	if (mb->flags & MOVEBUF_NO_PIN)
		return -EOPNOTSUPP;
	mb->pins++;
	return 0;
}

static void movebuf_unpin(struct dma_buf_attachment *a)
{
	struct movebuf *mb = a->dmabuf->priv;

	if (!WARN_ON(!mb->pins))
		mb->pins--;
}

/* The buffer is CPU-only: nothing DMA-maps it (rrxe never calls dma_buf_map_attachment). */
static struct sg_table *movebuf_map(struct dma_buf_attachment *a, enum dma_data_direction dir)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static void movebuf_unmap(struct dma_buf_attachment *a, struct sg_table *sgt,
			  enum dma_data_direction dir)
{
}

/* Maps the current backing without pinning it (as TTM maps a GTT buffer). */
static int movebuf_vmap(struct dma_buf *buf, struct iosys_map *map)
{
	struct movebuf *mb = buf->priv;

	if (mb->flags & MOVEBUF_FAIL_VMAP)
		return -ENOMEM;
	iosys_map_set_vaddr(map, mb->backing);
	mb->vmaps++;
	return 0;
}

static void movebuf_vunmap(struct dma_buf *buf, struct iosys_map *map)
{
	struct movebuf *mb = buf->priv;

	if (!WARN_ON(!mb->vmaps))
		mb->vmaps--;
}

static void movebuf_release(struct dma_buf *buf)
{
	struct movebuf *mb = buf->priv;
	struct movebuf_retired *r, *t;

	list_for_each_entry_safe(r, t, &mb->retired_list, node) {
		kfree(r->mem);
		kfree(r);
	}
	kfree(mb->backing);
	kfree(mb);
}

static const struct dma_buf_ops movebuf_ops = {
	.attach = movebuf_attach,
	.detach = movebuf_detach,
	.pin = movebuf_pin,
	.unpin = movebuf_unpin,
	.map_dma_buf = movebuf_map,
	.unmap_dma_buf = movebuf_unmap,
	.release = movebuf_release,
	.vmap = movebuf_vmap,
	.vunmap = movebuf_vunmap,
};

/*
 * Moves the backing to new pages, unless pinned. A real dynamic exporter would also tell its
 * dynamic attachments (move_notify / invalidate_mappings); the tests have none that is not
 * pinned, so there is nobody to tell. Caller holds the reservation lock.
 */
static int movebuf_move(struct movebuf *mb)
{
	struct movebuf_retired *r;
	void *mem;

	if (mb->pins)
		return -EBUSY;
	mem = kmalloc(mb->size, GFP_KERNEL);
	r = kmalloc(sizeof(*r), GFP_KERNEL);
	if (!mem || !r) {
		kfree(mem);
		kfree(r);
		return -ENOMEM;
	}
	memcpy(mem, mb->backing, mb->size);
	if (free_retired) {
		kfree(mb->backing);
		kfree(r);
	} else {
		memset(mb->backing, MOVEBUF_POISON, mb->size);
		r->mem = mb->backing;
		list_add_tail(&r->node, &mb->retired_list);
	}
	mb->backing = mem;
	mb->moves++;
	mb->retired++;
	return 0;
}

static int movebuf_create(struct movebuf_create __user *uarg)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp);
	struct movebuf_create c;
	struct dma_buf *buf;
	struct movebuf *mb;
	int fd;

	if (copy_from_user(&c, uarg, sizeof(c)))
		return -EFAULT;
	if (!c.size || c.size > MOVEBUF_MAX_SIZE || !PAGE_ALIGNED(c.size) ||
	    (c.flags & ~(MOVEBUF_NO_PIN | MOVEBUF_FAIL_VMAP)))
		return -EINVAL;
	mb = kzalloc(sizeof(*mb), GFP_KERNEL);
	if (!mb)
		return -ENOMEM;
	mb->size = c.size;
	mb->flags = c.flags;
	INIT_LIST_HEAD(&mb->retired_list);
	mb->backing = kzalloc(c.size, GFP_KERNEL);
	if (!mb->backing) {
		kfree(mb);
		return -ENOMEM;
	}
	exp.ops = &movebuf_ops;
	exp.size = c.size;
	exp.flags = O_RDWR | O_CLOEXEC;
	exp.priv = mb;
	buf = dma_buf_export(&exp);
	if (IS_ERR(buf)) {
		kfree(mb->backing);
		kfree(mb);
		return PTR_ERR(buf);
	}
	/* From here on, the dma-buf owns mb (movebuf_release). */
	fd = dma_buf_fd(buf, O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(buf);
		return fd;
	}
	c.fd = fd;
	if (copy_to_user(uarg, &c, sizeof(c)))
		return -EFAULT; /* the fd stays the caller's, as after any partial success */
	return 0;
}

/* The movebuf of dma-buf fd, with a reference on the dma-buf, or an ERR_PTR. */
static struct dma_buf *movebuf_get(int fd)
{
	struct dma_buf *buf = dma_buf_get(fd);

	if (IS_ERR(buf))
		return buf;
	if (buf->ops != &movebuf_ops) {
		dma_buf_put(buf);
		return ERR_PTR(-EINVAL);
	}
	return buf;
}

static int movebuf_io(struct movebuf_io __user *uarg, bool read)
{
	struct movebuf_io io;
	struct dma_buf *buf;
	struct movebuf *mb;
	void *tmp;
	int ret = 0;

	if (copy_from_user(&io, uarg, sizeof(io)))
		return -EFAULT;
	buf = movebuf_get(io.fd);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	mb = buf->priv;
	if (io.off > mb->size || io.len > mb->size - io.off) {
		ret = -EINVAL;
		goto out;
	}
	tmp = kmalloc(io.len ?: 1, GFP_KERNEL);
	if (!tmp) {
		ret = -ENOMEM;
		goto out;
	}
	dma_resv_lock(buf->resv, NULL);
	if (read)
		memcpy(tmp, mb->backing + io.off, io.len);
	else
		memset(mb->backing + io.off, (u8)io.addr, io.len);
	dma_resv_unlock(buf->resv);
	if (read && copy_to_user(u64_to_user_ptr(io.addr), tmp, io.len))
		ret = -EFAULT;
	kfree(tmp);
out:
	dma_buf_put(buf);
	return ret;
}

static int movebuf_state(struct movebuf_state __user *uarg)
{
	struct movebuf_retired *r;
	struct movebuf_state st;
	struct dma_buf *buf;
	struct movebuf *mb;
	size_t i;

	if (copy_from_user(&st, uarg, sizeof(st)))
		return -EFAULT;
	buf = movebuf_get(st.fd);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	mb = buf->priv;
	dma_resv_lock(buf->resv, NULL);
	st.pins = mb->pins;
	st.vmaps = mb->vmaps;
	st.attachments = mb->attachments;
	st.moves = mb->moves;
	st.retired = mb->retired;
	st.retired_touched = 0;
	list_for_each_entry(r, &mb->retired_list, node)
		for (i = 0; i < mb->size; i++)
			st.retired_touched += ((u8 *)r->mem)[i] != MOVEBUF_POISON;
	dma_resv_unlock(buf->resv);
	dma_buf_put(buf);
	return copy_to_user(uarg, &st, sizeof(st)) ? -EFAULT : 0;
}

static long movebuf_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	struct dma_buf *buf;
	int ret;

	switch (cmd) {
	case MOVEBUF_CREATE:
		return movebuf_create(uarg);
	case MOVEBUF_MOVE:
		buf = movebuf_get((int)arg);
		if (IS_ERR(buf))
			return PTR_ERR(buf);
		dma_resv_lock(buf->resv, NULL);
		ret = movebuf_move(buf->priv);
		dma_resv_unlock(buf->resv);
		dma_buf_put(buf);
		return ret;
	case MOVEBUF_READ:
		return movebuf_io(uarg, true);
	case MOVEBUF_FILL:
		return movebuf_io(uarg, false);
	case MOVEBUF_STATE:
		return movebuf_state(uarg);
	}
	return -ENOTTY;
}

static const struct file_operations movebuf_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = movebuf_ioctl,
};

static struct miscdevice movebuf_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "rrxe_movebuf",
	.fops = &movebuf_fops,
};

module_misc_device(movebuf_misc);
MODULE_DESCRIPTION("rrxe test dma-buf exporter whose buffers move");
MODULE_LICENSE("GPL");
/* What MODULE_IMPORT_NS(DMA_BUF) (or ("DMA_BUF") in later trees) expands to, on every tree. */
MODULE_INFO(import_ns, "DMA_BUF");
