// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Layout tests beyond the ones bindgen generates.
//!
//! Every C type the provider uses comes from bindgen (`build.rs`), which emits, for each one,
//! compile-time assertions of its size, alignment and field offsets as the C compiler sees
//! them in the headers of the libibverbs the build is for: a type that disagreed with C would
//! not compile. What is left to check here:
//!
//! * `proto_wqe_layout`: the kernel decoder's constants (`rrxe_proto::uabi`) against the
//!   generated types and constants of `include/rdma/rrxe-abi.h`, so the provider's encoder,
//!   the kernel's decoder and the header cannot disagree without a failing test.
//! * `verbs_qp_follows_qp_ex`: `verbs_qp.comp_mask` sits right after the target's
//!   `ibv_qp_ex` (rdma-core 45 grew it by `wr_flush`; libibverbs looks for `VERBS_QP_EX`
//!   there).
//! * `installed_verbs_set_ops_matches_generated`: the target library's own machine code (its
//!   `verbs_set_ops`, disassembled from the file the build linked) reads every slot of the
//!   generated `verbs_context_ops`, in the order of the source's `dummy_ops.c`, and no other:
//!   the library and the private headers of the build agree.

use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};

use std::process::Command;

use rrxe::abi::sys::*;

/// The provider's ABI against the kernel decoder's constants.
#[test]
fn proto_wqe_layout() {
    use rrxe_proto::uabi;
    assert_eq!(uabi::sge::SIZE, size_of::<rrxe_sge>());
    assert_eq!(uabi::sge::ADDR, offset_of!(rrxe_sge, addr));
    assert_eq!(uabi::sge::LENGTH, offset_of!(rrxe_sge, length));
    assert_eq!(uabi::sge::LKEY, offset_of!(rrxe_sge, lkey));
    assert_eq!(uabi::send_wqe::SIZE, size_of::<rrxe_send_wqe>());
    assert_eq!(
        uabi::send_wqe::XRC_REMOTE_SRQN,
        offset_of!(rrxe_send_wqe, xrc_remote_srqn)
    );
    assert_eq!(uabi::recv_wqe::SIZE, size_of::<rrxe_recv_wqe>());
    assert_eq!(uabi::recv_wqe::WR_ID, offset_of!(rrxe_recv_wqe, wr_id));
    assert_eq!(uabi::recv_wqe::NUM_SGE, offset_of!(rrxe_recv_wqe, num_sge));
    // The rest of the send WQE's offsets: `wqe::tests::uabi_layout_matches_the_header`.
    let values: [(&str, u32, u32); 22] = [
        (
            "RRXE_WR_RDMA_WRITE",
            uabi::WR_RDMA_WRITE,
            RRXE_WR_RDMA_WRITE,
        ),
        (
            "RRXE_WR_RDMA_WRITE_WITH_IMM",
            uabi::WR_RDMA_WRITE_WITH_IMM,
            RRXE_WR_RDMA_WRITE_WITH_IMM,
        ),
        ("RRXE_WR_SEND", uabi::WR_SEND, RRXE_WR_SEND),
        (
            "RRXE_WR_SEND_WITH_IMM",
            uabi::WR_SEND_WITH_IMM,
            RRXE_WR_SEND_WITH_IMM,
        ),
        ("RRXE_WR_RDMA_READ", uabi::WR_RDMA_READ, RRXE_WR_RDMA_READ),
        (
            "RRXE_WR_ATOMIC_CMP_AND_SWP",
            uabi::WR_ATOMIC_CMP_AND_SWP,
            RRXE_WR_ATOMIC_CMP_AND_SWP,
        ),
        (
            "RRXE_WR_ATOMIC_FETCH_AND_ADD",
            uabi::WR_ATOMIC_FETCH_AND_ADD,
            RRXE_WR_ATOMIC_FETCH_AND_ADD,
        ),
        ("RRXE_WR_LOCAL_INV", uabi::WR_LOCAL_INV, RRXE_WR_LOCAL_INV),
        ("RRXE_WR_BIND_MW", uabi::WR_BIND_MW, RRXE_WR_BIND_MW),
        (
            "RRXE_WR_SEND_WITH_INV",
            uabi::WR_SEND_WITH_INV,
            RRXE_WR_SEND_WITH_INV,
        ),
        (
            "RRXE_WR_ATOMIC_WRITE",
            uabi::WR_ATOMIC_WRITE,
            RRXE_WR_ATOMIC_WRITE,
        ),
        ("RRXE_WR_FLUSH", uabi::WR_FLUSH, RRXE_WR_FLUSH),
        ("RRXE_SEND_FENCE", uabi::SEND_FENCE, RRXE_SEND_FENCE),
        (
            "RRXE_SEND_SIGNALED",
            uabi::SEND_SIGNALED,
            RRXE_SEND_SIGNALED,
        ),
        (
            "RRXE_SEND_SOLICITED",
            uabi::SEND_SOLICITED,
            RRXE_SEND_SOLICITED,
        ),
        ("RRXE_SEND_INLINE", uabi::SEND_INLINE, RRXE_SEND_INLINE),
        (
            "RRXE_FLUSH_GLOBAL",
            uabi::FLUSH_GLOBAL.into(),
            RRXE_FLUSH_GLOBAL,
        ),
        (
            "RRXE_FLUSH_PERSISTENT",
            uabi::FLUSH_PERSISTENT.into(),
            RRXE_FLUSH_PERSISTENT,
        ),
        (
            "RRXE_FLUSH_RANGE",
            uabi::FLUSH_RANGE.into(),
            RRXE_FLUSH_RANGE,
        ),
        ("RRXE_FLUSH_MR", uabi::FLUSH_MR.into(), RRXE_FLUSH_MR),
        ("RRXE_MAX_SGE", 32, RRXE_MAX_SGE),
        ("RRXE_MAX_INLINE", 512, RRXE_MAX_INLINE),
    ];
    let bad: Vec<String> = values
        .iter()
        .filter(|(_, proto, c)| proto != c)
        .map(|(n, proto, c)| format!("{n}: rrxe-abi.h {c}, rrxe_proto {proto}"))
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// driver.h's `verbs_qp` is a union of `ibv_qp`/`ibv_qp_ex` then `comp_mask` and `xrcd`.
#[test]
fn verbs_qp_follows_qp_ex() {
    assert_eq!(offset_of!(verbs_qp, __bindgen_anon_1), 0);
    assert_eq!(offset_of!(verbs_qp, comp_mask), size_of::<ibv_qp_ex>());
    assert_eq!(
        offset_of!(verbs_qp, xrcd),
        (size_of::<ibv_qp_ex>() + 4).next_multiple_of(8)
    );
    println!(
        "IBVERBS_PRIVATE_{RRXE_IBVERBS_PABI} (rdma-core {RRXE_RDMA_CORE_VERSION}): ibv_qp_ex \
         {} bytes, verbs_qp {}, verbs_context_ops {} ops, verbs_context.context at {}, \
         ibv_port_attr {}",
        size_of::<ibv_qp_ex>(),
        size_of::<verbs_qp>(),
        size_of::<verbs_context_ops>() / size_of::<usize>(),
        offset_of!(verbs_context, context),
        size_of::<ibv_port_attr>()
    );
}

/// The field names of `verbs_context_ops` in the generated file, in order.
fn generated_ops_order() -> Vec<String> {
    let text = include_str!(concat!(env!("OUT_DIR"), "/ibverbs.rs"));
    let body = text
        .split("pub struct verbs_context_ops {")
        .nth(1)
        .expect("verbs_context_ops in the generated file");
    let body = &body[..body.find("\n}").unwrap()];
    body.lines()
        .filter_map(|l| l.strip_prefix("    pub "))
        .filter_map(|l| l.split_once(':'))
        .map(|(n, _)| n.to_string())
        .collect()
}

/// The libibverbs.so.1 the build linked (the target's, under `RRXE_SYSROOT`).
fn target_libibverbs() -> Option<PathBuf> {
    let lib = Path::new(env!("RRXE_IBVERBS_LIBDIR")).join("libibverbs.so.1");
    lib.exists().then_some(lib)
}

/// `verbs_set_ops` is, for each op, `if (ops->name) { priv->ops.name = ...; ... }`: a load
/// from the ops table followed by a NULL test. Returns the offsets of those loads, in order.
fn verbs_set_ops_loads(lib: &Path) -> Result<Vec<usize>, String> {
    let objdump = |args: &[&str]| -> Result<String, String> {
        let out = Command::new("objdump")
            .args(args)
            .arg(lib)
            .output()
            .map_err(|e| format!("cannot run objdump: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "objdump failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let syms = objdump(&["-T"])?;
    let line = syms
        .lines()
        .find(|l| l.split_whitespace().last() == Some("verbs_set_ops"))
        .ok_or("verbs_set_ops not in the dynamic symbol table")?;
    let cols: Vec<&str> = line.split_whitespace().collect();
    let start = u64::from_str_radix(cols[0], 16).map_err(|e| e.to_string())?;
    let len = u64::from_str_radix(cols[cols.len() - 3], 16).map_err(|e| e.to_string())?;
    let asm = objdump(&[
        "-d",
        "--no-show-raw-insn",
        &format!("--start-address={start:#x}"),
        &format!("--stop-address={:#x}", start + len),
    ])?;
    let insns: Vec<(String, String)> = asm
        .lines()
        .filter_map(|l| {
            // "  12563:\tmov    (%rsi),%rsi"
            let insn = l.split_once(":\t")?.1;
            let (op, args) = insn.split_once(char::is_whitespace).unwrap_or((insn, ""));
            Some((op.to_string(), args.trim().to_string()))
        })
        .collect();
    let mut loads = Vec::new();
    for (i, (op, args)) in insns.iter().enumerate() {
        // mov [0xOFF](%base),%reg ... test %reg,%reg (the compiler may schedule a few
        // unrelated instructions in between, none of which writes %reg).
        let Some((src, dst)) = args.split_once(',') else {
            continue;
        };
        if op != "mov" || !dst.starts_with('%') {
            continue;
        }
        let tested = insns[i + 1..]
            .iter()
            .take(4)
            .take_while(|(_, a)| !a.ends_with(&format!(",{dst}")) || a == &format!("{dst},{dst}"))
            .any(|(o, a)| o == "test" && a == &format!("{dst},{dst}"));
        if !tested {
            continue;
        }
        let Some((off, _base)) = src.split_once('(') else {
            continue;
        };
        let off = match off.strip_prefix("0x") {
            Some(hex) => usize::from_str_radix(hex, 16).map_err(|e| e.to_string())?,
            None if off.is_empty() => 0,
            None => continue,
        };
        loads.push(off);
    }
    Ok(loads)
}

#[test]
fn installed_verbs_set_ops_matches_generated() {
    let test = "installed_verbs_set_ops_matches_generated";
    let Some(lib) = target_libibverbs() else {
        println!(
            "SKIP {test}: no libibverbs.so.1 in {}",
            env!("RRXE_IBVERBS_LIBDIR")
        );
        return;
    };
    let loads = match verbs_set_ops_loads(&lib) {
        Ok(l) if l.len() >= 10 => l,
        Ok(l) => {
            return println!(
                "SKIP {test}: found only {} op loads in {}",
                l.len(),
                lib.display()
            )
        }
        Err(e) => return println!("SKIP {test}: {e}"),
    };
    // Every slot of the generated verbs_context_ops is read exactly once, and nothing beyond.
    let names = generated_ops_order();
    let slots = size_of::<verbs_context_ops>() / size_of::<usize>();
    assert_eq!(names.len(), slots, "one generated field per slot");
    let mut sorted = loads.clone();
    sorted.sort_unstable();
    let expect: Vec<usize> = (0..slots).map(|i| i * size_of::<usize>()).collect();
    assert_eq!(
        sorted,
        expect,
        "{}: verbs_set_ops reads other ops slots than the {slots}-entry verbs_context_ops",
        lib.display()
    );
    println!(
        "{}: verbs_set_ops reads all {slots} verbs_context_ops slots",
        lib.display()
    );

    // Which op sits at each slot: the source's dummy_ops.c copies them in a known order
    // (SET_OP(vctx, advise_mr); ...), which the library's code follows.
    let src = Path::new(env!("RRXE_RDMA_CORE_SRC_DIR"));
    let dummy = std::fs::read_to_string(src.join("libibverbs/dummy_ops.c")).unwrap();
    let body = dummy.split("void verbs_set_ops(").nth(1).unwrap();
    let order: Vec<&str> = body
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("SET_") && (l.contains("(vctx,") || l.contains("(ctx,")))
        .map(|l| l.trim_end_matches(");").rsplit([',', ' ']).next().unwrap())
        .collect();
    let want: Vec<usize> = order
        .iter()
        .map(|n| {
            let i = names.iter().position(|f| f == n);
            i.unwrap_or_else(|| panic!("dummy_ops.c sets {n}, not in verbs_context_ops"))
                * size_of::<usize>()
        })
        .collect();
    assert_eq!(
        loads,
        want,
        "op order of {} vs {}",
        lib.display(),
        src.display()
    );
    println!(
        "{}: each slot holds the op driver.h names there",
        lib.display()
    );
}
