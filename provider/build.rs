// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Generates the provider's view of libibverbs (`$OUT_DIR/ibverbs.rs`) from the headers of
//! the libibverbs it is built for, and links against that library.
//!
//! The target is a root directory, `RRXE_SYSROOT` (default `/`), holding libibverbs' public
//! headers (`usr/include`, from the libibverbs-dev of the target) and the library itself
//! (`usr/lib/<multiarch>/libibverbs.so*`). From the library this script reads the private ABI
//! it exports (the `IBVERBS_PRIVATE_<N>` version definition) and from its pkg-config file the
//! rdma-core version. The private headers a provider needs (driver.h, kern-abi.h, ...) are
//! not packaged by Debian: they come from an rdma-core source tree of the same private ABI,
//! `RRXE_RDMA_CORE_SRC` or the newest one under `$RRXE_CACHE/rdma-core-src/` whose
//! `CMakeLists.txt` says that ABI (`scripts/rdma-core-src.sh` fetches them).
//!
//! bindgen (the CLI, `BINDGEN` or `bindgen` on PATH or `~/.cargo/bin/bindgen`) reads public
//! headers (`infiniband/verbs.h`, ...) from the sysroot and private ones (driver.h, kern-abi.h,
//! and the kernel uverbs ABI `rdma/*.h` that libibverbs was built with) from the source. Its output carries
//! compile-time layout assertions, so a Rust type that disagreed with the C compiler would
//! not build. The API differences the Rust code branches on become `--cfg` flags:
//!
//! - `rrxe_pabi_ge_57`: `ibv_cmd_get_context` takes the `fd_arr` argument (rdma-core 57);
//! - `rrxe_pabi_ge_59`: `ibv_cmd_create_cq_ex` takes the `prov_attr` argument (rdma-core 59);
//! - `rrxe_have_wr_flush`: `struct ibv_qp_ex` has `wr_flush` (verbs.h of rdma-core 45).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{exit, Command};

/// The private ABIs (`IBVERBS_PRIVATE_<N>`) this provider builds for, and the rdma-core
/// releases that have them.
const SUPPORTED: &[(u32, &str)] = &[
    (34, "44-56"),
    (57, "57-58"),
    (59, "59-63"),
    (64, "64"),
    (65, "65"),
];

/// The `--cfg` flags the build may set.
const CFGS: &[&str] = &["rrxe_pabi_ge_57", "rrxe_pabi_ge_59", "rrxe_have_wr_flush"];

