// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand-paging memory regions over rrxe (TAP output, one host, RC QPs of this process
 * connected to each other). An ODP MR pins nothing: the kernel faults its pages in when the
 * wire or the send queue reaches them, and drops them when the process unmaps them.
 *   - query_device_ex advertises ODP (explicit and implicit) for RC SEND, RECV, WRITE, READ
 *     and atomics; registering pins no page (VmPin unchanged, where a plain MR of the same
 *     size raises it);
 *   - explicit ODP over never-touched anonymous memory: RDMA WRITE into it, READ out of it
 *     (of touched and untouched pages), SEND received into it, FETCH_ADD and CMP_SWP on it,
 *     and as the local side: WRITE and SEND sourced from it, READ responses placed into it;
 *     each checked byte for byte;
 *   - the mapping changes under the MR: after munmap + mmap of the same addresses a READ
 *     returns the new pages' bytes and a WRITE lands in the new pages; pages dropped from a
 *     live mapping (a hole punched in the shared memfd an ODP MR maps; the guest kernel
 *     has no madvise) read as zeros afterwards, their neighbours unchanged (the old pages
 *     were invalidated, not kept);
 *   - an unmapped page is an error, not a hang: a remote WRITE to it completes with
 *     REM_ACCESS_ERR, a local SGE on it with LOC_PROT_ERR;
 *   - ibv_advise_mr: PREFETCH / PREFETCH_WRITE (synchronous with FLAG_FLUSH) and
 *     PREFETCH_NO_FAULT succeed on an ODP MR; a key that is not an ODP MR is refused
 *     (EINVAL), an advice out of range too (EINVAL);
 *   - implicit ODP (address 0, length SIZE_MAX): WRITE/READ/SEND/FETCH_ADD at addresses
 *     spread over a 1 GiB sparse mapping, and as the local side; an unmapped address through
 *     it is REM_ACCESS_ERR;
 *   - ATOMIC WRITE into a never-touched ODP page; on Linux 7.x the FLUSH and ATOMIC WRITE
 *     ODP capability bits;
 *   - refused: ODP with remote write but no local write (EINVAL, as for any MR).
 * The QPs retry RNR without limit (rnr_retry 7): a responder that must fault a page first
 * answers RNR NAK, as mlx5 does, and the requester comes back.
 *
 *   odp -d DEV -g GIDX
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "tap.h"
#include "loop.h"

#define PAGE 4096
#define SIZE (16 * PAGE)
#define BIG (1ull << 30)

#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define ALL (RW | IBV_ACCESS_REMOTE_ATOMIC)
#define PAIR_ACCESS (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static uint8_t src[SIZE], dst[SIZE];
static struct ibv_mr *src_mr, *dst_mr;

