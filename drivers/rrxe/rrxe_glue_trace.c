// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of rrxe.ko: the trace events of rrxe_trace.h, created here, and the functions the
 * driver emits them through. See rrxe_glue.h.
 *
 * What an event costs while it is off: the driver's one call of the function below (out
 * of line, from Rust) and, inside, the event's static-key test (trace_*() starts with it:
 * a patched no-op jump with CONFIG_JUMP_LABEL, one load and compare without); nothing is
 * read of the device or copied. A packet costs one such call (two key tests for an RNR NAK
 * or NAK); the other events are tested only where what they report happened.
 */
#include "rrxe_glue_int.h"

#define CREATE_TRACE_POINTS
#include "rrxe_trace.h"

TRACE_DEFINE_ENUM(RRXE_CWND_GROW);
TRACE_DEFINE_ENUM(RRXE_CWND_LOSS);
TRACE_DEFINE_ENUM(RRXE_CWND_TIMEOUT);
TRACE_DEFINE_ENUM(RRXE_CWND_UNDO);
TRACE_DEFINE_ENUM(RRXE_CWND_RESET);
TRACE_DEFINE_ENUM(RRXE_FAULT_DROP);
TRACE_DEFINE_ENUM(RRXE_FAULT_DUP);
TRACE_DEFINE_ENUM(RRXE_FAULT_DELAY);
TRACE_DEFINE_ENUM(RRXE_FAULT_REORDER);
TRACE_DEFINE_ENUM(RRXE_FAULT_ICRC);
TRACE_DEFINE_ENUM(RRXE_FAULT_NAK);

void rrxe_glue_trace_pkt(const struct ib_device *ib, const struct rrxe_trace_pkt *p)
{
	if (p->tx) {
		trace_rrxe_pkt_tx(ib, p);
		if (p->nak)
			trace_rrxe_nak_tx(ib, p);
	} else {
		trace_rrxe_pkt_rx(ib, p);
		if (p->nak)
			trace_rrxe_nak_rx(ib, p);
	}
}

void rrxe_glue_trace_retransmit(const struct ib_device *ib, u32 qpn, u32 timeouts, u32 una,
				u32 next, u32 resent, u64 rto_us)
{
	trace_rrxe_retransmit(ib, qpn, timeouts, una, next, resent, rto_us);
}

void rrxe_glue_trace_cwnd(const struct ib_device *ib, u32 qpn, u32 old_cwnd, u32 new_cwnd,
			  u8 reason)
{
	trace_rrxe_cwnd(ib, qpn, old_cwnd, new_cwnd, reason);
}

void rrxe_glue_trace_qp_state(const struct ib_device *ib, u32 qpn, u32 old_state,
			      u32 new_state)
{
	trace_rrxe_qp_state(ib, qpn, old_state, new_state);
}

void rrxe_glue_trace_comp_err(const struct ib_device *ib, u32 qpn, u64 wr_id, u32 status,
			      u32 opcode, bool recv)
{
	trace_rrxe_comp_err(ib, qpn, wr_id, status, opcode, recv);
}

void rrxe_glue_trace_fault(const struct ib_device *ib, u32 rule, u32 qpn, bool rx, u8 opcode,
			   u32 psn, u8 action, u32 arg)
{
	trace_rrxe_fault(ib, rule, qpn, rx, opcode, psn, action, arg);
}
