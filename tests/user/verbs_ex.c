// SPDX-License-Identifier: GPL-2.0
/*
 * The extended verbs over an RDMA device, between two hosts (TAP output):
 *   ibv_create_cq_ex + start/next/end_poll and the read_* accessors,
 *   ibv_create_qp_ex + the ibv_wr_* API (send, send_imm, inline data, rdma_write(_imm),
 *   set_sge_list, rdma_read, atomics, abort), refused operations and attributes,
 *   and thread safety: several threads posting sends on one QP at once.
 *
 *   verbs_ex -d DEV -g GIDX -p PORT            (server)
 *   verbs_ex -d DEV -g GIDX -p PORT SERVER-IP  (client)
 *
 * The server exposes one buffer (rkey/address exchanged over TCP with the QP numbers and
 * GIDs); the client drives every operation and both check what arrived.
 */
#include <arpa/inet.h>
#include <pthread.h>

#include "tap.h"
#include "loop.h"
#include "sock.h"

#define BUF 65536
#define NTHREADS 4
#define PER_THREAD 200
#define QDEPTH 1024

struct peer {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
	union ibv_gid gid;
};

static struct ibv_mr *mr;
static struct ibv_cq_ex *cq;
static struct ibv_qp *qp;
static struct ibv_qp_ex *qpx;
static uint8_t *buf;

/* Both sides reach the same point (a byte each way). */
static void barrier(void)
{
	char c = 'b';

	xfer(&c, 1, 1);
	xfer(&c, 1, 0);
}

/* Polls the extended CQ for n completions into wc-like arrays. */
struct done {
	uint64_t wr_id;
	int status;
	int opcode;
	uint32_t byte_len;
	uint32_t imm;
	uint32_t qp_num;
	unsigned int flags;
};

static int poll_n(struct done *d, int n)
{
	struct ibv_poll_cq_attr attr = {};
	int got = 0, ret;

	for (long spins = 0; got < n && spins < 200000000L; spins++) {
		ret = ibv_start_poll(cq, &attr);
		if (ret == ENOENT)
			continue;
		if (ret)
			return -ret;
		do {
			d[got].wr_id = cq->wr_id;
			d[got].status = cq->status;
			d[got].opcode = ibv_wc_read_opcode(cq);
			d[got].byte_len = ibv_wc_read_byte_len(cq);
			d[got].qp_num = ibv_wc_read_qp_num(cq);
			d[got].flags = ibv_wc_read_wc_flags(cq);
			d[got].imm = (d[got].flags & IBV_WC_WITH_IMM) ? ntohl(ibv_wc_read_imm_data(cq)) : 0;
			got++;
		} while (got < n && ibv_next_poll(cq) == 0);
		ibv_end_poll(cq);
	}
	return got;
}

static void post_recvs(int n, size_t off, uint32_t len)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge s = { (uintptr_t)buf + off + (size_t)i * len, len, mr->lkey };
		struct ibv_recv_wr w = { .wr_id = 1000 + i, .sg_list = &s, .num_sge = 1 }, *bad;

		if (ibv_post_recv(qp, &w, &bad))
			die("ibv_post_recv");
	}
}

/* Moves the QP to RTS, connected to them (remote atomics on, 4 reads/atomics in flight each
 * way, retry and RNR retry 7). */
static void connect_qp(const struct peer *them)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = them->qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = them->gid;
	a.ah_attr.grh.sgid_index = gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

struct thread_arg {
	int id;
	int failures;
};

