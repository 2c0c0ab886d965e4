// SPDX-License-Identifier: GPL-2.0
/*
 * uverbs_hostile: a process that talks to an rrxe device through the raw uverbs write()
 * ABI (struct ib_uverbs_cmd_hdr + the command structures of <rdma/ib_user_verbs.h>), so
 * none of libibverbs' argument checks stand between it and the kernel. It asks for what a
 * hostile or buggy process could ask for and checks that every request is answered with
 * the exact errno (or succeeds, for values in range), without a splat:
 *
 *  - POST_SEND with work-request lists on user QPs (RC in RESET and RTS, UD in RTS), with
 *    SGEs at kernel addresses, at an unmapped address and in the process's own registered
 *    buffer, inline and not: a user QP takes only the doorbell (the empty list), so each
 *    list is refused with EINVAL, its first WR named bad, counted in user_wr_refused, and
 *    nothing is sent or completed;
 *    POST_RECV / POST_SRQ_RECV with lists are not even offered by rrxe (EOPNOTSUPP from
 *    the uverbs layer), nor is POLL_CQ (a user CQ is polled in its ring);
 *  - every size field at 0, 1, 2^31, 2^32-1, max and max+1 for CREATE_CQ (also through
 *    the ioctl ABI's UVERBS_METHOD_CQ_CREATE), CREATE_QP, CREATE_SRQ, RESIZE_CQ, REG_MR
 *    (plus lengths and IOVAs that wrap, and access flags), ALLOC_MW (its type, and
 *    max_mw live windows);
 *  - MODIFY_QP with out-of-range attributes (EINVAL, nothing of them kept);
 *  - handles that name nothing, or an object of another type, or an object of another
 *    context; REREG_MR with IB_MR_REREG_PD;
 *  - objects in use (EBUSY), and commands the uverbs layer lets run concurrently on one
 *    object (RESIZE_CQ, MODIFY_QP, POST_SEND) from several threads;
 *  - mmap() of queue memory at offsets and sizes it was not given, and of rings that were
 *    replaced (RESIZE_CQ) or freed (DESTROY_CQ).
 *
 * Usage: uverbs_hostile -d DEV -g GIDX [-W]. -W leaves out the requests that crash or leak
 * kernel memory on a module without its user-ABI hardening (WR lists on user QPs,
 * CREATE_SRQ with max_wr > 2^31); the test suite never passes it.
 *
 * Handles are per open file (an xarray of the uverbs file, lowest free id first): a handle
 * that another context got is only a number here. The uverbs layer answers ENOENT for a
 * number with no object and EINVAL for an object of another type
 * (rdma_lookup_get_uobject); those answers come before the driver is called.
 */
#include "tap.h"
#include "uverbs_raw.h"
#include <pthread.h>
#include <sys/mman.h>

#define P31 0x80000000u
#define U32MAX 0xffffffffu
#define NONE 1000000u		/* a handle number no object of this test has */

static int skip_unfixed;

static const char *ename(int e)
{
	switch (e) {
	case 0: return "success";
	case EINVAL: return "EINVAL";
	case ENOENT: return "ENOENT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EFAULT: return "EFAULT";
	case ENOMEM: return "ENOMEM";
	case ENOSPC: return "ENOSPC";
	case EBUSY: return "EBUSY";
	case EPERM: return "EPERM";
	default: return strerror(e);
	}
}

