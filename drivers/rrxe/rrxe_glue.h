/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C side of rrxe's kernel glue: only what Rust cannot express without a kernel
 * patch — static inline helpers, macros, and statically initialised kernel objects
 * (link ops, notifier block). No driver logic lives here.
 *
 * rrxe_glue_* are implemented in rrxe_glue*.c (by concept) and called from Rust;
 * rrxe_rs_* are implemented in Rust (drivers/rrxe/glue/) and called from C.
 */
#ifndef RRXE_GLUE_H
#define RRXE_GLUE_H

#include <linux/types.h>
#include <linux/spinlock_types.h>

struct net_device;
struct ib_device;
struct ib_udata;
struct module;
struct net;
struct socket;
struct sk_buff;
struct rdma_hw_stats;
struct rdma_stat_desc;
struct rdma_counter;
struct nlattr;
struct rrxe_mmap_entry;
struct ib_ucontext;
struct rdma_user_mmap_entry;
struct vm_area_struct;
struct uverbs_attr_bundle;
struct ib_cq;
struct ib_qp;
struct ib_umem;
struct ib_mr;
struct page;
struct scatterlist;

/*
 * A netdev by identity, never dereferenced: its network namespace's cookie (unique for the
 * system's lifetime, never reused) and its ifindex there (allocated cyclically per
 * namespace). Shared mode keeps the source GID's netdev of an address vector this way.
 */
struct rrxe_ndev_id {
	u32 net_lo;		/* the cookie in two halves: 4-byte aligned, as rrxe_kav */
	u32 net_hi;
	s32 ifindex;
};

/*
 * An address vector in the form the datapath uses: everything needed to build the IP/UDP
 * headers of a packet, plus what query_ah/query_qp report back, and the netdev of its
 * source GID (which namespace it sends and receives in).
 */
struct rrxe_kav {
	u8 dgid[16];
	u8 sip[16];		/* IPv4: first 4 bytes; the destination's is dgid's (IPv4-mapped) */
	u8 dmac[6];
	u8 ipv6;		/* 0: IPv4, 1: IPv6 */
	u8 hop_limit;
	u32 flow_label;
	u8 traffic_class;
	u8 sgid_index;
	u8 sl;
	u8 reserved;
	struct rrxe_ndev_id src;	/* the source GID's netdev */
};

/* A kernel send work request, flattened from its ib_*_wr container. */
struct rrxe_kwr {
	u64 wr_id;
	const void *sg_list;	/* struct ib_sge[num_sge] */
	u32 num_sge;
	u32 opcode;		/* enum ib_wr_opcode */
	u32 send_flags;
	u32 ex;			/* imm_data (wire order) or invalidate_rkey */
	u64 remote_addr;
	u64 compare_add;
	u64 swap;
	u32 rkey;
	u32 remote_qpn;
	u32 remote_qkey;
	u32 reg_key;
	u32 reg_access;
	u32 reserved;
	const void *ah;		/* struct ib_ah * (UD) */
	void *reg_mr;		/* struct ib_mr * (REG_MR) */
};

struct rdma_ah_attr;
struct ib_send_wr;
struct rrxe_work;
struct rrxe_timer;

/* --- implemented in C, called from Rust --- */
int rrxe_glue_ah_attr_to_av(const struct rdma_ah_attr *attr, struct rrxe_kav *av);
void rrxe_glue_av_to_ah_attr(const struct rrxe_kav *av, struct rdma_ah_attr *attr);
struct module *rrxe_glue_this_module(void);
struct ib_device *rrxe_glue_alloc_device(size_t size);
bool rrxe_glue_ib_device_name_exists(const char *name);
int rrxe_glue_register_device(struct ib_device *ibdev, const char *name);
u64 rrxe_glue_module_version_raw(void);
/*
 * The driver's receive path, called with each datagram of our UDP sockets (softirq) and
 * each packet our QPs send to this host (bottom halves off); it owns the skb.
 */
typedef void (*rrxe_rx_fn)(struct sk_buff *skb);
int rrxe_glue_register(rrxe_rx_fn recv, rrxe_rx_fn recv_local);
void rrxe_glue_unregister_notifier(void);
void rrxe_glue_unregister(void);

