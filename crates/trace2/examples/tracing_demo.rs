//! A program instrumented only with `tracing` macros; one line hands
//! everything it reports to Trace2 (`cargo run -p proctrace-trace2 --features
//! tracing --example tracing_demo`, with `GIT_TRACE2_EVENT=/tmp/demo.json`).
//!
//! It reads git's own variables (`GIT_TRACE2_EVENT`, `GIT_TRACE2_PERF`,
//! `GIT_TRACE2`…) as a tool run by git would (an alias `!tracing_demo`, a
//! hook, a `git-foo` command): run under git, its session nests under git's.
//! A program of your own would pass its own prefix (`trace2::layer!("MYAPP")`
//! reads `MYAPP_TRACE2_EVENT`…).
//!
//! Usage: `tracing_demo [ok | exit CODE | panic | fail]`: how it ends.

use std::process::ExitCode;

use tracing::{debug, error, info, info_span, instrument, warn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

#[instrument(target = "demo::fetch")]
fn fetch(repo: &str, depth: u32) -> usize {
    let objects = repo.len() * 10;
    info!(objects, "fetched {repo}");
    if depth > 0 {
        // Recursion: the same kind of span, entered again inside itself.
        fetch(repo, depth - 1);
    }
    objects
}

fn worker(n: usize) {
    let span = info_span!(target: "demo::worker", "work", n);
    let _g = span.enter();
    for i in 0..3 {
        debug!(target: "demo::worker", item = i);
    }
    info!(target: "demo::worker", done = true, "worker {n} done");
}

fn main() -> ExitCode {
    tracing_subscriber::registry().with(trace2::layer!("GIT")).init();

    let how = std::env::args().nth(1).unwrap_or_else(|| "ok".to_string());
    let code = std::env::args().nth(2).and_then(|c| c.parse().ok()).unwrap_or(0);

    let sync = info_span!(target: "demo", "sync", repos = 2, result = tracing::field::Empty);
    {
        let _g = sync.enter();
        let total: usize = ["alpha", "beta"].iter().map(|r| fetch(r, 1)).sum();
        info!(target: "demo", total, path = ?std::path::Path::new("/tmp/x y"), "fetched all");
        sync.record("result", "ok");
    }
    // Entered again: a second region, with the field recorded since.
    sync.in_scope(|| warn!(target: "demo", "slow network"));

    std::thread::Builder::new()
        .name("worker-1".into())
        .spawn(|| worker(1))
        .and_then(|h| h.join().map_err(|_| std::io::Error::other("worker panicked")))
        .unwrap_or_else(|e| error!("{e}"));
    let _ = std::thread::spawn(|| worker(2)).join();

    match how.as_str() {
        "exit" => {
            error!(target: "demo", code, "giving up");
            std::process::exit(code)
        }
        "panic" => panic!("demo panics"),
        "fail" => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    }
}
