/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rrxe's trace events, the system "rrxe" in tracefs (/sys/kernel/tracing/events/rrxe/).
 * Defined here, created in rrxe_glue_trace.c (CREATE_TRACE_POINTS), fed by the driver
 * through the rrxe_glue_trace_* functions (rrxe_glue.h; docs/tracing.md lists the fields).
 *
 * Every event names the device (the ib_device's name, copied only when the event is on)
 * and the QP of this device it is about. PSNs are printed in decimal, QP numbers in hex
 * as `rdma resource` and ibv_rc_pingpong show them.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rrxe

#if !defined(RRXE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define RRXE_TRACE_H

#include <linux/tracepoint.h>
#include <rdma/ib_verbs.h>
#include "rrxe_glue.h"

/* The BTH opcodes a trace is mostly made of (IBTA table 35); others print as hex. */
#define rrxe_show_opcode(op)						\
	__print_symbolic(op,						\
		{ 0x00, "RC_SEND_FIRST" }, { 0x01, "RC_SEND_MIDDLE" },	\
		{ 0x02, "RC_SEND_LAST" }, { 0x03, "RC_SEND_LAST_IMM" },	\
		{ 0x04, "RC_SEND_ONLY" }, { 0x05, "RC_SEND_ONLY_IMM" },	\
		{ 0x06, "RC_WRITE_FIRST" }, { 0x07, "RC_WRITE_MIDDLE" },	\
		{ 0x08, "RC_WRITE_LAST" }, { 0x09, "RC_WRITE_LAST_IMM" },	\
		{ 0x0a, "RC_WRITE_ONLY" }, { 0x0b, "RC_WRITE_ONLY_IMM" },	\
		{ 0x0c, "RC_READ_REQUEST" },					\
		{ 0x0d, "RC_READ_RESPONSE_FIRST" },				\
		{ 0x0e, "RC_READ_RESPONSE_MIDDLE" },				\
		{ 0x0f, "RC_READ_RESPONSE_LAST" },				\
		{ 0x10, "RC_READ_RESPONSE_ONLY" },				\
		{ 0x11, "RC_ACKNOWLEDGE" },					\
		{ 0x12, "RC_ATOMIC_ACKNOWLEDGE" },				\
		{ 0x13, "RC_COMPARE_SWAP" }, { 0x14, "RC_FETCH_ADD" },	\
		{ 0x64, "UD_SEND_ONLY" }, { 0x65, "UD_SEND_ONLY_IMM" },	\
		{ 0x81, "CNP" })

/* An AETH syndrome (IBTA 9.7.5.2.7): ACK, RNR NAK or NAK and its code. */
#define rrxe_show_nak(s)						\
	(((s) >> 5) == 1 ? "rnr" :					\
	 ((s) >> 5) != 3 ? "ack" :					\
	 ((s) & 0x1f) == 0 ? "psn_seq" :				\
	 ((s) & 0x1f) == 1 ? "inv_req" :				\
	 ((s) & 0x1f) == 2 ? "rem_access" :				\
	 ((s) & 0x1f) == 3 ? "rem_op" :					\
	 ((s) & 0x1f) == 4 ? "inv_rd_req" : "reserved")

#define rrxe_show_qp_state(s)						\
	__print_symbolic(s, { IB_QPS_RESET, "RESET" }, { IB_QPS_INIT, "INIT" },	\
			 { IB_QPS_RTR, "RTR" }, { IB_QPS_RTS, "RTS" },	\
			 { IB_QPS_SQD, "SQD" }, { IB_QPS_SQE, "SQE" },	\
			 { IB_QPS_ERR, "ERR" })

#define rrxe_show_wc_status(s)						\
	__print_symbolic(s, { IB_WC_SUCCESS, "SUCCESS" },		\
		{ IB_WC_LOC_LEN_ERR, "LOC_LEN_ERR" },			\
		{ IB_WC_LOC_QP_OP_ERR, "LOC_QP_OP_ERR" },		\
		{ IB_WC_LOC_PROT_ERR, "LOC_PROT_ERR" },			\
		{ IB_WC_WR_FLUSH_ERR, "WR_FLUSH_ERR" },			\
		{ IB_WC_MW_BIND_ERR, "MW_BIND_ERR" },			\
		{ IB_WC_BAD_RESP_ERR, "BAD_RESP_ERR" },			\
		{ IB_WC_LOC_ACCESS_ERR, "LOC_ACCESS_ERR" },		\
		{ IB_WC_REM_INV_REQ_ERR, "REM_INV_REQ_ERR" },		\
		{ IB_WC_REM_ACCESS_ERR, "REM_ACCESS_ERR" },		\
		{ IB_WC_REM_OP_ERR, "REM_OP_ERR" },			\
		{ IB_WC_RETRY_EXC_ERR, "RETRY_EXC_ERR" },		\
		{ IB_WC_RNR_RETRY_EXC_ERR, "RNR_RETRY_EXC_ERR" },	\
		{ IB_WC_REM_ABORT_ERR, "REM_ABORT_ERR" },		\
		{ IB_WC_GENERAL_ERR, "GENERAL_ERR" })

#define rrxe_show_cwnd_reason(r)					\
	__print_symbolic(r, { RRXE_CWND_GROW, "grow" }, { RRXE_CWND_LOSS, "loss" },	\
			 { RRXE_CWND_TIMEOUT, "timeout" }, { RRXE_CWND_UNDO, "undo" },	\
			 { RRXE_CWND_RESET, "reset" })

#define rrxe_show_fault_action(a)					\
	__print_symbolic(a, { RRXE_FAULT_DROP, "drop" }, { RRXE_FAULT_DUP, "dup" },	\
			 { RRXE_FAULT_DELAY, "delay" }, { RRXE_FAULT_REORDER, "reorder" },	\
			 { RRXE_FAULT_ICRC, "icrc" }, { RRXE_FAULT_NAK, "nak" })

/* The enum values above, resolved for perf and trace-cmd, which read the format files. */
TRACE_DEFINE_ENUM(IB_QPS_RESET);
TRACE_DEFINE_ENUM(IB_QPS_INIT);
TRACE_DEFINE_ENUM(IB_QPS_RTR);
TRACE_DEFINE_ENUM(IB_QPS_RTS);
TRACE_DEFINE_ENUM(IB_QPS_SQD);
TRACE_DEFINE_ENUM(IB_QPS_SQE);
TRACE_DEFINE_ENUM(IB_QPS_ERR);
TRACE_DEFINE_ENUM(IB_WC_SUCCESS);
TRACE_DEFINE_ENUM(IB_WC_LOC_LEN_ERR);
TRACE_DEFINE_ENUM(IB_WC_LOC_QP_OP_ERR);
TRACE_DEFINE_ENUM(IB_WC_LOC_PROT_ERR);
TRACE_DEFINE_ENUM(IB_WC_WR_FLUSH_ERR);
TRACE_DEFINE_ENUM(IB_WC_MW_BIND_ERR);
TRACE_DEFINE_ENUM(IB_WC_BAD_RESP_ERR);
TRACE_DEFINE_ENUM(IB_WC_LOC_ACCESS_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_INV_REQ_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_ACCESS_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_OP_ERR);
TRACE_DEFINE_ENUM(IB_WC_RETRY_EXC_ERR);
TRACE_DEFINE_ENUM(IB_WC_RNR_RETRY_EXC_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_ABORT_ERR);
TRACE_DEFINE_ENUM(IB_WC_GENERAL_ERR);

/*
 * Every event records the device's name from ib_device::name, copied with strscpy (at most
 * IB_DEVICE_NAME_MAX bytes, inside the device): a rename rewrites that array in place,
 * while dev_name() points at the kobject's name, which a rename frees at once.
 */

/* A packet a QP sent or received: its BTH, payload length and, if any, AETH syndrome. */
DECLARE_EVENT_CLASS(rrxe_pkt_class,
	TP_PROTO(const struct ib_device *ib, const struct rrxe_trace_pkt *p),
	TP_ARGS(ib, p),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(u32, dqpn)
		__field(u32, psn)
		__field(u32, len)
		__field(u8, opcode)
		__field(u8, ackreq)
		__field(u8, has_aeth)
		__field(u8, syndrome)
	),
	TP_fast_assign(
		strscpy(__entry->dev, ib->name, IB_DEVICE_NAME_MAX);
		__entry->qpn = p->qpn;
		__entry->dqpn = p->dqpn;
		__entry->psn = p->psn;
		__entry->len = p->len;
		__entry->opcode = p->opcode;
		__entry->ackreq = p->ackreq;
		__entry->has_aeth = p->has_aeth;
		__entry->syndrome = p->syndrome;
	),
	TP_printk("dev=%s qpn=0x%x dqpn=0x%x opcode=%s psn=%u len=%u ackreq=%u aeth=%s syndrome=0x%02x",
		  __entry->dev, __entry->qpn, __entry->dqpn,
		  rrxe_show_opcode(__entry->opcode), __entry->psn, __entry->len,
		  __entry->ackreq,
		  __entry->has_aeth ? rrxe_show_nak(__entry->syndrome) : "none",
		  __entry->syndrome)
);

