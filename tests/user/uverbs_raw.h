/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The raw uverbs ABI for test programs that must not go through libibverbs (whose argument
 * checks would stand between them and the kernel): an rrxe device's character device
 * opened and GET_CONTEXT done, each legacy write() command (struct ib_uverbs_cmd_hdr + the
 * structures of <rdma/ib_user_verbs.h>, with rrxe's driver responses of rrxe-abi.h) and
 * CQ_CREATE through the ioctl ABI, as functions answering 0 or -errno (set-up steps a test
 * cannot go on without die() instead); QP transitions for loopback; the device's GID and
 * counters from sysfs. Include after tap.h; set raw_ibdev and raw_gidx, then call
 * raw_read_gid().
 */
#ifndef RRXE_TEST_UVERBS_RAW_H
#define RRXE_TEST_UVERBS_RAW_H

#include <infiniband/verbs.h>	/* only for the ABI constants IBV_QP_*, IBV_WR_*, ... */
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/rrxe-abi.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* The device's name, its GID index (set by the program), the GID (raw_read_gid) and the
 * device attributes (query_device). */
static const char *raw_ibdev;
static int raw_gidx;
static uint8_t raw_gid[16];
static struct ib_uverbs_query_device_resp raw_attr;

/*
 * One legacy write() command: the header, then `body` (len bytes, a multiple of 4). For a
 * command with a response, body starts with its `__aligned_u64 response`, pointed here at
 * `resp` (out bytes: the core's response, then the driver's). 0 or -errno.
 */
static inline int wcmd(int fd, uint32_t command, void *body, size_t len, void *resp, size_t out)
{
	struct ib_uverbs_cmd_hdr h = {
		.command = command, .in_words = (sizeof(h) + len) / 4, .out_words = out / 4,
	};
	size_t n = sizeof(h) + len;
	char *buf = calloc(1, n);
	ssize_t w;
	int err;

	if (!buf)
		die("calloc");
	if (resp) {
		uint64_t p = (uintptr_t)resp;

		memcpy(body, &p, sizeof(p));
	}
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), body, len);
	w = write(fd, buf, n);
	err = errno;
	free(buf);
	return w == (ssize_t)n ? 0 : -err;
}

/* The uverbs character device of raw_ibdev, from sysfs. */
static inline void uverbs_path(char *path, size_t len)
{
	for (int i = 0; i < 64; i++) {
		char f[96], name[64] = "";
		FILE *s;

		snprintf(f, sizeof(f), "/sys/class/infiniband_verbs/uverbs%d/ibdev", i);
		s = fopen(f, "r");
		if (!s)
			continue;
		if (fscanf(s, "%63s", name) != 1)
			name[0] = 0;
		fclose(s);
		if (!strcmp(name, raw_ibdev)) {
			snprintf(path, len, "/dev/infiniband/uverbs%d", i);
			return;
		}
	}
	die("no uverbs device for -d");
}

/* A new context: the device opened and GET_CONTEXT done (with rrxe's driver response). */
static inline int open_ctx(void)
{
	struct ib_uverbs_get_context c = {};
	uint64_t out[4];
	struct rrxe_alloc_ucontext_resp d;
	char path[64];
	int fd;

	uverbs_path(path, sizeof(path));
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die(path);
	if (wcmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &c, sizeof(c), out,
		 sizeof(struct ib_uverbs_get_context_resp) + sizeof(d)))
		die("GET_CONTEXT");
	memcpy(&d, (char *)out + sizeof(struct ib_uverbs_get_context_resp), sizeof(d));
	if (d.abi_version != RRXE_UVERBS_ABI_VERSION)
		die("rrxe ABI version");
	return fd;
}

static inline void query_device(int fd)
{
	struct ib_uverbs_query_device c = {};

	if (wcmd(fd, IB_USER_VERBS_CMD_QUERY_DEVICE, &c, sizeof(c), &raw_attr, sizeof(raw_attr)))
		die("QUERY_DEVICE");
}

static inline uint32_t alloc_pd(int fd)
{
	struct ib_uverbs_alloc_pd c = {};
	struct ib_uverbs_alloc_pd_resp r;

	if (wcmd(fd, IB_USER_VERBS_CMD_ALLOC_PD, &c, sizeof(c), &r, sizeof(r)))
		die("ALLOC_PD");
	return r.pd_handle;
}

static inline int dealloc_pd(int fd, uint32_t h)
{
	struct ib_uverbs_dealloc_pd c = { .pd_handle = h };

	return wcmd(fd, IB_USER_VERBS_CMD_DEALLOC_PD, &c, sizeof(c), NULL, 0);
}

