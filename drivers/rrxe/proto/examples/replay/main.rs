// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Replays one QP of a packet capture on the host, through the protocol core:
//!
//!   cargo run -p rrxe-proto --example replay -- FILE.pcap --qp N [--peer M] [--mtu BYTES]
//!                                               [--recvs K] [--retry N] [--timeout T]
//!
//! Without --qp it lists the QPs the capture shows packets to.
//! FILE.pcap is a classic pcap capture (`tcpdump -w`, or `scripts/roce-capture.py`) of
//! RoCEv2 traffic; N is the QP number (decimal or 0x hex) as its peer's packets address it.
//! The peer's packets to N are delivered to a fresh QP configured from the capture, the
//! work requests N's own packets carried are posted to it again, each at its capture time,
//! and every action the QP takes is printed, then its final state and how what it sent
//! compares with what the capture shows N sending. See docs/fault-injection.md ("From a
//! failure to a host test").

mod pcap;
mod run;

use rrxe_proto::Mtu;
use std::process::ExitCode;

const USAGE: &str = "usage: replay FILE.pcap [--qp N [--peer M] [--mtu 256|512|1024|2048|4096] \
                     [--recvs K] [--retry N] [--timeout T]]";

fn num(s: &str) -> Option<u32> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn parse_args(args: &[String]) -> Result<(String, run::Opts), String> {
    let mut o = run::Opts::default();
    let (mut file, mut qpn) = (None, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |what: &str| -> Result<u32, String> {
            let v = it.next().ok_or(format!("{a} needs {what}"))?;
            num(v).ok_or(format!("{a}: {v:?} is not a number"))
        };
        match a.as_str() {
            "--qp" => qpn = Some(val("a QP number")?),
            "--peer" => o.peer = Some(val("a QP number")?),
            "--mtu" => {
                let m = val("a path MTU")?;
                o.mtu = Some(match m {
                    256 => Mtu::M256,
                    512 => Mtu::M512,
                    1024 => Mtu::M1024,
                    2048 => Mtu::M2048,
                    4096 => Mtu::M4096,
                    _ => return Err(format!("--mtu {m}: 256, 512, 1024, 2048 or 4096")),
                })
            }
            "--recvs" => o.recvs = Some(val("a count")?),
            "--retry" => {
                o.retry_cnt = Some(
                    u8::try_from(val("a count")?)
                        .ok()
                        .filter(|n| *n <= 7)
                        .ok_or("--retry: 0 to 7")?,
                )
            }
            "--timeout" => {
                o.timeout = Some(
                    u8::try_from(val("an exponent")?)
                        .ok()
                        .filter(|n| *n <= 31)
                        .ok_or("--timeout: 0 to 31")?,
                )
            }
            "-h" | "--help" => return Err(String::new()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            s if file.is_none() => file = Some(s.to_string()),
            s => return Err(format!("one capture file only ({s}?)")),
        }
    }
    o.qpn = qpn.unwrap_or(u32::MAX);
    Ok((file.ok_or("no capture file")?, o))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (file, o) = match parse_args(&args) {
        Ok(v) => v,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("replay: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let bytes = match std::fs::read(&file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("replay: {file}: {e}");
            return ExitCode::from(1);
        }
    };
    // Without --qp: the QPs the capture shows, to choose from.
    let report = pcap::read(&bytes).and_then(|f| {
        if o.qpn == u32::MAX {
            Ok(run::list(&f))
        } else {
            run::replay(&f, &o).map(|r| r.text)
        }
    });
    match report {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("replay: {file}: {e}");
            ExitCode::from(1)
        }
    }
}
