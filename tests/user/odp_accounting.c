// SPDX-License-Identifier: GPL-2.0
/*
 * What on-demand-paging MRs may cost the kernel, run inside a cgroup v2 group DIR with the
 * memory controller on (tests/vm/user-accounting.sh). An ODP MR pins nothing, so
 * RLIMIT_MEMLOCK does not bound it, and the RDMA core's page lists for it are charged to
 * no group; rrxe bounds what the ODP MRs of one user context cover (the odp_max_bytes
 * module parameter):
 *   - odp_max_bytes is visible under /sys/module/rrxe/parameters;
 *   - an explicit ODP MR over twice that (address space reserved PROT_NONE), in the group
 *     with memory.max a little above its use, is refused with ENOMEM, counted in
 *     odp_bound_refused, and the host's MemAvailable does not drop by more than the
 *     group's headroom;
 *   - rrxe's own page table of an ODP MR is charged to the group: an MR under the bound
 *     raises memory.current by at least 8 bytes a page while it lives, and one whose table
 *     does not fit under memory.max is refused with ENOMEM, not by the group's OOM killer
 *     (the script checks memory.events, the VM runner the console);
 *   - implicit ODP: a READ sweep over a PROT_NONE range (one READ into each 2 MiB chunk,
 *     each completing with REM_ACCESS_ERR) leaves no child behind (odp_children_made
 *     unchanged); a READ of mapped memory makes one, which is released
 *     (odp_children_reaped) once munmap emptied it and the next fault came.
 *
 *   odp_accounting -d DEV -g GIDX -c CGROUP_DIR
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "cgroup.h"
#include "loop.h"

#define PAGE 4096ull
#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define CHUNK (2 * MIB)
#define SWEEP 32

#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define PAIR_ACCESS (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static const char *devname;
static uint8_t dst[PAGE];

static long long read_file_ll(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static long long cg_ll(const char *file)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", cg, file);
	return read_file_ll(p);
}

/* memory.max = memory.current + headroom bytes. */
static void cg_headroom(long long headroom)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%lld", cg_ll("memory.current") + headroom);
	if (cg_write("memory.max", buf))
		die("memory.max");
}

/*
 * The device counter NAME (rdma statistic's hw_counters), or -1 if there is none. The core
 * answers sysfs from its copy for hw_counters/lifespan (10 ms): wait past it first, so the
 * value is newer than the step before.
 */
static long long counter(const char *name)
{
	char p[256];

	usleep(30 * 1000);
	snprintf(p, sizeof(p), "/sys/class/infiniband/%s/ports/1/hw_counters/%s", devname, name);
	return read_file_ll(p);
}

/* The host's MemAvailable (/proc/meminfo), in KiB; -1 if absent. */
static long long mem_available_kb(void)
{
	const char *key = "MemAvailable:";
	char line[256];
	long long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = strtoll(line + strlen(key), NULL, 10);
	fclose(f);
	return v;
}

/* len bytes of address space, reserved and inaccessible (nothing allocated). */
static uint8_t *reserve(size_t len)
{
	void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		die("mmap PROT_NONE");
	return p;
}

/* An explicit ODP MR over twice odp_max_bytes, in a group with little headroom. */
static void huge_explicit(void)
{
	long long max = read_file_ll("/sys/module/rrxe/parameters/odp_max_bytes");
	unsigned long long huge = 2 * (max > 0 ? (unsigned long long)max : 16 * GIB);
	/* Room for rrxe's table of the huge range (8 bytes a page) and some more. */
	long long headroom = (long long)(huge / PAGE * 8 + 32 * MIB);
	long long refused0 = counter("odp_bound_refused"), avail0, avail1;
	uint8_t *p = reserve(huge);
	struct ibv_mr *mr;
	int err;

	ok(max > 0, "odp_max_bytes is a module parameter (%lld)", max);
	cg_headroom(headroom);
	avail0 = mem_available_kb();
	errno = 0;
	mr = ibv_reg_mr(pd, p, huge, RW | IBV_ACCESS_ON_DEMAND);
	err = errno;
	avail1 = mem_available_kb();
	ok(!mr && err == ENOMEM,
	   "an explicit ODP MR of %llu GiB (twice odp_max_bytes) in a group with %lld MiB of headroom: ENOMEM (errno %d, %s)",
	   huge / GIB, headroom / (long long)MIB, mr ? 0 : err, mr ? "registered" : strerror(err));
	ok(counter("odp_bound_refused") == refused0 + 1, "odp_bound_refused counted it (%lld -> %lld)",
	   refused0, counter("odp_bound_refused"));
	ok(avail0 - avail1 < headroom / 1024,
	   "the host's MemAvailable fell by %lld KiB, less than the group's headroom (%lld KiB)",
	   avail0 - avail1, headroom / 1024);
	if (mr)
		ibv_dereg_mr(mr);
	munmap(p, huge);
	if (cg_write("memory.max", "max"))
		die("memory.max");
}

