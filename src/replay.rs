//! `proctrace replay CAPTURE`: feed a recorded event stream through the tracker and sinks, with
//! no kernel and no clock. What tests and bug reports use.

use std::io::BufRead;

use crate::event::Event;
use crate::sink::{Fanout, Header, Summary};
use crate::tracker::{Fact, Followup, Scope, Tracker, TrackerOptions};

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

/// Reads a capture file (one JSON event per line). A truncated last line (the recorder was
/// killed mid-write) is ignored; any other bad line is an error naming its line.
pub fn read_capture(path: &str) -> Result<Vec<Event>, ReplayError> {
    let f = std::fs::File::open(path).map_err(|source| ReplayError::Io {
        path: path.into(),
        source,
    })?;
    parse_capture(std::io::BufReader::new(f), path)
}

/// Parses capture text; `path` names it in errors.
pub fn parse_capture(r: impl BufRead, path: &str) -> Result<Vec<Event>, ReplayError> {
    let mut events = Vec::new();
    let mut lines = r.lines().enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        let line = line.map_err(|source| ReplayError::Io {
            path: path.into(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Event>(&line) {
            Ok(e) => events.push(e),
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
    Ok(events)
}

/// Replays events into a fresh tracker. With `root`, only that process's tree is followed (as in
/// `run`); otherwise everything (as in `watch`). Returns the tracker and the summary the sinks got.
pub fn replay(
    events: &[Event],
    root: Option<i32>,
    sinks: &mut Fanout,
    header: &Header,
) -> (Tracker, Summary) {
    let scope = if root.is_some() { Scope::Tree } else { Scope::All };
    let mut t = Tracker::new(TrackerOptions {
        scope,
        retain_exited: true,
        want_details: true,
    });
    if let Some(r) = root {
        t.expect_root(r);
    }
    sinks.start(header);
    let mut facts: Vec<Fact> = Vec::new();
    let mut pending: Option<i32> = None;
    for ev in events {
        // A recorded exec is followed by its details; when a capture lacks them, say so.
        if let (Some(p), false) = (pending, matches!(ev, Event::ExecDetails { .. })) {
            t.apply(
                &Event::ExecDetails {
                    tgid: p,
                    details: Default::default(),
                },
                &mut facts,
            );
        }
        pending = match t.apply(ev, &mut facts) {
            Followup::ReadExecDetails(p) => Some(p),
            // The capture already holds the Ancestry events the live run resolved.
            Followup::None | Followup::ResolveAncestry(_) => None,
        };
        for f in facts.drain(..) {
            sinks.fact(&f, &t);
        }
    }
    if let Some(p) = pending {
        t.apply(
            &Event::ExecDetails {
                tgid: p,
                details: Default::default(),
            },
            &mut facts,
        );
        for f in facts.drain(..) {
            sinks.fact(&f, &t);
        }
    }
    let last = events.iter().rev().find_map(|e| e.ts()).unwrap_or(header.ts);
    let status = root
        .and_then(|_| t.roots().first().copied())
        .and_then(|id| t.get(id))
        .and_then(|r| r.exit)
        .and_then(|x| x.status);
    let background = t.live_count() as u64;
    let sum = Summary {
        ts: last,
        status,
        stats: t.stats(),
        capture: Default::default(),
        background,
        root,
        tracer_cpu_ns: None,
    };
    sinks.finish(&sum, &t);
    (t, sum)
}
