//! Synthetic input for proctrace's own tests and benches: events built by hand, a tracker, a
//! fixed [`Header`] and [`Summary`], and a whole `make -jN` build fed through the real
//! [`Tracker`]. Not part of the supported API (hidden from the docs); it is ordinary code so that
//! the unit tests and the benches under `benches/` share one copy.
//!
//! Every event builder takes its timestamp first (`fork(ts, parent, child)`,
//! `exit(ts, pid, code)`, `exec(ts, pid, argv, cwd)`), CLOCK_MONOTONIC nanoseconds as in
//! [`Event`].

use std::io::BufRead;

use crate::cmd::analyze::analyze;
use crate::engine::Engine;
use crate::input::capture;
use crate::input::{Input, InputError, InputStats};
use crate::model::event::{Event, ExecDetails, Pid, Usage};
use crate::model::session::{Header, Mode, Summary, Tool};
use crate::model::tracker::{Scope, Tracker, TrackerOptions};
use crate::sink::Fanout;

/// `parent` forks the single-threaded process `child` at `ts`.
pub fn fork(ts: u64, parent: Pid, child: Pid) -> Event {
    Event::Fork {
        ts,
        parent_tgid: parent,
        child_pid: child,
        child_tgid: child,
    }
}

/// The single-threaded process `pid` exits with `code` at `ts` (wait status `code << 8`; no
/// parent reported, as when it was seen forking).
pub fn exit(ts: u64, pid: Pid, code: u32) -> Event {
    exit_status(ts, pid, code << 8)
}

/// What `pid` cost, sent (as a backend does) just before its exit: `user_ms` and `sys_ms` of
/// CPU, a peak RSS of `rss_kib`; I/O figures derived from them so that each is distinct.
pub fn usage(pid: Pid, user_ms: u64, sys_ms: u64, rss_kib: u64) -> Event {
    Event::Usage {
        tgid: pid,
        usage: Box::new(Usage {
            cpu_user_ns: user_ms * 1_000_000,
            cpu_sys_ns: sys_ms * 1_000_000,
            max_rss_kib: rss_kib,
            read_chars: rss_kib * 3,
            write_chars: rss_kib * 2,
            read_bytes: 4096,
            write_bytes: 8192,
            cancelled_write_bytes: 0,
            vol_ctx_switches: 5,
            invol_ctx_switches: 7,
            cpu_delay_ns: Some(1_000_000),
            io_delay_ns: None,
        }),
    }
}

/// The single-threaded process `pid` ends at `ts` with the raw wait status `status` (`9` for
/// SIGKILL, `11 | 0x80` for SIGSEGV with a core, `code << 8` for an exit).
pub fn exit_status(ts: u64, pid: Pid, status: u32) -> Event {
    Event::Exit {
        ts,
        pid,
        tgid: pid,
        status,
        parent_tgid: 0,
    }
}

/// `pid` execs `argv` at `ts`: the exec, then what `/proc` would say of it (the argv, `comm` as
/// the kernel sets it from `argv[0]`, and `cwd` when given).
pub fn exec<S: AsRef<str>>(ts: u64, pid: Pid, argv: &[S], cwd: Option<&str>) -> [Event; 2] {
    let argv: Vec<String> = argv.iter().map(|s| s.as_ref().to_string()).collect();
    let comm = argv.first().map(|a| {
        let base = a.rsplit('/').find(|p| !p.is_empty()).unwrap_or(a);
        base.chars().take(15).collect()
    });
    [
        Event::Exec { ts, tgid: pid },
        Event::ExecDetails {
            tgid: pid,
            details: ExecDetails {
                argv: Some(argv.into()),
                comm,
                cwd: cwd.map(Into::into),
                ..Default::default()
            },
        },
    ]
}

/// A small deterministic random source for the property tests over made-up traces
/// (xorshift64): `rnd(n)` is in `0..n` (0 for `n` = 0).
pub fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    }
}