bool rrxe_glue_netdev_is_ether(const struct net_device *ndev);
bool rrxe_glue_netdev_oper_up(const struct net_device *ndev);
unsigned int rrxe_glue_netdev_mtu(const struct net_device *ndev);
unsigned int rrxe_glue_netdev_tx_room(struct net_device *ndev);
size_t rrxe_glue_netdev_tx_show(struct ib_device *ib, char *buf, size_t len);
void rrxe_glue_netdev_eui64(const struct net_device *ndev, u8 *guid);
const char *rrxe_glue_netdev_name(const struct net_device *ndev);
void rrxe_glue_netdev_put(struct net_device *ndev);
void rrxe_glue_netdev_hold(struct net_device *ndev);
void rrxe_glue_synchronize_rcu(void);

void rrxe_glue_ib_get_device(struct ib_device *ibdev);
void rrxe_glue_ib_put_device(struct ib_device *ibdev);
void rrxe_glue_port_event(struct ib_device *ibdev, u32 port, int event);
const char *rrxe_glue_ibdev_name(const struct ib_device *ibdev);
void rrxe_glue_mark_name_assigned_by_user(struct ib_device *ibdev);
void rrxe_glue_set_node_desc(struct ib_device *ibdev, const char *desc);
void rrxe_glue_set_sysfs_ops(struct ib_device *ibdev);
size_t rrxe_glue_udata_inlen(const struct ib_udata *udata);
size_t rrxe_glue_udata_outlen(const struct ib_udata *udata);
int rrxe_glue_copy_to_udata(struct ib_udata *udata, const void *src, size_t len);
int rrxe_glue_copy_from_udata(void *dst, struct ib_udata *udata, size_t len);
int rrxe_glue_copy_to_user_addr(u64 addr, const void *src, size_t len);

int rrxe_glue_net_open(struct net_device *ndev, u16 port, bool *v6);
bool rrxe_glue_netdev_moving(const struct net_device *ndev);
void rrxe_glue_set_dev_net(struct ib_device *ibdev, const struct net_device *ndev);
bool rrxe_glue_dev_net_is_ndev(struct ib_device *ibdev, const struct net_device *ndev);
bool rrxe_glue_dev_net_is_init(struct ib_device *ibdev);
struct rrxe_ndev_id rrxe_glue_ndev_id(const struct net_device *ndev);
bool rrxe_glue_current_net(u64 *cookie);
struct ib_device *rrxe_glue_ib_device_below(struct net_device *ndev);
u32 rrxe_glue_upper_devs(struct net_device *ndev, struct net_device **out, u32 max);
struct net_device *rrxe_glue_ibdev_netdev_rcu(struct ib_device *ibdev);
struct net_device *rrxe_glue_gid_netdev(struct ib_device *ibdev, u32 index, bool ipv6,
					const u8 *addr);
void rrxe_glue_rcu_read_lock(void);
void rrxe_glue_rcu_read_unlock(void);

struct net_device *rrxe_glue_skb_dev(const struct sk_buff *skb);
int rrxe_glue_skb_linearize(struct sk_buff *skb);
const u8 *rrxe_glue_skb_ip_packet(const struct sk_buff *skb, u32 *len, u32 *l3_len);
u32 rrxe_glue_skb_ip_len(const struct sk_buff *skb);
void rrxe_glue_kfree_skb(struct sk_buff *skb);
void rrxe_glue_consume_skb(struct sk_buff *skb);
struct sk_buff *rrxe_glue_skb_clone(struct sk_buff *skb);
int rrxe_glue_mc_join(struct net_device *ndev, const u8 *mgid);
void rrxe_glue_mc_leave(struct net_device *ndev, const u8 *mgid);

