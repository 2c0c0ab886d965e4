// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_ktest - a kernel-verbs test of an RDMA device between two hosts.
 *
 * Loading the module runs the whole test synchronously in module init and
 * returns 0 (so that the module stays loaded; rmmod it afterwards). One host
 * loads it with role=server, the other with role=client addr=<server IPv4>.
 * Results are TAP lines in the kernel log, each prefixed "rrxe_ktest: ", and a
 * final "rrxe_ktest: 1..N" plan plus a "# done" summary line.
 *
 * Over one RC connection set up with the kernel rdma_cm, two phases run: in
 * phase 0 the client is the initiator and the server the target, in phase 1
 * the other way round. In each phase:
 *   - SEND and SEND_WITH_IMM of patterned buffers of every size, verified by
 *     the receiver (length, immediate, data);
 *   - the target exposes a buffer through an FRMR (IB_WR_REG_MR) and
 *     advertises {addr, rkey, len} in a SEND;
 *   - RDMA WRITE (plus an unaligned case) and RDMA WRITE_WITH_IMM into it,
 *     verified by the target (data, guard bytes, immediate, byte_len);
 *   - RDMA READ from it, verified by the initiator;
 *   - CMP_SWAP (hit and miss) and FETCH_ADD on an aligned word, the returned
 *     original values checked by the initiator, the final word by the target;
 *   - LOCAL_INV of the FRMR by the target.
 * Then a UD exchange through an RDMA_PS_UDP cm_id (SIDR resolution, AH from
 * the SIDR reply on the client, AH from the received GRH on the server), an
 * RDMA READ with the invalidated rkey (must fail with a remote access error),
 * disconnect, and the flush semantics ib_drain_qp() relies on.
 *
 * role=srq-drain runs on one host, on the RDMA device of netdev=NAME (default eth0), with
 * QPs of this module connected to each other through the device's RoCE v2 IPv4 GID: the
 * affiliated asynchronous events a QP on an SRQ needs. A, on an SRQ, in RTR gets a SEND
 * from B (data checked) and IB_EVENT_COMM_EST; after more traffic in RTS, ib_drain_qp(A)
 * must return with IB_EVENT_QP_LAST_WQE_REACHED received (the core waits up to 60 s for
 * it, since Linux 6.11) and leave the SRQ's other receives posted; C, on the SRQ, gets the
 * event once per entry into the error state; each QP's handler saw exactly its events.
 *
 * Every wait has a timeout (and is killable); any failure is reported as a
 * "not ok" line and the test stops and cleans up.
 */
#define pr_fmt(fmt) "rrxe_ktest: " fmt

#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/delay.h>
#include <linux/wait.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/ktime.h>
#include <linux/scatterlist.h>
#include <linux/dma-mapping.h>
#include <linux/sched/signal.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/rdma_cm_ib.h>

static char *role = "";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "server, client, or srq-drain (one host: QPs of this module on one device)");
static char *netdev = "eth0";
module_param(netdev, charp, 0444);
MODULE_PARM_DESC(netdev, "srq-drain: the netdev of the RDMA device to test");
static char *addr = "";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "IPv4 address of the server (client: required; server: optional bind address)");
static ushort port = 7174;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "rdma_cm port (RC in RDMA_PS_TCP, UD in RDMA_PS_UDP)");
static uint iters = 3;
module_param(iters, uint, 0444);
MODULE_PARM_DESC(iters, "iterations of every data transfer");
#define KT_MAX_SIZES 8
static uint sizes[KT_MAX_SIZES] = { 1, 4096, 65536, 1048576 };
static int nr_sizes = 4;
module_param_array(sizes, uint, &nr_sizes, 0444);
MODULE_PARM_DESC(sizes, "transfer sizes in bytes (default 1,4096,65536,1048576)");
static uint timeout_ms = 20000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "timeout of every single wait");
static uint connect_secs = 90;
module_param(connect_secs, uint, 0444);
MODULE_PARM_DESC(connect_secs, "how long the client retries connecting / the server waits for it");
static bool ud = true;
module_param(ud, bool, 0444);
MODULE_PARM_DESC(ud, "run the UD test");
static bool negative = true;
module_param(negative, bool, 0444);
MODULE_PARM_DESC(negative, "run the invalidated-rkey test (client)");
static bool lossy;
module_param(lossy, bool, 0444);
MODULE_PARM_DESC(lossy, "the link loses packets (netem): a NAK may be lost too");

#define KT_MAGIC	0x6b747374	/* "ktst" */
#define KT_NRECV	4		/* RC receive slots, maxsize bytes each */
#define KT_UD_NRECV	4
#define KT_UD_SLOT	(2 * PAGE_SIZE)	/* 40 B GRH + up to 4 KiB MTU */
#define KT_GRH		40
#define KT_FILL		0xa5		/* target buffer filler between tests */
#define KT_GUARD	64		/* bytes checked after a write / read */
#define KT_MAX_CASES	(KT_MAX_SIZES + 1)
#define KT_CTL_MSG	0		/* offsets in the control page */
#define KT_CTL_ATOMIC	256
#define KT_CTL_FLUSH	512

/* Control messages, all sent with IB_WR_SEND from the control page. */
enum { KT_ADVERT = 1, KT_DONE, KT_ACK, KT_READ_READY };
enum { KT_OP_SEND = 1, KT_OP_SEND_IMM, KT_OP_WRITE, KT_OP_WRITE_IMM, KT_OP_READ, KT_OP_ATOMIC };
enum { KT_ST_OK = 0, KT_ST_BAD = 1, KT_ST_SKIP = 2 };

struct kt_msg {
	__be32 magic;
	__be32 type;
	__be32 op;
	__be32 status;
	__be64 addr;
	__be64 value;
	__be32 rkey;
	__be32 len;
	__be32 off;
	__be32 seed;
};

/* Header of a UD datagram's payload. */
struct kt_udh {
	__be32 magic;
	__be32 qpn;
	__be32 seed;
	__be32 len;
};

/* A completion token: the done callback copies the WC and wakes kt_wq. */
struct kt_tok {
	struct ib_cqe cqe;
	bool fired;
	struct ib_wc wc;
};

struct kt_buf {
	void *va;
	u64 dma;
	size_t len;
};

/* The FRMR-exposed target buffer: one DMA mapping, an sg list of its pages. */
struct kt_tgt {
	void *va;
	u64 dma;
	size_t len;
	struct sg_table sgt;
	struct ib_mr *mr;
};

enum { KT_CM_IDLE, KT_CM_ADDR, KT_CM_ROUTE, KT_CM_REQUEST, KT_CM_ESTABLISHED, KT_CM_ERROR = 100 };

struct kt_cm {
	struct rdma_cm_id *id;		/* active id (client) or listening id (server) */
	struct rdma_cm_id *child;	/* server: the id of the accepted request */
	spinlock_t lock;		/* child, closing */
	bool closing;
	int state;
	int error;
	int err_event;
	bool disconnected;
	u8 req_initiator_depth;
	u8 req_responder_resources;
	bool have_ah_attr;		/* UD client: from the SIDR reply */
	struct rdma_ah_attr ah_attr;
	u32 remote_qpn;
	u32 remote_qkey;
};

struct kt_case {
	u32 len;
	u32 loff;	/* offset in the local buffer */
	u32 roff;	/* offset in the remote buffer */
};

struct kt_ud {
	struct kt_cm cm;
	struct ib_cq *cq;		/* IB_POLL_DIRECT */
	struct rdma_cm_id *qp_id;
	struct ib_qp *qp;
	struct kt_buf rx[KT_UD_NRECV];
	struct kt_tok rx_tok[KT_UD_NRECV];
	int rx_next;
	struct kt_buf tx;
	struct kt_tok tx_tok;
	struct ib_ah *ah;
	u32 mtu;
};

struct kt {
	bool server;
	struct sockaddr_in sin;
	struct kt_cm rc;
	struct ib_device *dev;
	u32 port_num;
	struct ib_pd *pd;
	struct ib_cq *cq;		/* IB_POLL_WORKQUEUE */
	struct rdma_cm_id *qp_id;	/* the id that owns the RC QP */
	struct ib_qp *qp;
	struct kt_buf ctl;		/* control page: messages, atomic results */
	struct kt_buf src;		/* local source / sink of transfers */
	struct kt_buf rx[KT_NRECV];
	struct kt_tok rx_tok[KT_NRECV];
	int rx_next;
	struct kt_tok tx_tok;
	struct kt_tgt tgt;
	struct kt_case cases[KT_MAX_CASES];
	int ncases;
	u32 maxsize;			/* data area of tgt; tgt has one more page */
	bool atomics;
	bool have_stale;
	u64 stale_addr;
	u32 stale_rkey;
	struct kt_ud ud;
};

static DECLARE_WAIT_QUEUE_HEAD(kt_wq);
static int tap_n, tap_failed;

static __printf(2, 3) void tap(bool pass, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	tap_n++;
	if (!pass)
		tap_failed++;
	pr_info("%sok %d - %pV\n", pass ? "" : "not ", tap_n, &vaf);
	va_end(args);
}

#define diag(fmt, ...) pr_info("# " fmt "\n", ##__VA_ARGS__)

static const char *kt_sz(char *b, size_t n, u32 len)
{
	if (len >= SZ_1M && !(len % SZ_1M))
		snprintf(b, n, "%u MiB", len / SZ_1M);
	else if (len >= SZ_1K && !(len % SZ_1K))
		snprintf(b, n, "%u KiB", len / SZ_1K);
	else
		snprintf(b, n, "%u B", len);
	return b;
}

/* ---- data patterns ---- */

static inline u8 kt_pat(u32 seed, u32 i)
{
	u32 x = (i + 1) * 0x9e3779b1u ^ seed;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return x;
}

/* Byte j of buf gets pattern index first + j. */
static void kt_fill(void *buf, u32 seed, u32 first, u32 len)
{
	u8 *p = buf;
	u32 j;

	for (j = 0; j < len; j++)
		p[j] = kt_pat(seed, first + j);
}

static bool kt_check(const char *what, const void *buf, u32 seed, u32 first, u32 len)
{
	const u8 *p = buf;
	u32 j;

	for (j = 0; j < len; j++) {
		if (p[j] != kt_pat(seed, first + j)) {
			diag("%s: data mismatch at byte %u of %u: got 0x%02x, want 0x%02x",
			     what, j, len, p[j], kt_pat(seed, first + j));
			return false;
		}
	}
	return true;
}

static bool kt_check_fill(const char *what, const void *buf, u8 val, u32 off, u32 len)
{
	const u8 *p = buf;
	u32 j;

	for (j = off; j < off + len; j++) {
		if (p[j] != val) {
			diag("%s: byte %u outside the transfer changed: 0x%02x, want 0x%02x",
			     what, j, p[j], val);
			return false;
		}
	}
	return true;
}

static u32 kt_seed(int ph, int op, int ci, int it)
{
	return (ph + 1) * 0x01000193u ^ op * 0x9e3779b9u ^ (ci + 1) * 0x85ebca6bu ^
	       (it + 1) * 0xc2b2ae35u;
}

/* ---- completions ---- */

static void kt_tok_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kt_tok *t = container_of(wc->wr_cqe, struct kt_tok, cqe);

	t->wc = *wc;
	smp_store_release(&t->fired, true);
	wake_up(&kt_wq);
}

static void kt_tok_arm(struct kt_tok *t)
{
	t->cqe.done = kt_tok_done;
	memset(&t->wc, 0, sizeof(t->wc));
	WRITE_ONCE(t->fired, false);
}

static bool kt_rc_broken(struct kt *kt)
{
	return READ_ONCE(kt->rc.disconnected) || READ_ONCE(kt->rc.state) == KT_CM_ERROR;
}

/*
 * Waits for a token. direct_cq: poll that IB_POLL_DIRECT CQ meanwhile.
 * Returns 0 (success status), -EIO (error status, in t->wc), -ETIMEDOUT,
 * -EINTR (fatal signal) or -ECONNRESET (the RC connection went away).
 */