fn main() {
    for v in [
        "RRXE_SYSROOT",
        "RRXE_RDMA_CORE_SRC",
        "RRXE_CACHE",
        "XDG_CACHE_HOME",
        "BINDGEN",
    ] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    for c in CFGS {
        println!("cargo:rustc-check-cfg=cfg({c})");
    }

    let sysroot = PathBuf::from(env::var_os("RRXE_SYSROOT").unwrap_or_else(|| "/".into()));
    let include = sysroot.join("usr/include");
    let libdir = sysroot.join("usr/lib").join(multiarch());
    let lib = ["libibverbs.so.1", "libibverbs.so"]
        .iter()
        .map(|n| libdir.join(n))
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            fail(&format!(
                "no libibverbs.so.1 in {} (install libibverbs-dev, or point RRXE_SYSROOT at a \
                 root that has it)",
                libdir.display()
            ))
        });
    let verbs_h = include.join("infiniband/verbs.h");
    if !verbs_h.exists() {
        fail(&format!(
            "{} missing (install libibverbs-dev in {})",
            verbs_h.display(),
            sysroot.display()
        ));
    }
    let pkg = libdir.join("pkgconfig/libibverbs.pc");
    let version = fs::read_to_string(&pkg)
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("Version:").map(|v| v.trim().to_string()))
        })
        // libibverbs' pkg-config version is "1.14.<rdma-core major>.<minor>".
        .map(|v| match v.split('.').collect::<Vec<_>>()[..] {
            [_, _, major, minor] => format!("{major}.{minor}"),
            _ => v,
        })
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rerun-if-changed={}", lib.display());
    println!("cargo:rerun-if-changed={}", verbs_h.display());

    let pabi = private_abi(&lib).unwrap_or_else(|e| {
        fail(&format!(
            "{}: {e}: not a libibverbs with a provider ABI",
            lib.display()
        ))
    });
    if !SUPPORTED.iter().any(|(n, _)| *n == pabi) {
        fail(&format!(
            "{} (rdma-core {version}) has private ABI IBVERBS_PRIVATE_{pabi}, which this \
             provider does not know; it builds for {} (with the private headers of an rdma-core \
             source of that ABI: `scripts/rdma-core-src.sh --all` fetches 56.1 and 65.0, \
             RRXE_RDMA_CORE_SRC names another); point RRXE_SYSROOT at such a libibverbs",
            lib.display(),
            supported_list()
        ));
    }
    let src = rdma_core_source(pabi).unwrap_or_else(|e| {
        fail(&format!(
            "{} is rdma-core {version} (IBVERBS_PRIVATE_{pabi}); {e}. The provider needs \
             the private headers of an rdma-core source with that ABI: run \
             `scripts/rdma-core-src.sh --all` (rdma-core 56.1 for ABI 34, 65.0 for 65) or set \
             RRXE_RDMA_CORE_SRC to an unpacked rdma-core source tree. Supported: {}",
            lib.display(),
            supported_list()
        ))
    });

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let shim = out.join("shim");
    make_shim(&shim, &src, pabi);
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("manifest dir"));
    let rrxe_abi = manifest.join("../include/rdma/rrxe-abi.h");
    println!("cargo:rerun-if-changed={}", rrxe_abi.display());
    let wrapper = shim.join("wrapper.h");
    fs::write(
        &wrapper,
        format!(
            "#include <infiniband/verbs.h>\n#include <infiniband/driver.h>\n\
             #include <infiniband/kern-abi.h>\n#include \"{}\"\n",
            rrxe_abi.display()
        ),
    )
    .expect("write wrapper.h");

    let generated = out.join("ibverbs.rs");
    run_bindgen(&wrapper, &generated, &sysroot, &include, &shim, &src);
    let mut text = fs::read_to_string(&generated).expect("read bindgen output");
    text.push_str(&format!(
        "\n/// The private ABI this build is for (`IBVERBS_PRIVATE_{pabi}`).\n\
         pub const RRXE_IBVERBS_PABI: u32 = {pabi};\n\
         /// The rdma-core version of the libibverbs this build is for.\n\
         pub const RRXE_RDMA_CORE_VERSION: &str = \"{version}\";\n\
         pub use self::verbs_register_driver_{pabi} as verbs_register_driver;\n"
    ));
    fs::write(&generated, text).expect("write ibverbs.rs");

    if pabi >= 57 {
        println!("cargo:rustc-cfg=rrxe_pabi_ge_57");
    }
    if pabi >= 59 {
        println!("cargo:rustc-cfg=rrxe_pabi_ge_59");
    }
    let verbs = fs::read_to_string(&verbs_h).unwrap_or_default();
    if verbs.contains("(*wr_flush)") {
        println!("cargo:rustc-cfg=rrxe_have_wr_flush");
    }
    // For the tests: which library and source this build is for.
    println!("cargo:rustc-env=RRXE_IBVERBS_PABI={pabi}");
    println!("cargo:rustc-env=RRXE_IBVERBS_LIBDIR={}", libdir.display());
    println!("cargo:rustc-env=RRXE_RDMA_CORE_SRC_DIR={}", src.display());
    println!("cargo:rustc-link-search=native={}", libdir.display());
    println!("cargo:rustc-link-lib=dylib=ibverbs");
    // libibverbs.so.1 only (no -dev symlink in a sysroot made of the runtime package).
    if !libdir.join("libibverbs.so").exists() {
        let link = out.join("lib");
        fs::create_dir_all(&link).expect("mkdir");
        let _ = fs::remove_file(link.join("libibverbs.so"));
        std::os::unix::fs::symlink(&lib, link.join("libibverbs.so")).expect("symlink");
        println!("cargo:rustc-link-search=native={}", link.display());
    }
    println!(
        "cargo:warning=rrxe provider for rdma-core {version}, IBVERBS_PRIVATE_{pabi} (private \
         headers: {})",
        src.display()
    );
}

