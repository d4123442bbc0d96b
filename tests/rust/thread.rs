// SPDX-License-Identifier: MIT
// For test_run_same.sh: a named std::thread that returns 2; exits 5.
use std::thread;

fn main() {
    let h = thread::Builder::new().name("worker".into()).spawn(|| 2).unwrap();
    std::process::exit(3 + h.join().unwrap());
}