static int kt_wait_tok(struct kt *kt, struct kt_tok *t, struct ib_cq *direct_cq,
		       unsigned int ms, bool abort_on_disc)
{
	long left;

	if (direct_cq) {
		unsigned long deadline = jiffies + msecs_to_jiffies(ms);

		for (;;) {
			ib_process_cq_direct(direct_cq, 16);
			if (smp_load_acquire(&t->fired))
				break;
			if (fatal_signal_pending(current))
				return -EINTR;
			if (time_after(jiffies, deadline))
				return -ETIMEDOUT;
			usleep_range(200, 1000);
		}
	} else {
		left = wait_event_killable_timeout(kt_wq, smp_load_acquire(&t->fired) ||
						   (abort_on_disc && kt_rc_broken(kt)),
						   msecs_to_jiffies(ms));
		if (left < 0)
			return -EINTR;
		if (!smp_load_acquire(&t->fired))
			return left ? -ECONNRESET : -ETIMEDOUT;
	}
	return t->wc.status == IB_WC_SUCCESS ? 0 : -EIO;
}

static void kt_diag_wait(const char *what, int ret, const struct kt_tok *t, unsigned int ms)
{
	if (ret == -EIO)
		diag("%s: completion with status %s (%d), vendor_err 0x%x", what,
		     ib_wc_status_msg(t->wc.status), t->wc.status, t->wc.vendor_err);
	else if (ret == -ETIMEDOUT)
		diag("%s: no completion within %u ms", what, ms);
	else if (ret == -ECONNRESET)
		diag("%s: the connection went away while waiting", what);
	else
		diag("%s: failed: %d", what, ret);
}

/* ---- rdma_cm ---- */

static int kt_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kt_cm *cm = id->context;
	bool take;
	int st;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		st = KT_CM_ADDR;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		st = KT_CM_ROUTE;
		break;
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		spin_lock(&cm->lock);
		take = !cm->closing && !cm->child;
		if (take)
			cm->child = id;
		spin_unlock(&cm->lock);
		if (!take) {
			diag("rejecting an extra connection request");
			return 1;	/* rdma_cm destroys the new id */
		}
		if (id->qp_type != IB_QPT_UD) {
			cm->req_initiator_depth = ev->param.conn.initiator_depth;
			cm->req_responder_resources = ev->param.conn.responder_resources;
		}
		st = KT_CM_REQUEST;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (id->qp_type == IB_QPT_UD && !cm->have_ah_attr) {
			rdma_copy_ah_attr(&cm->ah_attr, &ev->param.ud.ah_attr);
			cm->remote_qpn = ev->param.ud.qp_num;
			cm->remote_qkey = ev->param.ud.qkey;
			cm->have_ah_attr = true;
		}
		st = KT_CM_ESTABLISHED;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		WRITE_ONCE(cm->disconnected, true);
		wake_up(&kt_wq);
		return 0;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		cm->error = ev->status ? ev->status : -ECONNABORTED;
		cm->err_event = ev->event;
		st = KT_CM_ERROR;
		break;
	default:
		return 0;
	}
	smp_store_release(&cm->state, st);
	wake_up(&kt_wq);
	return 0;
}

static void kt_cm_init(struct kt_cm *cm)
{
	memset(cm, 0, sizeof(*cm));
	spin_lock_init(&cm->lock);
}

/* Waits until the cm state reaches want. */
static int kt_cm_wait(struct kt_cm *cm, int want, unsigned int ms, const char *what)
{
	long left;
	int st;

	left = wait_event_killable_timeout(kt_wq, smp_load_acquire(&cm->state) >= want,
					   msecs_to_jiffies(ms));
	st = smp_load_acquire(&cm->state);
	if (left < 0) {
		diag("%s: interrupted", what);
		return -EINTR;
	}
	if (st == KT_CM_ERROR) {
		diag("%s: rdma_cm event %s, status %d", what, rdma_event_msg(cm->err_event),
		     cm->error);
		return cm->error < 0 ? cm->error : -ECONNREFUSED;
	}
	if (st < want) {
		diag("%s: timed out after %u ms", what, ms);
		return -ETIMEDOUT;
	}
	return 0;
}

static int kt_wait_disconnected(struct kt_cm *cm, unsigned int ms)
{
	long left = wait_event_killable_timeout(kt_wq, READ_ONCE(cm->disconnected),
						msecs_to_jiffies(ms));

	if (left < 0)
		return -EINTR;
	return READ_ONCE(cm->disconnected) ? 0 : -ETIMEDOUT;
}

static int kt_listen(struct kt *kt, struct kt_cm *cm, enum rdma_ucm_port_space ps,
		     enum ib_qp_type qpt)
{
	struct rdma_cm_id *id;
	int ret;

	id = rdma_create_id(&init_net, kt_cm_handler, cm, ps, qpt);
	if (IS_ERR(id))
		return PTR_ERR(id);
	cm->id = id;
	ret = rdma_bind_addr(id, (struct sockaddr *)&kt->sin);
	if (ret)
		return ret;
	return rdma_listen(id, 4);
}

/* Active side: a new id, resolved address and route. */
static int kt_resolve(struct kt *kt, struct kt_cm *cm, enum rdma_ucm_port_space ps,
		      enum ib_qp_type qpt)
{
	struct rdma_cm_id *id;
	int ret;

	id = rdma_create_id(&init_net, kt_cm_handler, cm, ps, qpt);
	if (IS_ERR(id))
		return PTR_ERR(id);
	cm->id = id;
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)&kt->sin, 5000);
	if (ret)
		return ret;
	ret = kt_cm_wait(cm, KT_CM_ADDR, 10000, "rdma_resolve_addr");
	if (ret)
		return ret;
	ret = rdma_resolve_route(id, 5000);
	if (ret)
		return ret;
	return kt_cm_wait(cm, KT_CM_ROUTE, 10000, "rdma_resolve_route");
}

/* Destroys the ids of a kt_cm: the listener first, so no new child appears. */
static void kt_cm_destroy(struct kt_cm *cm)
{
	struct rdma_cm_id *child;

	spin_lock(&cm->lock);
	cm->closing = true;
	spin_unlock(&cm->lock);
	if (cm->id)
		rdma_destroy_id(cm->id);
	cm->id = NULL;
	spin_lock(&cm->lock);
	child = cm->child;
	cm->child = NULL;
	spin_unlock(&cm->lock);
	if (child)
		rdma_destroy_id(child);
	if (cm->have_ah_attr)
		rdma_destroy_ah_attr(&cm->ah_attr);
	cm->have_ah_attr = false;
}

/* ---- buffers ---- */