/* CREATE_CQ; `drv` bytes of room for rrxe's response (a CQ ring: its queue info). */
static inline int create_cq(int fd, uint32_t cqe, uint32_t vector, size_t drv, uint32_t *h,
			    struct rrxe_create_cq_resp *info)
{
	struct ib_uverbs_create_cq c = { .cqe = cqe, .comp_vector = vector, .comp_channel = -1 };
	struct ib_uverbs_create_cq_resp r;
	uint64_t out[8] = {};
	int ret = wcmd(fd, IB_USER_VERBS_CMD_CREATE_CQ, &c, sizeof(c), out, sizeof(r) + drv);

	memcpy(&r, out, sizeof(r));
	if (!ret && h)
		*h = r.cq_handle;
	if (!ret && info)
		memcpy(info, (char *)out + sizeof(r), sizeof(*info));
	return ret;
}

/*
 * CREATE_CQ through the ioctl ABI (UVERBS_METHOD_CQ_CREATE), the path rdma-core takes
 * today: the same driver op, reached with the core's attribute parsing instead of the
 * write() structures. `drv` bytes of UHW_OUT for rrxe's response (0: no such attribute).
 */
static inline int ioctl_create_cq(int fd, uint32_t cqe, size_t drv, uint32_t *h)
{
	struct rrxe_create_cq_resp info;
	uint32_t resp_cqe = 0;
	struct ib_uverbs_attr a[6] = {
		{ .attr_id = UVERBS_ATTR_CREATE_CQ_HANDLE },
		{ .attr_id = UVERBS_ATTR_CREATE_CQ_CQE, .len = 4, .data = cqe },
		{ .attr_id = UVERBS_ATTR_CREATE_CQ_USER_HANDLE, .len = 8, .data = 1 },
		{ .attr_id = UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, .len = 4, .data = 0 },
		{ .attr_id = UVERBS_ATTR_CREATE_CQ_RESP_CQE, .len = 4,
		  .data = (uintptr_t)&resp_cqe },
		{ .attr_id = UVERBS_ATTR_UHW_OUT, .len = drv, .data = (uintptr_t)&info },
	};
	struct ib_uverbs_ioctl_hdr hdr = {
		.object_id = UVERBS_OBJECT_CQ, .method_id = UVERBS_METHOD_CQ_CREATE,
		.num_attrs = drv ? 6 : 5,
		.driver_id = RDMA_DRIVER_UNKNOWN,	/* rrxe's ops.driver_id: must match */
	};
	uint64_t buf[64];

	if (drv > sizeof(info))
		die("ioctl_create_cq");
	hdr.length = sizeof(hdr) + hdr.num_attrs * sizeof(a[0]);
	memcpy(buf, &hdr, sizeof(hdr));
	memcpy((char *)buf + sizeof(hdr), a, sizeof(a));
	if (ioctl(fd, RDMA_VERBS_IOCTL, buf))
		return -errno;
	/* The new object's handle comes back in its attribute's data. */
	memcpy(a, (char *)buf + sizeof(hdr), sizeof(a));
	*h = a[0].data;
	return 0;
}

static inline int destroy_cq(int fd, uint32_t h)
{
	struct ib_uverbs_destroy_cq c = { .cq_handle = h };
	struct ib_uverbs_destroy_cq_resp r;

	return wcmd(fd, IB_USER_VERBS_CMD_DESTROY_CQ, &c, sizeof(c), &r, sizeof(r));
}

static inline int resize_cq(int fd, uint32_t h, uint32_t cqe, struct rrxe_resize_cq_resp *info)
{
	struct ib_uverbs_resize_cq c = { .cq_handle = h, .cqe = cqe };
	uint64_t out[8] = {};
	int ret = wcmd(fd, IB_USER_VERBS_CMD_RESIZE_CQ, &c, sizeof(c), out,
		       sizeof(struct ib_uverbs_resize_cq_resp) + sizeof(struct rrxe_resize_cq_resp));

	if (!ret && info)
		memcpy(info, (char *)out + sizeof(struct ib_uverbs_resize_cq_resp), sizeof(*info));
	return ret;
}

struct caps {
	uint32_t swr, rwr, ssge, rsge, inl;
};

