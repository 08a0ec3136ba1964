//! Benchmark: the cost of a `tracing` span and event through the trace2
//! layer writing the Trace2 event format to a file, next to
//! `tracing-subscriber`'s own JSON layer writing to a file, and both when
//! off (the layer built from a configuration with no target, the JSON layer
//! as `Option::None`).
//!
//! Run: `cargo bench -p proctrace-trace2 --bench layer`
//!
//! Every figure is the fastest of five runs. Each mode runs in a child
//! process of this benchmark (a global subscriber and trace2 are set once
//! per process), selected by `TRACE2_LAYER_BENCH_MODE`.

use std::hint::black_box;
use std::process::Command;
use std::time::Instant;

use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

const OFF_CALLS: u64 = 20_000_000;
const ON_SPANS: u64 = 100_000;
const ON_EVENTS: u64 = 200_000;

/// Rounds per measurement; the fastest is reported (the machine is shared).
const ROUNDS: usize = 5;

/// The fastest of [`ROUNDS`] runs of `f`, in ns per operation (`n` per run).
fn ns_per(n: u64, f: impl Fn()) -> f64 {
    (0..ROUNDS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn file_len(file: &str) -> u64 {
    std::fs::metadata(file).map(|m| m.len()).unwrap_or(0)
}

/// One span (created, entered, exited, closed), one event with a field,
/// one event with a message; ns per operation and bytes written per operation.
fn measure(mode: &str, file: &str, n_spans: u64, n_events: u64) {
    let mut before = file_len(file);
    let mut row = |what: &str, n: u64, ns: f64| {
        let bytes = (file_len(file) - before) / ROUNDS as u64;
        before = file_len(file);
        println!(
            "{mode:<12} {what:<28} {ns:9.2} ns/op  {:6.0} bytes/op",
            bytes as f64 / n as f64
        );
    };
    let ns = ns_per(n_spans, || {
        for i in 0..n_spans {
            let span = tracing::info_span!(target: "bench", "work", i);
            let _g = span.enter();
        }
    });
    row("span (new+enter+exit+close)", n_spans, ns);
    let ns = ns_per(n_events, || {
        for i in 0..n_events {
            tracing::info!(target: "bench", key = i);
        }
    });
    row("event info!(key = i)", n_events, ns);
    let ns = ns_per(n_events, || {
        for i in 0..n_events {
            tracing::info!(target: "bench", "line {}", black_box(i));
        }
    });
    row("event info!(\"line {i}\")", n_events, ns);
}

/// The native API for reference: a region (enter + leave) and a `data`.
fn native(file: &str) {
    let cfg = trace2::Config::new("LAYERBENCH")
        .target(trace2::TargetKind::Event, file)
        .emit_start(false);
    if !trace2::init(cfg) {
        eprintln!("could not open {file}");
        return;
    }
    let mut before = file_len(file);
    let mut row = |what: &str, n: u64, ns: f64| {
        let bytes = (file_len(file) - before) / ROUNDS as u64;
        before = file_len(file);
        println!(
            "{:<12} {what:<28} {ns:9.2} ns/op  {:6.0} bytes/op",
            "native",
            bytes as f64 / n as f64
        );
    };
    let ns = ns_per(ON_SPANS, || {
        for i in 0..ON_SPANS {
            trace2::region_enter_with(Some("bench"), Some("work"), None, Some(&format!("i={i}")));
            trace2::region_leave("bench", "work");
        }
    });
    row("region_enter+leave (msg)", ON_SPANS, ns);
    let ns = ns_per(ON_EVENTS, || {
        for i in 0..ON_EVENTS {
            trace2::data("bench", "key", i);
        }
    });
    row("data", ON_EVENTS, ns);
}

fn child(mode: &str, file: &str) {
    match mode {
        "none" => measure(mode, file, OFF_CALLS, OFF_CALLS),
        "trace2-off" => {
            let layer = trace2::layer::Trace2Layer::new(trace2::Config::new("LAYERBENCH"));
            assert!(layer.is_none());
            tracing_subscriber::registry().with(layer).init();
            measure(mode, file, OFF_CALLS, OFF_CALLS);
        }
        "json-off" => {
            let on = std::env::var_os("LAYERBENCH_NEVER_SET").is_some();
            let layer = on.then(|| tracing_subscriber::fmt::layer().json());
            tracing_subscriber::registry().with(layer).init();
            measure(mode, file, OFF_CALLS, OFF_CALLS);
        }
        "trace2" => {
            let cfg = trace2::Config::new("LAYERBENCH")
                .target(trace2::TargetKind::Event, file)
                .emit_start(false);
            let layer = trace2::layer::Trace2Layer::new(cfg);
            assert!(layer.is_some(), "could not open {file}");
            tracing_subscriber::registry().with(layer).init();
            measure(mode, file, ON_SPANS, ON_EVENTS);
        }
        "json" => {
            let f = match std::fs::OpenOptions::new().create(true).append(true).open(file) {
                Ok(f) => f,
                Err(e) => {
                    eprintln!("{file}: {e}");
                    return;
                }
            };
            let layer = tracing_subscriber::fmt::layer()
                .json()
                .with_span_events(FmtSpan::ENTER | FmtSpan::EXIT)
                .with_writer(std::sync::Mutex::new(f));
            tracing_subscriber::registry().with(layer).init();
            measure(mode, file, ON_SPANS, ON_EVENTS);
        }
        "native" => native(file),
        _ => eprintln!("unknown mode {mode}"),
    }
}

fn main() {
    if let Ok(mode) = std::env::var("TRACE2_LAYER_BENCH_MODE") {
        let file = std::env::var("TRACE2_LAYER_BENCH_FILE").unwrap_or_default();
        child(&mode, &file);
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    for mode in ["none", "trace2-off", "json-off", "trace2", "json", "native"] {
        let file = std::env::temp_dir().join(format!("trace2-layer-bench-{}-{mode}", std::process::id()));
        let _ = std::fs::remove_file(&file);
        let out = Command::new(&exe)
            .env("TRACE2_LAYER_BENCH_MODE", mode)
            .env("TRACE2_LAYER_BENCH_FILE", &file)
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