struct rdma_hw_stats *rrxe_glue_alloc_hw_stats(const struct rdma_stat_desc *descs, int num);
void rrxe_glue_hw_stats_set(struct rdma_hw_stats *stats, int index, u64 value);
void rrxe_glue_hw_stats_hide(struct rdma_hw_stats *stats, int index);
struct ib_device *rrxe_glue_counter_device(const struct rdma_counter *counter);
u32 rrxe_glue_counter_id(const struct rdma_counter *counter);
void rrxe_glue_counter_set_id(struct rdma_counter *counter, u32 id);
void rrxe_glue_counter_add(struct rdma_counter *counter, int index, u64 delta);
struct rdma_counter *rrxe_glue_qp_counter(const struct ib_qp *qp);
void rrxe_glue_qp_set_counter(struct ib_qp *qp, struct rdma_counter *counter);
struct nlattr *rrxe_glue_nl_driver_begin(struct sk_buff *msg);
void rrxe_glue_nl_driver_end(struct sk_buff *msg, struct nlattr *nest);
void rrxe_glue_nl_driver_cancel(struct sk_buff *msg, struct nlattr *nest);

unsigned long rrxe_glue_spin_lock_irqsave(spinlock_t *lock);
void rrxe_glue_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);
void rrxe_glue_spin_lock_bh(spinlock_t *lock);
void rrxe_glue_spin_unlock_bh(spinlock_t *lock);
bool rrxe_glue_spin_trylock_irqsave(spinlock_t *lock, unsigned long *flags);
bool rrxe_glue_spin_trylock_bh(spinlock_t *lock);
void rrxe_glue_spin_assert_held(spinlock_t *lock);
u64 rrxe_glue_ktime_get_ns(void);

void *rrxe_glue_vmalloc_user(size_t size);
void rrxe_glue_vfree(void *addr);
struct rrxe_mmap_entry *rrxe_glue_mmap_entry_insert(struct ib_ucontext *uctx, void *vaddr,
						    size_t size, u64 *offset, int *err);
void rrxe_glue_mmap_entry_remove(struct rrxe_mmap_entry *e);
int rrxe_glue_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
void rrxe_glue_mmap_free(struct rdma_user_mmap_entry *r);
struct ib_ucontext *rrxe_glue_udata_ucontext(struct ib_udata *udata);
struct ib_udata *rrxe_glue_attrs_udata(struct uverbs_attr_bundle *attrs);
void rrxe_glue_cq_event(struct ib_cq *cq, int event);
void rrxe_glue_cq_comp(struct ib_cq *cq);
struct rrxe_cq_vec;
struct rrxe_cq_vec *rrxe_glue_cq_vec_new(struct ib_cq *cq, u32 vector);
void rrxe_glue_cq_vec_comp(struct rrxe_cq_vec *v);
void rrxe_glue_cq_vec_flush(struct rrxe_cq_vec *v);
void rrxe_glue_cq_vec_free(struct rrxe_cq_vec *v);
u32 rrxe_glue_num_online_cpus(void);

struct ib_umem *rrxe_glue_umem_get(struct ib_device *dev, u64 start, u64 length, int access,
				   int *err);
void rrxe_glue_umem_release(struct ib_umem *umem);
u32 rrxe_glue_umem_offset(struct ib_umem *umem);
u64 rrxe_glue_umem_address(struct ib_umem *umem);
size_t rrxe_glue_umem_pages(struct ib_umem *umem, struct page **pages, size_t max);
struct rrxe_odp;
struct rrxe_odp *rrxe_glue_odp_get(struct ib_device *dev, u64 start, u64 len, int access,
				   int *err);
struct rrxe_odp *rrxe_glue_odp_implicit(struct ib_device *dev, int access, int *err);
struct rrxe_odp *rrxe_glue_odp_child(struct rrxe_odp *root, u64 addr, u64 len, int *err);
void rrxe_glue_odp_release(struct rrxe_odp *o);
u64 rrxe_glue_odp_reap(struct rrxe_odp *root);
bool rrxe_glue_odp_emptied(struct rrxe_odp *o);
u64 rrxe_glue_odp_max_bytes(void);
u64 rrxe_glue_odp_address(struct rrxe_odp *o);
int rrxe_glue_odp_present(struct rrxe_odp *o, u64 addr, u64 len, bool write);
int rrxe_glue_odp_copy(struct rrxe_odp *o, u64 addr, void *buf, u64 len, bool to_mem);
u64 *rrxe_glue_odp_lock_u64(struct rrxe_odp *o, u64 addr, int *err);
void rrxe_glue_odp_unlock(struct rrxe_odp *o);
int rrxe_glue_odp_map(struct rrxe_odp *o, u64 addr, u64 len, bool write, bool fault);
void rrxe_glue_page_copy(struct page *page, u32 off, void *buf, u32 len, bool to_page);
bool rrxe_glue_page_copy_crc(struct page *page, u32 off, void *buf, u32 len, u32 *crc,
			     const u32 *tab);