static int kt_buf_alloc(struct kt *kt, struct kt_buf *b, size_t len)
{
	b->len = PAGE_ALIGN(len);
	b->va = alloc_pages_exact(b->len, GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN);
	if (!b->va)
		return -ENOMEM;
	b->dma = ib_dma_map_single(kt->dev, b->va, b->len, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(kt->dev, b->dma)) {
		free_pages_exact(b->va, b->len);
		b->va = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void kt_buf_free(struct kt *kt, struct kt_buf *b)
{
	if (!b->va)
		return;
	ib_dma_unmap_single(kt->dev, b->dma, b->len, DMA_BIDIRECTIONAL);
	free_pages_exact(b->va, b->len);
	b->va = NULL;
}

static void kt_buf_cpu(struct kt *kt, struct kt_buf *b)
{
	ib_dma_sync_single_for_cpu(kt->dev, b->dma, b->len, DMA_BIDIRECTIONAL);
}

static void kt_buf_dev(struct kt *kt, struct kt_buf *b)
{
	ib_dma_sync_single_for_device(kt->dev, b->dma, b->len, DMA_BIDIRECTIONAL);
}

static void kt_tgt_cpu(struct kt *kt)
{
	ib_dma_sync_single_for_cpu(kt->dev, kt->tgt.dma, kt->tgt.len, DMA_BIDIRECTIONAL);
}

static void kt_tgt_dev(struct kt *kt)
{
	ib_dma_sync_single_for_device(kt->dev, kt->tgt.dma, kt->tgt.len, DMA_BIDIRECTIONAL);
}

/*
 * The target buffer: mapped once, described to the FRMR by an sg list with
 * one entry per page (so the MR gets a real page list).
 */
static int kt_tgt_alloc(struct kt *kt, size_t len)
{
	struct kt_tgt *t = &kt->tgt;
	unsigned int i, npages = len >> PAGE_SHIFT;
	struct scatterlist *sg;
	int ret;

	t->len = len;
	t->va = alloc_pages_exact(len, GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN);
	if (!t->va)
		return -ENOMEM;
	t->dma = ib_dma_map_single(kt->dev, t->va, len, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(kt->dev, t->dma)) {
		free_pages_exact(t->va, len);
		t->va = NULL;
		return -ENOMEM;
	}
	ret = sg_alloc_table(&t->sgt, npages, GFP_KERNEL);
	if (ret)
		return ret;
	for_each_sg(t->sgt.sgl, sg, npages, i) {
		sg_set_buf(sg, t->va + i * PAGE_SIZE, PAGE_SIZE);
		sg_dma_address(sg) = t->dma + i * PAGE_SIZE;
		sg_dma_len(sg) = PAGE_SIZE;
	}
	t->mr = ib_alloc_mr(kt->pd, IB_MR_TYPE_MEM_REG, npages);
	if (IS_ERR(t->mr)) {
		ret = PTR_ERR(t->mr);
		t->mr = NULL;
		diag("ib_alloc_mr(MEM_REG, %u pages) failed: %d", npages, ret);
		return ret;
	}
	return 0;
}

static void kt_tgt_free(struct kt *kt)
{
	struct kt_tgt *t = &kt->tgt;

	if (t->mr)
		ib_dereg_mr(t->mr);
	t->mr = NULL;
	if (t->sgt.sgl)
		sg_free_table(&t->sgt);
	if (t->va) {
		ib_dma_unmap_single(kt->dev, t->dma, t->len, DMA_BIDIRECTIONAL);
		free_pages_exact(t->va, t->len);
	}
	t->va = NULL;
}

/* ---- device resources ---- */

static int kt_setup_dev(struct kt *kt, struct ib_device *dev, u32 port_num)
{
	const struct ib_device_attr *a = &dev->attrs;
	struct ib_port_attr pa;
	u32 lim, want = 0;
	int i, ret;

	kt->dev = dev;
	kt->port_num = port_num;
	ret = ib_query_port(dev, port_num, &pa);
	if (ret)
		return ret;
	kt->ud.mtu = ib_mtu_enum_to_int(pa.active_mtu);
	kt->atomics = a->atomic_cap != IB_ATOMIC_NONE;
	/* The FRMR covers maxsize + one page (the atomic word). */
	lim = min_t(u64, (u64)(a->max_fast_reg_page_list_len - 1) * PAGE_SIZE, pa.max_msg_sz);
	lim = min_t(u32, lim, 64 * SZ_1M);
	kt->ncases = 0;
	for (i = 0; i < nr_sizes; i++) {
		if (!sizes[i] || sizes[i] > lim) {
			diag("size %u skipped (device limit %u)", sizes[i], lim);
			continue;
		}
		kt->cases[kt->ncases++] = (struct kt_case){ .len = sizes[i] };
		want = max(want, sizes[i]);
	}
	if (!kt->ncases)
		return -EINVAL;
	kt->maxsize = PAGE_ALIGN(want);
	/* An unaligned case crossing page boundaries, if the buffers allow. */
	if (kt->maxsize >= 3 + 5000 + KT_GUARD)
		kt->cases[kt->ncases++] = (struct kt_case){ .len = 5000, .loff = 5, .roff = 3 };
	diag("device %s port %u: atomic_cap %d, max_fast_reg_page_list_len %u, max_qp_rd_atom %d, active MTU %u, maxsize %u",
	     dev_name(&dev->dev), port_num, a->atomic_cap, a->max_fast_reg_page_list_len,
	     a->max_qp_rd_atom, kt->ud.mtu, kt->maxsize);

	kt->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(kt->pd)) {
		ret = PTR_ERR(kt->pd);
		kt->pd = NULL;
		return ret;
	}
	ret = kt_buf_alloc(kt, &kt->ctl, PAGE_SIZE);
	if (!ret)
		ret = kt_buf_alloc(kt, &kt->src, kt->maxsize + PAGE_SIZE);
	for (i = 0; !ret && i < KT_NRECV; i++)
		ret = kt_buf_alloc(kt, &kt->rx[i], kt->maxsize);
	if (!ret)
		ret = kt_tgt_alloc(kt, kt->maxsize + PAGE_SIZE);
	return ret;
}

static int kt_post_recv(struct kt *kt, int i)
{
	struct ib_sge sge = {
		.addr = kt->rx[i].dma, .length = kt->maxsize, .lkey = kt->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_cqe = &kt->rx_tok[i].cqe, .sg_list = &sge, .num_sge = 1 };

	kt_tok_arm(&kt->rx_tok[i]);
	return ib_post_recv(kt->qp, &wr, NULL);
}

static int kt_rc_qp(struct kt *kt, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr qa = {};
	int i, ret;

	kt->cq = ib_alloc_cq(kt->dev, kt, 64, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(kt->cq)) {
		ret = PTR_ERR(kt->cq);
		kt->cq = NULL;
		diag("ib_alloc_cq failed: %d", ret);
		return ret;
	}
	qa.send_cq = kt->cq;
	qa.recv_cq = kt->cq;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = KT_NRECV + 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_type = IB_SIGNAL_REQ_WR;
	qa.qp_type = IB_QPT_RC;
	ret = rdma_create_qp(id, kt->pd, &qa);
	if (ret) {
		diag("rdma_create_qp(RC) failed: %d", ret);
		return ret;
	}
	kt->qp_id = id;
	kt->qp = id->qp;
	kt->rx_next = 0;
	for (i = 0; i < KT_NRECV; i++) {
		ret = kt_post_recv(kt, i);
		if (ret) {
			diag("ib_post_recv failed: %d", ret);
			return ret;
		}
	}
	return 0;
}

static void kt_rc_qp_destroy(struct kt *kt)
{
	if (kt->qp)
		rdma_destroy_qp(kt->qp_id);
	kt->qp = NULL;
	kt->qp_id = NULL;
	if (kt->cq)
		ib_free_cq(kt->cq);
	kt->cq = NULL;
}

/* ---- RC operations ---- */

static int kt_exec_ms(struct kt *kt, struct ib_send_wr *wr, const char *what, unsigned int ms)
{
	int ret;

	kt_tok_arm(&kt->tx_tok);
	wr->wr_cqe = &kt->tx_tok.cqe;
	wr->send_flags |= IB_SEND_SIGNALED;
	wr->next = NULL;
	ret = ib_post_send(kt->qp, wr, NULL);
	if (ret) {
		diag("%s: ib_post_send failed: %d", what, ret);
		return ret;
	}
	ret = kt_wait_tok(kt, &kt->tx_tok, NULL, ms, true);
	if (ret)
		kt_diag_wait(what, ret, &kt->tx_tok, ms);
	return ret;
}

static int kt_exec(struct kt *kt, struct ib_send_wr *wr, const char *what)
{
	return kt_exec_ms(kt, wr, what, timeout_ms);
}

/* Waits for the next receive (in posting order); returns its slot. */
static int kt_recv(struct kt *kt, unsigned int ms, const char *what)
{
	int i = kt->rx_next, ret;

	ret = kt_wait_tok(kt, &kt->rx_tok[i], NULL, ms, true);
	if (ret) {
		kt_diag_wait(what, ret, &kt->rx_tok[i], ms);
		return ret;
	}
	kt->rx_next = (i + 1) % KT_NRECV;
	kt_buf_cpu(kt, &kt->rx[i]);
	return i;
}

/* Gives a receive slot back to the QP. */
static int kt_recv_done(struct kt *kt, int i)
{
	int ret;

	kt_buf_dev(kt, &kt->rx[i]);
	ret = kt_post_recv(kt, i);
	if (ret)
		diag("ib_post_recv failed: %d", ret);
	return ret;
}

static int kt_send_msg(struct kt *kt, struct kt_msg *m)
{
	struct ib_sge sge = {
		.addr = kt->ctl.dma + KT_CTL_MSG, .length = sizeof(*m),
		.lkey = kt->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = { .opcode = IB_WR_SEND, .sg_list = &sge, .num_sge = 1 };

	m->magic = cpu_to_be32(KT_MAGIC);
	kt_buf_cpu(kt, &kt->ctl);
	memcpy(kt->ctl.va + KT_CTL_MSG, m, sizeof(*m));
	kt_buf_dev(kt, &kt->ctl);
	return kt_exec(kt, &wr, "SEND control message");
}

static int kt_send_simple(struct kt *kt, u32 type, u32 op, u32 status)
{
	struct kt_msg m = {
		.type = cpu_to_be32(type), .op = cpu_to_be32(op), .status = cpu_to_be32(status),
	};

	return kt_send_msg(kt, &m);
}

static int kt_recv_msg(struct kt *kt, u32 type, struct kt_msg *m, unsigned int ms)
{
	const struct ib_wc *wc;
	int i, ret = 0;

	i = kt_recv(kt, ms, "RECV control message");
	if (i < 0)
		return i;
	wc = &kt->rx_tok[i].wc;
	memcpy(m, kt->rx[i].va, sizeof(*m));
	if (wc->opcode != IB_WC_RECV || wc->byte_len != sizeof(*m) ||
	    be32_to_cpu(m->magic) != KT_MAGIC || be32_to_cpu(m->type) != type) {
		diag("unexpected message: wc opcode %d byte_len %u, magic 0x%x type %u (want type %u)",
		     wc->opcode, wc->byte_len, be32_to_cpu(m->magic), be32_to_cpu(m->type), type);
		ret = -EPROTO;
	}
	if (kt_recv_done(kt, i))
		ret = -EIO;
	return ret;
}

static int kt_recv_ack(struct kt *kt, u32 op, u32 *status)
{
	struct kt_msg m;
	int ret = kt_recv_msg(kt, KT_ACK, &m, timeout_ms);

	if (ret)
		return ret;
	if (be32_to_cpu(m.op) != op) {
		diag("ACK for op %u, want %u", be32_to_cpu(m.op), op);
		return -EPROTO;
	}
	*status = be32_to_cpu(m.status);
	return 0;
}

static int kt_rdma_ms(struct kt *kt, enum ib_wr_opcode opc, u32 loff, u64 raddr, u32 rkey,
		      u32 len, __be32 imm, const char *what, unsigned int ms)
{
	struct ib_sge sge = {
		.addr = kt->src.dma + loff, .length = len, .lkey = kt->pd->local_dma_lkey,
	};
	struct ib_rdma_wr rw = {
		.wr = { .opcode = opc, .sg_list = &sge, .num_sge = 1, .ex.imm_data = imm },
		.remote_addr = raddr, .rkey = rkey,
	};

	return kt_exec_ms(kt, &rw.wr, what, ms);
}

static int kt_rdma(struct kt *kt, enum ib_wr_opcode opc, u32 loff, u64 raddr, u32 rkey,
		   u32 len, __be32 imm, const char *what)
{
	return kt_rdma_ms(kt, opc, loff, raddr, rkey, len, imm, what, timeout_ms);
}

static int kt_atomic(struct kt *kt, enum ib_wr_opcode opc, u64 raddr, u32 rkey, u64 cmp_add,
		     u64 swap, u64 *orig, const char *what)
{
	struct ib_sge sge = {
		.addr = kt->ctl.dma + KT_CTL_ATOMIC, .length = 8, .lkey = kt->pd->local_dma_lkey,
	};
	struct ib_atomic_wr aw = {
		.wr = { .opcode = opc, .sg_list = &sge, .num_sge = 1 },
		.remote_addr = raddr, .rkey = rkey, .compare_add = cmp_add, .swap = swap,
	};
	u64 *res = kt->ctl.va + KT_CTL_ATOMIC;
	int ret;

	kt_buf_cpu(kt, &kt->ctl);
	*res = 0x5a5a5a5a5a5a5a5aULL;
	kt_buf_dev(kt, &kt->ctl);
	ret = kt_exec(kt, &aw.wr, what);
	kt_buf_cpu(kt, &kt->ctl);
	*orig = *res;
	return ret;
}

/* Fast registration of the whole target buffer with a fresh key. */
static int kt_reg_tgt(struct kt *kt)
{
	struct ib_mr *mr = kt->tgt.mr;
	struct ib_reg_wr rw = {};
	int n, nents = kt->tgt.sgt.orig_nents;

	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	n = ib_map_mr_sg(mr, kt->tgt.sgt.sgl, nents, NULL, PAGE_SIZE);
	if (n != nents) {
		diag("ib_map_mr_sg mapped %d of %d entries", n, nents);
		return n < 0 ? n : -EINVAL;
	}
	if (mr->length != kt->tgt.len) {
		diag("FRMR length %llu, want %zu", mr->length, kt->tgt.len);
		return -EINVAL;
	}
	rw.wr.opcode = IB_WR_REG_MR;
	rw.mr = mr;
	rw.key = mr->rkey;
	rw.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE |
		    IB_ACCESS_REMOTE_ATOMIC;
	return kt_exec(kt, &rw.wr, "REG_MR");
}

static int kt_local_inv(struct kt *kt)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV, .ex.invalidate_rkey = kt->tgt.mr->rkey,
	};

	return kt_exec(kt, &wr, "LOCAL_INV");
}

/* ---- the phases ---- */

static const char *const kt_dir[2] = { "[c->s]", "[s->c]" };

#define KT_V0	0x1122334455667788ULL
#define KT_V1	0xfeedfacecafebeefULL
#define KT_V2	0x0badc0de0badc0deULL
#define KT_ADD	0x00000001fffffff3ULL

/* SEND / SEND_WITH_IMM, sending side. */
static int kt_sends_init(struct kt *kt, int ph)
{
	int op, ci, it, ret;
	u32 st;
	char sz[24];

	for (op = KT_OP_SEND; op <= KT_OP_SEND_IMM; op++) {
		for (ci = 0; ci < kt->ncases; ci++) {
			const struct kt_case *c = &kt->cases[ci];
			const char *name = op == KT_OP_SEND ? "SEND" : "SEND_WITH_IMM";

			if (c->loff || c->roff)
				continue;
			for (it = 0; it < iters; it++) {
				u32 seed = kt_seed(ph, op, ci, it);
				struct ib_sge sge = {
					.addr = kt->src.dma, .length = c->len,
					.lkey = kt->pd->local_dma_lkey,
				};
				struct ib_send_wr wr = {
					.opcode = op == KT_OP_SEND ? IB_WR_SEND : IB_WR_SEND_WITH_IMM,
					.sg_list = &sge, .num_sge = 1, .ex.imm_data = cpu_to_be32(seed),
				};

				kt_buf_cpu(kt, &kt->src);
				kt_fill(kt->src.va, seed, 0, c->len);
				kt_buf_dev(kt, &kt->src);
				ret = kt_exec(kt, &wr, name);
				if (!ret)
					ret = kt_recv_ack(kt, op, &st);
				if (ret) {
					tap(false, "%s RC %s %s: send completion and receiver ACK",
					    kt_dir[ph], name, kt_sz(sz, sizeof(sz), c->len));
					return ret;
				}
			}
		}
	}
	return 0;
}