fn supported_list() -> String {
    SUPPORTED
        .iter()
        .map(|(n, r)| format!("{n} (rdma-core {r})"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn fail(msg: &str) -> ! {
    eprintln!("error: rrxe-provider: {msg}");
    println!("cargo:warning=rrxe-provider: {msg}");
    exit(1);
}

fn multiarch() -> String {
    Command::new("gcc")
        .arg("-print-multiarch")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "x86_64-linux-gnu".into())
}

/// The `N` of the `IBVERBS_PRIVATE_N` version definition in the ELF library's
/// `.gnu.version_d` section.
fn private_abi(lib: &Path) -> Result<u32, String> {
    let data = fs::read(lib).map_err(|e| e.to_string())?;
    let names = elf_version_definitions(&data).ok_or("unreadable ELF version definitions")?;
    names
        .iter()
        .find_map(|n| n.strip_prefix("IBVERBS_PRIVATE_")?.parse().ok())
        .ok_or_else(|| "no IBVERBS_PRIVATE_<N> version definition".into())
}

/// The names of an ELF64 little-endian object's version definitions.
fn elf_version_definitions(d: &[u8]) -> Option<Vec<String>> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(d.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(d.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(d.get(o..o + 8)?.try_into().ok()?));
    if d.get(0..4)? != b"\x7fELF" || *d.get(4)? != 2 || *d.get(5)? != 1 {
        return None;
    }
    let shoff = u64_at(0x28)? as usize;
    let shentsize = u16_at(0x3a)? as usize;
    let shnum = u16_at(0x3c)? as usize;
    const SHT_GNU_VERDEF: u32 = 0x6fff_fffd;
    let sh = |i: usize| shoff + i * shentsize;
    let verdef = (0..shnum).find(|&i| u32_at(sh(i) + 4) == Some(SHT_GNU_VERDEF))?;
    let off = u64_at(sh(verdef) + 0x18)? as usize;
    let strtab = u32_at(sh(verdef) + 0x28)? as usize;
    let stroff = u64_at(sh(strtab) + 0x18)? as usize;
    let cstr = |o: usize| -> Option<String> {
        let s = d.get(stroff + o..)?;
        let end = s.iter().position(|&b| b == 0)?;
        Some(String::from_utf8_lossy(&s[..end]).into_owned())
    };
    let mut names = Vec::new();
    let mut vd = off;
    loop {
        // Elf64_Verdef: version, flags, ndx, cnt (u16 each), hash, aux, next (u32 each).
        let aux = u32_at(vd + 12)? as usize;
        let next = u32_at(vd + 16)? as usize;
        if u16_at(vd + 6)? > 0 {
            names.push(cstr(u32_at(vd + aux)? as usize)?);
        }
        if next == 0 {
            break;
        }
        vd += next;
    }
    Some(names)
}

/// The private ABI an rdma-core source tree builds (`IBVERBS_PABI_VERSION` in its
/// CMakeLists.txt).
fn source_pabi(src: &Path) -> Option<u32> {
    let t = fs::read_to_string(src.join("CMakeLists.txt")).ok()?;
    t.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("set(IBVERBS_PABI_VERSION")?;
        rest.trim()
            .trim_end_matches(')')
            .trim_matches('"')
            .parse()
            .ok()
    })
}

