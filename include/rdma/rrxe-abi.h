/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * rrxe user ABI: the contract between rrxe.ko and librrxe-rdmavN.so.
 *
 * Both sides build from this one header (the kernel through the module's
 * bindgen rule, the provider through bindgen in provider/build.rs).
 * Every structure is fixed-size, naturally aligned and padded explicitly;
 * new fields only go at the end, and a change that is not backward
 * compatible bumps RRXE_UVERBS_ABI_VERSION.
 *
 * Shared queues
 * -------------
 * Work queues (SQ, RQ, SRQ) and completion queues live in memory the kernel
 * allocates and the provider maps with mmap(cmd_fd, offset) using the offset
 * and size from the create response. A queue is a header page followed by
 * 2^log2_slots slots of slot_size bytes (a power of two, >= 64):
 *
 *   offset 0                      struct rrxe_queue_hdr
 *   offset RRXE_QUEUE_HDR_SIZE    slot 0, slot 1, ...
 *
 * producer and consumer are free-running 32-bit counters; the slot of index
 * i is i & (2^log2_slots - 1). The queue is empty when producer == consumer
 * and full when producer - consumer == 2^log2_slots.
 *   SQ/RQ/SRQ: userspace produces (writes the slot, then a release store of
 *              producer); the kernel consumes and publishes consumer.
 *   CQ:        the kernel produces; userspace consumes.
 * The kernel never trusts what userspace wrote: it keeps its own copy of
 * its side's index, bounds the other side's index against the queue size,
 * copies each slot once before validating it, and completes a bad work
 * request in error (or moves the QP/CQ to error) instead of acting on it.
 *
 * Doorbells: after producing send WQEs, userspace calls ibv_cmd_post_send
 * with no work requests (the only system call on the data path). Receive
 * queues need no doorbell. ibv_req_notify_cq goes through the kernel.
 */
#ifndef RRXE_ABI_H
#define RRXE_ABI_H

#include <linux/types.h>

/* Reported as the uverbs ABI version of every rrxe device. */
#define RRXE_UVERBS_ABI_VERSION 1

/* Queue geometry. */
#define RRXE_QUEUE_HDR_SIZE 4096
#define RRXE_MAX_SGE 32
#define RRXE_MAX_INLINE 512

struct rrxe_queue_hdr {
	__u32 producer;		/* written by the producer side only */
	__u32 pad0[15];
	__u32 consumer;		/* written by the consumer side only */
	__u32 pad1[15];
	/* Set by the kernel when it moved the queue's owner to error. */
	__u32 error;
	__u32 pad2[15];
};

/* Where a queue is and how it is laid out (part of create responses). */
struct rrxe_queue_info {
	__aligned_u64 mmap_offset;	/* pass to mmap() on the context's cmd_fd */
	__aligned_u64 mmap_size;	/* header page + slots, page aligned */
	__u32 log2_slots;
	__u32 slot_size;
};

/* One scatter/gather element. */
struct rrxe_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/* Work request opcodes: the values of enum ib_uverbs_wr_opcode, plus ours. */
#define RRXE_WR_RDMA_WRITE		0
#define RRXE_WR_RDMA_WRITE_WITH_IMM	1
#define RRXE_WR_SEND			2
#define RRXE_WR_SEND_WITH_IMM		3
#define RRXE_WR_RDMA_READ		4
#define RRXE_WR_ATOMIC_CMP_AND_SWP	5
#define RRXE_WR_ATOMIC_FETCH_AND_ADD	6
#define RRXE_WR_LOCAL_INV		7
#define RRXE_WR_BIND_MW			8
#define RRXE_WR_SEND_WITH_INV		9
/*
 * RC only: 8 bytes written atomically at wr.atomic.remote_addr (8-aligned) under
 * wr.atomic.rkey; the bytes themselves, in memory order, are wr.atomic.compare_add.
 */
#define RRXE_WR_ATOMIC_WRITE		32
/*
 * RC only: FLUSH (IBTA 1.5) of wr.flush.length bytes at wr.flush.remote_addr under
 * wr.flush.rkey (level RRXE_FLUSH_RANGE) or of the whole MR (RRXE_FLUSH_MR), to global
 * visibility and/or persistence (type). The arguments of libibverbs' ibv_wr_flush(),
 * which rdma-core 45 added; with 44 only a process writing its SQ directly can post one.
 */
#define RRXE_WR_FLUSH			33
#define RRXE_FLUSH_GLOBAL	1	/* type bits (FETH placement type) */
#define RRXE_FLUSH_PERSISTENT	2
#define RRXE_FLUSH_RANGE	0	/* level (FETH selectivity) */
#define RRXE_FLUSH_MR		1

/* send_flags: the values of enum ib_uverbs_send_flags (IBV_SEND_*). */
#define RRXE_SEND_FENCE		(1 << 0)
#define RRXE_SEND_SIGNALED	(1 << 1)
#define RRXE_SEND_SOLICITED	(1 << 2)
#define RRXE_SEND_INLINE	(1 << 3)

