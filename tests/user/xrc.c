// SPDX-License-Identifier: GPL-2.0
/*
 * XRC on one device, through librrxe: an XRC send QP delivers into the XRC SRQ each request
 * names (legacy remote_srqn and ibv_wr_set_xrc_srqn), data checked byte for byte, RDMA WRITE
 * and READ through the target checked against the SRQ's PD; ibv_open_qp of the target; and
 * the refusals: an SRQ of another XRC domain or no SRQ at all (remote invalid request, the
 * target in error), posting on the wrong half, ATOMIC WRITE send ops, the SRQ number of a
 * basic SRQ, closing a domain in use.
 *
 * Two hosts (xrc -d DEV -g GIDX -p PORT -s on one, ... PEER on the other): each sends the
 * other NMSG messages of 1 B to 64 KiB through its XRC send QP into the peer's XRC SRQ and
 * checks every byte it receives, reads the peer's buffer with an XRC RDMA READ, then names
 * an SRQ the peer does not have (remote invalid request).
 *
 * Usage: xrc -d DEV -g GIDX [-p PORT] [-s | PEER]
 */
#include <fcntl.h>

#include "tap.h"
#include "loop.h"
#include "sock.h"

#define BUF 8192

static struct ibv_xrcd *xrcd_new(void)
{
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	};

	return ibv_open_xrcd(ctx, &xa);
}

static struct ibv_srq *xsrq_new(struct ibv_xrcd *x, struct ibv_cq *cq)
{
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 32, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC, .pd = pd, .xrcd = x, .cq = cq,
	};

	return ibv_create_srq_ex(ctx, &sa);
}

/* An XRC pair of this process: the target of domain x in RTR, the initiator in RTS. */
struct xpair {
	struct ibv_qp *ini, *tgt;
};

static void xpair_new(struct xpair *p, struct ibv_xrcd *x, struct ibv_cq *scq)
{
	struct ibv_qp_init_attr_ex ta = {
		.qp_type = IBV_QPT_XRC_RECV, .comp_mask = IBV_QP_INIT_ATTR_XRCD, .xrcd = x,
	};
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_XRC_SEND, .send_cq = scq, .pd = pd,
		.cap = { .max_send_wr = 16, .max_send_sge = 1, .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ,
	};

	p->tgt = ibv_create_qp_ex(ctx, &ta);
	p->ini = ibv_create_qp_ex(ctx, &ia);
	if (!p->tgt || !p->ini)
		die("ibv_create_qp_ex XRC");
	loop_init(p->tgt);
	loop_init(p->ini);
	loop_rtr(p->tgt, p->ini->qp_num, &gid);
	to_rts(p->ini, p->tgt->qp_num);
}

static void xpair_free(struct xpair *p)
{
	ibv_destroy_qp(p->ini);
	ibv_destroy_qp(p->tgt);
}

static int post_srq(struct ibv_srq *srq, struct ibv_mr *mr, void *at, uint32_t len, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)at, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

static int send_to(struct ibv_qp *qp, uint32_t srqn, struct ibv_mr *mr, void *at, uint32_t len,
		   enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)at, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.qp_type.xrc.remote_srqn = srqn;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* The two-host exchange. */
#define NMSG 24
#define MSG_MAX 65536

/* What each host tells the other. */
struct xdest {
	union ibv_gid gid;
	uint32_t ini_qpn, tgt_qpn, srqn, rkey;
	uint64_t addr;
};

static uint32_t msg_len(int i)
{
	return 1 + (uint32_t)(i * 7919) % MSG_MAX;
}

static void sync_peer(void)
{
	char c = 0;

	xfer(&c, 1, 1);
	xfer(&c, 1, 0);
}