/// A tracker with these options.
pub fn tracker(scope: Scope, retain_exited: bool, want_details: bool) -> Tracker {
    Tracker::new(TrackerOptions {
        scope,
        retain_exited,
        want_details,
    })
}

/// A header for `proctrace run -- ARGV` started at monotonic `ts`, the same on every machine:
/// real time = monotonic time, UTC, proctrace pid 1, version `0`, no backend named.
pub fn header(ts: u64, argv: &[&str]) -> Header {
    Header {
        mode: Mode::Run {
            argv: argv.iter().map(|s| s.to_string()).collect(),
        },
        ts,
        real_minus_mono: 0,
        tool: Tool {
            pid: 1,
            argv: vec!["proctrace".into()],
            version: "0".into(),
            parent_sid: None,
            host: None,
            utc_offset: None,
        },
        backend: None,
        refused: Vec::new(),
        files: false,
        daemons: Vec::new(),
    }
}

/// The summary of a session that ended at `ts` with `t`'s counters: the command's pid `root`,
/// no status, nothing in the background, nothing lost by the capture, no backend named.
pub fn summary(ts: u64, t: &Tracker, root: Option<Pid>) -> Summary {
    Summary {
        ts,
        status: None,
        stats: t.stats(),
        capture: Default::default(),
        background: 0,
        root,
        tracer_cpu_ns: None,
        backend: None,
        argv_reader: None,
        filtered: None,
    }
}

/// When [`make_build`] starts (its `make` forks), ns.
pub const BUILD_START: u64 = 1_000_000_000;

/// A `make -jWORKERS` build through the real tracker (tree scope following pid 100, records
/// kept, exec details wanted): `make` (pid 100) forks `workers` `sh -c 'worker W'` processes
/// 5 µs apart, each of which runs `per_worker` compiles one after another, of pseudo-random
/// length (50 µs – 9 ms). `compile(w, k)` gives the argv of worker `w`'s `k`-th compile and its
/// raw wait status (as for [`exit_status`]), `None` for one that never exits. Every exec is in
/// `cwd`. Returns the tracker and when the last worker exited (`make` exits 1 µs later).
pub fn make_build(
    workers: u64,
    per_worker: u64,
    cwd: &str,
    mut compile: impl FnMut(u64, u64) -> (Vec<String>, Option<u32>),
) -> (Tracker, u64) {
    let mut t = tracker(Scope::Tree, true, true);
    let base = BUILD_START;
    t.expect_root(100);
    // (ts, event), sorted stably at the end: ties keep the order written.
    let mut ev: Vec<(u64, Event)> = Vec::new();
    let push_exec = |ev: &mut Vec<(u64, Event)>, ts: u64, pid: Pid, argv: &[String]| {
        ev.extend(exec(ts, pid, argv, Some(cwd)).map(|e| (ts, e)));
    };
    ev.push((base, fork(base, 1, 100)));
    push_exec(&mut ev, base + 10, 100, &["make".into(), format!("-j{workers}")]);
    let (mut pid, mut end): (Pid, u64) = (1000, base);
    for w in 0..workers {
        let wpid = pid;
        pid += 1;
        let ws = base + 1_000 + w * 5_000;
        ev.push((ws, fork(ws, 100, wpid)));
        push_exec(
            &mut ev,
            ws + 5,
            wpid,
            &["sh".into(), "-c".into(), format!("worker {w}")],
        );
        let mut ts = ws + 100;
        for k in 0..per_worker {
            let c = pid;
            pid += 1;
            let dur = 50_000 + (w * 7919 + k * 104_729) % 9_000_000;
            ev.push((ts, fork(ts, wpid, c)));
            let (argv, status) = compile(w, k);
            push_exec(&mut ev, ts + 20, c, &argv);
            if let Some(status) = status {
                ev.push((ts + dur, exit_status(ts + dur, c, status)));
            }
            ts += dur + 1_000;
        }
        ev.push((ts, exit(ts, wpid, 0)));
        end = end.max(ts);
    }
    ev.push((end + 1_000, exit(end + 1_000, 100, 0)));
    ev.sort_by_key(|(ts, _)| *ts);
    let mut facts = Vec::new();
    for (_, e) in &ev {
        t.apply(e, &mut facts);
        facts.clear();
    }
    (t, end)
}

