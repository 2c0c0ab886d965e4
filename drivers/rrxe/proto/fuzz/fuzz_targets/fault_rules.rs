#![no_main]
// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#[path = "../bodies.rs"]
mod bodies;
libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::fault_rules(data));