/* SEND / SEND_WITH_IMM, receiving side: verifies and acknowledges. */
static int kt_sends_tgt(struct kt *kt, int ph)
{
	int op, ci, it, i, ret;
	char sz[24];

	for (op = KT_OP_SEND; op <= KT_OP_SEND_IMM; op++) {
		for (ci = 0; ci < kt->ncases; ci++) {
			const struct kt_case *c = &kt->cases[ci];
			const char *name = op == KT_OP_SEND ? "SEND" : "SEND_WITH_IMM";
			bool good = true;

			if (c->loff || c->roff)
				continue;
			kt_sz(sz, sizeof(sz), c->len);
			for (it = 0; it < iters; it++) {
				u32 seed = kt_seed(ph, op, ci, it);
				const struct ib_wc *wc;
				bool ok = true;

				i = kt_recv(kt, timeout_ms, name);
				if (i < 0) {
					tap(false, "%s RC %s %s received", kt_dir[ph], name, sz);
					return i;
				}
				wc = &kt->rx_tok[i].wc;
				if (wc->opcode != IB_WC_RECV || wc->byte_len != c->len) {
					diag("%s %s: wc opcode %d byte_len %u, want RECV %u", name, sz,
					     wc->opcode, wc->byte_len, c->len);
					ok = false;
				}
				if (op == KT_OP_SEND_IMM &&
				    (!(wc->wc_flags & IB_WC_WITH_IMM) ||
				     wc->ex.imm_data != cpu_to_be32(seed))) {
					diag("%s %s: wc_flags 0x%x imm 0x%x, want imm 0x%x", name, sz,
					     wc->wc_flags, be32_to_cpu(wc->ex.imm_data), seed);
					ok = false;
				}
				if (op == KT_OP_SEND && (wc->wc_flags & IB_WC_WITH_IMM)) {
					diag("%s %s: unexpected IB_WC_WITH_IMM", name, sz);
					ok = false;
				}
				if (ok)
					ok = kt_check(name, kt->rx[i].va, seed, 0, c->len);
				good &= ok;
				ret = kt_recv_done(kt, i);
				if (!ret)
					ret = kt_send_simple(kt, KT_ACK, op, ok ? KT_ST_OK : KT_ST_BAD);
				if (ret) {
					tap(false, "%s RC %s %s: receive and ACK", kt_dir[ph], name, sz);
					return ret;
				}
			}
			tap(good, "%s RC %s %s x%u: received, length%s and data verified",
			    kt_dir[ph], name, sz, iters, op == KT_OP_SEND_IMM ? ", immediate" : "");
		}
	}
	return 0;
}

static int kt_phase_init(struct kt *kt, int ph)
{
	u64 raddr, orig, word, expect;
	struct kt_msg m;
	int op, ci, it, ret;
	u32 rkey, rlen, st, rseed;
	bool good, peer_atomics;
	char sz[24];

	ret = kt_sends_init(kt, ph);
	if (ret)
		return ret;

	ret = kt_recv_msg(kt, KT_ADVERT, &m, timeout_ms);
	if (ret) {
		tap(false, "%s received the target's buffer advertisement", kt_dir[ph]);
		return ret;
	}
	raddr = be64_to_cpu(m.addr);
	rkey = be32_to_cpu(m.rkey);
	rlen = be32_to_cpu(m.len);
	peer_atomics = be32_to_cpu(m.status) != KT_ST_SKIP;
	if (rlen < kt->maxsize + 8) {
		tap(false, "%s advertised buffer of %u B is large enough (need %u)", kt_dir[ph],
		    rlen, kt->maxsize + 8);
		return -EPROTO;
	}
	if (!kt->server) {
		kt->have_stale = true;
		kt->stale_addr = raddr;
		kt->stale_rkey = rkey;
	}

	/* RDMA WRITE (all cases), then RDMA WRITE_WITH_IMM (aligned cases). */
	for (op = KT_OP_WRITE; op <= KT_OP_WRITE_IMM; op++) {
		for (ci = 0; ci < kt->ncases; ci++) {
			const struct kt_case *c = &kt->cases[ci];
			const char *name = op == KT_OP_WRITE ? "RDMA WRITE" : "RDMA WRITE_WITH_IMM";

			if (op == KT_OP_WRITE_IMM && (c->loff || c->roff))
				continue;
			for (it = 0; it < iters; it++) {
				u32 seed = kt_seed(ph, op, ci, it);

				kt_buf_cpu(kt, &kt->src);
				kt_fill(kt->src.va + c->loff, seed, 0, c->len);
				kt_buf_dev(kt, &kt->src);
				ret = kt_rdma(kt, op == KT_OP_WRITE ? IB_WR_RDMA_WRITE :
					      IB_WR_RDMA_WRITE_WITH_IMM, c->loff, raddr + c->roff,
					      rkey, c->len, cpu_to_be32(seed), name);
				if (!ret && op == KT_OP_WRITE) {
					m = (struct kt_msg){
						.type = cpu_to_be32(KT_DONE), .op = cpu_to_be32(op),
						.len = cpu_to_be32(c->len), .off = cpu_to_be32(c->roff),
						.seed = cpu_to_be32(seed),
					};
					ret = kt_send_msg(kt, &m);
				}
				if (!ret)
					ret = kt_recv_ack(kt, op, &st);
				if (ret) {
					tap(false, "%s RC %s %s: completion and target ACK", kt_dir[ph],
					    name, kt_sz(sz, sizeof(sz), c->len));
					return ret;
				}
			}
		}
	}

	/* RDMA READ: the target filled its buffer with pattern rseed. */
	ret = kt_recv_msg(kt, KT_READ_READY, &m, timeout_ms);
	if (ret) {
		tap(false, "%s target ready for RDMA READ", kt_dir[ph]);
		return ret;
	}
	rseed = be32_to_cpu(m.seed);
	for (ci = 0; ci < kt->ncases; ci++) {
		const struct kt_case *c = &kt->cases[ci];

		good = true;
		kt_sz(sz, sizeof(sz), c->len);
		for (it = 0; it < iters; it++) {
			kt_buf_cpu(kt, &kt->src);
			memset(kt->src.va, 0, c->loff + c->len + KT_GUARD);
			kt_buf_dev(kt, &kt->src);
			ret = kt_rdma(kt, IB_WR_RDMA_READ, c->loff, raddr + c->roff, rkey, c->len,
				      0, "RDMA READ");
			if (ret) {
				tap(false, "%s RC RDMA READ %s completion", kt_dir[ph], sz);
				return ret;
			}
			kt_buf_cpu(kt, &kt->src);
			good &= kt_check("RDMA READ", kt->src.va + c->loff, rseed, c->roff, c->len) &&
				kt_check_fill("RDMA READ", kt->src.va, 0, 0, c->loff) &&
				kt_check_fill("RDMA READ", kt->src.va, 0, c->loff + c->len, KT_GUARD);
		}
		if (c->loff || c->roff)
			tap(good, "%s RC RDMA READ %s (remote offset %u, local offset %u) x%u verified locally",
			    kt_dir[ph], sz, c->roff, c->loff, iters);
		else
			tap(good, "%s RC RDMA READ %s x%u verified locally", kt_dir[ph], sz, iters);
	}

	/* Atomics on the word right after the data area. */
	if (!kt->atomics || !peer_atomics) {
		tap(true, "%s RC atomics # SKIP device has no atomics", kt_dir[ph]);
		ret = kt_send_simple(kt, KT_DONE, KT_OP_ATOMIC, KT_ST_SKIP);
		if (!ret)
			ret = kt_recv_ack(kt, KT_OP_ATOMIC, &st);
		return ret;
	}
	word = raddr + kt->maxsize;
	ret = kt_atomic(kt, IB_WR_ATOMIC_CMP_AND_SWP, word, rkey, KT_V0, KT_V1, &orig,
			"ATOMIC_CMP_AND_SWP");
	if (ret) {
		tap(false, "%s RC ATOMIC CMP_SWAP completion", kt_dir[ph]);
		return ret;
	}
	tap(orig == KT_V0, "%s RC ATOMIC CMP_SWAP (compare matches) returned the original 0x%llx",
	    kt_dir[ph], orig);
	ret = kt_atomic(kt, IB_WR_ATOMIC_CMP_AND_SWP, word, rkey, KT_V0, KT_V2, &orig,
			"ATOMIC_CMP_AND_SWP");
	if (ret) {
		tap(false, "%s RC ATOMIC CMP_SWAP completion", kt_dir[ph]);
		return ret;
	}
	tap(orig == KT_V1, "%s RC ATOMIC CMP_SWAP (compare differs) returned the swapped value 0x%llx",
	    kt_dir[ph], orig);
	good = true;
	expect = KT_V1;
	for (it = 0; it < iters; it++) {
		ret = kt_atomic(kt, IB_WR_ATOMIC_FETCH_AND_ADD, word, rkey, KT_ADD, 0, &orig,
				"ATOMIC_FETCH_AND_ADD");
		if (ret) {
			tap(false, "%s RC ATOMIC FETCH_ADD completion", kt_dir[ph]);
			return ret;
		}
		if (orig != expect) {
			diag("FETCH_ADD %d returned 0x%llx, want 0x%llx", it, orig, expect);
			good = false;
		}
		expect += KT_ADD;
	}
	tap(good, "%s RC ATOMIC FETCH_ADD x%u returned the running values", kt_dir[ph], iters);
	kt_buf_cpu(kt, &kt->src);
	memset(kt->src.va, 0, 8);
	kt_buf_dev(kt, &kt->src);
	ret = kt_rdma(kt, IB_WR_RDMA_READ, 0, word, rkey, 8, 0, "RDMA READ");
	if (ret) {
		tap(false, "%s RC RDMA READ of the atomic word", kt_dir[ph]);
		return ret;
	}
	kt_buf_cpu(kt, &kt->src);
	memcpy(&orig, kt->src.va, 8);
	tap(orig == expect, "%s RC RDMA READ of the atomic word after the atomics: 0x%llx (want 0x%llx)",
	    kt_dir[ph], orig, expect);
	m = (struct kt_msg){
		.type = cpu_to_be32(KT_DONE), .op = cpu_to_be32(KT_OP_ATOMIC),
		.value = cpu_to_be64(expect),
	};
	ret = kt_send_msg(kt, &m);
	if (!ret)
		ret = kt_recv_ack(kt, KT_OP_ATOMIC, &st);
	if (ret)
		tap(false, "%s target's ACK after the atomics", kt_dir[ph]);
	return ret;
}

