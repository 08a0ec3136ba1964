//! What a taskstats subscription costs the processes that exit. Runs a spawn workload (default:
//! `bench/workload.c`'s `posix_spawn N /bin/true`) in rounds, alternating three modes: no
//! listener; a listener draining and summing in a thread; a listener registered with a 4 KiB
//! queue that is never read (every record dropped); a draining listener that lingers 2 ms after
//! each wakeup so records arrive in batches (fewer wakeups). Reports, per mode, the median wall time and
//! the median CPU of the workload and its children (`RUSAGE_CHILDREN`) per exit, and the
//! draining thread's CPU per record.
//!
//! `exit-cost ROUNDS -- WORKLOAD ARGS...`

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use taskstats::{Accumulator, Listener, Options, Received};

fn children_cpu_us() -> u64 {
    // SAFETY: getrusage fills the struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn thread_cpu_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is live.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(5);
    let cmd: Vec<String> = args.iter().skip_while(|a| *a != "--").skip(1).cloned().collect();
    let mut wall = [vec![], vec![], vec![], vec![]];
    let mut cpu = [vec![], vec![], vec![], vec![]];
    let mut drain_cost = [vec![], vec![]];
    let mut dropped = 0u64;
    // Exits per run: $EXITS, else the workload's third word (`posix_spawn N PROG`).
    let n: f64 = std::env::var("EXITS")
        .ok()
        .or_else(|| cmd.get(2).cloned())
        .and_then(|n| n.parse().ok())
        .ok_or("WORKLOAD STYLE N ...")?;
    for _ in 0..rounds {
        for mode in 0..4 {
            let stop = Arc::new(AtomicBool::new(false));
            let mut drainer = None;
            let mut idle = None;
            if mode == 1 || mode == 3 {
                let linger = mode == 3;
                let ts = Listener::open(&Options::default())?;
                let waker = ts.waker();
                let stop2 = stop.clone();
                drainer = Some((
                    std::thread::spawn(move || {
                        let mut ts = ts;
                        let mut acc = Accumulator::new(false);
                        let mut items = Vec::with_capacity(4096);
                        let (mut recs, t0) = (0u64, thread_cpu_us());
                        while !stop2.load(Ordering::Relaxed) {
                            items.clear();
                            if ts.recv(&mut items, 100).is_err() {
                                break;
                            }
                            if linger && !items.is_empty() {
                                std::thread::sleep(std::time::Duration::from_millis(2));
                            }
                            for it in &items {
                                if let Received::Exit(e) = it {
                                    recs += 1;
                                    let _ = acc.feed(e);
                                }
                            }
                        }
                        items.clear();
                        let _ = ts.finish(&mut items);
                        (recs, thread_cpu_us() - t0, ts.stats().lost_reported)
                    }),
                    waker,
                ));
            } else if mode == 2 {
                idle = Some(Listener::open(&Options {
                    recv_buffer: 4096,
                    ..Options::default()
                })?);
            }
            let c0 = children_cpu_us();
            let t0 = Instant::now();
            let st = Command::new(&cmd[0]).args(&cmd[1..]).status()?;
            let dt = t0.elapsed().as_secs_f64();
            let dc = (children_cpu_us() - c0) as f64;
            if !st.success() {
                return Err("workload failed".into());
            }
            stop.store(true, Ordering::Relaxed);
            if let Some((h, w)) = drainer {
                w.wake();
                let (recs, us, lost) = h.join().map_err(|_| "drainer panicked")?;
                drain_cost[(mode == 3) as usize].push(us as f64 * 1000.0 / recs.max(1) as f64);
                if lost > 0 {
                    eprintln!("draining listener lost {lost}");
                }
            }
            if let Some(mut l) = idle {
                let mut items = Vec::new();
                l.finish(&mut items)?;
                dropped += l.stats().socket_drops;
            }
            wall[mode].push(dt * 1e6 / n);
            cpu[mode].push(dc / n);
        }
    }
    let names = [
        "off",
        "draining",
        "registered, never read (all dropped)",
        "draining, 2 ms linger per wakeup",
    ];
    for m in 0..4 {
        println!(
            "{:40} wall {:7.1} µs/exit  cpu {:7.1} µs/exit (median of {rounds})",
            names[m],
            median(&mut wall[m]),
            median(&mut cpu[m])
        );
    }
    println!(
        "draining thread: {:.0} ns CPU per record, {:.0} with the linger (medians)",
        median(&mut drain_cost[0]),
        median(&mut drain_cost[1])
    );
    println!("records dropped by the never-read listener: {dropped}");
    Ok(())
}