/* An atomic by QP A on (raddr, rkey), the old value landing in src[0..8]; the status. */
static int atomic_a(struct loop_pair *c, enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
		    uint64_t cmp_add, uint64_t swap)
{
	struct ibv_sge s = { (uintptr_t)src, 8, src_mr->lkey };
	struct ibv_send_wr w = { .wr_id = 8, .sg_list = &s, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	w.wr.atomic.remote_addr = raddr;
	w.wr.atomic.rkey = rkey;
	w.wr.atomic.compare_add = cmp_add;
	w.wr.atomic.swap = swap;
	if (ibv_post_send(c->a, &w, &bad))
		return -2;
	return wait_wc(c->cqa, &wc);
}

/* SEND of len bytes from (laddr, lkey) by A into B's receive buffer (raddr, rlkey); both
 * statuses packed as send * 100 + recv (negative: a post failed or nothing completed). */
static int send_recv(struct loop_pair *c, uint64_t laddr, uint32_t lkey, uint64_t raddr,
		     uint32_t rlkey, uint32_t len, uint32_t *got)
{
	struct ibv_sge s = { raddr, len, rlkey };
	struct ibv_recv_wr r = { .wr_id = 3, .sg_list = &s, .num_sge = 1 }, *bad;
	struct ibv_wc wc = { 0 };
	int st, rst;

	if (ibv_post_recv(c->b, &r, &bad))
		return -3;
	st = loop_post_a(c, IBV_WR_SEND, laddr, len, lkey, 0, 0);
	if (st != IBV_WC_SUCCESS)
		return st < 0 ? st : st * 100;
	rst = wait_wc(c->cqb, &wc);
	*got = wc.byte_len;
	return rst < 0 ? -4 : rst;
}

static int all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

/* VmPin of this process in kB (pages pinned by MRs), or -1. */
static long vm_pin_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Fresh anonymous pages at addr (MAP_FIXED when addr is given): never touched. */
static uint8_t *anon(void *addr, size_t len)
{
	void *p = mmap(addr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (addr ? MAP_FIXED : 0), -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

static int advise(struct ibv_mr *m, enum ibv_advise_mr_advice advice, uint32_t flags,
		  uint64_t addr, uint32_t len)
{
	struct ibv_sge s = { addr, len, m->lkey };

	return ibv_advise_mr(pd, advice, flags, &s, 1);
}

/*
 * The ODP capability bits of FLUSH and ATOMIC WRITE, as the kernel's uapi numbers them
 * (IB_UVERBS_ODP_SUPPORT_FLUSH, _ATOMIC_WRITE; rdma-core 65's IBV_ODP_SUPPORT_FLUSH, older
 * verbs.h lack them). Linux 6.16 and later cores have them; rrxe sets them there.
 */
#define ODP_FLUSH (1u << 6)
#define ODP_ATOMIC_WRITE (1u << 7)

static int kernel_major(void)
{
	struct utsname u;

	return uname(&u) ? 0 : atoi(u.release);
}

static void caps(void)
{
	struct ibv_device_attr_ex a;
	const uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
			    IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC;
	int r;

	memset(&a, 0, sizeof(a));
	r = ibv_query_device_ex(ctx, NULL, &a);
	ok(!r && (a.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
	   (a.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT) &&
	   (a.odp_caps.per_transport_caps.rc_odp_caps & rc) == rc,
	   "query_device_ex: ODP, implicit ODP, RC send/recv/write/read/atomic (general 0x%llx rc 0x%x uc 0x%x ud 0x%x)",
	   (unsigned long long)a.odp_caps.general_caps, a.odp_caps.per_transport_caps.rc_odp_caps,
	   a.odp_caps.per_transport_caps.uc_odp_caps, a.odp_caps.per_transport_caps.ud_odp_caps);
	if (kernel_major() >= 7)
		ok((a.odp_caps.per_transport_caps.rc_odp_caps & (ODP_FLUSH | ODP_ATOMIC_WRITE)) ==
			   (ODP_FLUSH | ODP_ATOMIC_WRITE),
		   "query_device_ex on Linux %d: RC ODP FLUSH and ATOMIC WRITE (rc 0x%x)", kernel_major(),
		   a.odp_caps.per_transport_caps.rc_odp_caps);
	else
		ok(!(a.odp_caps.per_transport_caps.rc_odp_caps & (ODP_FLUSH | ODP_ATOMIC_WRITE)),
		   "query_device_ex on Linux %d (no such bits in its core): no FLUSH or ATOMIC WRITE bit (rc 0x%x)",
		   kernel_major(), a.odp_caps.per_transport_caps.rc_odp_caps);
}

/* ATOMIC WRITE (an extended QP's ibv_wr_atomic_write) into a never-touched ODP page: the
 * responder faults the page in (RNR NAK first) and the 8 bytes land as given. */
static void atomic_write_odp(void)
{
	uint8_t *m = anon(NULL, SIZE);
	const uint8_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct ibv_cq *cqa = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_cq *cqb = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp_attr at = { .qp_access_flags = PAIR_ACCESS };
	struct ibv_mr *mr;
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *ax;
	struct ibv_wc wc;
	int r, st;

	if (!cqa || !cqb)
		die("ibv_create_cq");
	mr = ibv_reg_mr(pd, m, SIZE, ALL | IBV_ACCESS_ON_DEMAND);
	if (!mr)
		die("ibv_reg_mr ODP");
	a = loop_rc_qp(cqa, NULL, 1, IBV_QP_EX_WITH_ATOMIC_WRITE);
	b = loop_rc_qp(cqb, NULL, 1, 0);
	if (ibv_modify_qp(a, &at, IBV_QP_ACCESS_FLAGS) || ibv_modify_qp(b, &at, IBV_QP_ACCESS_FLAGS))
		die("INIT -> INIT access flags");
	to_rts_opts(a, b->qp_num, &gid, 1, 14, 7, 7);
	to_rts_opts(b, a->qp_num, &gid, 1, 14, 7, 7);
	ax = ibv_qp_to_qp_ex(a);
	if (!ax)
		die("ibv_qp_to_qp_ex");
	ibv_wr_start(ax);
	ax->wr_id = 1;
	ax->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(ax, mr->rkey, (uintptr_t)m + 9 * PAGE + 64, v);
	r = ibv_wr_complete(ax);
	st = r ? -2 : wait_wc(cqa, &wc);
	ok(st == IBV_WC_SUCCESS && !memcmp(m + 9 * PAGE + 64, v, 8) && !m[9 * PAGE + 63] &&
	   !m[9 * PAGE + 72],
	   "ATOMIC WRITE into an untouched ODP page: the 8 bytes land, nothing around them (ret %d, status %d)",
	   r, st);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(cqa);
	ibv_destroy_cq(cqb);
	ibv_dereg_mr(mr);
	munmap(m, SIZE);
}

static void explicit_odp(void)
{
	uint8_t *m = anon(NULL, SIZE);
	long pin0 = vm_pin_kb(), pin1, pin2;
	struct ibv_mr *mr, *plain;
	struct loop_pair c;
	uint64_t v, base;
	uint32_t got = 0;
	int st;

	mr = ibv_reg_mr(pd, m, SIZE, ALL | IBV_ACCESS_ON_DEMAND);
	ok(mr != NULL, "ibv_reg_mr ODP over %d never-touched bytes (errno %d)", SIZE,
	   mr ? 0 : errno);
	if (!mr)
		die("ibv_reg_mr ODP");
	base = (uintptr_t)m;
	pin1 = vm_pin_kb();
	plain = ibv_reg_mr(pd, anon(NULL, SIZE), SIZE, RW);
	pin2 = vm_pin_kb();
	ok(pin0 >= 0 && pin1 == pin0 && plain && pin2 == pin1 + SIZE / 1024,
	   "the ODP MR pins nothing (VmPin %ld -> %ld kB), a plain one of the same size does (-> %ld kB)",
	   pin0, pin1, pin2);
	if (plain)
		ibv_dereg_mr(plain);

	loop_pair_new_opts(&c, PAIR_ACCESS, 14, 7, 7);
	loop_pattern(src, 6000, 1);
	st = loop_post_a(&c, IBV_WR_RDMA_WRITE, (uintptr_t)src, 6000, src_mr->lkey, base + 1000,
		    mr->rkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(m + 1000, src, 6000) && m[999] == 0 && m[7000] == 0,
	   "RDMA WRITE of 6000 B into untouched ODP pages (offset 1000) lands exactly (status %d)",
	   st);
	loop_pattern(m + 12000, 3000, 2);
	memset(dst, 0xee, 3000);
	st = loop_post_a(&c, IBV_WR_RDMA_READ, (uintptr_t)dst, 3000, dst_mr->lkey, base + 12000,
		    mr->rkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(dst, m + 12000, 3000),
	   "RDMA READ of 3000 B out of it returns the CPU's bytes (status %d)", st);
	memset(dst, 0xee, PAGE);
	st = loop_post_a(&c, IBV_WR_RDMA_READ, (uintptr_t)dst, PAGE, dst_mr->lkey, base + 10 * PAGE,
		    mr->rkey);
	ok(st == IBV_WC_SUCCESS && all_zero(dst, PAGE),
	   "RDMA READ of an untouched page returns zeros (status %d)", st);
	loop_pattern(src, 2000, 3);
	st = send_recv(&c, (uintptr_t)src, src_mr->lkey, base + 5 * PAGE + 100, mr->lkey, 2000,
		       &got);
	ok(st == IBV_WC_SUCCESS && got == 2000 && !memcmp(m + 5 * PAGE + 100, src, 2000),
	   "SEND of 2000 B received into untouched ODP pages (status %d, %u B)", st, got);
	st = atomic_a(&c, IBV_WR_ATOMIC_FETCH_AND_ADD, base + 8 * PAGE + 64, mr->rkey, 5, 0);
	memcpy(&v, m + 8 * PAGE + 64, 8);
	ok(st == IBV_WC_SUCCESS && *(uint64_t *)src == 0 && v == 5,
	   "FETCH_ADD on an untouched ODP word returns 0 and adds 5 (status %d, now %llu)", st,
	   (unsigned long long)v);
	st = atomic_a(&c, IBV_WR_ATOMIC_CMP_AND_SWP, base + 8 * PAGE + 64, mr->rkey, 5, 77);
	memcpy(&v, m + 8 * PAGE + 64, 8);
	ok(st == IBV_WC_SUCCESS && *(uint64_t *)src == 5 && v == 77,
	   "CMP_SWP on it swaps 5 for 77 (status %d, now %llu)", st, (unsigned long long)v);

	/* The ODP MR as the local side. */
	memset(dst, 0, SIZE);
	st = loop_post_a(&c, IBV_WR_RDMA_WRITE, base + 1000, 6000, mr->lkey, (uintptr_t)dst + 100,
		    dst_mr->rkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(dst + 100, m + 1000, 6000),
	   "RDMA WRITE sourced from the ODP MR (status %d)", st);
	memset(dst, 0, SIZE);
	st = send_recv(&c, base + 12000, mr->lkey, (uintptr_t)dst, dst_mr->lkey, 3000, &got);
	ok(st == IBV_WC_SUCCESS && got == 3000 && !memcmp(dst, m + 12000, 3000),
	   "SEND sourced from the ODP MR (status %d, %u B)", st, got);
	loop_pattern(src, 5000, 4);
	st = loop_post_a(&c, IBV_WR_RDMA_READ, base + 13 * PAGE + 10, 5000, mr->lkey, (uintptr_t)src,
		    src_mr->rkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(m + 13 * PAGE + 10, src, 5000),
	   "RDMA READ responses placed into untouched ODP pages (status %d)", st);

	/* The mapping changes under the MR. */
	anon(m, SIZE);
	loop_pattern(m + 12000, 3000, 5);
	memset(dst, 0xee, 3000);
	st = loop_post_a(&c, IBV_WR_RDMA_READ, (uintptr_t)dst, 3000, dst_mr->lkey, base + 12000,
		    mr->rkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(dst, m + 12000, 3000),
	   "after munmap+mmap of the range, READ returns the new pages' bytes (status %d)", st);
	loop_pattern(src, 6000, 6);
	st = loop_post_a(&c, IBV_WR_RDMA_WRITE, (uintptr_t)src, 6000, src_mr->lkey, base + 1000,
		    mr->rkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(m + 1000, src, 6000),
	   "after the remap, WRITE lands in the new pages (status %d)", st);
	/* ibv_advise_mr. */
	st = advise(mr, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, base, SIZE);
	ok(st == 0, "ibv_advise_mr PREFETCH_WRITE, FLUSH over the MR: %d", st);
	st = advise(mr, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, base + PAGE, PAGE);
	ok(st == 0, "ibv_advise_mr PREFETCH of a page, without FLUSH: %d", st);
	st = advise(mr, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, IBV_ADVISE_MR_FLAG_FLUSH, base,
		    SIZE);
	ok(st == 0, "ibv_advise_mr PREFETCH_NO_FAULT: %d", st);
	st = advise(src_mr, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH,
		    (uintptr_t)src, PAGE);
	ok(st == EINVAL, "ibv_advise_mr on a pinned MR: EINVAL (%d)", st);
	st = advise(mr, (enum ibv_advise_mr_advice)7, IBV_ADVISE_MR_FLAG_FLUSH, base, PAGE);
	ok(st == EINVAL, "ibv_advise_mr with advice 7: EINVAL (%d)", st);

	/* An unmapped page: an error completion, not an endless RNR. */
	if (munmap(m + 6 * PAGE, PAGE))
		die("munmap");
	st = loop_post_a(&c, IBV_WR_RDMA_WRITE, (uintptr_t)src, 100, src_mr->lkey, base + 6 * PAGE,
		    mr->rkey);
	ok(st == IBV_WC_REM_ACCESS_ERR, "WRITE to an unmapped page of the MR: REM_ACCESS_ERR (%d)",
	   st);
	loop_pair_free(&c);
	loop_pair_new_opts(&c, PAIR_ACCESS, 14, 7, 7);
	st = loop_post_a(&c, IBV_WR_RDMA_WRITE, base + 6 * PAGE, 100, mr->lkey, (uintptr_t)dst,
		    dst_mr->rkey);
	ok(st == IBV_WC_LOC_PROT_ERR, "a local SGE on an unmapped page: LOC_PROT_ERR (%d)", st);
	loop_pair_free(&c);
	ok(!ibv_dereg_mr(mr), "ibv_dereg_mr of the ODP MR");
	munmap(m, SIZE);
}

/* Pages dropped from a live mapping, which stays: a hole punched in a shared memfd. */
static void punch_hole(void)
{
	int fd = memfd_create("rrxe-odp", 0);
	struct loop_pair c;
	struct ibv_mr *mr;
	uint8_t *m;
	int st, st2;

	if (fd < 0 || ftruncate(fd, 4 * PAGE))
		die("memfd");
	m = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		die("mmap memfd");
	mr = ibv_reg_mr(pd, m, 4 * PAGE, RW | IBV_ACCESS_ON_DEMAND);
	if (!mr)
		die("ibv_reg_mr ODP memfd");
	loop_pair_new_opts(&c, PAIR_ACCESS, 14, 7, 7);
	loop_pattern(m, 4 * PAGE, 7);
	memset(dst, 0xee, 4 * PAGE);
	st = loop_post_a(&c, IBV_WR_RDMA_READ, (uintptr_t)dst, 4 * PAGE, dst_mr->lkey, (uintptr_t)m,
		    mr->rkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(dst, m, 4 * PAGE),
	   "READ of an ODP MR over a shared memfd (status %d)", st);
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, PAGE, 2 * PAGE))
		die("fallocate PUNCH_HOLE");
	memset(dst, 0xee, 4 * PAGE);
	st2 = loop_post_a(&c, IBV_WR_RDMA_READ, (uintptr_t)dst, 4 * PAGE, dst_mr->lkey, (uintptr_t)m,
		     mr->rkey);
	ok(st2 == IBV_WC_SUCCESS && all_zero(dst + PAGE, 2 * PAGE) && !memcmp(dst, m, PAGE) &&
	   !memcmp(dst + 3 * PAGE, m + 3 * PAGE, PAGE),
	   "after a hole is punched in pages 1-2, READ returns zeros there and the bytes around (status %d)",
	   st2);
	loop_pair_free(&c);
	ibv_dereg_mr(mr);
	munmap(m, 4 * PAGE);
	close(fd);
}

/* A QP given its ODP MR's flags (IBV_ACCESS_ON_DEMAND among them) is accepted, as rdma_rxe
 * and mlx5 accept it; the bit means nothing for a QP, whose remote rights work as usual. */
static void qp_odp_access(void)
{
	struct ibv_qp_attr at = { .qp_access_flags = ALL | IBV_ACCESS_ON_DEMAND }, got;
	struct ibv_qp_init_attr ia;
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp *qp;
	struct loop_pair c;
	int r, st;

	if (!cq)
		die("ibv_create_cq");
	qp = loop_rc_qp_reset(cq, NULL, 1, 0);
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	r = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS);
	ok(r == 0, "a QP moved to INIT with its ODP MR's access flags (ON_DEMAND among them) (ret %d)", r);
	r = ibv_query_qp(qp, &got, IBV_QP_ACCESS_FLAGS, &ia);
	ok(r == 0 && (got.qp_access_flags & PAIR_ACCESS) == PAIR_ACCESS,
	   "ibv_query_qp returns its remote rights (0x%x)", got.qp_access_flags);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);

	loop_pair_new(&c, PAIR_ACCESS | IBV_ACCESS_ON_DEMAND);
	loop_pattern(src, 512, 30);
	memset(dst, 0, 512);
	st = loop_post_a(&c, IBV_WR_RDMA_WRITE, (uintptr_t)src, 512, src_mr->lkey, (uintptr_t)dst,
			 dst_mr->rkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(dst, src, 512),
	   "a pair whose QPs carry ON_DEMAND: RDMA WRITE lands (status %d)", st);
	loop_pair_free(&c);
}