DEFINE_EVENT(rrxe_pkt_class, rrxe_pkt_tx,
	TP_PROTO(const struct ib_device *ib, const struct rrxe_trace_pkt *p),
	TP_ARGS(ib, p));

DEFINE_EVENT(rrxe_pkt_class, rrxe_pkt_rx,
	TP_PROTO(const struct ib_device *ib, const struct rrxe_trace_pkt *p),
	TP_ARGS(ib, p));

/* An RNR NAK or NAK a QP sent or received (its AETH syndrome, the PSN it names). */
DECLARE_EVENT_CLASS(rrxe_nak_class,
	TP_PROTO(const struct ib_device *ib, const struct rrxe_trace_pkt *p),
	TP_ARGS(ib, p),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(u32, psn)
		__field(u8, syndrome)
	),
	TP_fast_assign(
		strscpy(__entry->dev, ib->name, IB_DEVICE_NAME_MAX);
		__entry->qpn = p->qpn;
		__entry->psn = p->psn;
		__entry->syndrome = p->syndrome;
	),
	TP_printk("dev=%s qpn=0x%x psn=%u syndrome=0x%02x nak=%s",
		  __entry->dev, __entry->qpn, __entry->psn, __entry->syndrome,
		  rrxe_show_nak(__entry->syndrome))
);

