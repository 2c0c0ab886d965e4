// SPDX-License-Identifier: GPL-2.0
/*
 * dma-buf MRs over an exporter that moves its buffers (TAP output, one host, two RC QPs of
 * this process connected to each other). The exporter is tests/movebuf/rrxe_movebuf.ko
 * (/dev/rrxe_movebuf, tests/user/movebuf.h): its vmap does not pin, a move copies the buffer
 * to new pages and retires (poisons) the old ones unless the buffer is pinned, and it reports
 * whether anything wrote into retired pages.
 *   - an MR over a movable buffer pins it (one pin, one vmap, one attachment while it
 *     lives): a move is refused (EBUSY); a peer's RDMA WRITE lands in the buffer's current
 *     pages, an RDMA READ returns them, nothing touches retired pages;
 *   - deregistering unpins, unmaps and detaches: the move then goes ahead, and a new MR over
 *     the moved buffer reaches its new pages (WRITE checked, retired pages untouched);
 *   - a buffer that cannot be pinned is refused with the exporter's errno (EOPNOTSUPP), and
 *     one whose vmap fails with its errno (ENOMEM); neither leaves a pin, mapping or
 *     attachment behind (the caller checks the kernel log for warnings).
 *
 *   dmabuf_move -d DEV -g GIDX
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tap.h"
#include "loop.h"
#include "movebuf.h"

#define PAGE 4096
#define SIZE (4 * PAGE)
#define IOVA 0x100000ull
#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static int dev;
static uint8_t src[SIZE], cur[SIZE];
static struct ibv_mr *src_mr;

/* A new movebuf of SIZE bytes with flags, filled with 0xee; its dma-buf fd. */
static int movebuf_new(uint32_t flags)
{
	struct movebuf_create c = { .size = SIZE, .flags = flags };
	struct movebuf_io io = { .len = SIZE, .addr = 0xee };

	if (ioctl(dev, MOVEBUF_CREATE, &c))
		die("MOVEBUF_CREATE");
	io.fd = c.fd;
	if (ioctl(dev, MOVEBUF_FILL, &io))
		die("MOVEBUF_FILL");
	return c.fd;
}

/* The buffer's current pages, into cur. */
static void movebuf_read(int fd)
{
	struct movebuf_io io = { .fd = fd, .len = SIZE, .addr = (uintptr_t)cur };

	if (ioctl(dev, MOVEBUF_READ, &io))
		die("MOVEBUF_READ");
}

static struct movebuf_state movebuf_state(int fd)
{
	struct movebuf_state st = { .fd = fd };

	if (ioctl(dev, MOVEBUF_STATE, &st))
		die("MOVEBUF_STATE");
	return st;
}

/* MOVEBUF_MOVE: 0 or errno. */
static int movebuf_move(int fd)
{
	return ioctl(dev, MOVEBUF_MOVE, fd) ? errno : 0;
}