/* One TAP line: `got` (0 or -errno) must be -want (want 0: success). */
static void expect(int got, int want, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void expect(int got, int want, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (got == -want)
		ok(1, "%s: %s", what, ename(want));
	else
		ok(0, "%s: %s (got %s)", what, ename(want), ename(-got));
}

static const uint64_t kaddrs[] = {
	0xffffffff81000000ull,	/* kernel text (x86-64, without KASLR) */
	0xffff888000000000ull,	/* start of the direct map (x86-64, 4-level paging) */
	0xff11000000000000ull,	/* start of the direct map (x86-64, 5-level paging) */
	0x10,			/* unmapped */
};
#define NKADDR (sizeof(kaddrs) / sizeof(kaddrs[0]))

/* Work-request lists on user QPs. */
static void wr_lists(int fd, uint32_t pd)
{
	struct rrxe_create_cq_resp info;
	struct caps k = { .swr = 16, .rwr = 16, .ssge = 4, .rsge = 4, .inl = 64 };
	struct ib_uverbs_reg_mr_resp mr;
	uint32_t cq, qp_reset, qp_rts, qpn, srq, bad;
	long long sent0, sent1, refused0, refused1;
	int lists = 0;	/* POST_SEND lists that reach rrxe (each counted in user_wr_refused) */
	volatile struct rrxe_queue_hdr *cqh;
	char *buf;
	void *ring;

	if (create_cq(fd, 64, 0, sizeof(info), &cq, &info))
		die("CREATE_CQ");
	ring = mmap(NULL, info.cq.mmap_size, PROT_READ, MAP_SHARED, fd, info.cq.mmap_offset);
	if (ring == MAP_FAILED)
		die("mmap CQ");
	cqh = ring;
	if (create_qp(fd, pd, cq, 0, 0, IBV_QPT_RC, k, &qp_reset, NULL) ||
	    create_qp(fd, pd, cq, 0, 0, IBV_QPT_RC, k, &qp_rts, &qpn))
		die("CREATE_QP");
	to_rts(fd, qp_rts, qpn);
	buf = aligned_alloc(4096, 4096);
	if (!buf)
		die("buffer");
	memset(buf, 0x5a, 4096);
	if (reg_mr(fd, pd, (uintptr_t)buf, 4096, (uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE, &mr))
		die("REG_MR");
	sent0 = counter("sent_pkts");
	refused0 = counter("user_wr_refused");

	uint32_t qps[2] = { qp_reset, qp_rts };
	const char *qname[2] = { "RC QP in RESET", "RC QP in RTS" };

	for (int q = 0; q < 2; q++) {
		for (unsigned a = 0; a <= NKADDR; a++) {
			uint64_t addr = a < NKADDR ? kaddrs[a] : (uintptr_t)buf;

			for (int inl = 0; inl < 2; inl++) {
				struct ib_uverbs_send_wr wr = {
					.wr_id = 1, .num_sge = 1, .opcode = IBV_WR_SEND,
					.send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0),
				};
				struct ib_uverbs_sge sg = {
					.addr = addr, .length = 64, .lkey = a < NKADDR ? 0 : mr.lkey,
				};
				int r = post(fd, IB_USER_VERBS_CMD_POST_SEND, qps[q], &wr, 1,
					     sizeof(wr), &sg, 1, &bad);

				lists++;

				/*
				 * The doorbell is the only POST_SEND of a user QP: a list would
				 * be read as a kernel consumer's (SGE addresses as kernel
				 * pointers). EINVAL, as for any WR the QP cannot take, with
				 * bad_wr naming the first WR.
				 */
				expect(r == -EINVAL && bad != 1 ? -EPROTO : r, EINVAL,
				       "POST_SEND %s, SEND%s SGE at %#llx, bad_wr 1 (got %u)",
				       qname[q], inl ? " INLINE" : "",
				       (unsigned long long)addr, bad);
			}
		}
	}
	/* A longer list on the connected QP: refused at its first WR, nothing of it sent. */
	{
		struct ib_uverbs_send_wr wr[3] = {
			{ .wr_id = 1, .num_sge = 1, .opcode = IBV_WR_SEND,
			  .send_flags = IBV_SEND_SIGNALED },
			{ .wr_id = 2, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			  .send_flags = IBV_SEND_INLINE,
			  .wr.rdma = { .remote_addr = (uintptr_t)buf, .rkey = mr.rkey } },
			{ .wr_id = 3, .num_sge = 2, .opcode = IBV_WR_SEND_WITH_IMM },
		};
		struct ib_uverbs_sge sg[4] = {
			{ .addr = (uintptr_t)buf, .length = 64, .lkey = mr.lkey },
			{ .addr = kaddrs[1], .length = 64 },
			{ .addr = kaddrs[0], .length = 4096 },
			{ .addr = kaddrs[NKADDR - 1], .length = 8 },
		};
		int r = post(fd, IB_USER_VERBS_CMD_POST_SEND, qp_rts, wr, 3, sizeof(wr[0]), sg, 4,
			     &bad);

		lists += 3;	/* this one and the two below */

		expect(r == -EINVAL && bad != 1 ? -EPROTO : r, EINVAL,
		       "POST_SEND RC QP in RTS, list SEND + inline WRITE from the direct map + "
		       "SEND_WITH_IMM from kernel text, bad_wr 1 (got %u)", bad);
		/* The same WRITE alone, and one with more SGEs than the QP has. */
		r = post(fd, IB_USER_VERBS_CMD_POST_SEND, qp_rts, &wr[1], 1, sizeof(wr[0]), &sg[1],
			 1, &bad);
		expect(r == -EINVAL && bad != 1 ? -EPROTO : r, EINVAL,
		       "POST_SEND RC QP in RTS, RDMA_WRITE INLINE from %#llx, bad_wr 1 (got %u)",
		       (unsigned long long)kaddrs[1], bad);
		wr[0].num_sge = 4;
		struct ib_uverbs_sge many[4] = {
			{ .addr = kaddrs[1], .length = 1 }, { .addr = kaddrs[1], .length = 1 },
			{ .addr = kaddrs[1], .length = 1 }, { .addr = kaddrs[1], .length = 1 },
		};
		wr[0].send_flags = IBV_SEND_INLINE;
		r = post(fd, IB_USER_VERBS_CMD_POST_SEND, qp_rts, &wr[0], 1, sizeof(wr[0]), many, 4,
			 &bad);
		expect(r == -EINVAL && bad != 1 ? -EPROTO : r, EINVAL,
		       "POST_SEND RC QP in RTS, SEND INLINE of 4 direct-map SGEs, bad_wr 1 (got %u)",
		       bad);
	}
	/*
	 * A UD QP: the uverbs layer resolves each WR's AH handle first (ENOENT for none,
	 * EINVAL for another type of object) and takes only SEND opcodes (EINVAL); with a
	 * valid AH the list reaches rrxe, which refuses it as on RC.
	 */
	{
		uint32_t ud, ah = create_ah(fd, pd);
		struct caps u = { .swr = 16, .rwr = 16, .ssge = 4, .rsge = 4, .inl = 64 };

		if (create_qp(fd, pd, cq, 0, 0, IBV_QPT_UD, u, &ud, NULL))
			die("CREATE_QP UD");
		ud_to_rts(fd, ud);
		for (unsigned a = 0; a <= NKADDR; a++) {
			uint64_t addr = a < NKADDR ? kaddrs[a] : (uintptr_t)buf;

			for (int inl = 0; inl < 2; inl++) {
				struct ib_uverbs_send_wr wr = {
					.wr_id = 9, .num_sge = 1, .opcode = IBV_WR_SEND,
					.send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0),
					.wr.ud = { .ah = ah, .remote_qpn = 1, .remote_qkey = 0x11111111 },
				};
				struct ib_uverbs_sge sg = {
					.addr = addr, .length = 64, .lkey = a < NKADDR ? 0 : mr.lkey,
				};
				int r = post(fd, IB_USER_VERBS_CMD_POST_SEND, ud, &wr, 1, sizeof(wr),
					     &sg, 1, &bad);

				lists++;
				expect(r == -EINVAL && bad != 1 ? -EPROTO : r, EINVAL,
				       "POST_SEND UD QP in RTS, SEND%s SGE at %#llx, bad_wr 1 (got %u)",
				       inl ? " INLINE" : "", (unsigned long long)addr, bad);
			}
		}
		struct ib_uverbs_send_wr wr = {
			.num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE,
			.wr.ud = { .ah = NONE, .remote_qpn = 1, .remote_qkey = 0x11111111 },
		};
		struct ib_uverbs_sge sg = { .addr = kaddrs[0], .length = 64 };

		expect(post(fd, IB_USER_VERBS_CMD_POST_SEND, ud, &wr, 1, sizeof(wr), &sg, 1, NULL),
		       ENOENT, "POST_SEND UD QP, AH handle with no object");
		wr.wr.ud.ah = cq;
		expect(post(fd, IB_USER_VERBS_CMD_POST_SEND, ud, &wr, 1, sizeof(wr), &sg, 1, NULL),
		       EINVAL, "POST_SEND UD QP, AH handle = a CQ's handle");
		wr.wr.ud.ah = ah;
		wr.opcode = IBV_WR_RDMA_WRITE;
		expect(post(fd, IB_USER_VERBS_CMD_POST_SEND, ud, &wr, 1, sizeof(wr), &sg, 1, NULL),
		       EINVAL, "POST_SEND UD QP, RDMA_WRITE (not a UD opcode)");
		expect(post(fd, IB_USER_VERBS_CMD_POST_SEND, ud, NULL, 0, sizeof(wr), NULL, 0, NULL),
		       0, "POST_SEND UD QP, empty list (the doorbell)");
		expect(destroy_qp(fd, ud), 0, "DESTROY_QP (UD)");
		expect(destroy_ah(fd, ah), 0, "DESTROY_AH");
	}

	/* The doorbell itself (no WRs, an empty ring): accepted. */
	expect(post(fd, IB_USER_VERBS_CMD_POST_SEND, qp_rts, NULL, 0,
		    sizeof(struct ib_uverbs_send_wr), NULL, 0, NULL), 0,
	       "POST_SEND RC QP in RTS, empty list (the doorbell)");

	/*
	 * Receive lists: rrxe does not set POST_RECV / POST_SRQ_RECV in uverbs_cmd_mask (its
	 * receive queues are shared rings), so the uverbs layer has no handler for them and
	 * answers EOPNOTSUPP (ib_uverbs_notsupp) before any driver code runs.
	 */
	if (create_srq(fd, pd, 16, 2, &srq))
		die("CREATE_SRQ");
	for (unsigned a = 0; a <= NKADDR; a++) {
		uint64_t addr = a < NKADDR ? kaddrs[a] : (uintptr_t)buf;
		struct ib_uverbs_recv_wr rw = { .wr_id = 7, .num_sge = 1 };
		struct ib_uverbs_sge sg = {
			.addr = addr, .length = 64, .lkey = a < NKADDR ? 0 : mr.lkey,
		};

		expect(post(fd, IB_USER_VERBS_CMD_POST_RECV, qp_rts, &rw, 1, sizeof(rw), &sg, 1,
			    NULL), EOPNOTSUPP, "POST_RECV RC QP in RTS, SGE at %#llx",
		       (unsigned long long)addr);
		expect(post(fd, IB_USER_VERBS_CMD_POST_SRQ_RECV, srq, &rw, 1, sizeof(rw), &sg, 1,
			    NULL), EOPNOTSUPP, "POST_SRQ_RECV, SGE at %#llx",
		       (unsigned long long)addr);
	}

	/* Nothing of the refused lists went out or completed. */
	usleep(200 * 1000);
	sent1 = counter("sent_pkts");
	ok(sent0 >= 0 && sent1 == sent0, "no packet sent by the refused lists (sent_pkts %lld -> %lld)",
	   sent0, sent1);
	refused1 = counter("user_wr_refused");
	ok(refused0 >= 0 && refused1 - refused0 == lists,
	   "user_wr_refused counted each refused POST_SEND list (%lld -> %lld, %d lists)",
	   refused0, refused1, lists);
	ok(cqh->producer == 0, "no completion from the refused lists (CQ producer %u)",
	   cqh->producer);
	int same = 1;

	for (int i = 0; i < 4096; i++)
		same &= buf[i] == 0x5a;
	ok(same, "the registered buffer is unchanged");

	expect(destroy_srq(fd, srq), 0, "DESTROY_SRQ");
	expect(destroy_qp(fd, qp_reset), 0, "DESTROY_QP (RESET)");
	expect(destroy_qp(fd, qp_rts), 0, "DESTROY_QP (RTS)");
	expect(dereg_mr(fd, mr.mr_handle), 0, "DEREG_MR");
	munmap(ring, info.cq.mmap_size);
	expect(destroy_cq(fd, cq), 0, "DESTROY_CQ");
	free(buf);
}