static inline int create_qp(int fd, uint32_t pd, uint32_t cq, uint32_t srq, int is_srq,
			    uint8_t type, struct caps k, uint32_t *h, uint32_t *qpn)
{
	struct ib_uverbs_create_qp c = {
		.pd_handle = pd, .send_cq_handle = cq, .recv_cq_handle = cq, .srq_handle = srq,
		.max_send_wr = k.swr, .max_recv_wr = k.rwr, .max_send_sge = k.ssge,
		.max_recv_sge = k.rsge, .max_inline_data = k.inl, .qp_type = type,
		.is_srq = is_srq,
	};
	struct ib_uverbs_create_qp_resp r;
	uint64_t out[16] = {};
	int ret = wcmd(fd, IB_USER_VERBS_CMD_CREATE_QP, &c, sizeof(c), out,
		       sizeof(r) + sizeof(struct rrxe_create_qp_resp));

	memcpy(&r, out, sizeof(r));
	if (!ret && h)
		*h = r.qp_handle;
	if (!ret && qpn)
		*qpn = r.qpn;
	return ret;
}

static inline int destroy_qp(int fd, uint32_t h)
{
	struct ib_uverbs_destroy_qp c = { .qp_handle = h };
	struct ib_uverbs_destroy_qp_resp r;

	return wcmd(fd, IB_USER_VERBS_CMD_DESTROY_QP, &c, sizeof(c), &r, sizeof(r));
}

static inline int modify_qp(int fd, struct ib_uverbs_modify_qp *m)
{
	return wcmd(fd, IB_USER_VERBS_CMD_MODIFY_QP, m, sizeof(*m), NULL, 0);
}

/* RESET -> INIT of an RC QP (port 1, remote read/write). */
static inline int rc_init(int fd, uint32_t h, uint32_t access)
{
	struct ib_uverbs_modify_qp m = {
		.qp_handle = h, .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = access,
		.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
	};

	return modify_qp(fd, &m);
}

/* INIT -> RTR of an RC QP, connected to QP dest of this device (its own GID). */
static inline int rc_rtr(int fd, uint32_t h, uint32_t dest, uint8_t mtu, uint8_t max_dest_rd)
{
	struct ib_uverbs_modify_qp m = {
		.qp_handle = h, .qp_state = IBV_QPS_RTR, .path_mtu = mtu, .dest_qp_num = dest,
		.max_dest_rd_atomic = max_dest_rd, .min_rnr_timer = 1,
		.dest = { .sgid_index = raw_gidx, .hop_limit = 64, .is_global = 1, .port_num = 1 },
		.attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
	};

	memcpy(m.dest.dgid, raw_gid, 16);
	return modify_qp(fd, &m);
}

/* RTR -> RTS of an RC QP. */
static inline int rc_rts(int fd, uint32_t h, uint8_t timeout, uint8_t max_rd)
{
	struct ib_uverbs_modify_qp m = {
		.qp_handle = h, .qp_state = IBV_QPS_RTS, .timeout = timeout, .retry_cnt = 2,
		.rnr_retry = 2, .max_rd_atomic = max_rd,
		.attr_mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
	};

	return modify_qp(fd, &m);
}

/* RESET -> INIT -> RTR -> RTS, connected to QP dest of this device. */
static inline void to_rts(int fd, uint32_t h, uint32_t dest)
{
	if (rc_init(fd, h, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) ||
	    rc_rtr(fd, h, dest, IBV_MTU_1024, 1) || rc_rts(fd, h, 10, 1))
		die("MODIFY_QP to RTS");
}

/* RESET -> INIT -> RTR -> RTS for a UD QP (Q_Key 0x11111111). */
static inline void ud_to_rts(int fd, uint32_t h)
{
	struct ib_uverbs_modify_qp m = {
		.qp_handle = h, .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111,
		.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
	};

	if (modify_qp(fd, &m))
		die("MODIFY_QP UD INIT");
	memset(&m, 0, sizeof(m));
	m.qp_handle = h;
	m.qp_state = IBV_QPS_RTR;
	m.attr_mask = IBV_QP_STATE;
	if (modify_qp(fd, &m))
		die("MODIFY_QP UD RTR");
	m.qp_state = IBV_QPS_RTS;
	m.attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (modify_qp(fd, &m))
		die("MODIFY_QP UD RTS");
}

/* An AH to this device's own GID (rrxe's driver response: its AH number). */
static inline uint32_t create_ah(int fd, uint32_t pd)
{
	struct ib_uverbs_create_ah c = {
		.pd_handle = pd,
		.attr = { .grh = { .sgid_index = raw_gidx, .hop_limit = 64 }, .is_global = 1,
			  .port_num = 1 },
	};
	struct ib_uverbs_create_ah_resp r;
	uint64_t out[4];

	memcpy(c.attr.grh.dgid, raw_gid, 16);
	if (wcmd(fd, IB_USER_VERBS_CMD_CREATE_AH, &c, sizeof(c), out,
		 sizeof(r) + sizeof(struct rrxe_create_ah_resp)))
		die("CREATE_AH");
	memcpy(&r, out, sizeof(r));
	return r.ah_handle;
}