/* One of several threads posting sends on the same QP with ibv_post_send. */
static void *sender(void *p)
{
	struct thread_arg *t = p;

	for (int i = 0; i < PER_THREAD; i++) {
		uint32_t v = (uint32_t)t->id << 16 | (uint32_t)i;
		struct ibv_sge s = { (uintptr_t)&v, 4, 0 };
		struct ibv_send_wr w = {
			.wr_id = v, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
		}, *bad;

		if (ibv_post_send(qp, &w, &bad))
			t->failures++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *host;
	int server;
	struct peer me = {}, them;
	struct done d[NTHREADS * PER_THREAD + 8];

	loop_open(argc, argv);
	host = loop_peer;
	server = !host;
	buf = aligned_alloc(4096, BUF);
	if (!buf)
		die("buffer");
	memset(buf, 0, BUF);
	mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!mr)
		die("ibv_reg_mr");

	/* Refused attributes first: unsupported completion fields and send operations. */
	{
		struct ibv_cq_init_attr_ex ca = {
			.cqe = 16, .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
		};
		struct ibv_cq_ex *bad = ibv_create_cq_ex(ctx, &ca);

		ok(!bad && errno == EOPNOTSUPP, "ibv_create_cq_ex with completion timestamps is refused (EOPNOTSUPP)");
		if (bad)
			ibv_destroy_cq(ibv_cq_ex_to_cq(bad));
	}
	{
		struct ibv_cq_init_attr_ex ca = {
			.cqe = 2 * QDEPTH + 16,
			.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
				    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SL,
			.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
			.flags = 0,
		};

		cq = ibv_create_cq_ex(ctx, &ca);
		ok(cq != NULL, "ibv_create_cq_ex with byte_len/imm/qp_num/src_qp/sl");
		if (!cq)
			die("ibv_create_cq_ex");
	}
	{
		struct ibv_qp_init_attr_ex qa = {
			.send_cq = ibv_cq_ex_to_cq(cq), .recv_cq = ibv_cq_ex_to_cq(cq),
			.cap = { .max_send_wr = QDEPTH, .max_recv_wr = QDEPTH, .max_send_sge = 4,
				 .max_recv_sge = 1, .max_inline_data = 64 },
			.qp_type = IBV_QPT_RC, .pd = pd,
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = IBV_QP_EX_WITH_TSO,
		};
		struct ibv_qp *bad = ibv_create_qp_ex(ctx, &qa);

		ok(!bad && errno == EOPNOTSUPP, "ibv_create_qp_ex with TSO is refused (EOPNOTSUPP)");
		if (bad)
			ibv_destroy_qp(bad);
		qa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				    IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				    IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
		qp = ibv_create_qp_ex(ctx, &qa);
		ok(qp != NULL, "ibv_create_qp_ex RC with send ops flags");
		if (!qp)
			die("ibv_create_qp_ex");
		qpx = ibv_qp_to_qp_ex(qp);
		ok(qpx != NULL, "ibv_qp_to_qp_ex");
		if (!qpx)
			die("ibv_qp_to_qp_ex");
	}

	sock = tcp_connect(host, loop_port, server);
	me.qpn = qp->qp_num;
	me.rkey = mr->rkey;
	me.addr = (uintptr_t)buf;
	me.gid = gid;
	xfer(&me, sizeof(me), 1);
	xfer(&them, sizeof(them), 0);
	connect_qp(&them);
	ok(1, "QP connected (local %u, remote %u)", me.qpn, them.qpn);

	/* 1. One batch: send (SGE), send_imm (inline), rdma_write (SGE list), write_imm. */
	if (server)
		post_recvs(3, 0, 4096);
	barrier();
	if (!server) {
		for (int i = 0; i < 4096; i++)
			buf[i] = (uint8_t)(i * 7 + 1);
		for (int i = 0; i < 1000; i++)
			buf[8192 + i] = (uint8_t)(i ^ 0x5a);
		ibv_wr_start(qpx);
		qpx->wr_id = 1;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 4096);
		qpx->wr_id = 2;
		ibv_wr_send_imm(qpx, htonl(0x1234));
		ibv_wr_set_inline_data(qpx, "hello, inline", 13);
		qpx->wr_id = 3;
		ibv_wr_rdma_write(qpx, them.rkey, them.addr + 16384);
		{
			struct ibv_sge l[2] = {
				{ (uintptr_t)buf + 8192, 600, mr->lkey },
				{ (uintptr_t)buf + 8792, 400, mr->lkey },
			};
			ibv_wr_set_sge_list(qpx, 2, l);
		}
		qpx->wr_id = 4;
		ibv_wr_rdma_write_imm(qpx, them.rkey, them.addr + 32768, htonl(0xbeef));
		ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf + 8192, 1000);
		ok(ibv_wr_complete(qpx) == 0, "ibv_wr_complete of send, send_imm+inline, rdma_write+sge_list, write_imm");
		int n = poll_n(d, 4), good = n == 4;
		int want[4] = { IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE };

		for (int i = 0; good && i < 4; i++)
			good = d[i].status == IBV_WC_SUCCESS && d[i].wr_id == (uint64_t)i + 1 &&
			       d[i].opcode == want[i] && d[i].qp_num == qp->qp_num;
		ok(good, "4 send completions in order, successful, right opcodes (got %d)", n);
	} else {
		int n = poll_n(d, 3);

		ok(n == 3, "3 receive completions (got %d)", n);
		ok(n >= 1 && d[0].status == 0 && d[0].opcode == IBV_WC_RECV && d[0].byte_len == 4096 &&
		   !(d[0].flags & IBV_WC_WITH_IMM), "send: IBV_WC_RECV, 4096 bytes, no immediate");
		int same = 1;

		for (int i = 0; i < 4096; i++)
			same &= buf[i] == (uint8_t)(i * 7 + 1);
		ok(same, "send: the 4096 bytes arrived intact");
		ok(n >= 2 && d[1].status == 0 && d[1].opcode == IBV_WC_RECV && d[1].byte_len == 13 &&
		   (d[1].flags & IBV_WC_WITH_IMM) && d[1].imm == 0x1234 &&
		   !memcmp(buf + 4096, "hello, inline", 13),
		   "send_imm with inline data: 13 bytes and immediate 0x1234 (read_imm_data, read_wc_flags)");
		ok(n >= 3 && d[2].status == 0 && d[2].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		   d[2].imm == 0xbeef && d[2].qp_num == qp->qp_num,
		   "rdma_write_imm: IBV_WC_RECV_RDMA_WITH_IMM with immediate 0xbeef");
	}
	barrier();
	if (server) {
		int same = 1;

		for (int i = 0; i < 1000; i++)
			same &= buf[16384 + i] == (uint8_t)(i ^ 0x5a) && buf[32768 + i] == (uint8_t)(i ^ 0x5a);
		ok(same, "rdma_write from a 2-SGE list and write_imm placed the bytes");
		/* Data for the client's READ and atomics. */
		for (int i = 0; i < 2048; i++)
			buf[40960 + i] = (uint8_t)(i * 3);
		*(uint64_t *)(buf + 49152) = 100;
		*(uint64_t *)(buf + 49160) = 7;
	}
	barrier();

	/* 2. rdma_read and the two atomics in one batch. */
	if (!server) {
		memset(buf + 20480, 0, 2048);
		ibv_wr_start(qpx);
		qpx->wr_flags = IBV_SEND_SIGNALED;
		qpx->wr_id = 11;
		ibv_wr_rdma_read(qpx, them.rkey, them.addr + 40960);
		ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf + 20480, 2048);
		qpx->wr_id = 12;
		ibv_wr_atomic_fetch_add(qpx, them.rkey, them.addr + 49152, 5);
		ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf + 24576, 8);
		qpx->wr_id = 13;
		ibv_wr_atomic_cmp_swp(qpx, them.rkey, them.addr + 49160, 7, 99);
		ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf + 24584, 8);
		ok(ibv_wr_complete(qpx) == 0, "ibv_wr_complete of rdma_read, fetch_add, cmp_swp");
		int n = poll_n(d, 3), same = 1;

		ok(n == 3 && d[0].opcode == IBV_WC_RDMA_READ && d[1].opcode == IBV_WC_FETCH_ADD &&
		   d[2].opcode == IBV_WC_COMP_SWAP && !d[0].status && !d[1].status && !d[2].status,
		   "read/atomic completions (got %d)", n);
		for (int i = 0; i < 2048; i++)
			same &= buf[20480 + i] == (uint8_t)(i * 3);
		ok(same, "rdma_read brought the 2048 bytes");
		ok(*(uint64_t *)(buf + 24576) == 100 && *(uint64_t *)(buf + 24584) == 7,
		   "atomics returned the original values (100, 7)");
	}
	barrier();
	if (server)
		ok(*(uint64_t *)(buf + 49152) == 105 && *(uint64_t *)(buf + 49160) == 99,
		   "atomics changed the target (105, 99)");

	/* 3. Abort posts nothing; an operation the QP was not created for fails the batch. */
	if (server)
		post_recvs(1, 0, 4096);
	barrier();
	if (!server) {
		int ret;

		memcpy(buf, "ABORTED!", 8);
		memcpy(buf + 8, "POSTED!!", 8);
		ibv_wr_start(qpx);
		qpx->wr_flags = IBV_SEND_SIGNALED;
		qpx->wr_id = 21;
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 8);
		ibv_wr_abort(qpx);
		ibv_wr_start(qpx);
		qpx->wr_id = 22;
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 8);
		ibv_wr_send_inv(qpx, 0x1234); /* not in the QP's send ops */
		ret = ibv_wr_complete(qpx);
		ok(ret == EOPNOTSUPP, "a batch with an operation the QP was not created for fails whole (%d)", ret);
		ibv_wr_start(qpx);
		qpx->wr_id = 23;
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf + 8, 8);
		ok(ibv_wr_complete(qpx) == 0, "then a new batch posts");
		int n = poll_n(d, 1);

		ok(n == 1 && d[0].wr_id == 23 && !d[0].status, "only the last batch completed (wr_id %llu)",
		   n ? (unsigned long long)d[0].wr_id : 0ULL);
	} else {
		int n = poll_n(d, 1);

		ok(n == 1 && d[0].byte_len == 8 && !memcmp(buf, "POSTED!!", 8),
		   "the receiver got only the message of the completed batch");
	}
	barrier();

	/* 3b. Resizing the CQ keeps the completions not yet polled, in order. */
	if (server)
		post_recvs(3, 0, 64);
	barrier();
	if (!server) {
		int ret, n, good;

		ibv_wr_start(qpx);
		qpx->wr_flags = IBV_SEND_SIGNALED;
		for (int i = 0; i < 3; i++) {
			qpx->wr_id = 31 + i;
			ibv_wr_send(qpx);
			ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 8);
		}
		ok(ibv_wr_complete(qpx) == 0, "three sends posted before the resize");
		usleep(300000);
		ret = ibv_resize_cq(ibv_cq_ex_to_cq(cq), 4 * QDEPTH);
		ok(ret == 0 && cq->cqe >= 4 * QDEPTH, "ibv_resize_cq to %d entries (ret %d, cqe %d)",
		   4 * QDEPTH, ret, cq->cqe);
		n = poll_n(d, 3);
		good = n == 3;
		for (int i = 0; good && i < 3; i++)
			good = d[i].wr_id == (uint64_t)31 + i && !d[i].status;
		ok(good, "the three completions, in order, after the resize (got %d)", n);
	} else {
		ok(poll_n(d, 3) == 3, "three receives");
	}
	barrier();

	/* 4. Threads posting on one QP at once (ibv_post_send), every message checked. */
	if (server)
		post_recvs(NTHREADS * PER_THREAD, 0, 4);
	barrier();
	if (!server) {
		pthread_t th[NTHREADS];
		struct thread_arg ta[NTHREADS];
		int fails = 0, n, good = 1;

		for (int i = 0; i < NTHREADS; i++) {
			ta[i] = (struct thread_arg){ .id = i };
			pthread_create(&th[i], NULL, sender, &ta[i]);
		}
		for (int i = 0; i < NTHREADS; i++) {
			pthread_join(th[i], NULL);
			fails += ta[i].failures;
		}
		ok(fails == 0, "%d threads posted %d sends each on one QP (%d refused)", NTHREADS, PER_THREAD, fails);
		n = poll_n(d, NTHREADS * PER_THREAD - fails);
		for (int i = 0; i < n; i++)
			good &= d[i].status == IBV_WC_SUCCESS;
		ok(n == NTHREADS * PER_THREAD - fails && good, "every send completed successfully (%d)", n);
	} else {
		int n = poll_n(d, NTHREADS * PER_THREAD), good = n == NTHREADS * PER_THREAD;
		int next[NTHREADS] = {};

		for (int i = 0; good && i < n; i++) {
			uint32_t v;

			memcpy(&v, buf + (d[i].wr_id - 1000) * 4, 4);
			good = d[i].status == 0 && d[i].byte_len == 4 && (v >> 16) < NTHREADS &&
			       (v & 0xffff) == (uint32_t)next[v >> 16];
			if (good)
				next[v >> 16]++;
		}
		ok(good, "%d messages from %d threads, each thread's in its order, none lost or doubled (got %d)",
		   NTHREADS * PER_THREAD, NTHREADS, n);
	}
	barrier();

	/*
	 * 5. Re-registration: the server moves its MR to another buffer (new translation),
	 * the client writes there with the key it is given; then the server drops remote
	 * write access and the client's write fails with a remote access error.
	 */
	{
		uint8_t *buf2 = aligned_alloc(4096, 8192);
		struct { uint32_t rkey; uint64_t addr; } k;

		if (!buf2)
			die("buffer");
		memset(buf2, 0, 8192);
		if (server) {
			int ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf2, 8192, 0);

			ok(ret == 0, "ibv_rereg_mr to a new buffer (ret %d)", ret);
			k.rkey = mr->rkey;
			k.addr = (uintptr_t)buf2;
			xfer(&k, sizeof(k), 1);
		} else {
			xfer(&k, sizeof(k), 0);
			memcpy(buf, "re-registered!", 14);
			ibv_wr_start(qpx);
			qpx->wr_flags = IBV_SEND_SIGNALED;
			qpx->wr_id = 51;
			ibv_wr_rdma_write(qpx, k.rkey, k.addr + 100);
			ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 14);
			ok(ibv_wr_complete(qpx) == 0 && poll_n(d, 1) == 1 && !d[0].status,
			   "rdma_write with the re-registered key");
		}
		barrier();
		if (server) {
			ok(!memcmp(buf2 + 100, "re-registered!", 14), "the write landed in the new buffer");
			int ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
					       IBV_ACCESS_LOCAL_WRITE);

			ok(ret == 0, "ibv_rereg_mr to local access only (ret %d)", ret);
			k.rkey = mr->rkey;
			xfer(&k, sizeof(k), 1);
		} else {
			xfer(&k, sizeof(k), 0);
			ibv_wr_start(qpx);
			qpx->wr_flags = IBV_SEND_SIGNALED;
			qpx->wr_id = 52;
			ibv_wr_rdma_write(qpx, k.rkey, k.addr + 200);
			ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 14);
			int ret = ibv_wr_complete(qpx), n = poll_n(d, 1);

			ok(ret == 0 && n == 1 && d[0].status == IBV_WC_REM_ACCESS_ERR,
			   "a write to a region without remote write access fails (status %d)",
			   n == 1 ? d[0].status : -1);
		}
		barrier();
		if (server)
			ok(buf2[200] == 0, "and wrote nothing");
		free(buf2);
	}

	ok(ibv_destroy_qp(qp) == 0 && ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0 &&
	   ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd) == 0, "teardown");
	ibv_close_device(ctx);
	return tap_end();
}