static int kt_phase_tgt(struct kt *kt, int ph)
{
	u8 *tb = kt->tgt.va;
	u64 *word = kt->tgt.va + kt->maxsize;
	struct kt_msg m;
	int op, ci, it, i, ret;
	u32 rseed, status;
	bool good, ok;
	char sz[24];

	ret = kt_sends_tgt(kt, ph);
	if (ret)
		return ret;

	kt_tgt_cpu(kt);
	memset(tb, KT_FILL, kt->tgt.len);
	kt_tgt_dev(kt);
	ret = kt_reg_tgt(kt);
	tap(!ret, "%s FRMR REG_MR of %zu B (%zu pages, remote read/write/atomic) completed",
	    kt_dir[ph], kt->tgt.len, kt->tgt.len >> PAGE_SHIFT);
	if (ret)
		return ret;
	m = (struct kt_msg){
		.type = cpu_to_be32(KT_ADVERT), .addr = cpu_to_be64(kt->tgt.mr->iova),
		.rkey = cpu_to_be32(kt->tgt.mr->rkey), .len = cpu_to_be32(kt->tgt.len),
		.status = cpu_to_be32(kt->atomics ? KT_ST_OK : KT_ST_SKIP),
	};
	ret = kt_send_msg(kt, &m);
	if (ret) {
		tap(false, "%s sent the buffer advertisement", kt_dir[ph]);
		return ret;
	}

	for (op = KT_OP_WRITE; op <= KT_OP_WRITE_IMM; op++) {
		for (ci = 0; ci < kt->ncases; ci++) {
			const struct kt_case *c = &kt->cases[ci];
			const char *name = op == KT_OP_WRITE ? "RDMA WRITE" : "RDMA WRITE_WITH_IMM";

			if (op == KT_OP_WRITE_IMM && (c->loff || c->roff))
				continue;
			good = true;
			kt_sz(sz, sizeof(sz), c->len);
			for (it = 0; it < iters; it++) {
				u32 seed = kt_seed(ph, op, ci, it);

				ok = true;
				if (op == KT_OP_WRITE) {
					ret = kt_recv_msg(kt, KT_DONE, &m, timeout_ms);
					if (ret) {
						tap(false, "%s RC %s %s: initiator's notification",
						    kt_dir[ph], name, sz);
						return ret;
					}
					if (be32_to_cpu(m.op) != op || be32_to_cpu(m.len) != c->len ||
					    be32_to_cpu(m.off) != c->roff ||
					    be32_to_cpu(m.seed) != seed) {
						diag("%s: notification for op %u len %u off %u, want %u %u %u",
						     name, be32_to_cpu(m.op), be32_to_cpu(m.len),
						     be32_to_cpu(m.off), op, c->len, c->roff);
						tap(false, "%s RC %s %s: protocol in step", kt_dir[ph],
						    name, sz);
						return -EPROTO;
					}
				} else {
					const struct ib_wc *wc;

					i = kt_recv(kt, timeout_ms, name);
					if (i < 0) {
						tap(false, "%s RC %s %s: receive completion", kt_dir[ph],
						    name, sz);
						return i;
					}
					wc = &kt->rx_tok[i].wc;
					if (wc->opcode != IB_WC_RECV_RDMA_WITH_IMM ||
					    !(wc->wc_flags & IB_WC_WITH_IMM) ||
					    wc->ex.imm_data != cpu_to_be32(seed) ||
					    wc->byte_len != c->len) {
						diag("%s %s: wc opcode %d flags 0x%x imm 0x%x byte_len %u, want RECV_RDMA_WITH_IMM imm 0x%x len %u",
						     name, sz, wc->opcode, wc->wc_flags,
						     be32_to_cpu(wc->ex.imm_data), wc->byte_len, seed,
						     c->len);
						ok = false;
					}
					ret = kt_recv_done(kt, i);
					if (ret)
						return ret;
				}
				kt_tgt_cpu(kt);
				ok = ok && kt_check(name, tb + c->roff, seed, 0, c->len) &&
				     kt_check_fill(name, tb, KT_FILL, 0, c->roff) &&
				     kt_check_fill(name, tb, KT_FILL, c->roff + c->len,
						   min_t(u32, KT_GUARD,
							 kt->tgt.len - c->roff - c->len));
				good &= ok;
				memset(tb, KT_FILL, kt->tgt.len);
				kt_tgt_dev(kt);
				ret = kt_send_simple(kt, KT_ACK, op, ok ? KT_ST_OK : KT_ST_BAD);
				if (ret) {
					tap(false, "%s RC %s %s: ACK", kt_dir[ph], name, sz);
					return ret;
				}
			}
			if (c->loff || c->roff)
				tap(good, "%s RC %s %s (remote offset %u, local offset %u) x%u verified by the target (data, guard bytes)",
				    kt_dir[ph], name, sz, c->roff, c->loff, iters);
			else
				tap(good, "%s RC %s %s x%u verified by the target (data, guard bytes%s)",
				    kt_dir[ph], name, sz, iters,
				    op == KT_OP_WRITE_IMM ? ", immediate, byte_len" : "");
		}
	}

	/* Pattern for the READs, the initial value of the atomic word. */
	rseed = kt_seed(ph, KT_OP_READ, 0, 0);
	kt_tgt_cpu(kt);
	kt_fill(tb, rseed, 0, kt->maxsize);
	*word = KT_V0;
	kt_tgt_dev(kt);
	m = (struct kt_msg){ .type = cpu_to_be32(KT_READ_READY), .seed = cpu_to_be32(rseed) };
	ret = kt_send_msg(kt, &m);
	if (ret) {
		tap(false, "%s sent READ_READY", kt_dir[ph]);
		return ret;
	}
	/* The initiator now does all the READs and atomics: allow more time. */
	ret = kt_recv_msg(kt, KT_DONE, &m, timeout_ms * 4);
	if (!ret && be32_to_cpu(m.op) != KT_OP_ATOMIC)
		ret = -EPROTO;
	if (ret) {
		tap(false, "%s initiator's notification after READs and atomics", kt_dir[ph]);
		return ret;
	}
	status = KT_ST_OK;
	if (be32_to_cpu(m.status) != KT_ST_SKIP) {
		kt_tgt_cpu(kt);
		ok = *word == be64_to_cpu(m.value);
		tap(ok, "%s RC atomic word in target memory after CMP_SWAP/FETCH_ADD: 0x%llx (want 0x%llx)",
		    kt_dir[ph], *word, be64_to_cpu(m.value));
		ok = ok && kt_check("RDMA READ source", tb, rseed, 0, kt->maxsize);
		if (!ok)
			status = KT_ST_BAD;
	}
	ret = kt_local_inv(kt);
	tap(!ret, "%s LOCAL_INV of the FRMR rkey 0x%x completed", kt_dir[ph], kt->tgt.mr->rkey);
	if (ret)
		return ret;
	ret = kt_send_simple(kt, KT_ACK, KT_OP_ATOMIC, status);
	if (ret)
		tap(false, "%s final ACK of the phase", kt_dir[ph]);
	return ret;
}

/* ---- UD ---- */

static int kt_ud_post_recv(struct kt *kt, int i)
{
	struct kt_ud *u = &kt->ud;
	struct ib_sge sge = {
		.addr = u->rx[i].dma, .length = u->rx[i].len, .lkey = kt->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_cqe = &u->rx_tok[i].cqe, .sg_list = &sge, .num_sge = 1 };

	kt_tok_arm(&u->rx_tok[i]);
	return ib_post_recv(u->qp, &wr, NULL);
}

static int kt_ud_qp(struct kt *kt, struct rdma_cm_id *id)
{
	struct kt_ud *u = &kt->ud;
	struct ib_qp_init_attr qa = {};
	int i, ret;

	if (id->device != kt->dev) {
		diag("UD id resolved to %s, RC is on %s", dev_name(&id->device->dev),
		     dev_name(&kt->dev->dev));
		return -ENODEV;
	}
	for (i = 0; i < KT_UD_NRECV; i++) {
		ret = kt_buf_alloc(kt, &u->rx[i], KT_UD_SLOT);
		if (ret)
			return ret;
	}
	ret = kt_buf_alloc(kt, &u->tx, PAGE_SIZE);
	if (ret)
		return ret;
	u->cq = ib_alloc_cq(kt->dev, kt, 16, 0, IB_POLL_DIRECT);
	if (IS_ERR(u->cq)) {
		ret = PTR_ERR(u->cq);
		u->cq = NULL;
		return ret;
	}
	qa.send_cq = u->cq;
	qa.recv_cq = u->cq;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = KT_UD_NRECV;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_type = IB_SIGNAL_REQ_WR;
	qa.qp_type = IB_QPT_UD;
	ret = rdma_create_qp(id, kt->pd, &qa);
	if (ret) {
		diag("rdma_create_qp(UD) failed: %d", ret);
		return ret;
	}
	u->qp_id = id;
	u->qp = id->qp;
	for (i = 0; i < KT_UD_NRECV; i++) {
		ret = kt_ud_post_recv(kt, i);
		if (ret)
			return ret;
	}
	return 0;
}

static void kt_ud_destroy(struct kt *kt)
{
	struct kt_ud *u = &kt->ud;
	int i;

	if (u->ah)
		rdma_destroy_ah(u->ah, RDMA_DESTROY_AH_SLEEPABLE);
	u->ah = NULL;
	if (u->qp)
		rdma_destroy_qp(u->qp_id);
	u->qp = NULL;
	if (u->cq)
		ib_free_cq(u->cq);
	u->cq = NULL;
	for (i = 0; i < KT_UD_NRECV; i++)
		kt_buf_free(kt, &u->rx[i]);
	kt_buf_free(kt, &u->tx);
}

static int kt_ud_send(struct kt *kt, struct ib_ah *ah, u32 qpn, u32 qkey, u32 seed, u32 len)
{
	struct kt_ud *u = &kt->ud;
	struct kt_udh *h = u->tx.va;
	struct ib_sge sge = { .addr = u->tx.dma, .length = len, .lkey = kt->pd->local_dma_lkey };
	struct ib_ud_wr uw = {
		.wr = { .opcode = IB_WR_SEND, .sg_list = &sge, .num_sge = 1,
			.send_flags = IB_SEND_SIGNALED, .wr_cqe = &u->tx_tok.cqe },
		.ah = ah, .remote_qpn = qpn, .remote_qkey = qkey,
	};
	int ret;

	kt_buf_cpu(kt, &u->tx);
	h->magic = cpu_to_be32(KT_MAGIC);
	h->qpn = cpu_to_be32(u->qp->qp_num);
	h->seed = cpu_to_be32(seed);
	h->len = cpu_to_be32(len);
	kt_fill(u->tx.va + sizeof(*h), seed, 0, len - sizeof(*h));
	kt_buf_dev(kt, &u->tx);
	kt_tok_arm(&u->tx_tok);
	ret = ib_post_send(u->qp, &uw.wr, NULL);
	if (ret) {
		diag("UD ib_post_send failed: %d", ret);
		return ret;
	}
	ret = kt_wait_tok(kt, &u->tx_tok, u->cq, timeout_ms, false);
	if (ret)
		kt_diag_wait("UD SEND", ret, &u->tx_tok, timeout_ms);
	return ret;
}

/*
 * Waits for the next UD datagram and checks it: GRH present, byte_len, header,
 * source QPN, payload. Returns the slot (repost with kt_ud_post_recv) or <0;
 * *good tells whether the checks passed.
 */
static int kt_ud_recv(struct kt *kt, u32 want_seed, u32 want_len, bool *good)
{
	struct kt_ud *u = &kt->ud;
	int i = u->rx_next, ret;
	const struct ib_wc *wc = &u->rx_tok[i].wc;
	struct kt_udh *h = u->rx[i].va + KT_GRH;
	u32 len;

	ret = kt_wait_tok(kt, &u->rx_tok[i], u->cq, timeout_ms, false);
	if (ret) {
		kt_diag_wait("UD RECV", ret, &u->rx_tok[i], timeout_ms);
		return ret;
	}
	u->rx_next = (i + 1) % KT_UD_NRECV;
	kt_buf_cpu(kt, &u->rx[i]);
	*good = false;
	len = be32_to_cpu(h->len);
	if (wc->opcode != IB_WC_RECV || !(wc->wc_flags & IB_WC_GRH)) {
		diag("UD RECV: wc opcode %d flags 0x%x, want RECV with GRH", wc->opcode,
		     wc->wc_flags);
	} else if (wc->byte_len < KT_GRH + sizeof(*h) || be32_to_cpu(h->magic) != KT_MAGIC ||
		   len < sizeof(*h) || len > KT_UD_SLOT - KT_GRH || wc->byte_len != KT_GRH + len) {
		diag("UD RECV: byte_len %u, header magic 0x%x len %u", wc->byte_len,
		     be32_to_cpu(h->magic), len);
	} else if (be32_to_cpu(h->qpn) != wc->src_qp) {
		diag("UD RECV: wc src_qp %u, sender says qpn %u", wc->src_qp, be32_to_cpu(h->qpn));
	} else if ((want_len && len != want_len) ||
		   (want_seed && be32_to_cpu(h->seed) != want_seed)) {
		diag("UD RECV: len %u seed 0x%x, want %u 0x%x", len, be32_to_cpu(h->seed),
		     want_len, want_seed);
	} else {
		*good = kt_check("UD RECV", (void *)(h + 1), be32_to_cpu(h->seed), 0,
				 len - sizeof(*h));
	}
	if (!(wc->wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE))
		diag("UD RECV: no network header type in the wc (needed for RoCE AH from wc)");
	return i;
}

#define KT_UD_MSGS	2