DEFINE_EVENT(rrxe_nak_class, rrxe_nak_tx,
	TP_PROTO(const struct ib_device *ib, const struct rrxe_trace_pkt *p),
	TP_ARGS(ib, p));

DEFINE_EVENT(rrxe_nak_class, rrxe_nak_rx,
	TP_PROTO(const struct ib_device *ib, const struct rrxe_trace_pkt *p),
	TP_ARGS(ib, p));

/*
 * Retransmit timeouts handled in one run of a QP: the unacknowledged PSNs then
 * [una, next), the request packets the run sent again, the next timeout armed.
 */
TRACE_EVENT(rrxe_retransmit,
	TP_PROTO(const struct ib_device *ib, u32 qpn, u32 timeouts, u32 una, u32 next,
		 u32 resent, u64 rto_us),
	TP_ARGS(ib, qpn, timeouts, una, next, resent, rto_us),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(u32, timeouts)
		__field(u32, una)
		__field(u32, next)
		__field(u32, resent)
		__field(u64, rto_us)
	),
	TP_fast_assign(
		strscpy(__entry->dev, ib->name, IB_DEVICE_NAME_MAX);
		__entry->qpn = qpn;
		__entry->timeouts = timeouts;
		__entry->una = una;
		__entry->next = next;
		__entry->resent = resent;
		__entry->rto_us = rto_us;
	),
	TP_printk("dev=%s qpn=0x%x timeouts=%u una=%u next=%u resent=%u rto_us=%llu",
		  __entry->dev, __entry->qpn, __entry->timeouts, __entry->una,
		  __entry->next, __entry->resent, __entry->rto_us)
);

