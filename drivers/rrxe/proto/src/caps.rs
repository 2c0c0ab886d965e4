// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Sizing of the queues a consumer asks for: the range checks and arithmetic on the sizes
//! of `create_qp`, `create_srq` and `create_cq`, which come from an unprivileged process
//! (udata / ioctl attributes) and are validated here before any of them is used.
//!
//! Everything is range-checked first and computed with checked arithmetic afterwards, so
//! no input can overflow (in the kernel, an overflow is a BUG).

/// The largest sizes a device offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceCaps {
    /// Work requests per queue.
    pub max_wr: u32,
    /// SGEs per work request.
    pub max_sge: u32,
    /// Inline bytes per send work request.
    pub max_inline: u32,
    /// Entries per completion queue.
    pub max_cqe: u32,
}

/// The byte layout of queue entries shared with a process (see `rrxe-abi.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WqeFormat {
    /// Send WQE header bytes.
    pub send_hdr: u32,
    /// Receive WQE header bytes.
    pub recv_hdr: u32,
    /// Bytes per SGE.
    pub sge: u32,
    /// Smallest send slot.
    pub min_send_slot: u32,
    /// Smallest receive slot.
    pub min_recv_slot: u32,
    /// Largest slot (one page of the shared mapping).
    pub max_slot: u32,
}

/// Why a size was refused (the caller answers EINVAL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapsError {
    /// A size is above what the device offers (or zero where one is needed).
    OutOfRange,
}

/// A queue of `1 << log2_slots` slots of `slot_size` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueShape {
    /// log2 of the number of slots.
    pub log2_slots: u32,
    /// Bytes per slot (a power of two).
    pub slot_size: u32,
}

impl QueueShape {
    /// Number of slots.
    pub fn slots(self) -> u32 {
        1u32 << self.log2_slots
    }
}

/// What a user QP gets for the capabilities it asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserQpLayout {
    /// The send queue.
    pub sq: QueueShape,
    /// The receive queue.
    pub rq: QueueShape,
}

/// A QP's requested capabilities (`ib_qp_cap`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpCaps {
    /// Send work requests.
    pub max_send_wr: u32,
    /// Receive work requests.
    pub max_recv_wr: u32,
    /// SGEs per send work request.
    pub max_send_sge: u32,
    /// SGEs per receive work request.
    pub max_recv_sge: u32,
    /// Inline bytes per send work request.
    pub max_inline: u32,
}

/// The power of two at least `n` (and at least 1), or `None` past 2^31.
fn pow2_at_least(n: u32) -> Option<u32> {
    n.max(1).checked_next_power_of_two()
}

/// Checks a QP's requested capabilities against the device's.
pub fn check_qp_caps(c: &QpCaps, dev: &DeviceCaps) -> Result<(), CapsError> {
    if c.max_send_wr > dev.max_wr
        || c.max_recv_wr > dev.max_wr
        || c.max_send_sge > dev.max_sge
        || c.max_recv_sge > dev.max_sge
        || c.max_inline > dev.max_inline
    {
        return Err(CapsError::OutOfRange);
    }
    Ok(())
}

/// The shared queues of a user QP: as many slots as asked for, rounded up to a power of
/// two, each big enough for the header plus the SGEs or the inline data asked for.
pub fn user_qp_layout(
    c: &QpCaps,
    dev: &DeviceCaps,
    f: &WqeFormat,
) -> Result<UserQpLayout, CapsError> {
    check_qp_caps(c, dev)?;
    let sq = shape(
        c.max_send_wr,
        f.send_hdr,
        c.max_send_sge
            .checked_mul(f.sge)
            .ok_or(CapsError::OutOfRange)?
            .max(c.max_inline),
        f.min_send_slot,
        f.max_slot,
    )?;
    let rq = shape(
        c.max_recv_wr,
        f.recv_hdr,
        c.max_recv_sge
            .max(1)
            .checked_mul(f.sge)
            .ok_or(CapsError::OutOfRange)?,
        f.min_recv_slot,
        f.max_slot,
    )?;
    Ok(UserQpLayout { sq, rq })
}