static void implicit_odp(void)
{
	uint8_t *big = anon(NULL, BIG);
	uint64_t offs[3] = { 0, BIG / 2 + 100, BIG - PAGE };
	struct ibv_mr *mr;
	struct loop_pair c;
	uint32_t got = 0;
	uint64_t v;
	int st, good = 1;

	mr = ibv_reg_mr(pd, NULL, SIZE_MAX, ALL | IBV_ACCESS_ON_DEMAND);
	ok(mr != NULL, "implicit ODP: ibv_reg_mr(NULL, SIZE_MAX) (errno %d)", mr ? 0 : errno);
	if (!mr)
		return;
	loop_pair_new_opts(&c, PAIR_ACCESS, 14, 7, 7);
	for (int i = 0; i < 3; i++) {
		loop_pattern(src, PAGE, (uint8_t)(10 + i));
		st = loop_post_a(&c, IBV_WR_RDMA_WRITE, (uintptr_t)src, PAGE, src_mr->lkey,
			    (uintptr_t)big + offs[i], mr->rkey);
		if (st != IBV_WC_SUCCESS || memcmp(big + offs[i], src, PAGE)) {
			good = 0;
			printf("# WRITE at +%llu: status %d\n", (unsigned long long)offs[i], st);
		}
	}
	ok(good, "implicit ODP: WRITEs at 0, 512 MiB + 100 and 1 GiB - 4 KiB of a sparse 1 GiB mapping");
	loop_pattern(big + BIG / 4, 3000, 20);
	memset(dst, 0, 3000);
	st = loop_post_a(&c, IBV_WR_RDMA_READ, (uintptr_t)dst, 3000, dst_mr->lkey,
		    (uintptr_t)big + BIG / 4, mr->rkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(dst, big + BIG / 4, 3000),
	   "implicit ODP: READ at 256 MiB returns the CPU's bytes (status %d)", st);
	loop_pattern(src, 2000, 21);
	st = send_recv(&c, (uintptr_t)src, src_mr->lkey, (uintptr_t)big + BIG / 8, mr->lkey, 2000,
		       &got);
	ok(st == IBV_WC_SUCCESS && got == 2000 && !memcmp(big + BIG / 8, src, 2000),
	   "implicit ODP: SEND received at 128 MiB (status %d)", st);
	st = atomic_a(&c, IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)big + 3 * (BIG / 4), mr->rkey,
		      9, 0);
	memcpy(&v, big + 3 * (BIG / 4), 8);
	ok(st == IBV_WC_SUCCESS && *(uint64_t *)src == 0 && v == 9,
	   "implicit ODP: FETCH_ADD at 768 MiB (status %d)", st);
	memset(dst, 0, SIZE);
	st = loop_post_a(&c, IBV_WR_RDMA_WRITE, (uintptr_t)big + BIG / 4, 3000, mr->lkey,
		    (uintptr_t)dst, dst_mr->rkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(dst, big + BIG / 4, 3000),
	   "implicit ODP: WRITE sourced through its lkey (status %d)", st);
	munmap(big + BIG / 2, BIG / 2);
	st = loop_post_a(&c, IBV_WR_RDMA_WRITE, (uintptr_t)src, 100, src_mr->lkey,
		    (uintptr_t)big + BIG / 2 + 100, mr->rkey);
	ok(st == IBV_WC_REM_ACCESS_ERR,
	   "implicit ODP: WRITE to an unmapped address: REM_ACCESS_ERR (%d)", st);
	loop_pair_free(&c);
	ok(!ibv_dereg_mr(mr), "ibv_dereg_mr of the implicit ODP MR");
	munmap(big, BIG / 2);
}

int main(int argc, char **argv)
{
	struct ibv_mr *m;

	loop_open(argc, argv);
	src_mr = ibv_reg_mr(pd, src, sizeof(src), RW);
	dst_mr = ibv_reg_mr(pd, dst, sizeof(dst), RW);
	if (!src_mr || !dst_mr)
		die("ibv_reg_mr");
	caps();
	m = ibv_reg_mr(pd, src, PAGE, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ON_DEMAND);
	ok(!m && errno == EINVAL, "ODP with remote write but no local write: EINVAL (errno %d)",
	   m ? 0 : errno);
	qp_odp_access();
	explicit_odp();
	atomic_write_odp();
	punch_hole();
	implicit_odp();
	return tap_end();
}