/* The values every size field is tried at; max is the device's limit for the field. */
static const char *vname(uint32_t v, uint32_t max)
{
	static char s[32];

	if (v == max)
		snprintf(s, sizeof(s), "max (%u)", v);
	else if (v == max + 1)
		snprintf(s, sizeof(s), "max+1 (%u)", v);
	else
		snprintf(s, sizeof(s), "%u", v);
	return s;
}

static void sizes(int fd, uint32_t pd)
{
	uint32_t cq, h = 0;
	struct rrxe_create_cq_resp info;

	/*
	 * CREATE_CQ: cqe in 1..max_cqe. 0 and more than max_cqe are EINVAL (rxe_cq_chk_attr;
	 * the IBTA makes the size a positive count up to the HCA's maximum). comp_vector
	 * beyond the device's vectors is the uverbs layer's EINVAL.
	 */
	uint32_t cqmax = raw_attr.max_cqe;
	uint32_t cqv[] = { 0, 1, P31, U32MAX, cqmax, cqmax + 1 };

	for (unsigned i = 0; i < sizeof(cqv) / sizeof(cqv[0]); i++) {
		int want = cqv[i] >= 1 && cqv[i] <= cqmax ? 0 : EINVAL;
		int r = create_cq(fd, cqv[i], 0, sizeof(info), &h, NULL);

		expect(r, want, "CREATE_CQ cqe %s", vname(cqv[i], cqmax));
		if (!r)
			destroy_cq(fd, h);
	}
	for (unsigned i = 0; i < sizeof(cqv) / sizeof(cqv[0]); i++) {
		int want = cqv[i] >= 1 && cqv[i] <= cqmax ? 0 : EINVAL;
		int r = ioctl_create_cq(fd, cqv[i], sizeof(info), &h);

		expect(r, want, "ioctl CQ_CREATE cqe %s", vname(cqv[i], cqmax));
		if (!r)
			destroy_cq(fd, h);
	}
	expect(ioctl_create_cq(fd, 16, 0, &h), EINVAL, "ioctl CQ_CREATE without UHW_OUT");
	expect(create_cq(fd, 16, 1, sizeof(info), &h, NULL), EINVAL,
	       "CREATE_CQ comp_vector 1 (the device has 1)");
	/* Without room for rrxe's response (the ring's location) the CQ is useless: EINVAL, as
	 * rxe answers a too short udata. */
	expect(create_cq(fd, 16, 0, 0, &h, NULL), EINVAL, "CREATE_CQ without driver response room");

	/* RESIZE_CQ: the same range as CREATE_CQ (an empty CQ; rxe_cq_chk_attr). */
	if (create_cq(fd, 16, 0, sizeof(info), &cq, NULL))
		die("CREATE_CQ");
	for (unsigned i = 0; i < sizeof(cqv) / sizeof(cqv[0]); i++) {
		int want = cqv[i] >= 1 && cqv[i] <= cqmax ? 0 : EINVAL;

		expect(resize_cq(fd, cq, cqv[i], NULL), want, "RESIZE_CQ cqe %s", vname(cqv[i], cqmax));
	}

	/*
	 * CREATE_QP (RC): each capability at 0..max succeeds (0 is a QP without that queue's
	 * work, as rxe allows); beyond the device's limit EINVAL (rxe_qp_chk_cap). The inline
	 * limit is rrxe's RRXE_MAX_INLINE (not reported by QUERY_DEVICE).
	 */
	const char *fname[5] = { "max_send_wr", "max_recv_wr", "max_send_sge", "max_recv_sge",
				 "max_inline_data" };
	uint32_t fmax[5] = { raw_attr.max_qp_wr, raw_attr.max_qp_wr, raw_attr.max_sge, raw_attr.max_sge,
			     RRXE_MAX_INLINE };

	for (int f = 0; f < 5; f++) {
		uint32_t v[] = { 0, 1, P31, U32MAX, fmax[f], fmax[f] + 1 };

		for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			struct caps k = { .swr = 4, .rwr = 4, .ssge = 1, .rsge = 1, .inl = 0 };
			uint32_t *field[5] = { &k.swr, &k.rwr, &k.ssge, &k.rsge, &k.inl };
			int want = v[i] <= fmax[f] ? 0 : EINVAL;
			int r;

			*field[f] = v[i];
			r = create_qp(fd, pd, cq, 0, 0, IBV_QPT_RC, k, &h, NULL);
			expect(r, want, "CREATE_QP RC %s %s", fname[f], vname(v[i], fmax[f]));
			if (!r)
				destroy_qp(fd, h);
		}
	}

	/*
	 * qp_type: the uverbs layer takes RC, UC, UD, RAW_PACKET, XRC_INI, XRC_TGT and DRIVER
	 * and answers EINVAL for the rest (SMI and GSI are kernel-only); for XRC_TGT it looks
	 * up an XRCD by pd_handle (a PD here: EINVAL). rrxe answers EOPNOTSUPP for the types
	 * it does not implement, as rxe_qp_chk_init does; an XRC_INI QP (send side only) it
	 * creates.
	 */
	struct {
		uint8_t type;
		int want;
	} qt[] = {
		{ 0, EINVAL }, { 1, EINVAL }, { IBV_QPT_RC, 0 }, { IBV_QPT_UC, 0 },
		{ IBV_QPT_UD, 0 }, { 5, EINVAL }, { 6, EINVAL }, { 7, EINVAL },
		{ IBV_QPT_RAW_PACKET, geteuid() == 0 ? EOPNOTSUPP : EPERM },
		{ IBV_QPT_XRC_SEND, 0 }, { IBV_QPT_XRC_RECV, EINVAL }, { 11, EINVAL },
		{ IBV_QPT_DRIVER, EOPNOTSUPP },
	};

	for (unsigned i = 0; i < sizeof(qt) / sizeof(qt[0]); i++) {
		struct caps k = { .swr = 4, .rwr = 4, .ssge = 1, .rsge = 1, .inl = 0 };
		int r = create_qp(fd, pd, cq, 0, 0, qt[i].type, k, &h, NULL);

		expect(r, qt[i].want, "CREATE_QP qp_type %u", qt[i].type);
		if (!r)
			destroy_qp(fd, h);
	}

	/*
	 * A QP with an SRQ: its own receive capabilities are ignored, whatever they are
	 * (rxe_qp_chk_cap checks them only for a QP without an SRQ).
	 */
	uint32_t srq;

	if (create_srq(fd, pd, 16, 1, &srq))
		die("CREATE_SRQ");
	for (int f = 1; f < 4; f += 2) {
		uint32_t v[] = { P31, U32MAX, fmax[f] + 1 };

		for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			struct caps k = { .swr = 4, .rwr = 4, .ssge = 1, .rsge = 1, .inl = 0 };
			int r;

			*(f == 1 ? &k.rwr : &k.rsge) = v[i];
			r = create_qp(fd, pd, cq, srq, 1, IBV_QPT_RC, k, &h, NULL);
			expect(r, 0, "CREATE_QP RC with an SRQ, %s %s (ignored)", fname[f],
			       vname(v[i], fmax[f]));
			if (!r)
				destroy_qp(fd, h);
		}
	}
	expect(destroy_srq(fd, srq), 0, "DESTROY_SRQ");

	/*
	 * CREATE_SRQ: max_wr in 1..max_srq_wr (rxe_srq_chk_init refuses 0 and more than the
	 * maximum with EINVAL), max_sge in 0..max_srq_sge (0 is rounded up to 1 by rxe).
	 * max_wr above 2^31 overflowed rrxe's rounding to a power of two (a BUG).
	 */
	uint32_t wmax = raw_attr.max_srq_wr, smax = raw_attr.max_srq_sge;
	uint32_t wv[] = { 0, 1, P31, P31 + 1, U32MAX, wmax, wmax + 1 };

	for (unsigned i = 0; i < sizeof(wv) / sizeof(wv[0]); i++) {
		int want = wv[i] >= 1 && wv[i] <= wmax ? 0 : EINVAL;
		int r;

		if (skip_unfixed && wv[i] > P31) {
			ok(1, "CREATE_SRQ max_wr %u # SKIP -W", wv[i]);
			continue;
		}
		r = create_srq(fd, pd, wv[i], 1, &h);
		expect(r, want, "CREATE_SRQ max_wr %s", vname(wv[i], wmax));
		if (!r)
			destroy_srq(fd, h);
	}
	uint32_t sv[] = { 0, 1, P31, U32MAX, smax, smax + 1 };

	for (unsigned i = 0; i < sizeof(sv) / sizeof(sv[0]); i++) {
		int want = sv[i] <= smax ? 0 : EINVAL;
		int r = create_srq(fd, pd, 16, sv[i], &h);

		expect(r, want, "CREATE_SRQ max_sge %s", vname(sv[i], smax));
		if (!r)
			destroy_srq(fd, h);
	}

	/*
	 * ALLOC_MW: the only size-like field is the u8 mw_type; the uverbs layer takes types
	 * 1 and 2 and answers EINVAL for anything else.
	 */
	uint8_t mt[] = { 0, 1, 2, 3, 0x80, 0xff };

	for (unsigned i = 0; i < sizeof(mt); i++) {
		int want = mt[i] == 1 || mt[i] == 2 ? 0 : EINVAL;
		int r = alloc_mw(fd, pd, mt[i], &h);

		expect(r, want, "ALLOC_MW type %u", mt[i]);
		if (!r)
			dealloc_mw(fd, h);
	}

	/*
	 * ALLOC_MW up to the device's max_mw live windows (this test holds the only ones):
	 * the next is EINVAL, as rxe's pools answer past their maximum.
	 */
	uint32_t *mws = calloc(raw_attr.max_mw + 1ull, sizeof(*mws)), nmw = 0;
	int rmw = 0;

	if (!mws)
		die("calloc");
	while (nmw <= raw_attr.max_mw && !(rmw = alloc_mw(fd, pd, 1, &mws[nmw])))
		nmw++;
	ok(nmw == raw_attr.max_mw && rmw == -EINVAL,
	   "ALLOC_MW: max_mw (%u) windows, then EINVAL (got %u, then %s)", raw_attr.max_mw, nmw,
	   ename(-rmw));
	for (uint32_t i = 0; i < nmw; i++)
		dealloc_mw(fd, mws[i]);
	free(mws);
	expect(alloc_mw(fd, pd, 2, &h), 0, "ALLOC_MW once they are deallocated");
	dealloc_mw(fd, h);

	/*
	 * REG_MR over 2 read-write pages followed by a PROT_NONE page. ib_umem_get answers:
	 * length 0 (no pages) and start + length wrapping EINVAL; a range running into the
	 * PROT_NONE page EFAULT (pinning fails there) when the process may lock that much
	 * memory (CAP_IPC_LOCK, root in the test VM), else ENOMEM (RLIMIT_MEMLOCK) first. rrxe
	 * reports max_mr_size 2^64-1, so there is no max+1: the wrapping length stands for
	 * it. An iova range that wraps is EINVAL (rrxe's user_region); so is an iova whose
	 * page offset differs from start's (the uverbs layer).
	 */
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int big = geteuid() == 0 ? EFAULT : ENOMEM;
	struct ib_uverbs_reg_mr_resp mr;

	if (m == MAP_FAILED || mprotect(m + 2 * pg, pg, PROT_NONE))
		die("mmap");
	memset(m, 1, 2 * pg);
	uint64_t start = (uintptr_t)m;
	struct {
		uint64_t len;
		int want;
		const char *what;
	} lv[] = {
		{ 0, EINVAL, "0" }, { 1, 0, "1" }, { 2 * pg, 0, "2 pages" },
		{ 2 * pg + 1, big, "2 pages + 1 (into PROT_NONE)" },
		{ P31, big, "2^31" }, { U32MAX, big, "2^32-1" }, { 1ull << 40, big, "2^40" },
		{ UINT64_MAX, EINVAL, "2^64-1 (start + length wraps)" },
		{ UINT64_MAX - start + 1, EINVAL, "2^64 - start (end wraps to 0)" },
	};

	for (unsigned i = 0; i < sizeof(lv) / sizeof(lv[0]); i++) {
		int r = reg_mr(fd, pd, start, lv[i].len, start, IBV_ACCESS_LOCAL_WRITE, &mr);

		expect(r, lv[i].want, "REG_MR length %s", lv[i].what);
		if (!r)
			dereg_mr(fd, mr.mr_handle);
	}
	expect(reg_mr(fd, pd, start, pg, (uint64_t)-pg, IBV_ACCESS_LOCAL_WRITE, &mr), EINVAL,
	       "REG_MR iova 2^64 - page, length page (iova + length wraps)");
	expect(reg_mr(fd, pd, start, pg, start + 8, IBV_ACCESS_LOCAL_WRITE, &mr), EINVAL,
	       "REG_MR iova with another page offset than start");
	expect(reg_mr(fd, pd, start, pg, start, IBV_ACCESS_REMOTE_WRITE, &mr), EINVAL,
	       "REG_MR REMOTE_WRITE without LOCAL_WRITE (ib_check_mr_access)");
	/*
	 * Access flags. The core (ib_check_mr_access): a bit outside IB_ACCESS_SUPPORTED
	 * EINVAL, ON_DEMAND without ODP EOPNOTSUPP (rrxe offers ODP: accepted, see odp.c).
	 * The driver: HUGETLB EOPNOTSUPP (rxe does not support it); a bit of the optional range (IB_UVERBS_ACCESS_OPTIONAL_RANGE,
	 * 1 << 20 .. 1 << 29) is one a device may ignore: accepted, as rxe accepts them.
	 */
	struct {
		uint32_t acc;
		int want;
		const char *what;
	} av[] = {
		{ IBV_ACCESS_LOCAL_WRITE | (1u << 10), EINVAL, "bit 10 (not an access flag)" },
		{ IBV_ACCESS_LOCAL_WRITE | (1u << 30), EINVAL, "bit 30 (not an access flag)" },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND, 0, "ON_DEMAND" },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_HUGETLB, EOPNOTSUPP, "HUGETLB" },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING, 0, "RELAXED_ORDERING" },
		{ IBV_ACCESS_LOCAL_WRITE | (1u << 21), 0, "optional bit 21" },
		{ IBV_ACCESS_LOCAL_WRITE | (1u << 29), 0, "optional bit 29" },
	};

	for (unsigned i = 0; i < sizeof(av) / sizeof(av[0]); i++) {
		int r = reg_mr(fd, pd, start, pg, start, av[i].acc, &mr);

		expect(r, av[i].want, "REG_MR access LOCAL_WRITE | %s", av[i].what);
		if (!r)
			dereg_mr(fd, mr.mr_handle);
	}
	munmap(m, 3 * pg);
	expect(destroy_cq(fd, cq), 0, "DESTROY_CQ");
}

