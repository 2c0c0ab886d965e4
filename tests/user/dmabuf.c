// SPDX-License-Identifier: GPL-2.0
/*
 * dma-buf memory regions over rrxe (TAP output, one host, two RC QPs of this process
 * connected to each other). The dma-buf is a udmabuf: a sealed memfd turned into a dma-buf
 * by /dev/udmabuf; the memfd's own mapping shows what the RDMA traffic did to its pages.
 *   - ibv_reg_dmabuf_mr over the whole buffer: RDMA WRITE into it (across a page boundary),
 *     SEND into it, RDMA READ out of it, a FETCH_ADD on it and a WRITE sourced from it,
 *     each checked byte for byte through the memfd; a remote WRITE past its end is refused
 *     (REM_ACCESS_ERR, nothing written) and so is a local SGE past its end (LOC_PROT_ERR);
 *   - a second MR at a non-zero offset of the same buffer: data lands at that offset;
 *     deregistering it leaves the first working;
 *   - refused: a closed fd (EBADF), an fd that is not a dma-buf (EINVAL), a range past the
 *     buffer's end, an empty or wrapping range (EINVAL), on-demand paging and remote write
 *     without local write (EINVAL);
 *   - the MR holds the buffer: with the dma-buf fd closed the MR still works; deregistering
 *     it releases the buffer (the exporter's object count in debugfs' dma_buf/bufinfo drops
 *     back, when debugfs is mounted).
 *
 *   dmabuf -d DEV -g GIDX
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <linux/udmabuf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "loop.h"

#define PAGE 4096
#define SIZE (4 * PAGE)
/* The IOVA the whole-buffer MR is registered at (page aligned, as its offset 0 is). */
#define IOVA 0x100000ull

static uint8_t src[SIZE];
static struct ibv_mr *src_mr;
static uint8_t *mem; /* the memfd's mapping: the dma-buf's bytes */

/* The remote access of the pairs' QPs: atomics too (the FETCH_ADD). */
#define PAIR_ACCESS (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* RDMA WRITE of len bytes of src into the dma-buf MR at iova; the status. */
static int write_to(struct loop_pair *c, struct ibv_mr *m, uint64_t iova, uint32_t len)
{
	return loop_post_a(c, IBV_WR_RDMA_WRITE, (uintptr_t)src, len, src_mr->lkey, iova, m->rkey);
}

/* Objects of exporter "udmabuf" in debugfs' dma_buf/bufinfo; -1 if it cannot be read. */
static int udmabuf_objects(void)
{
	FILE *f = fopen("/sys/kernel/debug/dma_buf/bufinfo", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "udmabuf") != NULL;
	fclose(f);
	return n;
}