static int kt_ud_server(struct kt *kt)
{
	struct kt_ud *u = &kt->ud;
	struct rdma_conn_param p = {};
	struct rdma_cm_id *id;
	int n, i, ret;
	bool good;

	ret = kt_cm_wait(&u->cm, KT_CM_REQUEST, timeout_ms * 2, "UD SIDR request");
	if (ret) {
		tap(false, "UD: SIDR request received on the RDMA_PS_UDP listener");
		return ret;
	}
	id = u->cm.child;
	ret = kt_ud_qp(kt, id);
	if (!ret) {
		rdma_lock_handler(id);
		ret = rdma_accept(id, &p);
		rdma_unlock_handler(id);
	}
	tap(!ret, "UD: SIDR request accepted with UD QP %u (rdma_create_qp, rdma_accept)",
	    u->qp ? u->qp->qp_num : 0);
	if (ret)
		return ret;
	for (n = 0; n < KT_UD_MSGS; n++) {
		struct kt_udh h;
		struct ib_wc wc;
		struct ib_ah *ah;

		i = kt_ud_recv(kt, 0, 0, &good);
		if (i < 0) {
			tap(false, "UD: datagram %d received", n + 1);
			return i;
		}
		wc = u->rx_tok[i].wc;
		memcpy(&h, u->rx[i].va + KT_GRH, sizeof(h));
		tap(good, "UD: datagram %u B from QP %u verified (GRH, byte_len, src_qp, payload)",
		    be32_to_cpu(h.len), wc.src_qp);
		ah = ib_create_ah_from_wc(kt->pd, &wc, u->rx[i].va, id->port_num);
		ret = kt_ud_post_recv(kt, i);
		if (IS_ERR(ah)) {
			tap(false, "UD: ib_create_ah_from_wc: %ld", PTR_ERR(ah));
			return PTR_ERR(ah);
		}
		if (!good) {
			rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
			return -EPROTO;
		}
		if (!ret)
			ret = kt_ud_send(kt, ah, wc.src_qp, RDMA_UDP_QKEY,
					 be32_to_cpu(h.seed) ^ 0x5a5a5a5a, be32_to_cpu(h.len));
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
		tap(!ret, "UD: %u B reply sent to QP %u through an AH made from the received GRH",
		    be32_to_cpu(h.len), wc.src_qp);
		if (ret)
			return ret;
	}
	return 0;
}

static int kt_ud_client(struct kt *kt)
{
	struct kt_ud *u = &kt->ud;
	struct rdma_conn_param p = {};
	u32 lens[KT_UD_MSGS] = { 32, u->mtu };
	int n, i, ret;
	bool good;

	ret = kt_resolve(kt, &u->cm, RDMA_PS_UDP, IB_QPT_UD);
	if (!ret)
		ret = kt_ud_qp(kt, u->cm.id);
	if (!ret)
		ret = rdma_connect(u->cm.id, &p);
	if (!ret)
		ret = kt_cm_wait(&u->cm, KT_CM_ESTABLISHED, timeout_ms, "UD SIDR reply");
	if (!ret && !u->cm.have_ah_attr)
		ret = -EPROTO;
	tap(!ret, "UD: SIDR resolution through an RDMA_PS_UDP cm_id: remote QP %u, qkey 0x%x",
	    u->cm.remote_qpn, u->cm.remote_qkey);
	if (ret)
		return ret;
	u->ah = rdma_create_ah(kt->pd, &u->cm.ah_attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(u->ah)) {
		ret = PTR_ERR(u->ah);
		u->ah = NULL;
		tap(false, "UD: rdma_create_ah from the SIDR reply: %d", ret);
		return ret;
	}
	for (n = 0; n < KT_UD_MSGS; n++) {
		u32 seed = kt_seed(2, KT_OP_SEND, n, 0);

		ret = kt_ud_send(kt, u->ah, u->cm.remote_qpn, u->cm.remote_qkey, seed, lens[n]);
		if (ret) {
			tap(false, "UD: %u B datagram send completion", lens[n]);
			return ret;
		}
		i = kt_ud_recv(kt, seed ^ 0x5a5a5a5a, lens[n], &good);
		if (i < 0) {
			tap(false, "UD: %u B reply received", lens[n]);
			return i;
		}
		if (u->rx_tok[i].wc.src_qp != u->cm.remote_qpn) {
			diag("UD reply from QP %u, want %u", u->rx_tok[i].wc.src_qp,
			     u->cm.remote_qpn);
			good = false;
		}
		ret = kt_ud_post_recv(kt, i);
		tap(good, "UD: %u B datagram sent, %u B reply verified (GRH, byte_len, src_qp, payload)",
		    lens[n], lens[n]);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- connection teardown checks ---- */

/*
 * On a lossy link (lossy=1) the responder's NAK can be lost. The responder is in the error
 * state after sending it (IBTA: a remote access error is fatal to the responder's QP;
 * rdma_rxe does the same), so the requester's retries go unanswered and the READ ends in
 * RETRY_EXC_ERR once retry_cnt timeouts have passed: with rdma_cm's 537 ms floor and the
 * backoff, about 25 s, more than one timeout_ms wait. kverbs-rrxe-loss once failed here
 * with "no completion" after 20 s. Either status is a refusal; success never is.
 */
static void kt_rc_stale_read(struct kt *kt)
{
	unsigned int ms = lossy ? 3 * timeout_ms : timeout_ms;
	enum ib_wc_status st;
	bool refused;
	int ret;

	kt_buf_cpu(kt, &kt->src);
	memset(kt->src.va, 0, 8);
	kt_buf_dev(kt, &kt->src);
	ret = kt_rdma_ms(kt, IB_WR_RDMA_READ, 0, kt->stale_addr, kt->stale_rkey, 8, 0,
			 "RDMA READ with an invalidated rkey (expected to fail)", ms);
	st = kt->tx_tok.wc.status;
	refused = ret == -EIO && (st == IB_WC_REM_ACCESS_ERR ||
				  (lossy && st == IB_WC_RETRY_EXC_ERR));
	tap(refused,
	    "RC RDMA READ with the invalidated rkey 0x%x fails with remote access error%s (got %s)",
	    kt->stale_rkey, lossy ? " (or retry exceeded: the NAK lost)" : "",
	    ret == -EIO ? ib_wc_status_msg(st) : ret ? "no completion" : "success");
}

/* After the disconnect: the flush semantics ib_drain_qp() relies on. */
static void kt_rc_flush_checks(struct kt *kt)
{
	struct ib_sge sge = {
		.addr = kt->ctl.dma + KT_CTL_FLUSH, .length = 8, .lkey = kt->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = { .opcode = IB_WR_SEND, .sg_list = &sge, .num_sge = 1 };
	int i, n, ret, flushed = 0;

	for (n = 0; n < KT_NRECV; n++) {
		i = (kt->rx_next + n) % KT_NRECV;
		ret = kt_wait_tok(kt, &kt->rx_tok[i], NULL, timeout_ms, false);
		if (ret == -EIO && kt->rx_tok[i].wc.status == IB_WC_WR_FLUSH_ERR)
			flushed++;
		else
			kt_diag_wait("posted RECV after disconnect", ret ? ret : -EPROTO,
				     &kt->rx_tok[i], timeout_ms);
	}
	tap(flushed == KT_NRECV, "RC: all %d posted RECVs completed with WR_FLUSH_ERR after the disconnect (%d did)",
	    KT_NRECV, flushed);

	kt_tok_arm(&kt->tx_tok);
	wr.wr_cqe = &kt->tx_tok.cqe;
	wr.send_flags = IB_SEND_SIGNALED;
	ret = ib_post_send(kt->qp, &wr, NULL);
	if (!ret)
		ret = kt_wait_tok(kt, &kt->tx_tok, NULL, timeout_ms, false);
	tap(ret == -EIO && kt->tx_tok.wc.status == IB_WC_WR_FLUSH_ERR,
	    "RC: a SEND posted in the error state completes with WR_FLUSH_ERR (got %s)",
	    ret == -EIO ? ib_wc_status_msg(kt->tx_tok.wc.status) :
	    ret == -ETIMEDOUT ? "timeout" : ret ? "post error" : "success");
}

/* ---- srq-drain: one device, QPs of this module connected to each other ---- */

/*
 * The affiliated asynchronous events one QP received (its event handler's context).
 * Counted by the handler, which may run in any context; read once the QP is gone or
 * through wait_event.
 */
struct kt_qpev {
	struct ib_qp *qp;
	atomic_t comm_est;
	atomic_t last_wqe;
	atomic_t other;		/* any other event, or an event naming another QP */
	int other_type;
};

static void kt_qp_event(struct ib_event *ev, void *ctx)
{
	struct kt_qpev *e = ctx;

	if (ev->element.qp != READ_ONCE(e->qp)) {
		WRITE_ONCE(e->other_type, ev->event);
		atomic_inc(&e->other);
	} else if (ev->event == IB_EVENT_COMM_EST) {
		atomic_inc(&e->comm_est);
	} else if (ev->event == IB_EVENT_QP_LAST_WQE_REACHED) {
		atomic_inc(&e->last_wqe);
	} else {
		WRITE_ONCE(e->other_type, ev->event);
		atomic_inc(&e->other);
	}
	wake_up(&kt_wq);
}

struct kt_loop {
	struct ib_cq *cq[3];		/* IB_POLL_DIRECT, one per QP */
	struct ib_srq *srq;
	struct ib_qp *qp[3];		/* A and C on the SRQ, B with its own receive queue */
	struct kt_qpev ev[3];
	union ib_gid gid;
	int gid_index;
	u8 dmac[ETH_ALEN];
};

enum { KT_A, KT_B, KT_C };
static const char *const kt_qpname[3] = { "A", "B", "C" };

/* This device's first RoCE v2 GID with an IPv4 address, and the MAC of its netdev. */
static int kt_loop_gid(struct kt *kt, struct kt_loop *l)
{
	const struct ib_gid_attr *attr;
	struct ib_port_attr pa;
	int i, ret;

	ret = ib_query_port(kt->dev, 1, &pa);
	if (ret)
		return ret;
	for (i = 0; i < pa.gid_tbl_len; i++) {
		attr = rdma_get_gid_attr(kt->dev, 1, i);
		if (IS_ERR(attr))
			continue;
		if (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		    ipv6_addr_v4mapped((const struct in6_addr *)attr->gid.raw) &&
		    !rdma_read_gid_l2_fields(attr, NULL, l->dmac)) {
			l->gid = attr->gid;
			l->gid_index = i;
			rdma_put_gid_attr(attr);
			return 0;
		}
		rdma_put_gid_attr(attr);
	}
	return -ENOENT;
}

static struct ib_qp *kt_loop_qp(struct kt *kt, struct kt_loop *l, int q)
{
	struct ib_qp_init_attr qa = {
		.event_handler = kt_qp_event,
		.qp_context = &l->ev[q],
		.send_cq = l->cq[q],
		.recv_cq = l->cq[q],
		.srq = q == KT_B ? NULL : l->srq,
		.cap = { .max_send_wr = 8, .max_recv_wr = q == KT_B ? 8 : 0,
			 .max_send_sge = 1, .max_recv_sge = q == KT_B ? 1 : 0 },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};

	return ib_create_qp(kt->pd, &qa);
}

static int kt_qp_rts(struct ib_qp *qp)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.max_rd_atomic = 1,
	};

	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			    IB_QP_RNR_RETRY | IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC);
}

static int kt_loop_rts(struct kt_loop *l, int q)
{
	return kt_qp_rts(l->qp[q]);
}

/*
 * Moves qp through the states up to want (INIT, RTR or RTS), connected to QP dest of this
 * device (l's GID and MAC).
 */
static int kt_qp_connect(struct kt_loop *l, struct ib_qp *qp, u32 dest, enum ib_qp_state want)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_INIT, .port_num = 1,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ,
	};
	int ret;

	ret = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
			   IB_QP_ACCESS_FLAGS);
	if (ret || want == IB_QPS_INIT)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = dest;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, &l->gid, 0, l->gid_index, 64, 0);
	/* A kernel consumer passes the address vector resolved: the destination's MAC. */
	memcpy(a.ah_attr.roce.dmac, l->dmac, ETH_ALEN);
	ret = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
			   IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret || want == IB_QPS_RTR)
		return ret;
	return kt_qp_rts(qp);
}

/* kt_qp_connect for QP q of l. */
static int kt_loop_modify(struct kt_loop *l, int q, u32 dest, enum ib_qp_state want)
{
	return kt_qp_connect(l, l->qp[q], dest, want);
}

static int kt_loop_state(struct kt_loop *l, int q, enum ib_qp_state st)
{
	struct ib_qp_attr a = { .qp_state = st };

	return ib_modify_qp(l->qp[q], &a, IB_QP_STATE);
}

/* SRQ receive i: rx[i], one page, completing into rx_tok[i]. */
static int kt_loop_post_srq(struct kt *kt, struct kt_loop *l, int i)
{
	struct ib_sge sge = {
		.addr = kt->rx[i].dma, .length = PAGE_SIZE, .lkey = kt->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_cqe = &kt->rx_tok[i].cqe, .sg_list = &sge, .num_sge = 1 };

	kt_tok_arm(&kt->rx_tok[i]);
	return ib_post_srq_recv(l->srq, &wr, NULL);
}

