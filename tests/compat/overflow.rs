// SPDX-License-Identifier: MIT
// Rust in the compatibility suite: a thread "deep" with a 64 KiB stack
// recurses without end.  Rust's own handler, on finding the fault in the
// thread's guard (as pthread_getattr_np reports it), prints "thread 'deep'
// has overflowed its stack" and aborts; under vmstack that message must
// still come, after vmstack's report.
use std::thread;

#[inline(never)]
#[allow(unconditional_recursion)]
fn bottomless(n: u64) -> u64 {
    let frame = [n as u8; 1024];
    bottomless(n + 1) + unsafe { std::ptr::read_volatile(&frame[(n % 1024) as usize]) } as u64
}

fn main() {
    println!("starting");
    let h = thread::Builder::new().name("deep".into()).stack_size(64 * 1024)
        .spawn(|| bottomless(1)).unwrap();
    println!("{}", h.join().unwrap());
}
