// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The Base Transport Header, first in every IB packet.

use super::super::opcode::Opcode;
use super::super::psn::Psn;
use super::cursor::{Rd, Wr};
use super::{BuildError, ParseError, DEFAULT_PKEY};

/// Base Transport Header (12 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bth {
    /// Opcode.
    pub opcode: Opcode,
    /// Solicited event.
    pub se: bool,
    /// Migration state.
    pub mig: bool,
    /// Pad count (0..=3).
    pub pad: u8,
    /// Transport header version (must be 0).
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward ECN (RoCE: reserved, masked out of the ICRC).
    pub fecn: bool,
    /// Backward ECN (RoCE: reserved, masked out of the ICRC).
    pub becn: bool,
    /// Destination QP number (24 bits).
    pub dest_qp: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// Packet sequence number.
    pub psn: Psn,
}

impl Bth {
    /// A BTH with the given opcode, destination QP and PSN; other fields
    /// default (pkey 0xffff).
    pub const fn new(opcode: Opcode, dest_qp: u32, psn: Psn) -> Bth {
        Bth {
            opcode,
            se: false,
            mig: false,
            pad: 0,
            tver: 0,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp: dest_qp & 0x00ff_ffff,
            ack_req: false,
            psn,
        }
    }

    /// Parses the 12-byte BTH at the start of `b` (no opcode validation).
    pub fn parse(b: &[u8]) -> Result<Bth, ParseError> {
        let mut r = Rd::new(b);
        let opcode = Opcode(r.u8()?);
        let f = r.u8()?;
        let pkey = r.u16()?;
        let q = r.u32()?;
        let a = r.u32()?;
        Ok(Bth {
            opcode,
            se: f & 0x80 != 0,
            mig: f & 0x40 != 0,
            pad: (f >> 4) & 3,
            tver: f & 0x0f,
            pkey,
            fecn: q & 0x8000_0000 != 0,
            becn: q & 0x4000_0000 != 0,
            dest_qp: q & 0x00ff_ffff,
            ack_req: a & 0x8000_0000 != 0,
            psn: Psn::new(a),
        })
    }

    pub(super) fn write(&self, w: &mut Wr<'_>) -> Result<(), BuildError> {
        w.u8(self.opcode.0)?;
        w.u8((u8::from(self.se) << 7)
            | (u8::from(self.mig) << 6)
            | ((self.pad & 3) << 4)
            | (self.tver & 0x0f))?;
        w.u16(self.pkey)?;
        w.u32(
            (u32::from(self.fecn) << 31)
                | (u32::from(self.becn) << 30)
                | (self.dest_qp & 0x00ff_ffff),
        )?;
        w.u32((u32::from(self.ack_req) << 31) | self.psn.get())
    }

    /// Writes the BTH into the first 12 bytes of `out`.
    pub fn write_to(&self, out: &mut [u8]) -> Result<(), BuildError> {
        self.write(&mut Wr::new(out))
    }
}
