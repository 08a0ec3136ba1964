//! How fast the connector drains: fill the queue with a fork storm while not reading, then time
//! draining it. Prints events/s and CPU µs per event (this thread's CPU time).
//!
//! `cargo run --release -p proctrace-cnproc --example drain-rate [-- FORKS]` (root or 6.6+).
use cnproc::{Connector, Options, Received};

fn thread_cpu_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let forks: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(50_000);
    let mut conn = Connector::open(&Options {
        recv_buffer: 512 << 20,
        ..Options::default()
    })?;
    eprintln!(
        "buffer {} MiB; storm of {forks} fork+exit, not reading",
        conn.receive_buffer() >> 20
    );
    for _ in 0..forks {
        // SAFETY: the child only calls _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: async-signal-safe exit in the child.
            unsafe { libc::_exit(0) };
        }
        let mut st = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut st, 0) };
    }
    let mut items = Vec::with_capacity(1 << 16);
    let (mut events, mut lost) = (0u64, 0u64);
    let wall = std::time::Instant::now();
    let cpu0 = thread_cpu_ns();
    loop {
        items.clear();
        if conn.recv(&mut items, 0)? == 0 {
            break;
        }
        for it in &items {
            match it {
                Received::Event(_) => events += 1,
                Received::Loss(l) => lost += l.count,
            }
        }
    }
    let cpu = (thread_cpu_ns() - cpu0) as f64;
    let secs = wall.elapsed().as_secs_f64();
    println!(
        "drained {events} events ({lost} lost) in {:.3} s: {:.0} events/s, {:.3} µs CPU/event",
        secs,
        events as f64 / secs,
        cpu / 1000.0 / events.max(1) as f64
    );
    Ok(())
}