static inline int destroy_ah(int fd, uint32_t h)
{
	struct ib_uverbs_destroy_ah c = { .ah_handle = h };

	return wcmd(fd, IB_USER_VERBS_CMD_DESTROY_AH, &c, sizeof(c), NULL, 0);
}

static inline int create_srq(int fd, uint32_t pd, uint32_t max_wr, uint32_t max_sge,
			     uint32_t *h)
{
	struct ib_uverbs_create_srq c = { .pd_handle = pd, .max_wr = max_wr, .max_sge = max_sge };
	struct ib_uverbs_create_srq_resp r;
	uint64_t out[16] = {};
	int ret = wcmd(fd, IB_USER_VERBS_CMD_CREATE_SRQ, &c, sizeof(c), out,
		       sizeof(r) + sizeof(struct rrxe_create_srq_resp));

	memcpy(&r, out, sizeof(r));
	if (!ret && h)
		*h = r.srq_handle;
	return ret;
}

static inline int destroy_srq(int fd, uint32_t h)
{
	struct ib_uverbs_destroy_srq c = { .srq_handle = h };
	struct ib_uverbs_destroy_srq_resp r;

	return wcmd(fd, IB_USER_VERBS_CMD_DESTROY_SRQ, &c, sizeof(c), &r, sizeof(r));
}

static inline int reg_mr(int fd, uint32_t pd, uint64_t start, uint64_t len, uint64_t va,
			 uint32_t acc, struct ib_uverbs_reg_mr_resp *out)
{
	struct ib_uverbs_reg_mr c = {
		.start = start, .length = len, .hca_va = va, .pd_handle = pd, .access_flags = acc,
	};
	struct ib_uverbs_reg_mr_resp r;
	int ret = wcmd(fd, IB_USER_VERBS_CMD_REG_MR, &c, sizeof(c), &r, sizeof(r));

	if (!ret && out)
		*out = r;
	return ret;
}

static inline int dereg_mr(int fd, uint32_t h)
{
	struct ib_uverbs_dereg_mr c = { .mr_handle = h };

	return wcmd(fd, IB_USER_VERBS_CMD_DEREG_MR, &c, sizeof(c), NULL, 0);
}

static inline int rereg_mr(int fd, uint32_t mr, uint32_t flags, uint64_t start, uint64_t len,
			   uint32_t pd, struct ib_uverbs_rereg_mr_resp *out)
{
	struct ib_uverbs_rereg_mr c = {
		.mr_handle = mr, .flags = flags, .start = start, .length = len, .hca_va = start,
		.pd_handle = pd, .access_flags = IBV_ACCESS_LOCAL_WRITE,
	};
	struct ib_uverbs_rereg_mr_resp r;
	int ret = wcmd(fd, IB_USER_VERBS_CMD_REREG_MR, &c, sizeof(c), &r, sizeof(r));

	if (!ret && out)
		*out = r;
	return ret;
}

static inline int alloc_mw(int fd, uint32_t pd, uint8_t type, uint32_t *h)
{
	struct ib_uverbs_alloc_mw c = { .pd_handle = pd, .mw_type = type };
	struct ib_uverbs_alloc_mw_resp r;
	int ret = wcmd(fd, IB_USER_VERBS_CMD_ALLOC_MW, &c, sizeof(c), &r, sizeof(r));

	if (!ret && h)
		*h = r.mw_handle;
	return ret;
}

static inline int dealloc_mw(int fd, uint32_t h)
{
	struct ib_uverbs_dealloc_mw c = { .mw_handle = h };

	return wcmd(fd, IB_USER_VERBS_CMD_DEALLOC_MW, &c, sizeof(c), NULL, 0);
}

static inline int query_qp(int fd, uint32_t h, struct ib_uverbs_query_qp_resp *out)
{
	struct ib_uverbs_query_qp c = { .qp_handle = h, .attr_mask = IBV_QP_STATE };
	struct ib_uverbs_query_qp_resp r;
	int ret = wcmd(fd, IB_USER_VERBS_CMD_QUERY_QP, &c, sizeof(c), &r, sizeof(r));

	if (!ret && out)
		*out = r;
	return ret;
}