/* rrxe's page table of an ODP MR is charged to the group. */
static void table_charged(void)
{
	unsigned long long len = 4 * GIB, table = len / PAGE * 8;
	uint8_t *p = reserve(2 * len);
	long long m0, m1, m2;
	struct ibv_mr *mr;
	int err;

	m0 = cg_ll("memory.current");
	mr = ibv_reg_mr(pd, p, len, RW | IBV_ACCESS_ON_DEMAND);
	m1 = cg_ll("memory.current");
	ok(mr && m1 - m0 >= (long long)table * 9 / 10,
	   "an explicit ODP MR of %llu GiB raised memory.current by %lld KiB (its table: %llu KiB)",
	   len / GIB, (m1 - m0) / 1024, table / 1024);
	if (mr)
		ibv_dereg_mr(mr);
	m2 = cg_ll("memory.current");
	ok(m1 - m2 >= (long long)table * 9 / 10, "deregistering it lowered it by %lld KiB",
	   (m1 - m2) / 1024);

	cg_headroom((long long)table / 2);
	errno = 0;
	mr = ibv_reg_mr(pd, p, 2 * len, RW | IBV_ACCESS_ON_DEMAND);
	err = errno;
	ok(!mr && err == ENOMEM,
	   "an explicit ODP MR of %llu GiB whose table does not fit under memory.max: ENOMEM (errno %d)",
	   2 * len / GIB, mr ? 0 : err);
	if (mr)
		ibv_dereg_mr(mr);
	if (cg_write("memory.max", "max"))
		die("memory.max");
	munmap(p, 2 * len);
}

/* A READ of len bytes at addr through rkey by a new pair's QP A; the completion status. */
static int read_at(uint64_t addr, uint32_t rkey, uint32_t lkey, uint32_t len)
{
	struct loop_pair c;
	int st;

	loop_pair_new_opts(&c, PAIR_ACCESS, 14, 7, 7);
	st = loop_post_a(&c, IBV_WR_RDMA_READ, (uintptr_t)dst, len, lkey, addr, rkey);
	loop_pair_free(&c);
	return st;
}

/* Implicit ODP children: none left by failed faults, emptied ones released. */
static void implicit_children(struct ibv_mr *dst_mr)
{
	uint8_t *res = reserve((SWEEP + 1) * CHUNK), *none, *buf;
	long long made0 = counter("odp_children_made"), reaped0, made1;
	struct ibv_mr *mr;
	int st, errs = 0;

	mr = ibv_reg_mr(pd, NULL, SIZE_MAX, RW | IBV_ACCESS_ON_DEMAND);
	ok(mr != NULL, "implicit ODP MR (errno %d)", mr ? 0 : errno);
	if (!mr)
		return;
	none = (uint8_t *)(((uintptr_t)res + CHUNK - 1) & ~(uintptr_t)(CHUNK - 1));
	for (int i = 0; i < SWEEP; i++) {
		st = read_at((uintptr_t)none + i * CHUNK + PAGE, mr->rkey, dst_mr->lkey, 64);
		errs += st == IBV_WC_REM_ACCESS_ERR;
		if (st != IBV_WC_REM_ACCESS_ERR)
			printf("# READ of chunk %d: status %d\n", i, st);
	}
	made1 = counter("odp_children_made");
	ok(errs == SWEEP, "a READ into each of %d 2 MiB chunks of a PROT_NONE range: REM_ACCESS_ERR (%d)",
	   SWEEP, errs);
	ok(made0 >= 0 && made1 == made0,
	   "the sweep left no implicit ODP child behind (odp_children_made %lld -> %lld)", made0,
	   made1);
	munmap(res, (SWEEP + 1) * CHUNK);

	/* Two mapped chunks: a READ of the first makes one child. */
	res = mmap(NULL, 3 * CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		die("mmap");
	buf = (uint8_t *)(((uintptr_t)res + CHUNK - 1) & ~(uintptr_t)(CHUNK - 1));
	loop_pattern(buf, 2 * PAGE, 40);
	loop_pattern(buf + CHUNK, 2 * PAGE, 41);
	memset(dst, 0, sizeof(dst));
	st = read_at((uintptr_t)buf + 100, mr->rkey, dst_mr->lkey, 3000);
	ok(st == IBV_WC_SUCCESS && !memcmp(dst, buf + 100, 3000),
	   "a READ of mapped memory through the implicit MR returns its bytes (status %d)", st);
	ok(counter("odp_children_made") == made1 + 1, "it made one child (odp_children_made %lld)",
	   counter("odp_children_made"));
	/* munmap of that chunk empties its child; the next fault releases it. */
	reaped0 = counter("odp_children_reaped");
	munmap(buf, CHUNK);
	memset(dst, 0, sizeof(dst));
	st = read_at((uintptr_t)buf + CHUNK + 200, mr->rkey, dst_mr->lkey, 3000);
	ok(st == IBV_WC_SUCCESS && !memcmp(dst, buf + CHUNK + 200, 3000),
	   "after munmap of the first chunk, a READ of the second returns its bytes (status %d)", st);
	ok(reaped0 >= 0 && counter("odp_children_reaped") == reaped0 + 1,
	   "the child munmap emptied was released (odp_children_reaped %lld -> %lld)", reaped0,
	   counter("odp_children_reaped"));
	ok(!ibv_dereg_mr(mr), "ibv_dereg_mr of the implicit MR");
	munmap(res, 3 * CHUNK);
}

int main(int argc, char **argv)
{
	struct ibv_mr *dst_mr;
	int c;

	/* -c DIR is ours; the rest is loop_open's (-d DEV -g GIDX). */
	while ((c = getopt(argc, argv, "d:g:c:")) != -1) {
		if (c == 'c')
			cg = optarg;
		else if (c == 'd')
			devname = optarg;
	}
	if (!cg || !devname)
		die("usage: odp_accounting -d DEV -g GIDX -c CGROUP_DIR");
	optind = 1;
	opterr = 0;
	loop_open(argc, argv);
	dst_mr = ibv_reg_mr(pd, dst, sizeof(dst), RW);
	if (!dst_mr)
		die("ibv_reg_mr");
	huge_explicit();
	table_charged();
	implicit_children(dst_mr);
	ibv_dereg_mr(dst_mr);
	return tap_end();
}
