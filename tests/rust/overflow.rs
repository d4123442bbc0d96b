// SPDX-License-Identifier: MIT
// For test_run_same.sh: a 64 KiB std::thread named 'deep' recurses without
// end; Rust's own handler says "thread 'deep' has overflowed its stack".
use std::thread;

fn deep(n: u64) -> u64 {
    let a = [n; 64];
    if n == u64::MAX {
        0
    } else {
        deep(n + 1) + a[(n % 64) as usize]
    }
}

fn main() {
    let h = thread::Builder::new().name("deep".into()).stack_size(65536).spawn(|| deep(0)).unwrap();
    let _ = h.join();
}