/*
 * POST_SEND (or, with cmd POST_RECV / POST_SRQ_RECV, a receive list: then `wrs` are
 * struct ib_uverbs_recv_wr) of nwr WRs of wsize bytes and nsg SGEs; *bad: the response's
 * bad_wr (how many WRs the kernel went through up to the refused one).
 */
static inline int post(int fd, uint32_t command, uint32_t h, const void *wrs, uint32_t nwr,
		       size_t wsize, const struct ib_uverbs_sge *sg, uint32_t nsg, uint32_t *bad)
{
	struct ib_uverbs_post_send c = {
		.qp_handle = h, .wr_count = nwr, .sge_count = nsg, .wqe_size = wsize,
	};
	size_t len = sizeof(c) + nwr * wsize + nsg * sizeof(*sg);
	char *body = calloc(1, len);
	uint32_t r = UINT32_MAX;	/* ib_uverbs_post_{send,recv}_resp: bad_wr */
	int ret;

	if (!body)
		die("calloc");
	/* post_send, post_recv and post_srq_recv share this layout. */
	memcpy(body, &c, sizeof(c));
	if (nwr)
		memcpy(body + sizeof(c), wrs, nwr * wsize);
	if (nsg)
		memcpy(body + sizeof(c) + nwr * wsize, sg, nsg * sizeof(*sg));
	ret = wcmd(fd, command, body, len, &r, sizeof(r));
	free(body);
	if (bad)
		*bad = r;
	return ret;
}

static inline int modify_srq(int fd, uint32_t h, uint32_t mask, uint32_t max_wr, uint32_t limit)
{
	struct ib_uverbs_modify_srq c = {
		.srq_handle = h, .attr_mask = mask, .max_wr = max_wr, .srq_limit = limit,
	};

	return wcmd(fd, IB_USER_VERBS_CMD_MODIFY_SRQ, &c, sizeof(c), NULL, 0);
}

static inline int query_srq(int fd, uint32_t h, struct ib_uverbs_query_srq_resp *out)
{
	struct ib_uverbs_query_srq c = { .srq_handle = h };
	struct ib_uverbs_query_srq_resp r;
	int ret = wcmd(fd, IB_USER_VERBS_CMD_QUERY_SRQ, &c, sizeof(c), &r, sizeof(r));

	if (!ret && out)
		*out = r;
	return ret;
}

static inline int req_notify_cq(int fd, uint32_t h, uint32_t solicited_only)
{
	struct ib_uverbs_req_notify_cq c = { .cq_handle = h, .solicited_only = solicited_only };

	return wcmd(fd, IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, &c, sizeof(c), NULL, 0);
}

/* POLL_CQ of up to `ne` completions into `resp` (room for the header and `ne` WCs). */
static inline int poll_cq(int fd, uint32_t h, uint32_t ne, struct ib_uverbs_poll_cq_resp *resp,
			  size_t out)
{
	struct ib_uverbs_poll_cq c = { .cq_handle = h, .ne = ne };

	return wcmd(fd, IB_USER_VERBS_CMD_POLL_CQ, &c, sizeof(c), resp, out);
}

static inline int query_port(int fd, uint8_t port)
{
	struct ib_uverbs_query_port c = { .port_num = port };
	struct ib_uverbs_query_port_resp r;

	return wcmd(fd, IB_USER_VERBS_CMD_QUERY_PORT, &c, sizeof(c), &r, sizeof(r));
}

/*
 * An RDMA device counter from sysfs (rrxe's hw_counters), or -1. The core keeps what it
 * read for hw_counters/lifespan (10 ms, RDMA_HW_STATS_DEFAULT_LIFESPAN) and answers from
 * that copy until then: wait past it so the value is newer than the caller's last step.
 */
static inline long long counter(const char *name)
{
	char f[160];
	long long v = -1;
	FILE *s;

	usleep(30 * 1000);
	snprintf(f, sizeof(f), "/sys/class/infiniband/%s/ports/1/hw_counters/%s", raw_ibdev, name);
	s = fopen(f, "r");
	if (!s)
		return -1;
	if (fscanf(s, "%lld", &v) != 1)
		v = -1;
	fclose(s);
	return v;
}

static inline void raw_read_gid(void)
{
	char f[160], text[64] = "";
	FILE *s;

	snprintf(f, sizeof(f), "/sys/class/infiniband/%s/ports/1/gids/%d", raw_ibdev, raw_gidx);
	s = fopen(f, "r");
	if (!s || fscanf(s, "%63s", text) != 1 || inet_pton(AF_INET6, text, raw_gid) != 1)
		die("GID from sysfs");
	fclose(s);
}

#endif
