//! Ingest speed of saved traces, stage by stage, on one core. Plain `harness = false` bench that
//! takes its files as arguments (`bench/run --only ingest` makes them and runs this):
//!
//! ```text
//! cargo bench -p proctrace --bench ingest -- jsonl BIG.jsonl
//! cargo bench -p proctrace --bench ingest -- trace2 BIG.trace2.json
//! ```
//!
//! For proctrace JSON Lines: the reader alone (bytes → events, fed to nothing), then the whole
//! `analyze` path (reader → tracker → no sinks) over the same bytes held in memory. For Trace2:
//! `trace2::reader::parse_line` and `parse_line_borrowed` (what `analyze` uses) over every line,
//! then the Trace2 input (sessions kept, built and ordered, from the file) fed to nothing, then
//! with the model. Each figure is the best of a few rounds, in MB/s of input (10^6 bytes).
//!
//! `cargo bench -p proctrace --bench ingest -- trace2-input FILE` runs the Trace2 input once,
//! streaming from the file: under `/usr/bin/time -f %M` its peak RSS is the input's own (the
//! model keeps every process record; the input should keep only the sessions alive at once).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use proctrace::cmd::analyze::analyze;
use proctrace::input::jsonl::JsonlInput;
use proctrace::input::trace2::Trace2Input;
use proctrace::input::{Input, InputOptions};
use proctrace::sink::Fanout;

const ROUNDS: usize = 5;

/// The model keeping every exited record (what the tree, the summary and the SVG need), then
/// freeing each once its exit is out (what `analyze` does when only streaming outputs are asked).
const RETAIN: [(bool, &str); 2] = [(true, "records kept"), (false, "streaming")];

/// The allocator `proctrace` itself uses (src/main.rs), so the stages measure what the command does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// This thread's CPU time, s: on a shared machine the wall time also counts other processes.
fn cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// Best of [`ROUNDS`]: (MB/s by wall time, MB/s by CPU time, what `f` counted).
fn best(bytes: usize, mut f: impl FnMut() -> u64) -> (f64, f64, u64) {
    let (mut wall, mut cpu) = (f64::MAX, f64::MAX);
    let mut n = 0;
    for _ in 0..ROUNDS {
        let (t, c) = (Instant::now(), cpu_s());
        n = f();
        cpu = cpu.min(cpu_s() - c);
        wall = wall.min(t.elapsed().as_secs_f64());
    }
    let mb = bytes as f64 / 1e6;
    (mb / wall, mb / cpu, n)
}

fn jsonl(path: &str) {
    let data = std::fs::read(path).unwrap();
    let opts = InputOptions::default();
    let (mbs, cpu, events) = best(data.len(), || {
        let mut input = JsonlInput::new(&data[..], Path::new(path), &opts).unwrap();
        let mut n = 0u64;
        input
            .feed_all(&mut |e| n += black_box(&e).ts().is_some() as u64)
            .unwrap();
        n
    });
    println!(
        "jsonl reader: {mbs:.0} MB/s wall, {cpu:.0} MB/s CPU ({events} timed events, {} bytes)",
        data.len()
    );
    for (retain, how) in RETAIN {
        let (mbs, cpu, procs) = best(data.len(), || {
            let mut input = JsonlInput::new(&data[..], Path::new(path), &opts).unwrap();
            let a = analyze(&mut input, None, Fanout::new(), retain);
            assert!(a.error.is_none());
            a.engine.tracker.stats().processes
        });
        println!(
            "jsonl analyze (reader + model, {how}): {mbs:.0} MB/s wall, {cpu:.0} MB/s CPU ({procs} processes)"
        );
    }
}

/// How many of `data`'s lines `parse` accepts.
fn lines_parsed(data: &[u8], parse: impl Fn(&[u8]) -> bool) -> u64 {
    let mut n = 0u64;
    let mut rest = data;
    while !rest.is_empty() {
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        n += u64::from(black_box(parse(&rest[..end])));
        rest = rest.get(end + 1..).unwrap_or_default();
    }
    n
}

fn trace2(path: &str) {
    let data = std::fs::read(path).unwrap();
    let (mbs, cpu, n) = best(data.len(), || {
        lines_parsed(&data, |l| trace2::reader::parse_line(l).is_ok())
    });
    println!(
        "trace2 parse_line: {mbs:.0} MB/s wall, {cpu:.0} MB/s CPU ({n} events, {} bytes)",
        data.len()
    );
    let (mbs, cpu, n) = best(data.len(), || {
        lines_parsed(&data, |l| trace2::reader::parse_line_borrowed(l).is_ok())
    });
    println!("trace2 parse_line_borrowed: {mbs:.0} MB/s wall, {cpu:.0} MB/s CPU ({n} events)");
    // The input as `analyze` reads it (from the file: sessions kept, built, ordered), fed to
    // nothing; then with the model.
    let opts = InputOptions::default();
    let paths = [std::path::PathBuf::from(path)];
    let (mbs, cpu, n) = best(data.len(), || {
        let mut input = Trace2Input::open(&paths, &opts).unwrap();
        let mut n = 0u64;
        input
            .feed_all(&mut |e| n += black_box(&e).ts().is_some() as u64)
            .unwrap();
        n
    });
    println!("trace2 input (sessions -> events): {mbs:.0} MB/s wall, {cpu:.0} MB/s CPU ({n} timed events)");
    for (retain, how) in RETAIN {
        let (mbs, cpu, procs) = best(data.len(), || {
            let mut input = Trace2Input::open(&paths, &opts).unwrap();
            let a = analyze(&mut input, None, Fanout::new(), retain);
            assert!(a.error.is_none());
            a.engine.tracker.stats().processes
        });
        println!(
            "trace2 analyze (input + model, {how}): {mbs:.0} MB/s wall, {cpu:.0} MB/s CPU ({procs} processes)"
        );
    }
}

/// The Trace2 input alone, streaming from the file, once (for its peak RSS under
/// `/usr/bin/time -f %M`: the model keeps every process record, the input should not).
fn trace2_input(path: &str) {
    let mut input = Trace2Input::open(&[std::path::PathBuf::from(path)], &InputOptions::default()).unwrap();
    let mut n = 0u64;
    input
        .feed_all(&mut |e| n += black_box(&e).ts().is_some() as u64)
        .unwrap();
    println!("trace2 input: {n} timed events");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["jsonl", path] => jsonl(path),
        ["trace2", path] => trace2(path),
        ["trace2-input", path] => trace2_input(path),
        _ => eprintln!("usage: ingest jsonl FILE | ingest trace2 FILE | ingest trace2-input FILE"),
    }
}
