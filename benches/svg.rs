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

use proctrace::model::event::ExitStatus;
use proctrace::model::session::{Header, Summary};
use proctrace::model::tracker::Tracker;
use proctrace::report::svg::{SvgOptions, render};
use proctrace::testkit;

fn build(workers: u64, per_worker: u64) -> (Header, Tracker, Summary) {
    let (t, end) = testkit::make_build(workers, per_worker, "/src/project", |w, k| {
        let argv = ["cc", "-O2", "-c", "-o"]
            .iter()
            .map(|s| s.to_string())
            .chain([format!("obj/f{w}_{k}.o"), format!("src/f{w}_{k}.c")])
            .collect();
        let status = if k % 100 == 13 { 2 << 8 } else { 0 };
        (argv, Some(status))
    });
    let mut header = testkit::header(testkit::BUILD_START, &["make", &format!("-j{workers}")]);
    header.tool.version = "bench".into();
    let mut sum = testkit::summary(end + 2_000, &t, Some(100));
    sum.status = Some(ExitStatus::Code(0));
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