// A recorded event stream held in memory, fed through the tracker and sinks with no kernel and
// no clock: what tests use (they build and change captures in memory). `proctrace replay` reads
// its file as a stream instead ([`crate::input::capture::CaptureInput`], as `analyze` does).

/// Error reading a capture.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// A line is not an event.
    #[error("{path}:{line}: not a proctrace event: {msg}")]
    Parse {
        /// File.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What the parser said.
        msg: String,
    },
}

/// A saved capture: the header, the events, and the summary of the run that made it (older
/// captures have only events).
#[derive(Debug, Clone, Default)]
pub struct Capture {
    /// The recorded header.
    pub header: Option<Header>,
    /// The events in order.
    pub events: Vec<Event>,
    /// The recorded summary.
    pub summary: Option<Summary>,
}

impl Capture {
    /// The traced command's pid: named by a `Root` event; in captures made before it existed, the
    /// recorder's first forked process (pid == tgid).
    pub fn command_pid(&self) -> Option<i32> {
        let named = self.events.iter().find_map(|e| match *e {
            Event::Root { tgid } => Some(tgid),
            _ => None,
        });
        named.or_else(|| {
            self.events.iter().find_map(|e| match *e {
                Event::Fork {
                    child_pid,
                    child_tgid,
                    ..
                } if child_pid == child_tgid => Some(child_pid),
                _ => None,
            })
        })
    }
}

/// Parses capture text; `path` names it in errors.
pub fn parse_capture(r: impl BufRead, path: &str) -> Result<Capture, ReplayError> {
    let mut cap = Capture::default();
    let mut lines = r.lines().enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        let line = line.map_err(|source| ReplayError::Io {
            path: path.into(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed = capture::parse_line(line.as_bytes()).map(|l| match l {
            capture::Line::Header(h) => cap.header = Some(h),
            capture::Line::Summary(s) => cap.summary = Some(s),
            capture::Line::Event(e) => cap.events.push(e),
        });
        match parsed {
            Ok(()) => {}
            Err(e) if lines.peek().is_none() && e.is_eof() => break,
            Err(e) => {
                return Err(ReplayError::Parse {
                    path: path.into(),
                    line: i + 1,
                    msg: e.to_string(),
                });
            }
        }
    }
    Ok(cap)
}

/// A capture held in memory, as an [`Input`].
struct MemoryInput<'a> {
    cap: &'a Capture,
    header: Header,
}

impl Input for MemoryInput<'_> {
    fn header(&self) -> &Header {
        &self.header
    }
    fn feed_all(&mut self, feed: &mut dyn FnMut(Event)) -> Result<(), InputError> {
        self.cap.events.iter().cloned().for_each(feed);
        Ok(())
    }
    fn recorded_summary(&self) -> Option<&Summary> {
        self.cap.summary.as_ref()
    }
    fn stats(&self) -> InputStats {
        InputStats::default()
    }
}

/// Replays a capture held in memory through [`analyze`] (the one path from a saved trace to the
/// outputs). The sinks get the recorded header, or `fallback` for a capture without one.
/// Returns the engine and the summary the sinks got.
pub fn replay(cap: &Capture, root: Option<i32>, sinks: Fanout, fallback: Header) -> (Engine, Summary) {
    let mut input = MemoryInput {
        cap,
        header: cap.header.clone().unwrap_or(fallback),
    };
    let a = analyze(&mut input, root, sinks, true);
    (a.engine, a.summary)
}