/* A udmabuf over a new sealed memfd of SIZE bytes (mapped at mem); its fd. */
static int make_udmabuf(int *memfd)
{
	struct udmabuf_create cr = { .flags = UDMABUF_FLAGS_CLOEXEC, .offset = 0, .size = SIZE };
	int dev, fd;

	*memfd = memfd_create("rrxe-dmabuf", MFD_ALLOW_SEALING);
	if (*memfd < 0 || ftruncate(*memfd, SIZE) || fcntl(*memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		die("memfd");
	mem = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, *memfd, 0);
	if (mem == MAP_FAILED)
		die("mmap memfd");
	dev = open("/dev/udmabuf", O_RDWR);
	if (dev < 0)
		die("open /dev/udmabuf");
	cr.memfd = *memfd;
	fd = ioctl(dev, UDMABUF_CREATE, &cr);
	close(dev);
	return fd;
}

/* ibv_reg_dmabuf_mr that must fail: errno, or 0 if it succeeded (then deregistered). */
static int reg_fails(uint64_t off, size_t len, uint64_t iova, int fd, int access)
{
	struct ibv_mr *m = ibv_reg_dmabuf_mr(pd, off, len, iova, fd, access);

	if (m) {
		ibv_dereg_mr(m);
		return 0;
	}
	return errno;
}

int main(int argc, char **argv)
{
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_mr *mr, *mr2;
	int memfd, fd, st, before, e, live;
	struct loop_pair c;

	loop_open(argc, argv);
	src_mr = ibv_reg_mr(pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	if (!src_mr)
		die("ibv_reg_mr");
	before = udmabuf_objects();
	fd = make_udmabuf(&memfd);
	ok(fd >= 0, "udmabuf of a sealed %d-byte memfd (fd %d)", SIZE, fd);
	if (fd < 0)
		die("UDMABUF_CREATE");

	memset(mem, 0xee, SIZE);
	mr = ibv_reg_dmabuf_mr(pd, 0, SIZE, IOVA, fd, rw | IBV_ACCESS_REMOTE_ATOMIC);
	ok(mr && mr->lkey && mr->length == SIZE && mr->addr == NULL,
	   "ibv_reg_dmabuf_mr over the whole buffer (errno %d)", mr ? 0 : errno);
	if (!mr)
		die("ibv_reg_dmabuf_mr");

	/* Data through it, checked through the memfd. */
	loop_pair_new(&c, PAIR_ACCESS);
	loop_pattern(src, 6000, 1);
	st = write_to(&c, mr, IOVA + 1000, 6000);
	ok(st == IBV_WC_SUCCESS && !memcmp(mem + 1000, src, 6000) && mem[999] == 0xee &&
	   mem[7000] == 0xee,
	   "RDMA WRITE of 6000 B at offset 1000 (across pages) lands exactly (status %d)", st);
	{
		struct ibv_sge s = { IOVA + 9000, 2000, mr->lkey };
		struct ibv_recv_wr r = { .wr_id = 3, .sg_list = &s, .num_sge = 1 }, *bad;
		struct ibv_wc wc = { 0 };
		int rst = -9;

		loop_pattern(src, 2000, 2);
		if (ibv_post_recv(c.b, &r, &bad))
			die("ibv_post_recv");
		st = loop_post_a(&c, IBV_WR_SEND, (uintptr_t)src, 2000, src_mr->lkey, 0, 0);
		if (st == IBV_WC_SUCCESS)
			rst = wait_wc(c.cqb, &wc);
		ok(st == IBV_WC_SUCCESS && rst == IBV_WC_SUCCESS && wc.byte_len == 2000 &&
		   !memcmp(mem + 9000, src, 2000) && mem[11000] == 0xee,
		   "SEND of 2000 B received into the dma-buf MR at offset 9000 (status %d/%d)", st,
		   rst);
	}
	loop_pattern(mem + 12000, 3000, 3);
	memset(src, 0, 3000);
	st = loop_post_a(&c, IBV_WR_RDMA_READ, (uintptr_t)src, 3000, src_mr->lkey, IOVA + 12000,
		    mr->rkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(src, mem + 12000, 3000),
	   "RDMA READ of 3000 B out of it returns the memfd's bytes (status %d)", st);
	{
		uint64_t v = 0x1122334455667788ull, old = 0;
		struct ibv_sge s = { (uintptr_t)src, 8, src_mr->lkey };
		struct ibv_send_wr w = { .wr_id = 8, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					 .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc;

		memcpy(mem + 64, &v, 8);
		w.wr.atomic.remote_addr = IOVA + 64;
		w.wr.atomic.rkey = mr->rkey;
		w.wr.atomic.compare_add = 5;
		st = ibv_post_send(c.a, &w, &bad) ? -2 : wait_wc(c.cqa, &wc);
		memcpy(&old, src, 8);
		memcpy(&v, mem + 64, 8);
		ok(st == IBV_WC_SUCCESS && old == 0x1122334455667788ull &&
		   v == 0x1122334455667788ull + 5,
		   "FETCH_ADD on a word of it returns the old value and adds (status %d)", st);
	}
	/* The dma-buf MR as the local source: A writes from it into B's view of itself. */
	loop_pattern(mem, 512, 4);
	st = loop_post_a(&c, IBV_WR_RDMA_WRITE, IOVA, 512, mr->lkey, IOVA + SIZE - 512, mr->rkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(mem + SIZE - 512, mem, 512),
	   "RDMA WRITE sourced from it (local SGE with its lkey) (status %d)", st);

	memset(mem + SIZE - 8, 0xee, 8);
	st = write_to(&c, mr, IOVA + SIZE - 8, 16);
	ok(st == IBV_WC_REM_ACCESS_ERR && mem[SIZE - 8] == 0xee,
	   "a WRITE running 8 B past its end is refused, nothing written (status %d)", st);
	loop_pair_free(&c);
	loop_pair_new(&c, PAIR_ACCESS);
	st = loop_post_a(&c, IBV_WR_RDMA_WRITE, IOVA + SIZE - 8, 16, mr->lkey, (uintptr_t)src,
		    src_mr->rkey);
	ok(st == IBV_WC_LOC_PROT_ERR, "a local SGE running past its end: LOC_PROT_ERR (status %d)",
	   st);
	loop_pair_free(&c);

	/* A second MR at an offset of the same buffer (offset and IOVA agree within a page). */
	loop_pair_new(&c, PAIR_ACCESS);
	mr2 = ibv_reg_dmabuf_mr(pd, PAGE + 256, 1024, 0x200100, fd, rw);
	ok(mr2 && mr2->length == 1024 && (uintptr_t)mr2->addr == PAGE + 256,
	   "ibv_reg_dmabuf_mr of 1024 B at offset 4352 of the same buffer (errno %d)",
	   mr2 ? 0 : errno);
	if (!mr2)
		die("ibv_reg_dmabuf_mr offset");
	memset(mem, 0xee, SIZE);
	loop_pattern(src, 1024, 5);
	st = write_to(&c, mr2, 0x200100, 1024);
	ok(st == IBV_WC_SUCCESS && !memcmp(mem + PAGE + 256, src, 1024) &&
	   mem[PAGE + 255] == 0xee && mem[PAGE + 256 + 1024] == 0xee,
	   "a WRITE to its IOVA lands at offset 4352 of the buffer (status %d)", st);
	st = write_to(&c, mr2, 0x200100 + 1020, 8);
	ok(st == IBV_WC_REM_ACCESS_ERR && mem[PAGE + 256 + 1024] == 0xee,
	   "a WRITE past the end of the offset MR is refused (status %d)", st);
	loop_pair_free(&c);
	ok(ibv_dereg_mr(mr2) == 0, "deregistering the offset MR");
	loop_pair_new(&c, PAIR_ACCESS);
	loop_pattern(src, 100, 6);
	st = write_to(&c, mr, IOVA + 200, 100);
	ok(st == IBV_WC_SUCCESS && !memcmp(mem + 200, src, 100),
	   "the first MR still works after the second is deregistered (status %d)", st);

	/* Refusals. */
	{
		int nfd = open("/dev/null", O_RDONLY);

		close(nfd);
		e = reg_fails(0, SIZE, 0, nfd, rw);
		ok(e == EBADF, "a closed fd: EBADF (errno %d)", e);
	}
	e = reg_fails(0, SIZE, 0, memfd, rw);
	ok(e == EINVAL, "an fd that is not a dma-buf (the memfd): EINVAL (errno %d)", e);
	e = reg_fails(0, SIZE + PAGE, 0, fd, rw);
	ok(e == EINVAL, "length past the buffer's end: EINVAL (errno %d)", e);
	e = reg_fails(PAGE, SIZE, PAGE, fd, rw);
	ok(e == EINVAL, "offset + length past the buffer's end: EINVAL (errno %d)", e);
	e = reg_fails(SIZE, 1, SIZE, fd, rw);
	ok(e == EINVAL, "offset at the buffer's end: EINVAL (errno %d)", e);
	e = reg_fails(0, 0, 0, fd, rw);
	ok(e == EINVAL, "length 0: EINVAL (errno %d)", e);
	e = reg_fails(UINT64_MAX & ~(uint64_t)(PAGE - 1), 2 * PAGE, 0, fd, rw);
	ok(e == EINVAL, "an offset + length that wraps: EINVAL (errno %d)", e);
	e = reg_fails(0, SIZE, UINT64_MAX & ~(uint64_t)(PAGE - 1), fd, rw);
	ok(e == EINVAL, "an IOVA + length that wraps: EINVAL (errno %d)", e);
	e = reg_fails(0, SIZE, 0, fd, rw | IBV_ACCESS_ON_DEMAND);
	ok(e == EINVAL, "IBV_ACCESS_ON_DEMAND: EINVAL (errno %d)", e);
	e = reg_fails(0, SIZE, 0, fd, IBV_ACCESS_REMOTE_WRITE);
	ok(e == EINVAL, "remote write without local write: EINVAL (errno %d)", e);
	e = reg_fails(0, SIZE, 123, fd, rw);
	ok(e == EINVAL, "offset and IOVA that differ within a page: EINVAL (errno %d)", e);

	/* The MR keeps the buffer alive; deregistering releases it. */
	close(fd);
	loop_pattern(src, 300, 7);
	st = write_to(&c, mr, IOVA + 3000, 300);
	ok(st == IBV_WC_SUCCESS && !memcmp(mem + 3000, src, 300),
	   "with the dma-buf fd closed the MR still works (status %d)", st);
	loop_pair_free(&c);
	live = udmabuf_objects();
	ok(ibv_dereg_mr(mr) == 0, "deregistering the dma-buf MR");
	e = udmabuf_objects();
	if (before < 0)
		printf("ok %d - # SKIP debugfs dma_buf/bufinfo not readable\n", ++tap_n);
	else
		ok(live == before + 1 && e == before,
		   "the buffer is released at deregistration (udmabuf objects %d -> %d -> %d)",
		   before, live, e);
	munmap(mem, SIZE);
	close(memfd);
	ibv_dereg_mr(src_mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_end();
}
