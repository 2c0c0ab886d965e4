// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! CRC-32 (IEEE 802.3 / Ethernet, reflected polynomial `0xEDB88320`).
//!
//! The [`Crc32`] trait exposes the *raw* register update exactly like Linux
//! `crc32_le(crc, p, len)`: no initial or final inversion is applied by the
//! trait. Callers (the ICRC code) seed with `!0` and complement at the end.
//! The kernel driver can implement [`Crc32`] over the kernel's `crc32_le`;
//! [`SoftCrc32`] is a portable slicing-by-8 software implementation.

/// Reflected CRC-32 polynomial (IEEE 802.3).
pub const CRC32_POLY_REFLECTED: u32 = 0xEDB8_8320;

/// A raw CRC-32 (reflected IEEE) engine.
pub trait Crc32 {
    /// Feeds `data` into the CRC register `crc` and returns the new register
    /// value. No pre- or post-inversion (same contract as Linux `crc32_le`).
    fn update(&self, crc: u32, data: &[u8]) -> u32;
}

/// Software CRC-32 with compile-time tables (slicing-by-8).
#[derive(Clone, Copy, Debug, Default)]
pub struct SoftCrc32;

const fn make_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ CRC32_POLY_REFLECTED
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

static TABLES: [[u32; 256]; 8] = make_tables();

/// The slicing-by-8 tables ([`crc32_update`]'s): entry `i` of table `s` is the register
/// change of byte `i` followed by `s` zero bytes. The kernel driver's copy that computes
/// the CRC of the bytes it copies (C, in its glue) uses these, so the tables exist once.
pub fn slice8_tables() -> &'static [[u32; 256]; 8] {
    &TABLES
}

#[inline(always)]
fn tab(s: usize, idx: u32) -> u32 {
    // `idx` is always masked to 0..=255 by callers and `s` < 8, so `get`
    // never fails; the fallback keeps the code panic-free regardless.
    match TABLES.get(s) {
        Some(t) => match t.get((idx & 0xff) as usize) {
            Some(v) => *v,
            None => 0,
        },
        None => 0,
    }
}

/// Raw CRC-32 update (same contract as [`Crc32::update`]).
pub fn crc32_update(mut crc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(<[u8; 8]>::try_from(c).unwrap_or([0; 8]));
        let lo = (w as u32) ^ crc;
        let hi = (w >> 32) as u32;
        crc = tab(7, lo)
            ^ tab(6, lo >> 8)
            ^ tab(5, lo >> 16)
            ^ tab(4, lo >> 24)
            ^ tab(3, hi)
            ^ tab(2, hi >> 8)
            ^ tab(1, hi >> 16)
            ^ tab(0, hi >> 24);
    }
    for &b in chunks.remainder() {
        crc = (crc >> 8) ^ tab(0, (crc ^ u32::from(b)) & 0xff);
    }
    crc
}

/// Standard (zlib/Ethernet) CRC-32 of `data`: seed `!0`, final complement.
pub fn crc32(data: &[u8]) -> u32 {
    !crc32_update(!0, data)
}

impl Crc32 for SoftCrc32 {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        crc32_update(crc, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bitwise(mut crc: u32, data: &[u8]) -> u32 {
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        crc
    }

    #[test]
    fn check_value() {
        // The classic CRC-32 check value.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn matches_bitwise_all_lengths() {
        let mut data = [0u8; 300];
        for (i, b) in data.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(31).wrapping_add(7);
        }
        for len in 0..data.len() {
            for start in 0..3 {
                if start > len {
                    continue;
                }
                let d = &data[start..len];
                assert_eq!(crc32_update(0x1234_5678, d), bitwise(0x1234_5678, d));
            }
        }
    }

    #[test]
    fn rxe_seed_constant() {
        // rxe seeds its ICRC with 0xdebb20e3: the raw CRC register after
        // 8 bytes of 0xFF (the masked LRH) starting from !0.
        assert_eq!(crc32_update(!0, &[0xff; 8]), 0xDEBB_20E3);
    }
}