/*
 * B sends len bytes of pattern seed to A; A's next SRQ receive (slot i) must hold them.
 * Both completions are polled from their direct CQs.
 */
static bool kt_loop_send(struct kt *kt, struct kt_loop *l, int i, u32 seed, u32 len)
{
	struct ib_sge sge = { .addr = kt->ctl.dma, .length = len, .lkey = kt->pd->local_dma_lkey };
	struct ib_send_wr wr = {
		.wr_cqe = &kt->tx_tok.cqe, .opcode = IB_WR_SEND, .sg_list = &sge, .num_sge = 1,
		.send_flags = IB_SEND_SIGNALED,
	};
	int ret;

	kt_buf_cpu(kt, &kt->ctl);
	kt_fill(kt->ctl.va, seed, 0, len);
	kt_buf_dev(kt, &kt->ctl);
	kt_tok_arm(&kt->tx_tok);
	ret = ib_post_send(l->qp[KT_B], &wr, NULL);
	if (!ret)
		ret = kt_wait_tok(kt, &kt->tx_tok, l->cq[KT_B], timeout_ms, false);
	if (ret) {
		kt_diag_wait("SEND from B", ret, &kt->tx_tok, timeout_ms);
		return false;
	}
	ret = kt_wait_tok(kt, &kt->rx_tok[i], l->cq[KT_A], timeout_ms, false);
	if (ret) {
		kt_diag_wait("SRQ receive of A", ret, &kt->rx_tok[i], timeout_ms);
		return false;
	}
	kt_buf_cpu(kt, &kt->rx[i]);
	return kt->rx_tok[i].wc.byte_len == len && kt->rx_tok[i].wc.qp == l->qp[KT_A] &&
	       kt_check("SRQ receive", kt->rx[i].va, seed, 0, len);
}

/* Waits (bounded by timeout_ms) until counter *c reaches n; returns whether it did. */
static bool kt_wait_count(atomic_t *c, int n)
{
	wait_event_timeout(kt_wq, atomic_read(c) >= n, msecs_to_jiffies(timeout_ms));
	return atomic_read(c) >= n;
}

/*
 * Completion vectors: the device has one per online CPU, and a CQ's handler runs on its
 * vector's CPU (cpumask_local_spread, as the driver maps them). The context of one CQ's
 * handler: how often it ran and on which CPU last.
 */
struct kt_vec {
	atomic_t calls;
	int cpu;
};

static void kt_vec_comp(struct ib_cq *cq, void *ctx)
{
	struct kt_vec *v = ctx;

	WRITE_ONCE(v->cpu, raw_smp_processor_id());
	atomic_inc(&v->calls);
	wake_up(&kt_wq);
}

/*
 * A CQ on vector vec and an RC QP on it connected to itself: a SEND to its own receive
 * completes twice on the CQ, and the handler armed for it runs on the vector's CPU.
 */
static bool kt_vec_one(struct kt *kt, struct kt_loop *l, int vec)
{
	struct ib_cq_init_attr ca = { .cqe = 4, .comp_vector = vec };
	struct ib_qp_init_attr qa = {
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_REQ_WR, .qp_type = IB_QPT_RC,
	};
	struct ib_sge rsge = { .addr = kt->rx[0].dma, .length = PAGE_SIZE,
			       .lkey = kt->pd->local_dma_lkey };
	struct ib_sge ssge = { .addr = kt->ctl.dma, .length = 64,
			       .lkey = kt->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .wr_id = 1, .sg_list = &rsge, .num_sge = 1 };
	struct ib_send_wr swr = { .wr_id = 2, .opcode = IB_WR_SEND, .sg_list = &ssge,
				  .num_sge = 1, .send_flags = IB_SEND_SIGNALED };
	unsigned int want_cpu = cpumask_local_spread(vec, NUMA_NO_NODE);
	struct kt_vec v = { .cpu = -1 };
	struct ib_qp *qp = NULL;
	struct ib_cq *cq;
	struct ib_wc wc[2];
	unsigned long end;
	int ret, got = 0, n;
	bool good = false;

	atomic_set(&v.calls, 0);
	cq = ib_create_cq(kt->dev, kt_vec_comp, NULL, &v, &ca);
	if (IS_ERR(cq)) {
		tap(false, "ib_create_cq on vector %d: %ld", vec, PTR_ERR(cq));
		return false;
	}
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qp = ib_create_qp(kt->pd, &qa);
	if (IS_ERR(qp)) {
		ret = PTR_ERR(qp);
		qp = NULL;
		goto out;
	}
	ret = kt_qp_connect(l, qp, qp->qp_num, IB_QPS_RTS);
	if (!ret)
		ret = ib_post_recv(qp, &rwr, NULL);
	if (!ret)
		ret = ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
	if (ret < 0)
		goto out;
	ret = ib_post_send(qp, &swr, NULL);
	if (ret)
		goto out;
	good = kt_wait_count(&v.calls, 1);
	end = jiffies + msecs_to_jiffies(timeout_ms);
	while (got < 2 && time_before(jiffies, end)) {
		n = ib_poll_cq(cq, 2 - got, wc + got);
		if (n < 0)
			break;
		got += n;
		if (!n)
			msleep(1);
	}
	good &= got == 2 && wc[0].status == IB_WC_SUCCESS && wc[1].status == IB_WC_SUCCESS;
	good &= READ_ONCE(v.cpu) == want_cpu;
out:
	tap(good, "vector %d: a self-connected RC QP's SEND completes on its CQ (%d of 2), the handler ran on CPU %d (want %u; %d calls; %d)",
	    vec, got, READ_ONCE(v.cpu), want_cpu, atomic_read(&v.calls), ret);
	if (qp)
		ib_destroy_qp(qp);
	ib_destroy_cq(cq);
	return good;
}

static void kt_comp_vectors(struct kt *kt, struct kt_loop *l)
{
	struct ib_cq_init_attr ca = { .cqe = 4 };
	int nvec = kt->dev->num_comp_vectors, vec;
	struct ib_cq *cq;

	tap(nvec == num_online_cpus(), "num_comp_vectors %d, one per online CPU (%u)", nvec,
	    num_online_cpus());
	for (vec = 0; vec < nvec && vec < 8; vec++)
		kt_vec_one(kt, l, vec);
	ca.comp_vector = nvec;
	cq = ib_create_cq(kt->dev, kt_vec_comp, NULL, NULL, &ca);
	tap(IS_ERR(cq) && PTR_ERR(cq) == -EINVAL,
	    "ib_create_cq on vector %d (num_comp_vectors): EINVAL (%ld)", nvec,
	    IS_ERR(cq) ? PTR_ERR(cq) : 0L);
	if (!IS_ERR(cq))
		ib_destroy_cq(cq);
}

/*
 * The drain of a QP on an SRQ (ib_drain_qp: move to error, flush the send queue, then
 * __ib_drain_srq, which since Linux 6.11 waits up to 60 s for Last WQE Reached), on
 * three QPs of this device: A (on the SRQ) and B (its own receive queue) connected to
 * each other, and C (on the SRQ) never connected.
 */
static void kt_srq_drain(struct kt *kt)
{
	struct ib_srq_init_attr sa = {
		.attr = { .max_wr = KT_NRECV, .max_sge = 1 }, .srq_type = IB_SRQT_BASIC,
	};
	struct kt_loop *l;
	bool good, tally = false;
	ktime_t t0;
	int q, i, ret;

	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l) {
		tap(false, "memory for the test");
		return;
	}
	ret = kt_loop_gid(kt, l);
	if (ret) {
		tap(false, "%s has a RoCE v2 GID with an IPv4 address (%d)", dev_name(&kt->dev->dev),
		    ret);
		goto out;
	}
	diag("device %s, GID index %d", dev_name(&kt->dev->dev), l->gid_index);
	kt->pd = ib_alloc_pd(kt->dev, 0);
	if (IS_ERR(kt->pd)) {
		ret = PTR_ERR(kt->pd);
		kt->pd = NULL;
		tap(false, "ib_alloc_pd: %d", ret);
		goto out;
	}
	ret = kt_buf_alloc(kt, &kt->ctl, PAGE_SIZE);
	for (i = 0; !ret && i < KT_NRECV; i++)
		ret = kt_buf_alloc(kt, &kt->rx[i], PAGE_SIZE);
	for (q = 0; !ret && q < 3; q++) {
		l->cq[q] = ib_alloc_cq(kt->dev, NULL, 16, 0, IB_POLL_DIRECT);
		if (IS_ERR(l->cq[q])) {
			ret = PTR_ERR(l->cq[q]);
			l->cq[q] = NULL;
		}
	}
	if (!ret) {
		l->srq = ib_create_srq(kt->pd, &sa);
		if (IS_ERR(l->srq)) {
			ret = PTR_ERR(l->srq);
			l->srq = NULL;
		}
	}
	for (q = 0; !ret && q < 3; q++) {
		l->qp[q] = kt_loop_qp(kt, l, q);
		if (IS_ERR(l->qp[q])) {
			ret = PTR_ERR(l->qp[q]);
			l->qp[q] = NULL;
		} else {
			WRITE_ONCE(l->ev[q].qp, l->qp[q]);
		}
	}
	for (i = 0; !ret && i < KT_NRECV; i++)
		ret = kt_loop_post_srq(kt, l, i);
	tap(!ret, "PD, CQs, an SRQ with %d receives, RC QPs A and C on it and B without (%d)",
	    KT_NRECV, ret);
	if (ret)
		goto out;

	/* A stays in RTR, B goes to RTS: A's first request is Communication Established. */
	ret = kt_loop_modify(l, KT_A, l->qp[KT_B]->qp_num, IB_QPS_RTR);
	if (!ret)
		ret = kt_loop_modify(l, KT_B, l->qp[KT_A]->qp_num, IB_QPS_RTS);
	tap(!ret, "A to RTR, B to RTS, connected to each other through GID %d (%d)",
	    l->gid_index, ret);
	if (ret)
		goto out;
	tap(kt_loop_send(kt, l, 0, 0x5151, 200),
	    "a SEND from B lands in A's first SRQ receive, A in RTR");
	tap(kt_wait_count(&l->ev[KT_A].comm_est, 1),
	    "A's event handler got IB_EVENT_COMM_EST");
	ret = kt_loop_rts(l, KT_A);
	tap(!ret, "A to RTS (%d)", ret);
	tap(!ret && kt_loop_send(kt, l, 1, 0x6262, 3000),
	    "a second SEND lands in the second SRQ receive");
	{
		/* A resize (as rdma_rxe's): refused below the 2 posted, then up to 16. */
		struct ib_srq_attr ra = { .max_wr = 1 };
		int r1, r2, r3;

		r1 = ib_modify_srq(l->srq, &ra, IB_SRQ_MAX_WR);
		ra.max_wr = 16;
		r2 = ib_modify_srq(l->srq, &ra, IB_SRQ_MAX_WR);
		memset(&ra, 0, sizeof(ra));
		r3 = ib_query_srq(l->srq, &ra);
		tap(r1 == -EINVAL && r2 == 0 && r3 == 0 && ra.max_wr >= 16,
		    "ib_modify_srq IB_SRQ_MAX_WR: 1 (2 posted) is EINVAL (%d), 16 works (%d, max_wr %u)",
		    r1, r2, ra.max_wr);
		tap(!r2 && kt_loop_send(kt, l, 2, 0x7373, 1000),
		    "after the resize a third SEND lands in the third SRQ receive");
	}
	tap(atomic_read(&l->ev[KT_A].last_wqe) == 0,
	    "no IB_EVENT_QP_LAST_WQE_REACHED while A runs");

	/*
	 * The drain: Last WQE Reached must have come when ib_drain_qp returns, or the core
	 * waited its 60 s for it (and this count is 0).
	 */
	t0 = ktime_get();
	ib_drain_qp(l->qp[KT_A]);
	tap(atomic_read(&l->ev[KT_A].last_wqe) == 1,
	    "ib_drain_qp(A) returned with IB_EVENT_QP_LAST_WQE_REACHED received (%d; %lld ms)",
	    atomic_read(&l->ev[KT_A].last_wqe), ktime_ms_delta(ktime_get(), t0));
	good = true;
	for (i = 3; i < KT_NRECV; i++)
		good &= !smp_load_acquire(&kt->rx_tok[i].fired);
	tap(good, "the SRQ's other receives stay posted (not flushed with A)");
	ib_drain_qp(l->qp[KT_B]);
	tap(atomic_read(&l->ev[KT_B].last_wqe) == 0, "ib_drain_qp(B), not on an SRQ, returned");

	/* C: to the error state by ib_modify_qp, once per entry. */
	ret = kt_loop_modify(l, KT_C, 0, IB_QPS_INIT);
	if (!ret)
		ret = kt_loop_state(l, KT_C, IB_QPS_ERR);
	tap(!ret && kt_wait_count(&l->ev[KT_C].last_wqe, 1),
	    "C (on the SRQ) from INIT to ERR: IB_EVENT_QP_LAST_WQE_REACHED (%d)", ret);
	ret = kt_loop_state(l, KT_C, IB_QPS_ERR);
	if (!ret)
		ret = kt_loop_state(l, KT_C, IB_QPS_RESET);
	if (!ret)
		ret = kt_loop_modify(l, KT_C, 0, IB_QPS_INIT);
	if (!ret)
		ret = kt_loop_state(l, KT_C, IB_QPS_ERR);
	tap(!ret && kt_wait_count(&l->ev[KT_C].last_wqe, 2),
	    "C: ERR again (no event), RESET, INIT, ERR: a second IB_EVENT_QP_LAST_WQE_REACHED (%d)",
	    ret);
	tally = true;
	kt_comp_vectors(kt, l);