/* The members of struct rrxe_send_wqe's unions, named so both sides can use them. */

/* ex: the immediate (SEND/RDMA WRITE with immediate) or the rkey to invalidate. */
union rrxe_send_wqe_ex {
	__be32 imm_data;
	__u32 invalidate_rkey;
};

/* wr.rdma: RDMA WRITE/READ and SEND_WITH_INV's remote side. */
struct rrxe_wr_rdma {
	__aligned_u64 remote_addr;
	__u32 rkey;
	__u32 reserved;
};

/* wr.atomic: CMP_AND_SWP, FETCH_AND_ADD and ATOMIC_WRITE. */
struct rrxe_wr_atomic {
	__aligned_u64 remote_addr;
	__aligned_u64 compare_add;
	__aligned_u64 swap;
	__u32 rkey;
	__u32 reserved;
};

/* wr.ud: the destination of a UD send. */
struct rrxe_wr_ud {
	__u32 ah_num;	/* from struct rrxe_create_ah_resp */
	__u32 remote_qpn;
	__u32 remote_qkey;
	__u32 reserved;
};

/* wr.bind_mw: BIND_MW of a type 2 window. */
struct rrxe_wr_bind_mw {
	__aligned_u64 addr;
	__aligned_u64 length;
	__u32 mw_rkey;	/* the new rkey of the window */
	__u32 mr_lkey;	/* the MR the window binds to */
	__u32 access;	/* IBV_ACCESS_* */
	__u32 reserved;
};

/* wr.flush: RRXE_WR_FLUSH. */
struct rrxe_wr_flush {
	__aligned_u64 remote_addr;
	__u32 length;
	__u32 rkey;
	__u8 type;	/* RRXE_FLUSH_GLOBAL | RRXE_FLUSH_PERSISTENT */
	__u8 level;	/* RRXE_FLUSH_RANGE or RRXE_FLUSH_MR */
	__u8 reserved[6];
};

/* wr: the opcode's arguments. */
union rrxe_send_wqe_wr {
	struct rrxe_wr_rdma rdma;
	struct rrxe_wr_atomic atomic;
	struct rrxe_wr_ud ud;
	struct rrxe_wr_bind_mw bind_mw;
	struct rrxe_wr_flush flush;
	__u8 raw[40];
};

/*
 * A send work queue entry: this header, then either num_sge struct rrxe_sge
 * or (RRXE_SEND_INLINE) inline_len bytes of data. The SQ's slot_size bounds
 * both.
 */
struct rrxe_send_wqe {
	__aligned_u64 wr_id;
	__u32 opcode;		/* RRXE_WR_* */
	__u32 send_flags;	/* RRXE_SEND_* */
	__u32 num_sge;
	__u32 inline_len;
	union rrxe_send_wqe_ex ex;
	__u32 xrc_remote_srqn;	/* XRC send QPs: the remote XRC SRQ (24 bits) */
	union rrxe_send_wqe_wr wr;
	/* struct rrxe_sge sge[num_sge] or __u8 data[inline_len] follows */
};

/* A receive work queue entry (RQ and SRQ): this header, then num_sge SGEs. */
struct rrxe_recv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
	/* struct rrxe_sge sge[num_sge] follows */
};

/* A completion queue entry: exactly struct ib_uverbs_wc (48 bytes), in a 64-byte slot. */
#define RRXE_CQE_SLOT_SIZE 64

/* Driver-private response of alloc_ucontext (GET_CONTEXT). */
struct rrxe_alloc_ucontext_resp {
	__u32 abi_version;	/* RRXE_UVERBS_ABI_VERSION */
	__u32 reserved;
};

/* create_cq */
struct rrxe_create_cq_resp {
	struct rrxe_queue_info cq;
};

/* resize_cq: the queue is replaced; unmap the old one after the call. */
struct rrxe_resize_cq_resp {
	struct rrxe_queue_info cq;
};

/* create_qp */
struct rrxe_create_qp_resp {
	struct rrxe_queue_info sq;
	struct rrxe_queue_info rq;	/* all zero when the QP uses an SRQ */
	__u32 max_inline;
	__u32 reserved;
};

/* create_srq */
struct rrxe_create_srq_resp {
	struct rrxe_queue_info rq;
	__u32 srq_num;
	__u32 reserved;
};

/*
 * modify_srq: with IB_SRQ_MAX_WR (a resize), queue_info_addr is the address of a
 * struct rrxe_queue_info the kernel fills with the SRQ's new queue (modify_srq has no
 * driver response). The kernel reads every WQE posted in the old queue before the call
 * returns; the new queue starts empty (producer = consumer = 0). Post nothing during
 * the call, map the new queue and unmap the old one after it. 0: no resize (EOPNOTSUPP
 * for a user SRQ).
 */
struct rrxe_modify_srq_cmd {
	__aligned_u64 queue_info_addr;
};

/* create_ah: the handle a UD send WQE names its address vector by. */
struct rrxe_create_ah_resp {
	__u32 ah_num;
	__u32 reserved;
};

#endif /* RRXE_ABI_H */
