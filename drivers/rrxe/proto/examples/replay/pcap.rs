// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A reader of classic pcap files (what `tcpdump -w` writes): the IP datagrams of their
//! frames, with their times. Ethernet (with or without one VLAN tag), Linux cooked (v1 and
//! v2) and raw IP link types; other link types and pcapng are refused with a message.

/// One captured IP datagram.
pub struct Frame {
    /// Its place in the file (1 for the first record), as Wireshark numbers frames.
    pub no: usize,
    /// Capture time, in microseconds since the epoch.
    pub t_us: u64,
    /// The IP datagram (from the IP header on), as captured (possibly cut short).
    pub ip: Vec<u8>,
}

const LINKTYPE_ETHERNET: u32 = 1;
const LINKTYPE_RAW: u32 = 101;
const LINKTYPE_LINUX_SLL: u32 = 113;
const LINKTYPE_IPV4: u32 = 228;
const LINKTYPE_IPV6: u32 = 229;
const LINKTYPE_LINUX_SLL2: u32 = 276;

fn u16_be(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_be_bytes(
        b.get(off..off.checked_add(2)?)?.try_into().ok()?,
    ))
}

/// The IP datagram inside a frame of `linktype` (`None` if it carries something else).
fn ip_of(linktype: u32, f: &[u8]) -> Option<&[u8]> {
    let (ethertype, off) = match linktype {
        LINKTYPE_ETHERNET => {
            let et = u16_be(f, 12)?;
            if et == 0x8100 {
                (u16_be(f, 16)?, 18)
            } else {
                (et, 14)
            }
        }
        LINKTYPE_LINUX_SLL => (u16_be(f, 14)?, 16),
        LINKTYPE_LINUX_SLL2 => (u16_be(f, 0)?, 20),
        LINKTYPE_RAW | LINKTYPE_IPV4 | LINKTYPE_IPV6 => {
            return f.first().filter(|b| matches!(*b >> 4, 4 | 6)).map(|_| f)
        }
        _ => return None,
    };
    matches!(ethertype, 0x0800 | 0x86DD)
        .then(|| f.get(off..))
        .flatten()
}

/// The IP datagrams of a classic pcap file's frames, in file order.
pub fn read(b: &[u8]) -> Result<Vec<Frame>, String> {
    let magic = b
        .get(..4)
        .ok_or("not a pcap file: shorter than its magic number")?;
    let (le, nanos) = match magic {
        [0xD4, 0xC3, 0xB2, 0xA1] => (true, false),
        [0xA1, 0xB2, 0xC3, 0xD4] => (false, false),
        [0x4D, 0x3C, 0xB2, 0xA1] => (true, true),
        [0xA1, 0xB2, 0x3C, 0x4D] => (false, true),
        [0x0A, 0x0D, 0x0D, 0x0A] => {
            return Err("a pcapng file: write classic pcap (tcpdump -w, or \
                        tshark -F pcap / editcap -F pcap)"
                .into())
        }
        _ => return Err("not a pcap file (unknown magic number)".into()),
    };
    let u32_at = |off: usize| -> Option<u32> {
        let s: [u8; 4] = b.get(off..off.checked_add(4)?)?.try_into().ok()?;
        Some(if le {
            u32::from_le_bytes(s)
        } else {
            u32::from_be_bytes(s)
        })
    };
    let linktype = u32_at(20).ok_or("pcap header cut short")? & 0x0FFF_FFFF;
    if !matches!(
        linktype,
        LINKTYPE_ETHERNET
            | LINKTYPE_RAW
            | LINKTYPE_LINUX_SLL
            | LINKTYPE_LINUX_SLL2
            | LINKTYPE_IPV4
            | LINKTYPE_IPV6
    ) {
        return Err(format!(
            "link type {linktype} is not Ethernet, Linux cooked or raw IP"
        ));
    }
    let mut frames = Vec::new();
    let mut off = 24usize;
    while off < b.len() {
        let (Some(sec), Some(frac), Some(incl)) = (u32_at(off), u32_at(off + 4), u32_at(off + 8))
        else {
            return Err(format!("record {} cut short", frames.len() + 1));
        };
        let start = off + 16;
        let end = start
            .checked_add(incl as usize)
            .filter(|&e| e <= b.len())
            .ok_or_else(|| format!("record {} cut short", frames.len() + 1))?;
        let usec = if nanos { frac / 1000 } else { frac };
        let no = frames.len() + 1;
        if let Some(ip) = ip_of(linktype, &b[start..end]) {
            frames.push(Frame {
                no,
                t_us: u64::from(sec) * 1_000_000 + u64::from(usec),
                ip: ip.to_vec(),
            });
        } else {
            // Keep the numbering: a frame that is not IP takes its number too.
            frames.push(Frame {
                no,
                t_us: 0,
                ip: Vec::new(),
            });
        }
        off = end;
    }
    frames.retain(|f| !f.ip.is_empty());
    Ok(frames)
}