out:
	/* Destroyed QPs raise nothing more: the counts are final. */
	for (q = 0; q < 3; q++) {
		if (l->qp[q])
			ib_destroy_qp(l->qp[q]);
		l->qp[q] = NULL;
	}
	if (l->srq)
		ib_destroy_srq(l->srq);
	for (q = 0; q < 3; q++)
		if (l->cq[q])
			ib_free_cq(l->cq[q]);
	if (tally) {
		static const int want[3][3] = { { 1, 1, 0 }, { 0, 0, 0 }, { 0, 2, 0 } };

		good = true;
		for (q = 0; q < 3; q++) {
			struct kt_qpev *e = &l->ev[q];

			if (atomic_read(&e->comm_est) != want[q][0] ||
			    atomic_read(&e->last_wqe) != want[q][1] || atomic_read(&e->other)) {
				diag("%s: COMM_EST %d, LAST_WQE_REACHED %d, other %d (last %d)",
				     kt_qpname[q], atomic_read(&e->comm_est),
				     atomic_read(&e->last_wqe), atomic_read(&e->other),
				     READ_ONCE(e->other_type));
				good = false;
			}
		}
		tap(good, "each QP got exactly its events: A one COMM_EST and one LAST_WQE_REACHED, B none, C two LAST_WQE_REACHED");
	}
	kfree(l);
}

/* ---- the two roles ---- */

static int kt_client_try(struct kt *kt)
{
	struct rdma_conn_param p = {};
	const struct ib_device_attr *a;
	int ret;

	kt_cm_init(&kt->rc);
	ret = kt_resolve(kt, &kt->rc, RDMA_PS_TCP, IB_QPT_RC);
	if (ret)
		return ret;
	if (!kt->pd) {
		ret = kt_setup_dev(kt, kt->rc.id->device, kt->rc.id->port_num);
		if (ret) {
			diag("device setup failed: %d", ret);
			return -ENOSPC;	/* not retried */
		}
	} else if (kt->rc.id->device != kt->dev) {
		return -ENODEV;
	}
	ret = kt_rc_qp(kt, kt->rc.id);
	if (ret)
		return ret;
	a = &kt->dev->attrs;
	p.initiator_depth = min3(a->max_qp_init_rd_atom, a->max_qp_rd_atom, 16);
	p.responder_resources = p.initiator_depth;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	ret = rdma_connect(kt->rc.id, &p);
	if (ret)
		return ret;
	return kt_cm_wait(&kt->rc, KT_CM_ESTABLISHED, 30000, "RC connect");
}

static int kt_client(struct kt *kt)
{
	unsigned long deadline = jiffies + connect_secs * HZ;
	int attempt, ret;

	for (attempt = 1;; attempt++) {
		ret = kt_client_try(kt);
		if (!ret)
			break;
		kt_rc_qp_destroy(kt);
		kt_cm_destroy(&kt->rc);
		if (ret == -ENOSPC || ret == -ENODEV || ret == -EINTR ||
		    time_after(jiffies, deadline) || fatal_signal_pending(current)) {
			tap(false, "rdma_cm RC connection to %pI4:%u established (%d attempts, last error %d)",
			    &kt->sin.sin_addr, port, attempt, ret);
			return ret;
		}
		diag("connect attempt %d failed (%d); retrying", attempt, ret);
		if (schedule_timeout_killable(HZ))
			return -EINTR;
	}
	tap(true, "rdma_cm RC connection to %pI4:%u established on %s (attempt %d)",
	    &kt->sin.sin_addr, port, dev_name(&kt->dev->dev), attempt);

	ret = kt_phase_init(kt, 0);
	if (!ret)
		ret = kt_phase_tgt(kt, 1);
	if (!ret && ud)
		ret = kt_ud_client(kt);
	if (!ret && negative && kt->have_stale)
		kt_rc_stale_read(kt);
	if (ret)
		diag("stopping after an error (%d)", ret);
	rdma_disconnect(kt->rc.id);
	if (kt_wait_disconnected(&kt->rc, timeout_ms))
		diag("no DISCONNECTED event after rdma_disconnect within %u ms", timeout_ms);
	if (!ret)
		kt_rc_flush_checks(kt);
	return ret;
}

static int kt_server(struct kt *kt)
{
	struct rdma_conn_param p = {};
	const struct ib_device_attr *a;
	struct rdma_cm_id *id;
	int ret;

	ret = kt_listen(kt, &kt->rc, RDMA_PS_TCP, IB_QPT_RC);
	if (!ret && ud)
		ret = kt_listen(kt, &kt->ud.cm, RDMA_PS_UDP, IB_QPT_UD);
	if (ret) {
		tap(false, "rdma_cm listen on port %u: %d", port, ret);
		return ret;
	}
	diag("listening on %pI4:%u (RC%s)", &kt->sin.sin_addr, port, ud ? ", UD" : "");
	ret = kt_cm_wait(&kt->rc, KT_CM_REQUEST, connect_secs * 1000, "RC connection request");
	if (ret) {
		tap(false, "rdma_cm RC connection request received within %u s", connect_secs);
		return ret;
	}
	id = kt->rc.child;
	ret = kt_setup_dev(kt, id->device, id->port_num);
	if (!ret)
		ret = kt_rc_qp(kt, id);
	if (ret) {
		tap(false, "RC resources on %s: %d", dev_name(&id->device->dev), ret);
		return ret;
	}
	a = &kt->dev->attrs;
	p.responder_resources = min_t(int, kt->rc.req_initiator_depth, a->max_qp_rd_atom);
	p.initiator_depth = min_t(int, kt->rc.req_responder_resources, a->max_qp_init_rd_atom);
	p.rnr_retry_count = 7;
	rdma_lock_handler(id);
	ret = rdma_accept(id, &p);
	rdma_unlock_handler(id);
	if (!ret)
		ret = kt_cm_wait(&kt->rc, KT_CM_ESTABLISHED, 30000, "RC establish");
	tap(!ret, "rdma_cm RC connection accepted and established on %s", dev_name(&kt->dev->dev));
	if (ret)
		return ret;

	ret = kt_phase_tgt(kt, 0);
	if (!ret)
		ret = kt_phase_init(kt, 1);
	if (!ret && ud)
		ret = kt_ud_server(kt);
	if (ret) {
		diag("stopping after an error (%d)", ret);
		rdma_disconnect(id);
		return ret;
	}
	/* The client ends with the stale-rkey READ and disconnects. */
	ret = kt_wait_disconnected(&kt->rc, timeout_ms * 2);
	tap(!ret, "RC: DISCONNECTED event from the client's rdma_disconnect");
	rdma_disconnect(id);
	if (!ret)
		kt_rc_flush_checks(kt);
	return ret;
}

static void kt_cleanup(struct kt *kt)
{
	int i;

	kt_ud_destroy(kt);
	kt_rc_qp_destroy(kt);
	if (kt->dev) {
		kt_tgt_free(kt);
		kt_buf_free(kt, &kt->ctl);
		kt_buf_free(kt, &kt->src);
		for (i = 0; i < KT_NRECV; i++)
			kt_buf_free(kt, &kt->rx[i]);
	}
	if (kt->pd)
		ib_dealloc_pd(kt->pd);
	kt->pd = NULL;
	kt_cm_destroy(&kt->ud.cm);
	kt_cm_destroy(&kt->rc);
}

/* role=srq-drain: the device of netdev, then kt_srq_drain; TAP as for the other roles. */
static int kt_init_srq_drain(ktime_t t0)
{
	struct net_device *ndev;
	struct kt *kt;

	kt = kzalloc(sizeof(*kt), GFP_KERNEL);
	if (!kt)
		return -ENOMEM;
	kt_cm_init(&kt->rc);
	kt_cm_init(&kt->ud.cm);
	tap_n = 0;
	tap_failed = 0;
	diag("role=srq-drain netdev=%s timeout_ms=%u", netdev, timeout_ms);
	ndev = dev_get_by_name(&init_net, netdev);
	if (ndev) {
		kt->dev = ib_device_get_by_netdev(ndev, RDMA_DRIVER_UNKNOWN);
		dev_put(ndev);
	}
	tap(kt->dev, "an RDMA device on %s", netdev);
	if (kt->dev) {
		kt_srq_drain(kt);
		kt_cleanup(kt);
		ib_device_put(kt->dev);
	}
	kfree(kt);
	pr_info("1..%d\n", tap_n);
	pr_info("# done: role=%s %d passed, %d failed, %lld ms\n", role, tap_n - tap_failed,
		tap_failed, ktime_ms_delta(ktime_get(), t0));
	return 0;
}

static int __init kt_init(void)
{
	ktime_t t0 = ktime_get();
	struct kt *kt;
	bool server;

	if (sysfs_streq(role, "srq-drain"))
		return kt_init_srq_drain(t0);
	if (sysfs_streq(role, "server"))
		server = true;
	else if (sysfs_streq(role, "client"))
		server = false;
	else {
		pr_err("role must be server, client or srq-drain\n");
		return -EINVAL;
	}
	if (nr_sizes < 1 || !iters || !timeout_ms) {
		pr_err("bad sizes/iters/timeout_ms\n");
		return -EINVAL;
	}
	kt = kzalloc(sizeof(*kt), GFP_KERNEL);
	if (!kt)
		return -ENOMEM;
	kt->server = server;
	kt->sin.sin_family = AF_INET;
	kt->sin.sin_port = htons(port);
	if (*addr && !in4_pton(addr, -1, (u8 *)&kt->sin.sin_addr.s_addr, -1, NULL)) {
		pr_err("bad addr '%s'\n", addr);
		kfree(kt);
		return -EINVAL;
	}
	if (!server && !*addr) {
		pr_err("role=client needs addr=<server IPv4>\n");
		kfree(kt);
		return -EINVAL;
	}
	kt_cm_init(&kt->rc);
	kt_cm_init(&kt->ud.cm);
	tap_n = 0;
	tap_failed = 0;
	diag("role=%s addr=%s port=%u iters=%u timeout_ms=%u", role, addr, port, iters, timeout_ms);

	if (server)
		kt_server(kt);
	else
		kt_client(kt);
	kt_cleanup(kt);
	kfree(kt);

	pr_info("1..%d\n", tap_n);
	pr_info("# done: role=%s %d passed, %d failed, %lld ms\n", role, tap_n - tap_failed,
		tap_failed, ktime_ms_delta(ktime_get(), t0));
	return 0;
}

static void __exit kt_exit(void)
{
}

module_init(kt_init);
module_exit(kt_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Kernel-verbs / rdma_cm test of an RDMA device (krping-style, TAP output)");
