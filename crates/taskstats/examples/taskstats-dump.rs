//! Prints every exit record the kernel sends, one line per task, and each process's sum.
//! `taskstats-dump [SECONDS] [RAW-OUT]`: stops after SECONDS (default 5); with RAW-OUT, writes
//! the datagrams received (length-prefixed) there.

use std::time::{Duration, Instant};

use taskstats::{Accumulator, Listener, Options, Received};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let secs: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(5);
    let raw = std::env::args().nth(2);
    let mut ts = Listener::open(&Options::default())?;
    ts.tap_raw(raw.is_some());
    eprintln!(
        "family {} cpus {} buffer {} io-delay {}",
        ts.family(),
        ts.cpus(),
        ts.effective_buffer(),
        ts.io_delay_accounting()
    );
    let mut acc = Accumulator::new(ts.io_delay_accounting());
    let end = Instant::now() + Duration::from_secs(secs);
    let mut items = Vec::new();
    while Instant::now() < end {
        items.clear();
        ts.recv(&mut items, 200)?;
        for it in &items {
            match it {
                Received::Exit(e) => {
                    let t = &e.task;
                    println!(
                        "task pid {} tgid {:?} v{} comm {} exit {:#x} utime {} stime {} rss {} rchar {} wchar {} rb {} wb {} cs {}/{} cpudelay {} group {} {}",
                        e.pid,
                        t.tgid,
                        t.version,
                        String::from_utf8_lossy(t.comm()),
                        t.exit_code,
                        t.utime_us,
                        t.stime_us,
                        t.hiwater_rss_kib,
                        t.read_char,
                        t.write_char,
                        t.read_bytes,
                        t.write_bytes,
                        t.nvcsw,
                        t.nivcsw,
                        t.cpu_delay_ns,
                        e.group
                            .map(|(g, r)| format!(
                                "{g}: {r:?} task tgetime {:?} etime {}",
                                t.tgetime_us, t.etime_us
                            ))
                            .unwrap_or_default(),
                        e.group
                            .map(|(g, r)| format!(
                                "{g}: utime {} rss {} rchar {} cs {}/{} cpudelay {} etime {} tgetime {:?}",
                                r.utime_us,
                                r.hiwater_rss_kib,
                                r.read_char,
                                r.nvcsw,
                                r.nivcsw,
                                r.cpu_delay_ns,
                                r.etime_us,
                                r.tgetime_us
                            ))
                            .unwrap_or_default()
                    );
                    if let Some(p) = acc.feed(e) {
                        println!("  process {} threads {} {:?}", p.tgid, p.threads, p.usage);
                    }
                }
                Received::Loss(l) => println!("loss {}", l.count),
            }
        }
    }
    items.clear();
    ts.finish(&mut items)?;
    eprintln!("{:?}", ts.stats());
    if let Some(p) = raw {
        std::fs::write(p, ts.take_raw())?;
    }
    Ok(())
}