/// The shared receive queue of a user SRQ of `max_wr` WQEs of `max_sge` SGEs.
pub fn user_srq_shape(
    max_wr: u32,
    max_sge: u32,
    dev: &DeviceCaps,
    f: &WqeFormat,
) -> Result<QueueShape, CapsError> {
    check_srq_caps(max_wr, max_sge, dev)?;
    shape(
        max_wr,
        f.recv_hdr,
        max_sge
            .max(1)
            .checked_mul(f.sge)
            .ok_or(CapsError::OutOfRange)?,
        f.min_recv_slot,
        f.max_slot,
    )
}

/// Checks an SRQ's size; returns its number of slots (a power of two).
pub fn check_srq_caps(max_wr: u32, max_sge: u32, dev: &DeviceCaps) -> Result<u32, CapsError> {
    // An SRQ of no WQEs is refused (rdma_rxe's rxe_srq_chk_init does too).
    if max_wr == 0 || max_wr > dev.max_wr || max_sge > dev.max_sge {
        return Err(CapsError::OutOfRange);
    }
    pow2_at_least(max_wr).ok_or(CapsError::OutOfRange)
}

/// The number of slots of a CQ asked for `cqe` entries (a power of two).
pub fn cq_slots(cqe: u32, dev: &DeviceCaps) -> Result<u32, CapsError> {
    if cqe == 0 || cqe > dev.max_cqe {
        return Err(CapsError::OutOfRange);
    }
    pow2_at_least(cqe).ok_or(CapsError::OutOfRange)
}

fn shape(
    wrs: u32,
    hdr: u32,
    body: u32,
    min_slot: u32,
    max_slot: u32,
) -> Result<QueueShape, CapsError> {
    let slots = pow2_at_least(wrs).ok_or(CapsError::OutOfRange)?;
    let need = hdr
        .checked_add(body)
        .ok_or(CapsError::OutOfRange)?
        .max(min_slot);
    let slot_size = pow2_at_least(need).ok_or(CapsError::OutOfRange)?;
    if slot_size > max_slot {
        return Err(CapsError::OutOfRange);
    }
    Ok(QueueShape {
        log2_slots: slots.trailing_zeros(),
        slot_size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEV: DeviceCaps = DeviceCaps {
        max_wr: 4096,
        max_sge: 32,
        max_inline: 512,
        max_cqe: 65536,
    };
    const F: WqeFormat = WqeFormat {
        send_hdr: 72,
        recv_hdr: 16,
        sge: 16,
        min_send_slot: 128,
        min_recv_slot: 32,
        max_slot: 4096,
    };

    #[test]
    fn edges_are_refused_not_overflowed() {
        for v in [DEV.max_wr + 1, 1 << 31, (1 << 31) + 1, u32::MAX] {
            let c = QpCaps {
                max_send_wr: v,
                ..Default::default()
            };
            assert_eq!(user_qp_layout(&c, &DEV, &F), Err(CapsError::OutOfRange));
            assert_eq!(user_srq_shape(v, 1, &DEV, &F), Err(CapsError::OutOfRange));
            assert_eq!(
                cq_slots(v.max(DEV.max_cqe + 1), &DEV),
                Err(CapsError::OutOfRange)
            );
        }
        assert_eq!(cq_slots(0, &DEV), Err(CapsError::OutOfRange));
        assert_eq!(check_srq_caps(0, 1, &DEV), Err(CapsError::OutOfRange));
        let c = QpCaps {
            max_inline: 513,
            ..Default::default()
        };
        assert_eq!(check_qp_caps(&c, &DEV), Err(CapsError::OutOfRange));
    }

    #[test]
    fn layouts() {
        let c = QpCaps {
            max_send_wr: 100,
            max_recv_wr: 0,
            max_send_sge: 32,
            max_recv_sge: 2,
            max_inline: 64,
        };
        let l = user_qp_layout(&c, &DEV, &F).unwrap();
        assert_eq!((l.sq.slots(), l.sq.slot_size), (128, 1024));
        assert_eq!((l.rq.slots(), l.rq.slot_size), (1, 64));
        assert_eq!(cq_slots(1000, &DEV), Ok(1024));
        assert_eq!(
            user_srq_shape(4096, 32, &DEV, &F).map(|s| (s.slots(), s.slot_size)),
            Ok((4096, 1024))
        );
    }
}
