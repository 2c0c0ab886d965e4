// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Path MTU and message segmentation.

use super::opcode::Position;

/// IB path MTU (payload bytes per packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mtu {
    /// 256 bytes.
    M256,
    /// 512 bytes.
    M512,
    /// 1024 bytes.
    #[default]
    M1024,
    /// 2048 bytes.
    M2048,
    /// 4096 bytes.
    M4096,
}

impl Mtu {
    /// Payload bytes per packet.
    pub const fn bytes(self) -> u32 {
        match self {
            Mtu::M256 => 256,
            Mtu::M512 => 512,
            Mtu::M1024 => 1024,
            Mtu::M2048 => 2048,
            Mtu::M4096 => 4096,
        }
    }
    /// From the IB enum encoding (1 = 256 ... 5 = 4096).
    pub const fn from_ib(v: u8) -> Option<Mtu> {
        match v {
            1 => Some(Mtu::M256),
            2 => Some(Mtu::M512),
            3 => Some(Mtu::M1024),
            4 => Some(Mtu::M2048),
            5 => Some(Mtu::M4096),
            _ => None,
        }
    }
    /// Largest MTU not above `bytes` (e.g. from a netdev MTU minus headers).
    pub const fn from_bytes_floor(bytes: u32) -> Option<Mtu> {
        if bytes >= 4096 {
            Some(Mtu::M4096)
        } else if bytes >= 2048 {
            Some(Mtu::M2048)
        } else if bytes >= 1024 {
            Some(Mtu::M1024)
        } else if bytes >= 512 {
            Some(Mtu::M512)
        } else if bytes >= 256 {
            Some(Mtu::M256)
        } else {
            None
        }
    }
    /// Number of packets for a message of `len` bytes (at least 1).
    pub const fn packets(self, len: u32) -> u32 {
        let m = self.bytes();
        if len == 0 {
            1
        } else {
            len.div_ceil(m)
        }
    }
}

/// One packet of a segmented message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Byte offset in the message.
    pub offset: u32,
    /// Payload length.
    pub len: u32,
    /// Position in the message.
    pub pos: Position,
    /// Packet index (0-based).
    pub index: u32,
}

/// Iterator over the packets of a message of `total` bytes.
#[derive(Clone, Debug)]
pub struct Segments {
    total: u32,
    mtu: u32,
    next: u32,
    count: u32,
}

impl Segments {
    /// Segments a message of `total` bytes at `mtu`. A zero-length message
    /// yields one `Only` packet of length 0.
    pub const fn new(total: u32, mtu: Mtu) -> Segments {
        Segments {
            total,
            mtu: mtu.bytes(),
            next: 0,
            count: mtu.packets(total),
        }
    }
    /// Number of packets.
    pub const fn count(&self) -> u32 {
        self.count
    }
    /// The segment with index `i`, if any.
    pub const fn get(&self, i: u32) -> Option<Segment> {
        segment(self.total, self.mtu, self.count, i)
    }
}

const fn segment(total: u32, mtu: u32, count: u32, i: u32) -> Option<Segment> {
    if i >= count {
        return None;
    }
    let offset = i.wrapping_mul(mtu);
    let rem = total.saturating_sub(offset);
    let len = if rem < mtu { rem } else { mtu };
    let pos = if count == 1 {
        Position::Only
    } else if i == 0 {
        Position::First
    } else if i + 1 == count {
        Position::Last
    } else {
        Position::Middle
    };
    Some(Segment {
        offset,
        len,
        pos,
        index: i,
    })
}

impl Iterator for Segments {
    type Item = Segment;
    fn next(&mut self) -> Option<Segment> {
        let s = segment(self.total, self.mtu, self.count, self.next)?;
        self.next = self.next.saturating_add(1);
        Some(s)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.count.saturating_sub(self.next) as usize;
        (n, Some(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic() {
        let v: [Segment; 3] = {
            let mut it = Segments::new(2500, Mtu::M1024);
            [it.next().unwrap(), it.next().unwrap(), it.next().unwrap()]
        };
        assert_eq!(
            (v[0].offset, v[0].len, v[0].pos),
            (0, 1024, Position::First)
        );
        assert_eq!(
            (v[1].offset, v[1].len, v[1].pos),
            (1024, 1024, Position::Middle)
        );
        assert_eq!(
            (v[2].offset, v[2].len, v[2].pos),
            (2048, 452, Position::Last)
        );
        assert_eq!(Segments::new(2500, Mtu::M1024).count(), 3);
        let z: Segment = Segments::new(0, Mtu::M256).next().unwrap();
        assert_eq!((z.len, z.pos), (0, Position::Only));
        assert_eq!(Segments::new(4096, Mtu::M4096).count(), 1);
        assert_eq!(Segments::new(u32::MAX, Mtu::M256).count(), 16_777_216);
    }
}