/* RDMA WRITE of len bytes of src (pattern seed) into m at iova + off; the status. */
static int write_to(struct ibv_mr *m, uint64_t off, uint32_t len, uint8_t seed)
{
	struct loop_pair c;
	int st;

	loop_pair_new(&c, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	loop_pattern(src, len, seed);
	st = loop_post_a(&c, IBV_WR_RDMA_WRITE, (uintptr_t)src, len, src_mr->lkey, IOVA + off,
			 m->rkey);
	loop_pair_free(&c);
	return st;
}

/* ibv_reg_dmabuf_mr over the whole of fd that must fail: errno, or 0 if it succeeded. */
static int reg_fails(int fd)
{
	struct ibv_mr *m = ibv_reg_dmabuf_mr(pd, 0, SIZE, IOVA, fd, RW);

	if (m) {
		ibv_dereg_mr(m);
		return 0;
	}
	return errno;
}

int main(int argc, char **argv)
{
	struct movebuf_state st;
	struct loop_pair c;
	struct ibv_mr *mr;
	int fd, e, s;

	loop_open(argc, argv);
	dev = open("/dev/rrxe_movebuf", O_RDWR);
	if (dev < 0)
		die("open /dev/rrxe_movebuf");
	src_mr = ibv_reg_mr(pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	if (!src_mr)
		die("ibv_reg_mr");

	/* A movable buffer under an MR: pinned, so it stays where the MR writes. */
	fd = movebuf_new(0);
	mr = ibv_reg_dmabuf_mr(pd, 0, SIZE, IOVA, fd, RW);
	ok(mr != NULL, "ibv_reg_dmabuf_mr over a movable buffer (errno %d)", mr ? 0 : errno);
	if (!mr)
		die("ibv_reg_dmabuf_mr");
	st = movebuf_state(fd);
	ok(st.pins == 1 && st.vmaps == 1 && st.attachments == 1,
	   "the MR holds one pin, one vmap and one attachment (%u, %u, %u)", st.pins, st.vmaps,
	   st.attachments);
	e = movebuf_move(fd);
	ok(e == EBUSY, "the exporter's move of the registered buffer is refused: EBUSY (errno %d)",
	   e);
	s = write_to(mr, 1000, 6000, 1);
	movebuf_read(fd);
	ok(s == IBV_WC_SUCCESS && !memcmp(cur + 1000, src, 6000) && cur[999] == 0xee &&
	   cur[7000] == 0xee,
	   "a peer's RDMA WRITE of 6000 B lands in the buffer's current pages (status %d)", s);
	loop_pair_new(&c, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	memset(src, 0, 3000);
	s = loop_post_a(&c, IBV_WR_RDMA_READ, (uintptr_t)src, 3000, src_mr->lkey, IOVA + 1000,
			mr->rkey);
	loop_pair_free(&c);
	ok(s == IBV_WC_SUCCESS && !memcmp(src, cur + 1000, 3000),
	   "an RDMA READ returns the current pages' bytes (status %d)", s);
	st = movebuf_state(fd);
	ok(st.retired_touched == 0,
	   "nothing written into pages the exporter retired (%u moves, %llu bytes touched)",
	   st.moves, (unsigned long long)st.retired_touched);

	/* Deregistration lets it go: the move proceeds, a new MR reaches the new pages. */
	ok(ibv_dereg_mr(mr) == 0, "deregistering the MR");
	st = movebuf_state(fd);
	ok(st.pins == 0 && st.vmaps == 0 && st.attachments == 0,
	   "deregistration unpins, unmaps and detaches (%u, %u, %u)", st.pins, st.vmaps,
	   st.attachments);
	e = movebuf_move(fd);
	movebuf_read(fd);
	ok(e == 0 && cur[999] == 0xee && cur[1000] == src[0],
	   "the unpinned buffer moves, keeping its contents (errno %d)", e);
	mr = ibv_reg_dmabuf_mr(pd, 0, SIZE, IOVA, fd, RW);
	ok(mr != NULL, "a new MR over the moved buffer (errno %d)", mr ? 0 : errno);
	if (!mr)
		die("ibv_reg_dmabuf_mr after the move");
	s = write_to(mr, 8192, 4096, 2);
	movebuf_read(fd);
	st = movebuf_state(fd);
	ok(s == IBV_WC_SUCCESS && !memcmp(cur + 8192, src, 4096) && st.retired == 1 &&
	   st.retired_touched == 0,
	   "its WRITE lands in the new pages, the retired ones untouched (status %d, %llu bytes)",
	   s, (unsigned long long)st.retired_touched);
	ok(ibv_dereg_mr(mr) == 0, "deregistering it");
	close(fd);

	/* Exporters rrxe cannot use: refused with their errno, nothing left behind. */
	fd = movebuf_new(MOVEBUF_NO_PIN);
	e = reg_fails(fd);
	st = movebuf_state(fd);
	ok(e == EOPNOTSUPP && st.pins == 0 && st.vmaps == 0 && st.attachments == 0,
	   "a buffer its exporter cannot pin is refused: EOPNOTSUPP, nothing held (errno %d; "
	   "%u, %u, %u)", e, st.pins, st.vmaps, st.attachments);
	close(fd);
	fd = movebuf_new(MOVEBUF_FAIL_VMAP);
	e = reg_fails(fd);
	st = movebuf_state(fd);
	ok(e == ENOMEM && st.pins == 0 && st.vmaps == 0 && st.attachments == 0,
	   "a buffer whose vmap fails is refused with its errno: ENOMEM, nothing held (errno %d; "
	   "%u, %u, %u)", e, st.pins, st.vmaps, st.attachments);
	close(fd);

	ibv_dereg_mr(src_mr);
	close(dev);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_end();
}