/* An RC QP's congestion window moved (packets), and why. */
TRACE_EVENT(rrxe_cwnd,
	TP_PROTO(const struct ib_device *ib, u32 qpn, u32 old, u32 new, u8 reason),
	TP_ARGS(ib, qpn, old, new, reason),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(u32, old)
		__field(u32, new)
		__field(u8, reason)
	),
	TP_fast_assign(
		strscpy(__entry->dev, ib->name, IB_DEVICE_NAME_MAX);
		__entry->qpn = qpn;
		__entry->old = old;
		__entry->new = new;
		__entry->reason = reason;
	),
	TP_printk("dev=%s qpn=0x%x old=%u new=%u reason=%s", __entry->dev, __entry->qpn,
		  __entry->old, __entry->new, rrxe_show_cwnd_reason(__entry->reason))
);

/* A QP changed state (enum ib_qp_state), by modify_qp or by an error it met. */
TRACE_EVENT(rrxe_qp_state,
	TP_PROTO(const struct ib_device *ib, u32 qpn, u32 old, u32 new),
	TP_ARGS(ib, qpn, old, new),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(u32, old)
		__field(u32, new)
	),
	TP_fast_assign(
		strscpy(__entry->dev, ib->name, IB_DEVICE_NAME_MAX);
		__entry->qpn = qpn;
		__entry->old = old;
		__entry->new = new;
	),
	TP_printk("dev=%s qpn=0x%x old=%s new=%s", __entry->dev, __entry->qpn,
		  rrxe_show_qp_state(__entry->old), rrxe_show_qp_state(__entry->new))
);

/* A work completion with an error status (enum ib_wc_status; opcode: enum ib_wc_opcode). */
TRACE_EVENT(rrxe_comp_err,
	TP_PROTO(const struct ib_device *ib, u32 qpn, u64 wr_id, u32 status, u32 opcode,
		 bool recv),
	TP_ARGS(ib, qpn, wr_id, status, opcode, recv),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u64, wr_id)
		__field(u32, qpn)
		__field(u32, status)
		__field(u32, opcode)
		__field(u8, recv)
	),
	TP_fast_assign(
		strscpy(__entry->dev, ib->name, IB_DEVICE_NAME_MAX);
		__entry->wr_id = wr_id;
		__entry->qpn = qpn;
		__entry->status = status;
		__entry->opcode = opcode;
		__entry->recv = recv;
	),
	TP_printk("dev=%s qpn=0x%x wr_id=0x%llx queue=%s opcode=%u status=%s",
		  __entry->dev, __entry->qpn, __entry->wr_id,
		  __entry->recv ? "recv" : "send", __entry->opcode,
		  rrxe_show_wc_status(__entry->status))
);

/*
 * A fault injection rule hit a packet (docs/fault-injection.md): the rule's id as the
 * faults file lists it, the packet, and what the rule did (arg: a NAK's syndrome, a
 * delay in µs, a reorder's K).
 */
TRACE_EVENT(rrxe_fault,
	TP_PROTO(const struct ib_device *ib, u32 rule, u32 qpn, bool rx, u8 opcode, u32 psn,
		 u8 action, u32 arg),
	TP_ARGS(ib, rule, qpn, rx, opcode, psn, action, arg),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, rule)
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, arg)
		__field(u8, rx)
		__field(u8, opcode)
		__field(u8, action)
	),
	TP_fast_assign(
		strscpy(__entry->dev, ib->name, IB_DEVICE_NAME_MAX);
		__entry->rule = rule;
		__entry->qpn = qpn;
		__entry->psn = psn;
		__entry->arg = arg;
		__entry->rx = rx;
		__entry->opcode = opcode;
		__entry->action = action;
	),
	TP_printk("dev=%s rule=%u qpn=0x%x dir=%s opcode=%s psn=%u action=%s arg=%u",
		  __entry->dev, __entry->rule, __entry->qpn, __entry->rx ? "rx" : "tx",
		  rrxe_show_opcode(__entry->opcode), __entry->psn,
		  rrxe_show_fault_action(__entry->action), __entry->arg)
);

#endif /* RRXE_TRACE_H */

/* Out of the kernel tree: define_trace.h finds this file through -I$(src)/drivers/rrxe. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE rrxe_trace
#include <trace/define_trace.h>
