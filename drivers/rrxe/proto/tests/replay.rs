// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A failure seen between two VMs, replayed on the host: the capture
//! `tests/data/rc-pingpong-drop.pcap` (an RC ping-pong in which one SEND packet of the
//! server was dropped by a fault rule, see `tests/data/README.md`) fed through the replay
//! example's code (`examples/replay/`) to fresh QPs. The client's QP must meet the gap,
//! answer it with a PSN sequence NAK, take the retransmission and send exactly what the
//! captured client sent; the server's QP must send the packet the capture lacks and then,
//! after the NAK, the retransmission the capture shows.

#[path = "../examples/replay/pcap.rs"]
mod pcap;
#[path = "../examples/replay/run.rs"]
#[allow(dead_code)]
mod run;

use rrxe_proto::{QpState, RxStatus, WcStatus};

const CAPTURE: &[u8] = include_bytes!("data/rc-pingpong-drop.pcap");
const CLIENT: u32 = 0x645;
const SERVER: u32 = 0xa96;

fn replay(qpn: u32) -> run::Report {
    let frames = pcap::read(CAPTURE).expect("the capture reads");
    run::replay(
        &frames,
        &run::Opts {
            qpn,
            ..Default::default()
        },
    )
    .expect("the replay runs")
}

#[test]
fn capture_reads() {
    let frames = pcap::read(CAPTURE).unwrap();
    assert_eq!(frames.len(), 42);
    let list = run::list(&frames);
    assert!(
        list.contains("QP 0x000645 on 10.77.0.2: 21 packets"),
        "{list}"
    );
    assert!(
        list.contains("QP 0x000a96 on 10.77.0.1: 21 packets"),
        "{list}"
    );
}

#[test]
fn client_naks_the_gap_and_sends_what_the_capture_shows() {
    let r = replay(CLIENT);
    let text = &r.text;
    // Exactly one packet came out of order (the LAST after the lost MIDDLE), and it was
    // answered with a sequence NAK naming the lost PSN (0x097392).
    assert_eq!(
        r.rx.iter()
            .filter(|s| **s == RxStatus::OutOfSequence)
            .count(),
        1,
        "{text}"
    );
    assert!(
        text.contains("send RC ACK psn 0x097392 qp 0x000a96 NAK PsnSeqError msn 0"),
        "{text}"
    );
    assert_eq!(r.sent.len(), 21, "{text}");
    assert_eq!(r.sent, r.captured, "{text}");
    assert_eq!(r.recv_done, vec![WcStatus::Success; 4], "{text}");
    assert_eq!(r.send_done, vec![WcStatus::Success; 4], "{text}");
    assert_eq!(r.state, Some(QpState::Rts));
    assert_eq!(r.epsn, 0x0973a0);
}

#[test]
fn server_sends_what_was_lost_then_the_retransmission() {
    let r = replay(SERVER);
    let text = &r.text;
    // The capture lacks the server's third packet (0x097392, dropped before the wire); the
    // replayed QP sends it, so the two differ from there on (after the ACK of the client's
    // first message and the server's first two SEND packets).
    let same = r
        .sent
        .iter()
        .zip(&r.captured)
        .take_while(|(a, b)| a == b)
        .count();
    assert_eq!(same, 3, "{text}");
    assert_eq!(r.sent[3].1, 0x097392, "{text}");
    assert_eq!(r.captured[3].1, 0x097393, "{text}");
    // After the NAK it sends PSNs 0x097392 and 0x097393 again, as the capture shows.
    let i = text.find("NAK PsnSeqError msn 0 -> Ok").expect(text);
    let after = &text[i..];
    let a = after.find("send RC SEND_MIDDLE psn 0x097392").expect(text);
    let b = after.find("send RC SEND_LAST psn 0x097393").expect(text);
    assert!(a < b, "{text}");
    assert_eq!(r.sent.len(), r.captured.len() + 1, "{text}");
    assert_eq!(r.recv_done, vec![WcStatus::Success; 4], "{text}");
    assert_eq!(r.send_done, vec![WcStatus::Success; 4], "{text}");
    assert_eq!(r.state, Some(QpState::Rts));
}

#[test]
fn other_files_are_refused_with_a_reason() {
    let e = |b: &[u8]| pcap::read(b).err().unwrap_or_default();
    assert!(e(&[0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0]).contains("pcapng"));
    assert!(e(b"GIF89a").contains("not a pcap file"));
    assert!(e(&CAPTURE[..30]).contains("cut short"));
    let mut sll = CAPTURE[..24].to_vec();
    sll[20] = 9; // PPP
    assert!(e(&sll).contains("link type 9"));
    let frames = pcap::read(CAPTURE).unwrap();
    let none = run::replay(
        &frames,
        &run::Opts {
            qpn: 0x123,
            ..Default::default()
        },
    );
    assert!(none.unwrap_err().contains("no RoCE packet to QP 0x123"));
}
