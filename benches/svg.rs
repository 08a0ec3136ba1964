//! Cost of drawing the `--svg` picture of a 100,000-process run (the render alone: the records
//! are already in the tracker, as at the end of `run`). Plain `harness = false` bench:
//!
//! ```text
//! cargo bench -p proctrace --bench svg
//! ```
//!
//! The run is synthetic but goes through the real tracker: a `make` forking 100 workers, each
//! forking 1,000 compiles of pseudo-random length (50 µs – 9 ms), 1% of them failing.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use proctrace::model::event::{Event, ExecDetails, ExitStatus};
use proctrace::model::tracker::{Scope, Tracker, TrackerOptions};
use proctrace::report::svg::{SvgOptions, render};
use proctrace::sink::{Header, Mode, Summary, Tool};

fn build(workers: u64, per_worker: u64) -> (Header, Tracker, Summary) {
    let mut t = Tracker::new(TrackerOptions {
        scope: Scope::Tree,
        retain_exited: true,
        want_details: true,
    });
    let base = 1_000_000_000u64;
    t.expect_root(100);
    let mut ev: Vec<(u64, Event)> = Vec::new();
    let exec = |ev: &mut Vec<(u64, Event)>, ts: u64, pid: i32, argv: Vec<String>| {
        ev.push((ts, Event::Exec { ts, tgid: pid }));
        ev.push((
            ts,
            Event::ExecDetails {
                tgid: pid,
                details: ExecDetails {
                    comm: Some(argv[0].clone()),
                    argv: Some(argv),
                    cwd: Some("/src/project".into()),
                    ..Default::default()
                },
            },
        ));
    };
    let fork = |parent: i32, child: i32, ts: u64| Event::Fork {
        ts,
        parent_tgid: parent,
        child_pid: child,
        child_tgid: child,
    };
    let exit = |pid: i32, ts: u64, status: u32| Event::Exit {
        ts,
        pid,
        tgid: pid,
        status,
        parent_tgid: 0,
    };
    ev.push((base, fork(1, 100, base)));
    exec(&mut ev, base + 10, 100, vec!["make".into(), "-j100".into()]);
    let (mut pid, mut end) = (1000i32, base);
    for w in 0..workers {
        let wpid = pid;
        pid += 1;
        let ws = base + 1_000 + w * 5_000;
        ev.push((ws, fork(100, wpid, ws)));
        exec(
            &mut ev,
            ws + 5,
            wpid,
            vec!["sh".into(), "-c".into(), format!("worker {w}")],
        );
        let mut ts = ws + 100;
        for k in 0..per_worker {
            let c = pid;
            pid += 1;
            let dur = 50_000 + (w * 7919 + k * 104_729) % 9_000_000;
            ev.push((ts, fork(wpid, c, ts)));
            let argv = ["cc", "-O2", "-c", "-o"]
                .iter()
                .map(|s| s.to_string())
                .chain([format!("obj/f{w}_{k}.o"), format!("src/f{w}_{k}.c")])
                .collect();
            exec(&mut ev, ts + 20, c, argv);
            let status = if k % 100 == 13 { 2 << 8 } else { 0 };
            ev.push((ts + dur, exit(c, ts + dur, status)));
            ts += dur + 1_000;
        }
        ev.push((ts, exit(wpid, ts, 0)));
        end = end.max(ts);
    }
    ev.push((end + 1_000, exit(100, end + 1_000, 0)));
    ev.sort_by_key(|(ts, _)| *ts);
    let mut facts = Vec::new();
    for (_, e) in &ev {
        t.apply(e, &mut facts);
        facts.clear();
    }
    let header = Header {
        mode: Mode::Run {
            argv: vec!["make".into(), "-j100".into()],
        },
        ts: base,
        real_minus_mono: 0,
        tool: Tool {
            pid: 1,
            argv: vec!["proctrace".into()],
            version: "bench".into(),
            parent_sid: None,
            host: None,
            utc_offset: None,
        },
        backend: None,
    };
    let sum = Summary {
        ts: end + 2_000,
        status: Some(ExitStatus::Code(0)),
        stats: t.stats(),
        capture: Default::default(),
        background: 0,
        root: Some(100),
        tracer_cpu_ns: None,
        backend: None,
        argv_reader: None,
        filtered: None,
    };
    (header, t, sum)
}

fn main() {
    let (h, t, sum) = build(100, 1000);
    println!("processes: {}", t.stats().processes);
    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..15 {
        let start = Instant::now();
        let svg = render(&h, &t, &sum, SvgOptions::default());
        times.push(start.elapsed().as_secs_f64() * 1e3);
        bytes = svg.len();
    }
    times.sort_by(f64::total_cmp);
    println!(
        "svg render: median {:.1} ms, min {:.1} ms, max {:.1} ms over {} runs; {} bytes",
        times[times.len() / 2],
        times[0],
        times[times.len() - 1],
        times.len(),
        bytes
    );
}
