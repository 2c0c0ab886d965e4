//! A slow, lossless link: several RC QP pairs share one FIFO link per direction that
//! serialises every packet and now and then stalls (a busy host: a TCG guest under KASAN,
//! a responder that is not scheduled). Nothing is lost, so every READ must complete with
//! its data, however long the queue makes the requester wait: retransmit timeouts that
//! fire while the responses are only queued are spurious, and must not pile up into
//! `RetryExcErr` (net-wire's `ib_read_bw -q 2` under KASAN did, with every one of its
//! 5276 retransmissions a duplicate at the responder).
//!
//! `cargo test -p rrxe-proto --test sim_slow`; `RRXE_SIM_SEED=s` runs one seed verbosely.

mod support;
use rrxe_proto::*;
use support::link::{random_psn, Link, World, MEM};
use support::Rng;

/// One seed: `pairs` QP pairs, each reading `reads` messages; returns the requesters'
/// statistics.
fn run_seed(seed: u64, verbose: bool) -> Result<Vec<SqStats>, String> {
    let mut rng = Rng(seed ^ 0x51_0000_0000);
    let pairs = rng.range(1, 4) as usize;
    let mtu = [Mtu::M256, Mtu::M1024][rng.below(2) as usize];
    // The retransmit timeout is ~1 ms (timeout 8); a queue of a few hundred packets at
    // 5-40 µs each takes longer than that to drain, and a stall longer still.
    let link = Link {
        per_pkt: rng.range(5, 40),
        delay: rng.range(1, 50),
        stall_ppm: rng.range(0, 5_000) as u32,
        stall: rng.range(500, 4_000),
        netem: None,
    };
    let mut mem = vec![0u8; MEM];
    rng.fill(&mut mem);
    let mut w = World::new(Rng(seed.wrapping_mul(77) ^ 0x77), link, mem);
    // Even seeds: the QPs' sinks have a clock.
    w.clock = seed.is_multiple_of(2);
    w.trace = verbose && std::env::var("RRXE_SIM_TRACE").is_ok();
    for _ in 0..pairs {
        let psn = [random_psn(&mut rng), random_psn(&mut rng)];
        let cfg = QpConfig {
            mtu,
            timeout: 8,
            retry_cnt: 7,
            rnr_retry: 7,
            max_rd_atomic: rng.range(1, 16) as u8,
            max_dest_rd_atomic: 16,
            ..QpConfig::default()
        };
        let n = rng.range(4, 24) as usize;
        let reads = (0..n)
            .map(|_| {
                let len = rng.range(1, 64 * 1024) as u32;
                (rng.below((MEM - len as usize) as u64) as usize, len)
            })
            .collect();
        w.add_pair(psn, cfg, reads)?;
    }
    let r = w.run(600_000_000);
    let stats = w.stats();
    if verbose {
        eprintln!(
            "seed {seed}: {pairs} pairs, mtu {mtu:?}, {link:?}, {} packets, t={} us, {stats:?}",
            w.pkts, w.now
        );
    }
    r?;
    w.check()?;
    Ok(stats)
}

#[test]
fn slow_link_reads_complete() {
    if let Some(s) = std::env::var("RRXE_SIM_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        if let Err(e) = run_seed(s, true) {
            panic!("seed {s} FAILED: {e}");
        }
        return;
    }
    let mut failures = vec![];
    for s in 0..200 {
        if let Err(e) = run_seed(s, false) {
            eprintln!("seed {s} FAILED: {e} (reproduce: RRXE_SIM_SEED={s})");
            failures.push(s);
        }
    }
    assert!(failures.is_empty(), "failing seeds: {failures:?}");
}