static int two_hosts(void)
{
	struct xdest me, them;
	struct ibv_xrcd *x = xrcd_new();
	struct ibv_cq *scq = ibv_create_cq(ctx, NMSG + 4, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, NMSG + 4, NULL, NULL, 0);
	size_t size = (size_t)NMSG * MSG_MAX;
	uint8_t *rx = calloc(1, size), *tx = calloc(1, 2 * MSG_MAX), *ro = tx + MSG_MAX;
	uint8_t seed = loop_server ? 0x10 : 0x80, peer_seed = loop_server ? 0x80 : 0x10;
	struct ibv_mr *rmr, *tmr;
	struct ibv_srq *srq;
	struct ibv_wc wc;
	struct xpair p;
	int bad = 0, done = 0, r;

	if (!x || !scq || !rcq || !rx || !tx)
		die("xrcd/cq/buffers");
	rmr = ibv_reg_mr(pd, rx, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	tmr = ibv_reg_mr(pd, tx, 2 * MSG_MAX, IBV_ACCESS_LOCAL_WRITE);
	srq = xsrq_new(x, rcq);
	if (!rmr || !tmr || !srq)
		die("mr/srq");
	/* A target of our domain for the peer's initiator, an initiator for the peer's target. */
	{
		struct ibv_qp_init_attr_ex ta = {
			.qp_type = IBV_QPT_XRC_RECV, .comp_mask = IBV_QP_INIT_ATTR_XRCD, .xrcd = x,
		};
		struct ibv_qp_init_attr_ex ia = {
			.qp_type = IBV_QPT_XRC_SEND, .send_cq = scq, .pd = pd,
			.cap = { .max_send_wr = NMSG + 4, .max_send_sge = 1 },
			.comp_mask = IBV_QP_INIT_ATTR_PD,
		};

		p.tgt = ibv_create_qp_ex(ctx, &ta);
		p.ini = ibv_create_qp_ex(ctx, &ia);
		if (!p.tgt || !p.ini)
			die("XRC QPs");
		loop_init(p.tgt);
		loop_init(p.ini);
	}
	me = (struct xdest){ .gid = gid, .ini_qpn = p.ini->qp_num, .tgt_qpn = p.tgt->qp_num,
			     .rkey = rmr->rkey, .addr = (uintptr_t)rx };
	if (ibv_get_srq_num(srq, &me.srqn))
		die("ibv_get_srq_num");
	/* The peer's READ finds our first message area filled with our pattern. */
	fill(rx, MSG_MAX, seed ^ 0x55);
	xfer(&me, sizeof(me), 1);
	xfer(&them, sizeof(them), 0);
	loop_rtr(p.tgt, them.ini_qpn, &them.gid);
	loop_rtr(p.ini, them.tgt_qpn, &them.gid);
	/* A local ACK timeout of 67 ms, as ibv_*_pingpong use (the VMs are emulated). */
	loop_rts_opts(p.ini, 14, 7, 7);
	for (int i = 0; i < NMSG; i++)
		if (post_srq(srq, rmr, rx + (size_t)i * MSG_MAX, MSG_MAX, i))
			die("ibv_post_srq_recv");
	sync_peer();
	/* Our READ of the peer's first area, before any message overwrites it there. */
	r = send_to(p.ini, them.srqn, tmr, ro, MSG_MAX, IBV_WR_RDMA_READ, them.addr, them.rkey);
	r = r ?: wait_wc(scq, &wc);
	fill(tx, MSG_MAX, peer_seed ^ 0x55);
	ok(r == IBV_WC_SUCCESS && wc.byte_len == MSG_MAX && !memcmp(ro, tx, MSG_MAX),
	   "XRC RDMA READ of the peer's 64 KiB (status %d)", r);
	sync_peer();
	for (int i = 0; i < NMSG && !bad; i++) {
		fill(tx, msg_len(i), seed + i);
		r = send_to(p.ini, them.srqn, tmr, tx, msg_len(i), IBV_WR_SEND, 0, 0);
		r = r ?: wait_wc(scq, &wc);
		bad = r != IBV_WC_SUCCESS;
	}
	ok(!bad, "%d XRC SENDs of 1 B to 64 KiB to the peer's SRQ %u complete", NMSG, them.srqn);
	for (int i = 0; i < NMSG; i++) {
		if (wait_wc_ms(rcq, &wc, 20000) != IBV_WC_SUCCESS || wc.wr_id >= NMSG ||
		    wc.qp_num != p.tgt->qp_num)
			break;
		fill(tx, msg_len(wc.wr_id), peer_seed + wc.wr_id);
		done += wc.byte_len == msg_len(wc.wr_id) &&
			!memcmp(rx + wc.wr_id * MSG_MAX, tx, wc.byte_len);
	}
	ok(done == NMSG, "%d of %d messages received through our XRC SRQ, every byte checked",
	   done, NMSG);
	/* An SRQ the peer does not have: a remote invalid request, for the peer's target too. */
	sync_peer();
	r = send_to(p.ini, them.srqn + 100, tmr, tx, 16, IBV_WR_SEND, 0, 0);
	r = r ?: wait_wc(scq, &wc);
	ok(r == IBV_WC_REM_INV_REQ_ERR,
	   "an XRC SEND naming an SRQ the peer lacks: IBV_WC_REM_INV_REQ_ERR (status %d)", r);
	sync_peer();
	{
		struct ibv_qp_attr at;
		struct ibv_qp_init_attr ia;

		ok(!ibv_query_qp(p.tgt, &at, IBV_QP_STATE, &ia) && at.qp_state == IBV_QPS_ERR,
		   "our target QP is in the error state after the peer's bad request");
	}
	xpair_free(&p);
	ok(!ibv_destroy_srq(srq) && !ibv_close_xrcd(x), "SRQ and domain go");
	ibv_dereg_mr(rmr);
	ibv_dereg_mr(tmr);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	free(rx);
	free(tx);
	return tap_end();
}

int main(int argc, char **argv)
{
	struct ibv_cq *scq, *cqa, *cqb;
	struct ibv_xrcd *xa, *xb;
	struct ibv_srq *sa, *sb, *basic;
	struct ibv_mr *mr;
	struct xpair p;
	struct ibv_wc wc;
	uint32_t na = 0, nb = 0, n;
	uint8_t *src, *dst;
	int r;

	loop_open(argc, argv);
	if (loop_server || loop_peer) {
		sock = tcp_connect(loop_peer, loop_port, loop_server);
		return two_hosts();
	}
	src = calloc(1, 2 * BUF);
	if (!src)
		die("calloc");
	dst = src + BUF;
	mr = ibv_reg_mr(pd, src, 2 * BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ);
	scq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	cqa = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	cqb = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	if (!mr || !scq || !cqa || !cqb)
		die("mr/cq");

	xa = xrcd_new();
	xb = xrcd_new();
	ok(xa && xb, "ibv_open_xrcd: two domains");
	if (!xa || !xb)
		return tap_end();
	sa = xsrq_new(xa, cqa);
	sb = xsrq_new(xb, cqb);
	ok(sa && sb, "ibv_create_srq_ex: an XRC SRQ in each domain");
	if (!sa || !sb)
		return tap_end();
	r = ibv_get_srq_num(sa, &na) ?: ibv_get_srq_num(sb, &nb);
	ok(!r && na && nb && na != nb, "ibv_get_srq_num: two distinct numbers (%u, %u)", na, nb);
	xpair_new(&p, xa, scq);

	/* A 3000-byte SEND (three packets at MTU 1024) into SRQ A. */
	fill(src, BUF, 1);
	memset(dst, 0, BUF);
	r = post_srq(sa, mr, dst, BUF, 11);
	r = r ?: send_to(p.ini, na, mr, src, 3000, IBV_WR_SEND, 0, 0);
	ok(!r && wait_wc(scq, &wc) == IBV_WC_SUCCESS, "XRC SEND (remote_srqn): send completion");
	r = wait_wc(cqa, &wc);
	ok(r == IBV_WC_SUCCESS && wc.wr_id == 11 && wc.byte_len == 3000 &&
	   wc.opcode == IBV_WC_RECV && wc.qp_num == p.tgt->qp_num,
	   "receive completion on SRQ A's CQ (wr_id %llu, %u bytes, qp %u)",
	   (unsigned long long)wc.wr_id, wc.byte_len, wc.qp_num);
	ok(!memcmp(src, dst, 3000) && dst[3000] == 0, "the 3000 bytes arrived intact, no more");
	ok(ibv_poll_cq(cqb, 1, &wc) == 0, "nothing on SRQ B's CQ");

	/* The extended API: SEND with immediate, SRQ named by ibv_wr_set_xrc_srqn. */
	{
		struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(p.ini);

		fill(src, BUF, 2);
		memset(dst, 0, BUF);
		r = post_srq(sa, mr, dst, BUF, 12);
		ibv_wr_start(qx);
		qx->wr_id = 8;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send_imm(qx, htobe32(0x1234));
		ibv_wr_set_xrc_srqn(qx, na);
		ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)src, 1500);
		r = r ?: ibv_wr_complete(qx);
		ok(!r && wait_wc(scq, &wc) == IBV_WC_SUCCESS && wc.wr_id == 8,
		   "XRC SEND_WITH_IMM (ibv_wr_set_xrc_srqn): send completion");
		ok(wait_wc(cqa, &wc) == IBV_WC_SUCCESS && wc.wr_id == 12 && wc.byte_len == 1500 &&
		   (wc.wc_flags & IBV_WC_WITH_IMM) && wc.imm_data == htobe32(0x1234) &&
		   !memcmp(src, dst, 1500), "received with its immediate and data intact");
	}

	/* RDMA WRITE and READ through the target: keys of SRQ A's PD. */
	fill(src, BUF, 3);
	memset(dst, 0, BUF);
	r = send_to(p.ini, na, mr, src, 5000, IBV_WR_RDMA_WRITE, (uintptr_t)dst, mr->rkey);
	ok(!r && wait_wc(scq, &wc) == IBV_WC_SUCCESS && !memcmp(src, dst, 5000),
	   "XRC RDMA WRITE of 5000 bytes");
	memset(src, 0, BUF);
	r = send_to(p.ini, na, mr, src, 5000, IBV_WR_RDMA_READ, (uintptr_t)dst, mr->rkey);
	ok(!r && wait_wc(scq, &wc) == IBV_WC_SUCCESS && wc.byte_len == 5000 &&
	   !memcmp(src, dst, 5000), "XRC RDMA READ of 5000 bytes");

	/* ibv_open_qp: the target by number in its domain. */
	{
		struct ibv_qp_open_attr oa = {
			.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
				     IBV_QP_OPEN_ATTR_TYPE,
			.qp_num = p.tgt->qp_num, .xrcd = xa, .qp_type = IBV_QPT_XRC_RECV,
		};
		struct ibv_qp *o = ibv_open_qp(ctx, &oa);

		ok(o && o->qp_num == p.tgt->qp_num, "ibv_open_qp of the target QP");
		ok(o && !ibv_destroy_qp(o), "the opened QP closes");
		oa.xrcd = xb;
		o = ibv_open_qp(ctx, &oa);
		ok(!o && errno == EINVAL, "ibv_open_qp in another domain: EINVAL (errno %d)", errno);
	}

	/* Refusals on the wrong half. */
	{
		struct ibv_recv_wr rw = { .wr_id = 1 }, *rbad = NULL;
		struct ibv_send_wr sw = { .wr_id = 1, .opcode = IBV_WR_SEND }, *sbad = NULL;

		r = ibv_post_recv(p.ini, &rw, &rbad);
		ok(r == EINVAL && rbad == &rw, "ibv_post_recv on an XRC send QP: EINVAL (%d)", r);
		r = ibv_post_send(p.tgt, &sw, &sbad);
		ok(r == EINVAL && sbad == &sw, "ibv_post_send on an XRC receive QP: EINVAL (%d)", r);
	}
	{
		struct ibv_qp_init_attr_ex ia = {
			.qp_type = IBV_QPT_XRC_SEND, .send_cq = scq, .pd = pd,
			.cap = { .max_send_wr = 4, .max_send_sge = 1 },
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE,
		};
		struct ibv_qp *q = ibv_create_qp_ex(ctx, &ia);

		ok(!q && errno == EOPNOTSUPP,
		   "XRC send QP with ATOMIC WRITE send ops: EOPNOTSUPP (errno %d)", errno);
	}
	{
		/* ibv_wr_set_xrc_srqn on an RC QP: the batch fails. */
		struct ibv_qp *rc = loop_rc_qp(scq, NULL, 1, IBV_QP_EX_WITH_SEND);
		struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(rc);

		to_rts(rc, rc->qp_num);
		ibv_wr_start(qx);
		qx->wr_id = 9;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(qx);
		ibv_wr_set_xrc_srqn(qx, na);
		ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)src, 16);
		r = ibv_wr_complete(qx);
		ok(r == EOPNOTSUPP, "ibv_wr_set_xrc_srqn on an RC QP: EOPNOTSUPP (%d)", r);
		ok(ibv_poll_cq(scq, 1, &wc) == 0, "nothing was sent");
		ibv_destroy_qp(rc);
	}
	basic = ibv_create_srq(pd, &(struct ibv_srq_init_attr){ .attr = { 4, 1, 0 } });
	ok(basic && ibv_get_srq_num(basic, &n) == EOPNOTSUPP,
	   "ibv_get_srq_num of a basic SRQ: EOPNOTSUPP");
	if (basic)
		ibv_destroy_srq(basic);
	r = ibv_close_xrcd(xa);
	ok(r == EBUSY, "ibv_close_xrcd of a domain with an SRQ: EBUSY (%d)", r);

	/* SRQ B is of another domain than the target: invalid request, target in error. */
	{
		struct ibv_qp_attr at;
		struct ibv_qp_init_attr ia;

		r = post_srq(sb, mr, dst, BUF, 21);
		r = r ?: send_to(p.ini, nb, mr, src, 100, IBV_WR_SEND, 0, 0);
		r = r ?: wait_wc(scq, &wc);
		ok(r == IBV_WC_REM_INV_REQ_ERR,
		   "XRC SEND naming another domain's SRQ: IBV_WC_REM_INV_REQ_ERR (status %d)",
		   r);
		ok(!ibv_query_qp(p.tgt, &at, IBV_QP_STATE, &ia) && at.qp_state == IBV_QPS_ERR,
		   "the target QP is in the error state");
		ok(ibv_poll_cq(cqb, 1, &wc) == 0, "SRQ B received nothing");
		xpair_free(&p);
	}
	/* No SRQ of that number at all. */
	xpair_new(&p, xa, scq);
	r = send_to(p.ini, 0xabcde, mr, src, 100, IBV_WR_SEND, 0, 0);
	r = r ?: wait_wc(scq, &wc);
	ok(r == IBV_WC_REM_INV_REQ_ERR,
	   "XRC SEND naming no SRQ: IBV_WC_REM_INV_REQ_ERR (status %d)", r);
	xpair_free(&p);

	/* An SRQ destroyed while messages to it arrive: the target finds it gone, nothing
	 * lands in freed memory, every send completes, and the device carries on. */
	{
		struct ibv_cq *cqc = ibv_create_cq(ctx, 32, NULL, NULL, 0);
		struct ibv_srq *sc = cqc ? xsrq_new(xa, cqc) : NULL;
		uint32_t nc = 0;
		int sent = 0, completed = 0, others = 0;

		if (!sc || ibv_get_srq_num(sc, &nc))
			die("SRQ C");
		xpair_new(&p, xa, scq);
		for (int i = 0; i < 8; i++)
			post_srq(sc, mr, dst, BUF, 30 + i);
		for (int i = 0; i < 12; i++)
			sent += !send_to(p.ini, nc, mr, src, 512 + 600 * i, IBV_WR_SEND, 0, 0);
		r = ibv_destroy_srq(sc);
		for (int i = 0; i < sent; i++) {
			int st = wait_wc_ms(scq, &wc, 20000);

			if (st < 0)
				break;
			completed++;
			others += st != IBV_WC_SUCCESS && st != IBV_WC_REM_INV_REQ_ERR &&
				  st != IBV_WC_WR_FLUSH_ERR && st != IBV_WC_RNR_RETRY_EXC_ERR;
		}
		ok(!r && sent == 12 && completed == sent && !others,
		   "SRQ destroyed under traffic: all %d sends complete (success, invalid request, "
		   "RNR retries or flushed; %d other statuses)", completed, others);
		xpair_free(&p);
		ibv_destroy_cq(cqc);
		/* The device carries on: SRQ A through a new pair. */
		xpair_new(&p, xa, scq);
		fill(src, BUF, 5);
		memset(dst, 0, BUF);
		r = post_srq(sa, mr, dst, BUF, 40);
		r = r ?: send_to(p.ini, na, mr, src, 2000, IBV_WR_SEND, 0, 0);
		r = r ?: wait_wc(scq, &wc);
		r = r ?: wait_wc(cqa, &wc);
		ok(!r && wc.wr_id == 40 && wc.byte_len == 2000 && !memcmp(src, dst, 2000),
		   "afterwards a new pair delivers into SRQ A (status %d)", r);
		xpair_free(&p);
	}

	/* Teardown: SRQ B's WQE is still posted; the domains close once their SRQs are gone. */
	ok(!ibv_destroy_srq(sa) && !ibv_destroy_srq(sb), "the XRC SRQs are destroyed");
	ok(!ibv_close_xrcd(xa) && !ibv_close_xrcd(xb), "the domains close");
	ibv_destroy_cq(scq);
	ibv_destroy_cq(cqa);
	ibv_destroy_cq(cqb);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(src);
	return tap_end();
}