/*
 * MODIFY_QP with values out of range, each on a new QP in an otherwise valid transition:
 * EINVAL, and the QP keeps its state and attributes (rdma_rxe checks every attribute in
 * rxe_qp_chk_attr before it applies any). rxe_qp_chk_attr refuses a path MTU above the
 * port's maximum (IB_MTU_4096; the IBTA's MTU codes are 1..5), max_rd_atomic above the
 * device's limit, a local ACK timeout above 31 (a 5-bit field) and access flags it does
 * not support. max_dest_rd_atomic (responder resources) above the device's max_qp_rd_atom
 * is refused as mlx5 refuses it (rxe instead allocates as many as asked; rrxe's are the
 * advertised 16). max_rd_atomic is bounded by max_qp_init_rd_atom. The port is the
 * uverbs layer's (rdma_is_port_valid).
 */
enum { TO_INIT = 1, TO_RTR, TO_RTS };

struct bad_modify {
	int step;		/* the transition tried: TO_INIT, TO_RTR or TO_RTS */
	uint32_t access;	/* TO_INIT */
	uint8_t port, mtu, rd, timeout;
	const char *what;
};

static void modify(int fd, uint32_t pd)
{
	struct caps k = { .swr = 4, .rwr = 4, .ssge = 1, .rsge = 1 };
	struct ib_uverbs_query_qp_resp q;
	uint32_t cq, h, qpn;
	uint8_t rdmax = raw_attr.max_qp_rd_atom, initmax = raw_attr.max_qp_init_rd_atom;
	const uint32_t rw = IBV_ACCESS_REMOTE_WRITE;
	struct bad_modify b[] = {
		{ TO_INIT, rw, 2, 0, 0, 0, "INIT port_num 2 (the device has 1)" },
		{ TO_INIT, rw, 0, 0, 0, 0, "INIT port_num 0" },
		{ TO_INIT, rw | (1u << 10), 1, 0, 0, 0, "INIT access flags with bit 10" },
		{ TO_RTR, 0, 0, 0, 1, 0, "RTR path_mtu 0" },
		{ TO_RTR, 0, 0, 6, 1, 0, "RTR path_mtu 6" },
		{ TO_RTR, 0, 0, 255, 1, 0, "RTR path_mtu 255" },
		{ TO_RTR, 0, 0, IBV_MTU_1024, rdmax + 1, 0, "RTR max_dest_rd_atomic max_qp_rd_atom+1" },
		{ TO_RTR, 0, 0, IBV_MTU_1024, 255, 0, "RTR max_dest_rd_atomic 255" },
		{ TO_RTS, 0, 0, 0, 1, 32, "RTS timeout 32" },
		{ TO_RTS, 0, 0, 0, 1, 255, "RTS timeout 255" },
		{ TO_RTS, 0, 0, 0, initmax + 1, 20, "RTS timeout 20, max_rd_atomic max_qp_init_rd_atom+1" },
		{ TO_RTS, 0, 0, 0, 255, 20, "RTS timeout 20, max_rd_atomic 255" },
	};

	if (create_cq(fd, 16, 0, sizeof(struct rrxe_create_cq_resp), &cq, NULL))
		die("CREATE_CQ");
	for (unsigned i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
		int r;

		if (create_qp(fd, pd, cq, 0, 0, IBV_QPT_RC, k, &h, &qpn))
			die("CREATE_QP");
		/* To the state before the step tried. */
		if ((b[i].step > TO_INIT && rc_init(fd, h, rw)) ||
		    (b[i].step > TO_RTR && rc_rtr(fd, h, qpn, IBV_MTU_1024, 1)))
			die("MODIFY_QP");
		if (b[i].step == TO_INIT) {
			struct ib_uverbs_modify_qp m = {
				.qp_handle = h, .qp_state = IBV_QPS_INIT, .port_num = b[i].port,
				.qp_access_flags = b[i].access,
				.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					     IBV_QP_ACCESS_FLAGS,
			};

			r = modify_qp(fd, &m);
		} else if (b[i].step == TO_RTR) {
			r = rc_rtr(fd, h, qpn, b[i].mtu, b[i].rd);
		} else {
			r = rc_rts(fd, h, b[i].timeout, b[i].rd);
		}
		/* Refused, and nothing of it kept: the state before, no timeout set. */
		if (query_qp(fd, h, &q))
			die("QUERY_QP");
		if (r == -EINVAL && (q.qp_state != b[i].step - 1 || q.timeout != 0))
			r = -EPROTO;
		expect(r, EINVAL, "MODIFY_QP %s, QP left in state %u with timeout 0 (got %u, %u)",
		       b[i].what, b[i].step - 1, q.qp_state, q.timeout);
		destroy_qp(fd, h);
	}
	/* The largest values in range are taken and reported back. */
	if (create_qp(fd, pd, cq, 0, 0, IBV_QPT_RC, k, &h, &qpn))
		die("CREATE_QP");
	expect(rc_init(fd, h, rw) || rc_rtr(fd, h, qpn, IBV_MTU_4096, rdmax) ||
	       rc_rts(fd, h, 31, initmax) ? -EPROTO : 0, 0,
	       "MODIFY_QP to RTS with path MTU 4096, max_dest_rd_atomic %u, max_rd_atomic %u, "
	       "timeout 31", rdmax, initmax);
	if (query_qp(fd, h, &q))
		die("QUERY_QP");
	ok(q.qp_state == IBV_QPS_RTS && q.timeout == 31 && q.max_rd_atomic == initmax &&
	   q.max_dest_rd_atomic == rdmax,
	   "  QUERY_QP: RTS, timeout 31, max_rd_atomic %u, max_dest_rd_atomic %u "
	   "(got state %u, %u, %u, %u)", initmax, rdmax, q.qp_state, q.timeout, q.max_rd_atomic,
	   q.max_dest_rd_atomic);
	expect(destroy_qp(fd, h), 0, "DESTROY_QP");
	expect(destroy_cq(fd, cq), 0, "DESTROY_CQ");
}

