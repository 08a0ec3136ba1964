//! A bare taskstats listener for benchmarks: registers for every CPU's exit records, prints
//! `READY`, and then either reads and discards every record as it comes (`poll`: woken by the
//! kernel per record or batch) or reads nothing until the end (`idle`: the kernel builds and
//! queues each record, nobody is woken). It stops at SIGINT or SIGTERM and prints, on stderr,
//! the records it got, the records the kernel dropped and its own CPU time (bench/run reads its
//! rusage instead).
//!
//! `taskstats-sink poll|idle` — used to measure the kernel's part of usage capture apart from
//! proctrace's (BENCHMARKS.md, "What each process cost: the price of usage capture").

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use taskstats::{Listener, Options, Received};

fn own_cpu_us() -> u64 {
    // SAFETY: getrusage fills the struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let poll = match mode.as_str() {
        "poll" => true,
        "idle" => false,
        _ => return Err("usage: taskstats-sink poll|idle".into()),
    };
    // SIGINT and SIGTERM are blocked in every thread and taken by sigwait: no handler.
    // SAFETY: sigset operations on a local set; pthread_sigmask on the calling thread, before
    // any other thread exists (they inherit the mask).
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let mut ts = Listener::open(&Options::default())?;
    let stop = Arc::new(AtomicBool::new(false));
    let waker = ts.waker();
    let stop2 = Arc::clone(&stop);
    let signalled = std::thread::spawn(move || {
        let mut sig = 0;
        // SAFETY: set is a valid signal set and sig a live int.
        unsafe { libc::sigwait(&set, &mut sig) };
        stop2.store(true, Ordering::Release);
        waker.wake();
    });
    println!("READY");
    std::io::stdout().flush()?;
    let mut items = Vec::with_capacity(4096);
    let (mut records, mut lost) = (0u64, 0u64);
    let mut count = |items: &[Received]| {
        for it in items {
            match it {
                Received::Exit(_) => records += 1,
                Received::Loss(l) => lost += l.count,
            }
        }
    };
    if poll {
        while !stop.load(Ordering::Acquire) {
            items.clear();
            ts.recv(&mut items, -1)?;
            count(&items);
        }
    } else {
        let _ = signalled.join();
    }
    items.clear();
    ts.finish(&mut items)?;
    count(&items);
    eprintln!("records {records} lost {lost} cpu_us {}", own_cpu_us());
    Ok(())
}
