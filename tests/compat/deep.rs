// SPDX-License-Identifier: MIT
// Rust threads with stacks of their own size, recursing deep: two threads
// with stack_size(64 MiB) each go about 36 MB deep, three times.  Under
// 'vmstack trace' its tripwires fault a number of times that grows with
// the log of the depth: the suite's table shows trace/plain.
#[inline(never)]
fn rec(n: u64) -> u64 {
    let frame = [n as u8; 1000];
    if n == 0 {
        return frame[0] as u64;
    }
    // Read after the call: no tail call, every level keeps its frame.
    rec(n - 1) + unsafe { std::ptr::read_volatile(&frame[(n % 1000) as usize]) } as u64
}

fn main() {
    let threads: Vec<_> = (0..2)
        .map(|_| {
            std::thread::Builder::new()
                .stack_size(64 << 20)
                .spawn(|| (0..3).map(|_| rec(36_000_000 / 1100)).sum::<u64>())
                .unwrap()
        })
        .collect();
    let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    println!("{}", total);
}
