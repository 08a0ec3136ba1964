//! A recorded event stream held in memory, fed through the tracker and sinks with no kernel and
//! no clock: what tests use (they build and change captures in memory). `proctrace replay` reads
//! its file as a stream instead ([`crate::input::capture::CaptureInput`], as `analyze` does).

use std::io::BufRead;

use crate::cmd::analyze::analyze;
use crate::engine::Engine;
use crate::input::capture;
use crate::input::{Input, InputError, InputStats};
use crate::model::event::Event;
use crate::model::session::{Header, Summary};
use crate::sink::Fanout;

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