fn rdma_core_source(pabi: u32) -> Result<PathBuf, String> {
    if let Some(src) = env::var_os("RRXE_RDMA_CORE_SRC") {
        let src = PathBuf::from(src);
        return match source_pabi(&src) {
            Some(p) if p == pabi => Ok(src),
            Some(p) => Err(format!(
                "RRXE_RDMA_CORE_SRC={} is private ABI {p}, not {pabi}",
                src.display()
            )),
            None => Err(format!(
                "RRXE_RDMA_CORE_SRC={} is not an rdma-core source tree",
                src.display()
            )),
        };
    }
    let cache = env::var_os("RRXE_CACHE")
        .map(PathBuf::from)
        .or_else(|| env::var_os("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("rrxe")))
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/rrxe")))
        .ok_or("no HOME")?;
    let dir = cache.join("rdma-core-src");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut found: Vec<(Vec<u32>, PathBuf)> = fs::read_dir(&dir)
        .map_err(|_| format!("no rdma-core source in {}", dir.display()))?
        .filter_map(|e| {
            let p = e.ok()?.path();
            let ver = p
                .file_name()?
                .to_str()?
                .strip_prefix("rdma-core-")?
                .to_string();
            let key = ver.split('.').map(|s| s.parse().unwrap_or(0)).collect();
            (source_pabi(&p)? == pabi).then_some((key, p))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, p)| p)
        .ok_or_else(|| format!("no rdma-core source of that ABI in {}", dir.display()))
}

/// A directory that looks like an rdma-core build's include dir: `config.h`, the private
/// `infiniband/*.h` copied from the source and `kernel-abi/ib_user_verbs.h` generated from
/// the source's `kernel-headers/rdma/ib_user_verbs.h` by its own `make_abi_structs.py`, as
/// rdma-core's build does.
fn make_shim(shim: &Path, src: &Path, pabi: u32) {
    let _ = fs::remove_dir_all(shim);
    fs::create_dir_all(shim.join("infiniband")).expect("mkdir shim");
    fs::create_dir_all(shim.join("kernel-abi")).expect("mkdir shim");
    fs::write(
        shim.join("config.h"),
        format!(
            "#ifndef CONFIG_H_IN\n#define CONFIG_H_IN\n\
             #define HAVE_STATEMENT_EXPR 1\n#define HAVE_BUILTIN_TYPES_COMPATIBLE_P 1\n\
             #define HAVE_TYPEOF 1\n#define HAVE_ISBLANK 1\n#define HAVE_BUILTIN_CLZ 1\n\
             #define HAVE_BUILTIN_CLZL 1\n#define HAVE_FUNC_ATTRIBUTE_ALWAYS_INLINE 1\n\
             #define IBVERBS_PABI_VERSION {pabi}\n#define VERBS_IOCTL_ONLY 0\n\
             #define VERBS_WRITE_ONLY 0\n#define SIZEOF_LONG 8\n#endif\n"
        ),
    )
    .expect("write config.h");
    for h in ["driver.h", "kern-abi.h", "cmd_ioctl.h", "cmd_write.h"] {
        let from = src.join("libibverbs").join(h);
        println!("cargo:rerun-if-changed={}", from.display());
        fs::copy(&from, shim.join("infiniband").join(h))
            .unwrap_or_else(|e| fail(&format!("{}: {e}", from.display())));
    }
    let uverbs = src.join("kernel-headers/rdma/ib_user_verbs.h");
    let st = Command::new("python3")
        .arg(src.join("buildlib/make_abi_structs.py"))
        .arg(&uverbs)
        .arg(shim.join("kernel-abi/ib_user_verbs.h"))
        .status()
        .unwrap_or_else(|e| fail(&format!("python3 (for make_abi_structs.py): {e}")));
    if !st.success() {
        fail("make_abi_structs.py failed");
    }
}

fn bindgen_path() -> PathBuf {
    if let Some(b) = env::var_os("BINDGEN") {
        return b.into();
    }
    let on_path = env::var_os("PATH")
        .into_iter()
        .flat_map(|p| env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("bindgen"))
        .find(|p| p.is_file());
    on_path
        .or_else(|| {
            let p = PathBuf::from(env::var_os("HOME")?).join(".cargo/bin/bindgen");
            p.is_file().then_some(p)
        })
        .unwrap_or_else(|| fail("bindgen not found (scripts/setup.sh installs bindgen-cli)"))
}

fn run_bindgen(
    wrapper: &Path,
    out: &Path,
    sysroot: &Path,
    include: &Path,
    shim: &Path,
    src: &Path,
) {
    // A whole root filesystem (one with its C library's headers) is clang's sysroot, so that
    // its glibc headers find their own multiarch `bits/` directory; a sysroot that holds only
    // libibverbs' packages keeps the host's C headers.
    let whole_root = sysroot != Path::new("/") && include.join("stdint.h").is_file();
    let sysroot_arg = whole_root.then(|| format!("--sysroot={}", sysroot.display()));
    let st = Command::new(bindgen_path())
        .arg(wrapper)
        .args(["-o"])
        .arg(out)
        .args([
            "--no-prepend-enum-name",
            "--no-doc-comments",
            "--use-core",
            "--with-derive-default",
            "--allowlist-type",
            "ibv_.*|_ibv_.*|verbs_.*|ib_uverbs_.*|rrxe_.*|ex_hdr|empty|rdma_driver_id",
            "--allowlist-function",
            "ibv_cmd_.*|verbs_.*|_verbs_.*|__verbs_log",
            "--allowlist-var",
            "IBV_.*|VERBS_.*|RRXE_.*|IB_USER_VERBS_.*|RDMA_DRIVER_.*|IB_UVERBS_.*",
            "--",
        ])
        .args(sysroot_arg)
        // The kernel's uverbs ABI (`rdma/*.h`) as the source has it (libibverbs is built with
        // its own copy, as the private headers expect); then the target's public headers.
        .arg(format!("-I{}", src.join("kernel-headers").display()))
        .arg(format!("-I{}", include.display()))
        .arg(format!("-I{}", shim.display()))
        .arg(format!("-I{}", src.display()))
        .status()
        .unwrap_or_else(|e| fail(&format!("bindgen: {e}")));
    if !st.success() {
        fail("bindgen failed on libibverbs' headers (see above)");
    }
}
