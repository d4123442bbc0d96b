// SPDX-License-Identifier: MIT
// Rust's std::thread in the compatibility suite: named threads, threads
// with a stack size of their own (which recurse a little), scoped threads,
// a panicking thread joined; exits 5.  Rust's runtime reads each thread's
// stack and guard with pthread_getattr_np at start: a wrong answer aborts.
use std::thread;

#[inline(never)]
fn depth(n: u64) -> u64 {
    let frame = [n as u8; 512];
    if n == 0 {
        return frame[0] as u64;
    }
    depth(n - 1) + unsafe { std::ptr::read_volatile(&frame[(n % 512) as usize]) } as u64
}

fn main() {
    let mut handles = Vec::new();
    for i in 0..4u64 {
        let b = thread::Builder::new().name(format!("named-{}", i));
        let b = if i % 2 == 1 { b.stack_size(128 * 1024 * i as usize) } else { b };
        handles.push(b.spawn(move || {
            let name = thread::current().name().unwrap().to_string();
            format!("{}: {}", name, depth(20 * (i + 1)))
        }).unwrap());
    }
    for h in handles {
        println!("{}", h.join().unwrap());
    }
    let mut data = vec![1u64, 2, 3, 4, 5, 6, 7, 8];
    thread::scope(|s| {
        for chunk in data.chunks_mut(2) {
            s.spawn(move || {
                for x in chunk.iter_mut() {
                    *x *= 10;
                }
            });
        }
    });
    println!("scoped: {:?}", data);
    let r = thread::Builder::new().name("panicker".into()).spawn(|| {
        if std::env::args().count() < 100 {
            panic!("deliberate");
        }
    }).unwrap().join();
    println!("panicker joined: {}", if r.is_err() { "Err" } else { "Ok" });
    std::process::exit(5);
}
