//! Benchmarks: the cost of a trace2 call when tracing is off, and events per
//! second per target writing to a file, side by side with `tracing` +
//! `tracing-subscriber`'s JSON formatter writing an equivalent event.
//!
//! Run: `cargo bench -p proctrace-trace2 --bench throughput`
//!
//! Each enabled measurement runs in a child process of this benchmark
//! (trace2 is initialised once per process), selected by `TRACE2_BENCH_MODE`.

use std::hint::black_box;
use std::process::Command;
use std::time::Instant;

const DISABLED_CALLS: u64 = 50_000_000;
const ENABLED_EVENTS: u64 = 200_000;

fn ns_per(n: u64, f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_nanos() as f64 / n as f64
}

fn disabled() {
    // Nothing initialised: every call is one relaxed load and a return.
    let data = ns_per(DISABLED_CALLS, || {
        for i in 0..DISABLED_CALLS {
            trace2::data_with("bench", None, "key", black_box("value"));
            black_box(i);
        }
    });
    let region = ns_per(DISABLED_CALLS, || {
        for i in 0..DISABLED_CALLS {
            trace2::region_enter("bench", "loop");
            trace2::region_leave("bench", "loop");
            black_box(i);
        }
    }) / 2.0;
    // tracing with no subscriber installed.
    let tr = ns_per(DISABLED_CALLS, || {
        for i in 0..DISABLED_CALLS {
            tracing::info!(category = "bench", key = "key", value = black_box("value"));
            black_box(i);
        }
    });
    println!("disabled trace2::data_with        {data:8.2} ns/call");
    println!("disabled trace2::region_enter/leave {region:6.2} ns/call");
    println!("disabled tracing::info! (no subscriber) {tr:5.2} ns/call");
}

fn report(mode: &str, what: &str, ns: f64, bytes: u64, n: u64) {
    println!(
        "{mode:<13} {what:<7} {ns:7.0} ns/event  {:>9.0} events/s  {:4.0} bytes/event",
        1e9 / ns,
        bytes as f64 / n as f64
    );
}

fn file_len(file: &str) -> u64 {
    std::fs::metadata(file).map(|m| m.len()).unwrap_or(0)
}

fn enabled(mode: &str, file: &str) {
    let n = ENABLED_EVENTS;
    if mode == "tracing-json" {
        let f = match std::fs::OpenOptions::new().create(true).append(true).open(file) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("{file}: {e}");
                return;
            }
        };
        let sub = tracing_subscriber::fmt()
            .json()
            .with_writer(std::sync::Mutex::new(f))
            .finish();
        let _g = tracing::subscriber::set_default(sub);
        let ns = ns_per(n, || {
            for i in 0..n {
                tracing::info!(category = "bench", key = "key", value = i);
            }
        });
        report(mode, "data", ns, file_len(file), n);
        let before = file_len(file);
        let ns = ns_per(n, || {
            for i in 0..n {
                tracing::info!("line {i}");
            }
        });
        report(mode, "printf", ns, file_len(file) - before, n);
        return;
    }
    let kind = match mode {
        "normal" => trace2::TargetKind::Normal,
        "perf" => trace2::TargetKind::Perf,
        _ => trace2::TargetKind::Event,
    };
    let cfg = trace2::Config::new("BENCH").target(kind, file).emit_start(false);
    if !trace2::init(cfg) {
        eprintln!("could not open {file}");
        return;
    }
    if kind != trace2::TargetKind::Normal {
        let ns = ns_per(n, || {
            for i in 0..n {
                trace2::data("bench", "key", i);
            }
        });
        report(mode, "data", ns, file_len(file), n);
    }
    let before = file_len(file);
    let ns = ns_per(n, || {
        for i in 0..n {
            trace2::printf(format_args!("line {i}"));
        }
    });
    report(mode, "printf", ns, file_len(file) - before, n);
}

/// The floor: one `write(2)` of a 200-byte line per event, no formatting.
fn baseline() {
    use std::io::Write;
    let path = std::env::temp_dir().join(format!("trace2-bench-{}-raw", std::process::id()));
    let Ok(f) = std::fs::OpenOptions::new().create(true).append(true).open(&path) else {
        return;
    };
    let line = [b'x'; 200];
    let n = ENABLED_EVENTS;
    let ns = ns_per(n, || {
        for _ in 0..n {
            let _ = (&f).write(black_box(&line));
        }
    });
    report("raw write(2)", "200B", ns, 200 * n, n);
    let _ = std::fs::remove_file(&path);
}

fn main() {
    if let Ok(mode) = std::env::var("TRACE2_BENCH_MODE") {
        let file = std::env::var("TRACE2_BENCH_FILE").unwrap_or_default();
        enabled(&mode, &file);
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    disabled();
    baseline();
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    for mode in ["event", "normal", "perf", "tracing-json"] {
        let file = std::env::temp_dir().join(format!("trace2-bench-{}-{mode}", std::process::id()));
        let _ = std::fs::remove_file(&file);
        let out = Command::new(&exe)
            .env("TRACE2_BENCH_MODE", mode)
            .env("TRACE2_BENCH_FILE", &file)
            .env_remove("BENCH_TRACE2")
            .output();
        match out {
            Ok(o) => print!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => eprintln!("{mode}: {e}"),
        }
        let _ = std::fs::remove_file(&file);
    }
}