u32 rrxe_glue_copy_crc(void *dst, const void *src, size_t len, u32 crc, const u32 *tab);
u32 rrxe_glue_table_crc(const void *p, size_t len, u32 crc, const u32 *tab);
int rrxe_glue_icrc_choose(const u32 *tab);
u64 *rrxe_glue_page_map_u64(struct page *page, u32 off);
bool rrxe_glue_kva_valid(u64 addr, u64 len);
u32 rrxe_glue_random_u32(void);
void rrxe_glue_page_unmap(void *addr);
int rrxe_glue_sg_to_pages(struct ib_mr *mr, struct scatterlist *sg, int nents,
			  unsigned int *sg_offset, int (*set_page)(struct ib_mr *, u64));

struct rrxe_work *rrxe_glue_work_new(void (*fn)(void *ctx), void *ctx);
struct rrxe_work *rrxe_glue_work_new_bh(void (*fn)(void *ctx), void *ctx);
void rrxe_glue_work_queue_on(struct rrxe_work *w, unsigned int cpu);
void rrxe_glue_work_queue_bh(struct rrxe_work *w);
unsigned int rrxe_glue_this_cpu(void);
bool rrxe_glue_in_serving_softirq(void);
void rrxe_glue_work_free(struct rrxe_work *w);
struct rrxe_timer *rrxe_glue_timer_new(void (*fn)(void *ctx, unsigned long id), void *ctx,
				       unsigned long id);
void rrxe_glue_timer_arm(struct rrxe_timer *t, u64 usecs);
void rrxe_glue_timer_cancel(struct rrxe_timer *t);
void rrxe_glue_timer_free(struct rrxe_timer *t);
void rrxe_glue_work_cancel_sync(struct rrxe_work *w);
void rrxe_glue_timer_shutdown(struct rrxe_timer *t);
void rrxe_glue_skb_smac(const struct sk_buff *skb, u8 *mac);
void rrxe_glue_skb_release_refs(struct sk_buff *skb);
struct net_device *rrxe_glue_local_addr_dev(struct net_device *ndev, bool ipv6, const u8 *addr);
bool rrxe_glue_has_roce_gid(struct ib_device *ibdev, const u8 *gid, struct net_device *ndev);
struct sk_buff *rrxe_glue_tx_alloc(struct net_device *ndev, u32 ip_len, bool ipv6, u8 **data);
struct rrxe_route;
struct rrxe_route *rrxe_glue_route_new(void);
void rrxe_glue_route_reset(struct rrxe_route *r);
void rrxe_glue_route_free(struct rrxe_route *r);
int rrxe_glue_tx_send(struct sk_buff *skb, bool ipv6, const u8 *sip, const u8 *dip,
		      struct rrxe_route *route);
void rrxe_glue_tx_chain(struct sk_buff *head, struct sk_buff **tail, struct sk_buff *seg);
void rrxe_glue_tx_chain_seal(struct sk_buff *head, u16 segs);

void rrxe_glue_decode_send_wr(const struct ib_send_wr *wr, struct rrxe_kwr *out);
void rrxe_glue_decode_ud_wr(const struct ib_send_wr *wr, struct rrxe_kwr *out);
struct ib_event;
void rrxe_glue_qp_event(struct ib_qp *qp, int event);
struct ib_srq;
void rrxe_glue_srq_event(struct ib_srq *srq, int event);
void rrxe_glue_dbg(const char *dev, const char *what, u64 a, u64 b);

/*
 * dma-buf memory regions: a dma-buf an MR is registered over, rrxe's pinned attachment to it
 * and the kernel mapping its accesses go through (defined in rrxe_glue_mem.c; opaque to Rust).
 */
struct rrxe_dmabuf;
struct rrxe_dmabuf *rrxe_glue_dmabuf_get(int fd, u64 *size, int *err);
void *rrxe_glue_dmabuf_map(struct rrxe_dmabuf *d, struct ib_device *ibdev, int *err);
void rrxe_glue_dmabuf_release(struct rrxe_dmabuf *d);

