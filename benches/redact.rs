//! Cost of redacting argv words (`proctrace::redact`), which every output runs on every argv
//! word it writes: a compile-heavy build's words, nearly none holding a secret. Plain
//! `harness = false` bench; a counting allocator shows that words with nothing to redact cost
//! no allocation:
//!
//! ```text
//! cargo bench -p proctrace --bench redact
//! ```
#![allow(clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use proctrace::redact::{Argv, redact_arg};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Words of a build: compiles, a configure line, a git fetch, a shell script.
fn corpus() -> Vec<Vec<String>> {
    let mut v = Vec::new();
    for k in 0..2000 {
        v.push(
            [
                "/usr/bin/cc",
                "-O2",
                "-Wall",
                "-Iinclude",
                "-DVERSION=\"1.2\"",
                "--std=c11",
                "-c",
                "-o",
                &format!("obj/f{k}.o"),
                &format!("src/f{k}.c"),
            ]
            .map(String::from)
            .to_vec(),
        );
        v.push(
            [
                "git",
                "-c",
                "core.quotepath=off",
                "fetch",
                "--no-tags",
                "https://github.com/o/r.git",
                "+refs/heads/main:refs/remotes/origin/main",
            ]
            .map(String::from)
            .to_vec(),
        );
        v.push(
            ["sh", "-c", "cd build && make -j2 CFLAGS=-O2 >log 2>&1 || cat log"]
                .map(String::from)
                .to_vec(),
        );
    }
    v
}

fn time(name: &str, words: usize, mut f: impl FnMut() -> usize) {
    let mut times = Vec::with_capacity(15);
    let mut changed = 0;
    let a0 = ALLOCS.load(Ordering::Relaxed);
    for _ in 0..15 {
        let t = Instant::now();
        changed = std::hint::black_box(f());
        times.push(t.elapsed().as_secs_f64() * 1e9 / words as f64);
    }
    let allocs = ALLOCS.load(Ordering::Relaxed) - a0;
    times.sort_by(f64::total_cmp);
    println!(
        "{name}: median {:.1} ns/word (min {:.1}, max {:.1}) over 15 runs of {words} words; \
         {changed} words changed; {allocs} allocations",
        times[7], times[0], times[14]
    );
}

fn main() {
    let c = corpus();
    let words: usize = c.iter().map(Vec::len).sum();
    time("argv (redact::Argv)", words, || {
        let mut n = 0;
        for argv in &c {
            let mut r = Argv::new();
            for w in argv {
                n += usize::from(matches!(r.word(w), std::borrow::Cow::Owned(_)));
            }
        }
        n
    });
    time("words (redact_arg)", words, || {
        c.iter()
            .flatten()
            .filter(|w| matches!(redact_arg(w), std::borrow::Cow::Owned(_)))
            .count()
    });
    time("git's rule (trace2::quote::redact_url)", words, || {
        c.iter()
            .flatten()
            .filter(|w| trace2::quote::redact_url(w).is_some())
            .count()
    });
    if std::env::args().any(|a| a == "--each") {
        for w in c[..3].iter().flatten() {
            let t = Instant::now();
            for _ in 0..100_000 {
                std::hint::black_box(redact_arg(std::hint::black_box(w)));
            }
            println!("{:8.1} ns  {w}", t.elapsed().as_secs_f64() * 1e9 / 1e5);
        }
    }
    let secret: Vec<String> = c
        .iter()
        .flatten()
        .map(|w| format!("https://u:pw@h/{w}"))
        .collect();
    time("every word a URL with a password", secret.len(), || {
        secret
            .iter()
            .filter(|w| matches!(redact_arg(w), std::borrow::Cow::Owned(_)))
            .count()
    });
}
