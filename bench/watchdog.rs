//! Watchdog benchmark (run by bench/run, not a test): what starting and
//! ending the watchdog costs mcp-bound, for each kind, in this process.
//! A fork copies the address space and every page written after it
//! faults; the waiter shares the memory. The process first dirties a heap
//! of about mcp-bound's size at dispatch, and writes it again after each
//! start, as mcp-bound goes on running.
//!
//! Usage: watchdog_bench [ROUNDS]. Prints: waiter_us fork_us (medians).

use std::ffi::CString;
use std::io::Write;
use std::time::Instant;

use mcp_bound::sys;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    // About what mcp-bound has written by dispatch (its anonymous RSS).
    let mut heap = vec![1u8; 600 << 10];
    let touch = |heap: &mut Vec<u8>| {
        for page in heap.chunks_mut(4096) {
            page[0] = page[0].wrapping_add(1);
        }
    };
    let c = |s: &str| CString::new(s).unwrap();
    let start_waiter = sys::WAITER.expect("a system with a waiter (Linux)");
    let forking = sys::FORK.expect("a system that forks");
    let (mut waiter, mut fork) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let start = Instant::now();
        let w = start_waiter(sys::Orphaned {
            kill: None,
            exe: c("/bin/true"),
            argv0: c("true"),
            mode: c("group"),
            target: c("none"),
            mark: c("none"),
        })
        .expect("start a waiter");
        touch(&mut heap);
        let _ = std::io::Write::write_all(&mut w.writer(), b"P0\n");
        w.finish(b"D\n");
        waiter.push(start.elapsed().as_secs_f64() * 1e6);

        let start = Instant::now();
        let (reader, mut writer) = sys::pipe_cloexec().unwrap();
        match (forking.fork)().unwrap() {
            None => {
                drop(writer);
                let mut buf = [0u8; 8];
                let _ = std::io::Read::read(&mut &reader, &mut buf);
                sys::exit_now(0)
            }
            Some(pid) => {
                drop(reader);
                touch(&mut heap);
                let _ = writer.write_all(b"D\n");
                drop(writer);
                sys::wait_child(pid);
            }
        }
        fork.push(start.elapsed().as_secs_f64() * 1e6);
    }
    println!("{:.1} {:.1}", median(waiter), median(fork));
}