/*
 * debugfs (rrxe_glue_debugfs.c): a show function writes a file's text into buf (at most len
 * bytes) and returns its length; a write function takes len bytes and returns 0 or a
 * negative errno.
 */
struct dentry;
typedef size_t (*rrxe_debugfs_show_fn)(struct ib_device *ib, char *buf, size_t len);
typedef int (*rrxe_debugfs_write_fn)(struct ib_device *ib, const char *buf, size_t len);
/* The functions behind each device's files: `faults` and `capture`. */
struct rrxe_debugfs_fns {
	rrxe_debugfs_show_fn faults_show;
	rrxe_debugfs_write_fn faults_write;
	rrxe_debugfs_show_fn capture_show;
	rrxe_debugfs_write_fn capture_write;
};
void rrxe_glue_debugfs_init(const struct rrxe_debugfs_fns *fns);
void rrxe_glue_debugfs_exit(void);
struct dentry *rrxe_glue_debugfs_add(struct ib_device *ib);
void rrxe_glue_debugfs_remove(struct dentry *dir);

/*
 * Packet capture (rrxe_glue_capture.c; docs/capture.md): a device's capture netdev, kept in
 * a slot of the device's data (written under rtnl, read under RCU).
 */
int rrxe_glue_capture_open(struct ib_device *ib, struct net_device **slot);
void rrxe_glue_capture_close(struct net_device **slot);
size_t rrxe_glue_capture_name(struct net_device **slot, char *buf, size_t len);
int rrxe_glue_capture_skb(struct net_device **slot, struct sk_buff *skb, bool wire);

/*
 * Trace events (rrxe_glue_trace.c, defined in rrxe_trace.h; docs/tracing.md). Each function
 * tests its event's static key first and does nothing more while the event is off.
 */
/* A packet a QP sent (tx = 1) or received: its BTH, payload length, AETH if any. */
struct rrxe_trace_pkt {
	u32 qpn;		/* the QP of this device that sent or received it */
	u32 dqpn;		/* the BTH's destination QP */
	u32 psn;
	u32 len;		/* payload bytes */
	u8 opcode;
	u8 ackreq;
	u8 has_aeth;
	u8 syndrome;		/* the AETH's, when has_aeth */
	u8 tx;
	u8 nak;			/* an RNR NAK or NAK: also the rrxe_nak_tx/rx event */
};
/* Why a congestion window moved. */
enum rrxe_cwnd_reason {
	RRXE_CWND_GROW,
	RRXE_CWND_LOSS,
	RRXE_CWND_TIMEOUT,
	RRXE_CWND_UNDO,
	RRXE_CWND_RESET,
};
/* What a fault injection rule did. */
enum rrxe_fault_action {
	RRXE_FAULT_DROP,
	RRXE_FAULT_DUP,
	RRXE_FAULT_DELAY,
	RRXE_FAULT_REORDER,
	RRXE_FAULT_ICRC,
	RRXE_FAULT_NAK,
};
void rrxe_glue_trace_pkt(const struct ib_device *ib, const struct rrxe_trace_pkt *p);
void rrxe_glue_trace_retransmit(const struct ib_device *ib, u32 qpn, u32 timeouts, u32 una,
				u32 next, u32 resent, u64 rto_us);
void rrxe_glue_trace_cwnd(const struct ib_device *ib, u32 qpn, u32 old_cwnd, u32 new_cwnd,
			  u8 reason);
void rrxe_glue_trace_qp_state(const struct ib_device *ib, u32 qpn, u32 old_state,
			      u32 new_state);
void rrxe_glue_trace_comp_err(const struct ib_device *ib, u32 qpn, u64 wr_id, u32 status,
			      u32 opcode, bool recv);
void rrxe_glue_trace_fault(const struct ib_device *ib, u32 rule, u32 qpn, bool rx, u8 opcode,
			   u32 psn, u8 action, u32 arg);

/* --- implemented in Rust, called from C --- */
int rrxe_rs_newlink(const char *ibdev_name, struct net_device *ndev);
void rrxe_rs_netdev_event(unsigned long event, struct net_device *ndev);

#endif /* RRXE_GLUE_H */
