// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Big-endian field cursors over a header buffer: every read or write is range-checked
//! and fails as `Truncated` / `BufferTooSmall` instead of panicking.

use super::{BuildError, ParseError};

/// Reads fields from the start of a buffer.
pub(super) struct Rd<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Rd<'a> {
    pub(super) fn new(b: &'a [u8]) -> Self {
        Rd { b, pos: 0 }
    }
    pub(super) fn take<const N: usize>(&mut self) -> Result<[u8; N], ParseError> {
        let end = self.pos.checked_add(N).ok_or(ParseError::Truncated)?;
        let s = self.b.get(self.pos..end).ok_or(ParseError::Truncated)?;
        self.pos = end;
        <[u8; N]>::try_from(s).map_err(|_| ParseError::Truncated)
    }
    pub(super) fn u8(&mut self) -> Result<u8, ParseError> {
        Ok(u8::from_be_bytes(self.take::<1>()?))
    }
    pub(super) fn u16(&mut self) -> Result<u16, ParseError> {
        Ok(u16::from_be_bytes(self.take()?))
    }
    pub(super) fn u32(&mut self) -> Result<u32, ParseError> {
        Ok(u32::from_be_bytes(self.take()?))
    }
    pub(super) fn u64(&mut self) -> Result<u64, ParseError> {
        Ok(u64::from_be_bytes(self.take()?))
    }
}

/// Writes fields from the start of a buffer.
pub(super) struct Wr<'a> {
    pub(super) b: &'a mut [u8],
    /// Bytes written so far.
    pub(super) pos: usize,
}

impl<'a> Wr<'a> {
    pub(super) fn new(b: &'a mut [u8]) -> Self {
        Wr { b, pos: 0 }
    }
    pub(super) fn put(&mut self, v: &[u8]) -> Result<(), BuildError> {
        let end = self
            .pos
            .checked_add(v.len())
            .ok_or(BuildError::BufferTooSmall)?;
        let d = self
            .b
            .get_mut(self.pos..end)
            .ok_or(BuildError::BufferTooSmall)?;
        if !super::super::copy_exact(d, v) {
            return Err(BuildError::BufferTooSmall);
        }
        self.pos = end;
        Ok(())
    }
    pub(super) fn u8(&mut self, v: u8) -> Result<(), BuildError> {
        self.put(&[v])
    }
    pub(super) fn u16(&mut self, v: u16) -> Result<(), BuildError> {
        self.put(&v.to_be_bytes())
    }
    pub(super) fn u32(&mut self, v: u32) -> Result<(), BuildError> {
        self.put(&v.to_be_bytes())
    }
    pub(super) fn u64(&mut self, v: u64) -> Result<(), BuildError> {
        self.put(&v.to_be_bytes())
    }
}