/* Handles that name nothing, or another type of object. */
static void handles(int fd, uint32_t pd)
{
	struct caps k = { .swr = 4, .rwr = 4, .ssge = 1, .rsge = 1 };
	struct ib_uverbs_modify_qp m = { .qp_handle = NONE, .qp_state = IBV_QPS_INIT,
					 .attr_mask = IBV_QP_STATE };
	struct ib_uverbs_reg_mr_resp mr;
	struct ib_uverbs_send_wr wr = { .opcode = IBV_WR_SEND };
	char *buf = aligned_alloc(4096, 4096);
	uint32_t cq, h = 0;

	if (!buf || create_cq(fd, 16, 0, sizeof(struct rrxe_create_cq_resp), &cq, NULL))
		die("CREATE_CQ");
	memset(buf, 0, 4096);
	uint32_t ids[2] = { NONE, U32MAX };

	for (int i = 0; i < 2; i++) {
		uint32_t x = ids[i];

		expect(create_qp(fd, x, cq, 0, 0, IBV_QPT_RC, k, &h, NULL), ENOENT,
		       "CREATE_QP pd_handle %u", x);
		expect(create_qp(fd, pd, x, 0, 0, IBV_QPT_RC, k, &h, NULL), ENOENT,
		       "CREATE_QP cq handles %u", x);
		expect(create_qp(fd, pd, cq, x, 1, IBV_QPT_RC, k, &h, NULL), ENOENT,
		       "CREATE_QP srq_handle %u", x);
		expect(post(fd, IB_USER_VERBS_CMD_POST_SEND, x, NULL, 0, sizeof(wr), NULL, 0, NULL),
		       ENOENT, "POST_SEND (doorbell) qp_handle %u", x);
		expect(post(fd, IB_USER_VERBS_CMD_POST_SEND, x, &wr, 1, sizeof(wr), NULL, 0, NULL),
		       ENOENT, "POST_SEND (one WR) qp_handle %u", x);
		m.qp_handle = x;
		expect(modify_qp(fd, &m), ENOENT, "MODIFY_QP qp_handle %u", x);
		expect(query_qp(fd, x, NULL), ENOENT, "QUERY_QP qp_handle %u", x);
		expect(destroy_qp(fd, x), ENOENT, "DESTROY_QP qp_handle %u", x);
		expect(resize_cq(fd, x, 16, NULL), ENOENT, "RESIZE_CQ cq_handle %u", x);
		expect(destroy_cq(fd, x), ENOENT, "DESTROY_CQ cq_handle %u", x);
		expect(create_srq(fd, x, 16, 1, &h), ENOENT, "CREATE_SRQ pd_handle %u", x);
		expect(destroy_srq(fd, x), ENOENT, "DESTROY_SRQ srq_handle %u", x);
		expect(reg_mr(fd, x, (uintptr_t)buf, 4096, (uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE,
			      &mr), ENOENT, "REG_MR pd_handle %u", x);
		expect(dereg_mr(fd, x), ENOENT, "DEREG_MR mr_handle %u", x);
		expect(rereg_mr(fd, x, IBV_REREG_MR_CHANGE_PD, 0, 0, pd, NULL), ENOENT,
		       "REREG_MR mr_handle %u", x);
		expect(alloc_mw(fd, x, 1, &h), ENOENT, "ALLOC_MW pd_handle %u", x);
		expect(dealloc_mw(fd, x), ENOENT, "DEALLOC_MW mw_handle %u", x);
		expect(dealloc_pd(fd, x), ENOENT, "DEALLOC_PD pd_handle %u", x);
		expect(req_notify_cq(fd, x, 0), ENOENT, "REQ_NOTIFY_CQ cq_handle %u", x);
		expect(modify_srq(fd, x, IBV_SRQ_LIMIT, 0, 1), ENOENT, "MODIFY_SRQ srq_handle %u", x);
		expect(query_srq(fd, x, NULL), ENOENT, "QUERY_SRQ srq_handle %u", x);
	}
	/* The handle of an object of another type: EINVAL. */
	expect(create_qp(fd, cq, cq, 0, 0, IBV_QPT_RC, k, &h, NULL), EINVAL,
	       "CREATE_QP pd_handle = a CQ's handle");
	expect(create_qp(fd, pd, pd, 0, 0, IBV_QPT_RC, k, &h, NULL), EINVAL,
	       "CREATE_QP cq handles = a PD's handle");
	expect(post(fd, IB_USER_VERBS_CMD_POST_SEND, cq, NULL, 0, sizeof(wr), NULL, 0, NULL),
	       EINVAL, "POST_SEND qp_handle = a CQ's handle");
	expect(destroy_qp(fd, cq), EINVAL, "DESTROY_QP qp_handle = a CQ's handle");
	expect(resize_cq(fd, pd, 16, NULL), EINVAL, "RESIZE_CQ cq_handle = a PD's handle");
	expect(reg_mr(fd, cq, (uintptr_t)buf, 4096, (uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE, &mr),
	       EINVAL, "REG_MR pd_handle = a CQ's handle");
	expect(alloc_mw(fd, cq, 1, &h), EINVAL, "ALLOC_MW pd_handle = a CQ's handle");
	expect(dealloc_pd(fd, cq), EINVAL, "DEALLOC_PD pd_handle = a CQ's handle");
	expect(destroy_cq(fd, cq), 0, "DESTROY_CQ");
	free(buf);
}

/*
 * REREG_MR (the uverbs checks, then rrxe's rereg_user_mr): flags 0 EINVAL, unknown flags
 * EOPNOTSUPP; IB_MR_REREG_PD to a handle of nothing ENOENT, of a CQ EINVAL, to a PD
 * handle the other context got (a number with no object here) ENOENT; to another PD of
 * this context it succeeds with the same keys (a PD change alone is made in place), and
 * back. A failed translation change leaves the MR registered.
 */
static void rereg(int fd, uint32_t pd)
{
	int fd2 = open_ctx();
	uint32_t pd2 = alloc_pd(fd), cq, other[64], n = 0, top;
	char *buf = aligned_alloc(4096, 8192);
	struct ib_uverbs_reg_mr_resp mr;
	struct ib_uverbs_rereg_mr_resp rr;

	if (!buf || create_cq(fd, 16, 0, sizeof(struct rrxe_create_cq_resp), &cq, NULL))
		die("CREATE_CQ");
	memset(buf, 0, 8192);
	if (reg_mr(fd, pd, (uintptr_t)buf, 4096, (uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE, &mr))
		die("REG_MR");
	/* Handles are handed out lowest free first: this context's are all below top. */
	top = pd > pd2 ? pd : pd2;
	top = top > cq ? top : cq;
	top = top > mr.mr_handle ? top : mr.mr_handle;
	do
		other[n] = alloc_pd(fd2);
	while (other[n++] <= top && n < 64);
	if (other[n - 1] <= top)
		die("other context's PD handles");

	expect(rereg_mr(fd, mr.mr_handle, 0, 0, 0, pd2, NULL), EINVAL, "REREG_MR flags 0");
	expect(rereg_mr(fd, mr.mr_handle, 8, 0, 0, pd2, NULL), EOPNOTSUPP, "REREG_MR flags 8");
	expect(rereg_mr(fd, mr.mr_handle, IBV_REREG_MR_CHANGE_PD, 0, 0, NONE, NULL), ENOENT,
	       "REREG_MR CHANGE_PD to a PD handle with no object");
	expect(rereg_mr(fd, mr.mr_handle, IBV_REREG_MR_CHANGE_PD, 0, 0, cq, NULL), EINVAL,
	       "REREG_MR CHANGE_PD to a CQ's handle");
	expect(rereg_mr(fd, mr.mr_handle, IBV_REREG_MR_CHANGE_PD, 0, 0, other[n - 1], NULL),
	       ENOENT, "REREG_MR CHANGE_PD to the other context's PD handle %u", other[n - 1]);
	/* There, the number names one of its PDs (its handles are 0..n-1, all PDs). */
	expect(rereg_mr(fd2, mr.mr_handle, IBV_REREG_MR_CHANGE_PD, 0, 0, other[0], NULL),
	       EINVAL, "REREG_MR of this MR's handle %u from the other context", mr.mr_handle);
	memset(&rr, 0, sizeof(rr));
	expect(rereg_mr(fd, mr.mr_handle, IBV_REREG_MR_CHANGE_PD, 0, 0, pd2, &rr), 0,
	       "REREG_MR CHANGE_PD to another PD of this context");
	ok(rr.lkey == mr.lkey && rr.rkey == mr.rkey, "  with the same keys (%#x %#x)", rr.lkey,
	   rr.rkey);
	/* The PD now has a user: it cannot go; the old one can be changed back to. */
	expect(rereg_mr(fd, mr.mr_handle, IBV_REREG_MR_CHANGE_PD, 0, 0, pd, &rr), 0,
	       "REREG_MR CHANGE_PD back");
	expect(rereg_mr(fd, mr.mr_handle, IBV_REREG_MR_CHANGE_TRANSLATION, (uintptr_t)buf, 0, pd,
			NULL), EINVAL, "REREG_MR CHANGE_TRANSLATION length 0");
	expect(rereg_mr(fd, mr.mr_handle, IBV_REREG_MR_CHANGE_TRANSLATION, (uintptr_t)buf,
			UINT64_MAX, pd, NULL), EINVAL, "REREG_MR CHANGE_TRANSLATION length 2^64-1");
	expect(rereg_mr(fd, mr.mr_handle, IBV_REREG_MR_CHANGE_TRANSLATION |
			IBV_REREG_MR_CHANGE_PD, (uintptr_t)buf, 8192, NONE, NULL), ENOENT,
	       "REREG_MR CHANGE_TRANSLATION|CHANGE_PD to a PD handle with no object");
	expect(dereg_mr(fd, mr.mr_handle), 0, "DEREG_MR after the failed re-registrations");
	expect(dealloc_pd(fd, pd2), 0, "DEALLOC_PD of the other PD");
	expect(destroy_cq(fd, cq), 0, "DESTROY_CQ");
	close(fd2);
	free(buf);
}

/*
 * The other commands rrxe takes: QUERY_PORT of a port the device does not have is the
 * core's EINVAL (ib_query_port); REQ_NOTIFY_CQ takes any solicited_only (non-zero:
 * solicited). MODIFY_SRQ: a limit above the SRQ's max_wr is EINVAL (as rxe_srq_chk_attr),
 * up to it is armed; a resize (IB_SRQ_MAX_WR) to 0, above max_srq_wr or below the armed
 * limit is EINVAL (as rxe_srq_chk_attr), and one without rrxe's command (the address the
 * new queue's layout goes to) EOPNOTSUPP, changing nothing. Mask bits the IBTA does not define are
 * ignored, as rxe ignores them. POLL_CQ on a user CQ is EOPNOTSUPP: rrxe does not set POLL_CQ in uverbs_cmd_mask (a user CQ is a ring the
 * process polls), so the core has no handler for it (ib_uverbs_notsupp); the driver's
 * poll_cq refuses a user CQ too, should the command ever be offered.
 */
static void other_cmds(int fd, uint32_t pd)
{
	struct ib_uverbs_query_srq_resp q;
	uint32_t cq, srq;
	uint8_t ports[] = { 0, 2, 255 };

	for (unsigned i = 0; i < sizeof(ports); i++)
		expect(query_port(fd, ports[i]), EINVAL, "QUERY_PORT port %u", ports[i]);
	expect(query_port(fd, 1), 0, "QUERY_PORT port 1");
	if (create_cq(fd, 16, 0, sizeof(struct rrxe_create_cq_resp), &cq, NULL) ||
	    create_srq(fd, pd, 16, 1, &srq) || query_srq(fd, srq, &q))
		die("CREATE_CQ/SRQ");
	expect(req_notify_cq(fd, cq, 0), 0, "REQ_NOTIFY_CQ next completion");
	{
		struct {
			struct ib_uverbs_poll_cq_resp h;
			struct ib_uverbs_wc wc[16];
		} pr;
		uint32_t nes[] = { 1, 16, 0, U32MAX };

		for (unsigned i = 0; i < sizeof(nes) / sizeof(nes[0]); i++) {
			memset(&pr, 0x5a, sizeof(pr));
			expect(poll_cq(fd, cq, nes[i], &pr.h, sizeof(pr)), EOPNOTSUPP,
			       "POLL_CQ user CQ, ne %u", nes[i]);
			ok(pr.h.count == 0x5a5a5a5a, "  nothing written back (count %#x)", pr.h.count);
		}
		expect(poll_cq(fd, NONE, 1, &pr.h, sizeof(pr)), EOPNOTSUPP,
		       "POLL_CQ handle of nothing (answered before the lookup)");
	}
	expect(req_notify_cq(fd, cq, 0x55), 0, "REQ_NOTIFY_CQ solicited_only 0x55");
	expect(modify_srq(fd, srq, IBV_SRQ_LIMIT, 0, q.max_wr + 1), EINVAL,
	       "MODIFY_SRQ limit max_wr+1 (%u)", q.max_wr + 1);
	expect(modify_srq(fd, srq, IBV_SRQ_LIMIT, 0, U32MAX), EINVAL, "MODIFY_SRQ limit 2^32-1");
	expect(modify_srq(fd, srq, IBV_SRQ_LIMIT, 0, q.max_wr), 0, "MODIFY_SRQ limit max_wr (%u)",
	       q.max_wr);
	expect(modify_srq(fd, srq, IBV_SRQ_MAX_WR, U32MAX, 0), EINVAL,
	       "MODIFY_SRQ max_wr 2^32-1 (above max_srq_wr)");
	expect(modify_srq(fd, srq, IBV_SRQ_MAX_WR, 0, 0), EINVAL, "MODIFY_SRQ max_wr 0");
	expect(modify_srq(fd, srq, IBV_SRQ_MAX_WR, 1, 0), EINVAL,
	       "MODIFY_SRQ max_wr 1 (below the armed limit 16)");
	expect(modify_srq(fd, srq, IBV_SRQ_MAX_WR, 32, 0), EOPNOTSUPP,
	       "MODIFY_SRQ max_wr 32 without rrxe_modify_srq_cmd (nowhere to say the new queue)");
	expect(modify_srq(fd, srq, 0xfffffffc, 0, 0), 0, "MODIFY_SRQ with only undefined mask bits");
	expect(query_srq(fd, srq, &q), 0, "QUERY_SRQ");
	ok(q.max_wr == 16 && q.srq_limit == 16, "  max_wr 16, limit 16 (got %u, %u)", q.max_wr,
	   q.srq_limit);
	expect(destroy_srq(fd, srq), 0, "DESTROY_SRQ");
	expect(destroy_cq(fd, cq), 0, "DESTROY_CQ");
}

/*
 * Objects still in use: the uverbs layer refuses to destroy a PD, CQ or SRQ that a QP
 * (or an MR, for the PD) holds with EBUSY (ib_destroy_usecnt) and the object stays usable;
 * once its users are gone it goes.
 */
static void in_use(int fd)
{
	struct caps k = { .swr = 4, .rwr = 4, .ssge = 1, .rsge = 1 };
	struct ib_uverbs_reg_mr_resp mr;
	char *buf = aligned_alloc(4096, 4096);
	uint32_t pd = alloc_pd(fd), cq, srq, qp;

	if (!buf || create_cq(fd, 16, 0, sizeof(struct rrxe_create_cq_resp), &cq, NULL) ||
	    create_srq(fd, pd, 16, 1, &srq) || create_qp(fd, pd, cq, srq, 1, IBV_QPT_RC, k, &qp, NULL))
		die("CREATE_CQ/SRQ/QP");
	memset(buf, 0, 4096);
	expect(dealloc_pd(fd, pd), EBUSY, "DEALLOC_PD of a PD with a QP and an SRQ");
	expect(destroy_cq(fd, cq), EBUSY, "DESTROY_CQ of a QP's CQ");
	expect(destroy_srq(fd, srq), EBUSY, "DESTROY_SRQ of a QP's SRQ");
	expect(resize_cq(fd, cq, 32, NULL), 0, "RESIZE_CQ of that CQ still works");
	expect(destroy_qp(fd, qp), 0, "DESTROY_QP");
	expect(destroy_cq(fd, cq), 0, "DESTROY_CQ once the QP is gone");
	expect(destroy_srq(fd, srq), 0, "DESTROY_SRQ once the QP is gone");
	if (reg_mr(fd, pd, (uintptr_t)buf, 4096, (uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE, &mr))
		die("REG_MR");
	expect(dealloc_pd(fd, pd), EBUSY, "DEALLOC_PD of a PD with an MR");
	expect(dereg_mr(fd, mr.mr_handle), 0, "DEREG_MR");
	expect(dealloc_pd(fd, pd), 0, "DEALLOC_PD once it is empty");
	free(buf);
}

/*
 * Commands on one CQ and one QP from several threads at once. The uverbs layer takes a
 * CQ for RESIZE_CQ, and a QP for MODIFY_QP and POST_SEND, for reading only: the driver
 * sees these concurrently on the same object. Each call is valid on its own, so each
 * must succeed; afterwards both objects still work and go.
 */
#define RACE_N 300

struct race {
	int fd;
	uint32_t cq, qp;
	int which;
	int fails;
};

static void *racer(void *arg)
{
	struct race *r = arg;
	struct ib_uverbs_modify_qp m = { .qp_handle = r->qp, .attr_mask = IBV_QP_STATE };

	for (int i = 0; i < RACE_N; i++) {
		int e = 0;

		switch (r->which) {
		case 0:
		case 1:
			e = resize_cq(r->fd, r->cq, (r->which ? 16 : 100) + i % 50, NULL);
			break;
		case 2:
			e = req_notify_cq(r->fd, r->cq, i & 1);
			break;
		case 3:
			/* RESET -> INIT -> RESET, with doorbells in between. */
			if (i % 2 == 0) {
				e = rc_init(r->fd, r->qp, IBV_ACCESS_REMOTE_WRITE);
			} else {
				m.qp_state = IBV_QPS_RESET;
				e = modify_qp(r->fd, &m);
			}
			e = e ? e : post(r->fd, IB_USER_VERBS_CMD_POST_SEND, r->qp, NULL, 0,
					 sizeof(struct ib_uverbs_send_wr), NULL, 0, NULL);
			break;
		}
		r->fails += e != 0;
	}
	return NULL;
}

static void races(int fd, uint32_t pd)
{
	struct caps k = { .swr = 4, .rwr = 4, .ssge = 1, .rsge = 1 };
	struct race r[4];
	pthread_t t[4];
	uint32_t cq, qp;
	const char *what[4] = { "RESIZE_CQ (100..149)", "RESIZE_CQ (16..65)", "REQ_NOTIFY_CQ",
				"MODIFY_QP RESET<->INIT and doorbells" };

	if (create_cq(fd, 64, 0, sizeof(struct rrxe_create_cq_resp), &cq, NULL) ||
	    create_qp(fd, pd, cq, 0, 0, IBV_QPT_RC, k, &qp, NULL))
		die("CREATE_CQ/QP");
	for (int i = 0; i < 4; i++) {
		r[i] = (struct race){ .fd = fd, .cq = cq, .qp = qp, .which = i };
		if (pthread_create(&t[i], NULL, racer, &r[i]))
			die("pthread_create");
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 4; i++)
		ok(r[i].fails == 0, "%d x %s, concurrently with the others: all succeed (%d failed)",
		   RACE_N, what[i], r[i].fails);
	expect(resize_cq(fd, cq, 32, NULL), 0, "RESIZE_CQ afterwards");
	expect(destroy_qp(fd, qp), 0, "DESTROY_QP afterwards");
	expect(destroy_cq(fd, cq), 0, "DESTROY_CQ afterwards");
}

/* mmap() of the cmd fd at offset `off` for `len` bytes: 0 (and the mapping) or -errno. */
static int map(int fd, uint64_t off, size_t len, void **at)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);

	if (p == MAP_FAILED)
		return -errno;
	*at = p;
	return 0;
}

/*
 * mmap() of queue memory: only an offset a create or resize response gave, for exactly
 * the size it gave, maps (rdma_user_mmap_entry_get: the entry's first page and its whole
 * length, else EINVAL). A ring replaced by RESIZE_CQ or freed by DESTROY_CQ can no longer
 * be mapped; a mapping made before stays usable memory until munmap (the entry is freed
 * on the last unmap), with no splat.
 */
static void mmaps(int fd)
{
	struct rrxe_create_cq_resp c;
	struct rrxe_resize_cq_resp rz = { 0 };
	long pg = sysconf(_SC_PAGESIZE);
	void *a = NULL, *b = NULL, *n = NULL;
	uint32_t cq;

	if (create_cq(fd, 16, 0, sizeof(c), &cq, &c))
		die("CREATE_CQ");
	size_t sz = c.cq.mmap_size;
	uint64_t off = c.cq.mmap_offset;

	expect(map(fd, off, sz, &a), 0, "mmap a CQ ring at its offset, its size (%zu)", sz);
	expect(map(fd, off, sz + pg, &b), EINVAL, "mmap a CQ ring, one page more");
	if (sz > (size_t)pg)
		expect(map(fd, off, sz - pg, &b), EINVAL, "mmap a CQ ring, one page less");
	expect(map(fd, off + pg, sz - pg, &b), EINVAL, "mmap a CQ ring from its second page");
	expect(map(fd, off + (1ull << 40), sz, &b), EINVAL, "mmap at an offset nothing was given");
	expect(resize_cq(fd, cq, 64, &rz), 0, "RESIZE_CQ to 64 (a new ring)");
	expect(map(fd, off, sz, &b), EINVAL, "mmap the replaced ring's offset");
	expect(map(fd, rz.cq.mmap_offset, rz.cq.mmap_size, &n), 0, "mmap the new ring");
	/* The old mapping is still this process's memory; writing it harms nobody. */
	memset(a, 0xff, sz);
	ok(((volatile struct rrxe_queue_hdr *)n)->producer == 0,
	   "the new ring's producer is 0 after writes to the old ring's mapping");
	expect(destroy_cq(fd, cq), 0, "DESTROY_CQ with both rings still mapped");
	expect(map(fd, rz.cq.mmap_offset, rz.cq.mmap_size, &b), EINVAL,
	       "mmap a destroyed CQ's ring");
	memset(n, 0xff, rz.cq.mmap_size);
	expect(munmap(a, sz) ? -errno : 0, 0, "munmap the replaced ring");
	expect(munmap(n, rz.cq.mmap_size) ? -errno : 0, 0, "munmap the destroyed CQ's ring");
}

int main(int argc, char **argv)
{
	int opt, fd;
	uint32_t pd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:g:W")) != -1) {
		if (opt == 'd')
			raw_ibdev = optarg;
		else if (opt == 'g')
			raw_gidx = atoi(optarg);
		else if (opt == 'W')
			skip_unfixed = 1;
	}
	if (!raw_ibdev)
		die("-d DEV is required");
	raw_read_gid();
	fd = open_ctx();
	query_device(fd);
	printf("# %s: max_cqe %u max_qp_wr %u max_sge %u max_srq_wr %u max_srq_sge %u\n",
	       raw_ibdev, raw_attr.max_cqe, raw_attr.max_qp_wr, raw_attr.max_sge,
	       raw_attr.max_srq_wr, raw_attr.max_srq_sge);
	pd = alloc_pd(fd);
	if (skip_unfixed)
		ok(1, "work-request lists on user QPs # SKIP -W");
	else
		wr_lists(fd, pd);
	sizes(fd, pd);
	modify(fd, pd);
	handles(fd, pd);
	rereg(fd, pd);
	other_cmds(fd, pd);
	in_use(fd);
	races(fd, pd);
	mmaps(fd);
	expect(dealloc_pd(fd, pd), 0, "DEALLOC_PD");
	close(fd);
	return tap_end();
}
