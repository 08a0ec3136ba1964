//! Sinks turn the tracker's facts into output. They only format: they never decide what a process
//! is, and they never touch the connector.
//!
//! Adding an output format means one new module implementing [`Sink`].
//!
//! One sink is not a format: [`progress`], `run`'s live status line on a terminal, which
//! [`crate::output`] adds only when stderr is one. It shows state (what runs now) rather than
//! facts, through [`Sink::refresh`].

use std::io;

use crate::model::event::ExitStatus;
use crate::model::tracker::{Fact, Tracker, TrackerStats};

pub mod chrome;
#[cfg(test)]
pub(crate) mod chrome_check;
#[cfg(test)]
pub(crate) mod golden;
pub mod json;
pub mod jsonl;
pub mod lines;
pub mod otlp;
pub mod progress;
pub mod text;
pub mod trace2;

/// How the session was asked for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `proctrace run -- CMD`.
    Run {
        /// The command.
        argv: Vec<String>,
    },
    /// `proctrace watch`, optionally limited to a subtree.
    Watch {
        /// `-p PID`.
        root: Option<i32>,
    },
    /// Replay of a recorded capture.
    Replay {
        /// The capture file.
        path: String,
    },
    /// `proctrace analyze` of saved traces that record no session of their own (Trace2 streams).
    Analyze {
        /// The files and directories read.
        inputs: Vec<String>,
    },
}

/// proctrace itself, as the outputs describe it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tool {
    /// Its pid.
    pub pid: u32,
    /// Its command line.
    pub argv: Vec<String>,
    /// Its version.
    pub version: String,
    /// `GIT_TRACE2_PARENT_SID` it was started with: its trace2 session nests under it.
    pub parent_sid: Option<String>,
    /// The host name, hashed into trace2 SIDs as git does (`None`: git's `Localhost`).
    #[serde(default)]
    pub host: Option<String>,
    /// The local time zone at start, seconds east of UTC: trace2's normal and perf targets print
    /// local time (`None`: UTC).
    #[serde(default)]
    pub utc_offset: Option<i64>,
}

impl Tool {
    /// This process, read once at start (the only place outputs learn about the environment).
    pub fn this_process() -> Tool {
        Tool {
            pid: std::process::id(),
            argv: std::env::args().collect(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            parent_sid: std::env::var("GIT_TRACE2_PARENT_SID")
                .ok()
                .filter(|s| !s.is_empty()),
            host: ::trace2::hostname().map(|h| String::from_utf8_lossy(&h).into_owned()),
            utc_offset: Some(::trace2::Timestamp::now().local_utc_offset()),
        }
    }
}

/// Session facts known before the first event. Everything an output says about the session and
/// the tool comes from here, never from the environment or the clock, so an output is a function
/// of header, events and summary — and a recorded capture replays to the same bytes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Header {
    /// What was asked.
    pub mode: Mode,
    /// Monotonic start.
    pub ts: u64,
    /// CLOCK_REALTIME − CLOCK_MONOTONIC at start, ns: add it to any `ts` for wall time.
    pub real_minus_mono: i64,
    /// proctrace itself.
    pub tool: Tool,
    /// The backend (`connector`, `ptrace`); `None` when replaying a capture that does not say.
    pub backend: Option<String>,
}

impl Header {
    /// proctrace's own Trace2 session id: the SID its trace2 outputs give the session, and the
    /// `GIT_TRACE2_PARENT_SID` that `run --trace2` hands the command, so git's sessions nest
    /// under it. Nested under the `GIT_TRACE2_PARENT_SID` proctrace was started with.
    pub fn trace2_sid(&self) -> String {
        let wall = ::trace2::Timestamp::from_micros((self.ts as i128 + self.real_minus_mono as i128) / 1000);
        let host = self.tool.host.as_deref().map(str::as_bytes);
        let comp = ::trace2::Sid::component_with_host(self.tool.pid, wall, host);
        ::trace2::Sid::nested(self.tool.parent_sid.as_deref(), &comp)
            .as_str()
            .to_string()
    }
}

/// What the capture layer reported.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CaptureSummary {
    /// Datagrams not from the kernel or malformed, dropped unread.
    pub rejected: u64,
    /// Overflow episodes (ENOBUFS).
    pub overflows: u64,
    /// The socket's own drop counter (`SO_MEMINFO`), for cross-checking `lost`.
    pub socket_drops: u64,
    /// Events received from the kernel (all processes, before scoping).
    pub events: u64,
    /// Receive buffer granted, bytes.
    pub receive_buffer: u64,
    /// Taskstats exit records the kernel dropped (the taskstats socket was full): processes
    /// whose exit lines lack cost figures (connector backend; 0 when not used).
    #[serde(default)]
    pub usage_lost: u64,
    /// Processes left without figures because the record of one of their threads was lost.
    #[serde(default)]
    pub usage_incomplete: u64,
}

/// Session facts known at the end.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Monotonic end.
    pub ts: u64,
    /// The traced command's status (`run`).
    pub status: Option<ExitStatus>,
    /// Tracker counters.
    pub stats: TrackerStats,
    /// Capture counters.
    pub capture: CaptureSummary,
    /// Processes left running when the command ended.
    pub background: u64,
    /// The traced command's pid (`run`).
    pub root: Option<i32>,
    /// CPU time proctrace itself used (user + system, all threads), ns.
    pub tracer_cpu_ns: Option<u64>,
    /// The backend that ran.
    pub backend: Option<String>,
    /// How argv was read: `realtime`, `nice`, `normal` (the connector's reader thread),
    /// `exec-stop` (ptrace), `off`.
    pub argv_reader: Option<String>,
    /// Facts a `watch` filter kept from the outputs (`None`: no filter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filtered: Option<u64>,
}

/// Output for facts.
pub trait Sink {
    /// Called once before any fact.
    fn start(&mut self, _header: &Header) -> io::Result<()> {
        Ok(())
    }
    /// One fact; `tracker` resolves the records it names.
    fn fact(&mut self, fact: &Fact, tracker: &Tracker) -> io::Result<()>;
    /// End of a batch, before [`flush`](Self::flush), with the model as it now stands: for live
    /// displays ([`progress`]) that show state rather than facts. Must be cheap.
    fn refresh(&mut self, _tracker: &Tracker) {}
    /// A fact a `watch` filter kept from the outputs. A sink that keeps state per process (the
    /// timeline, which opened a slice at a fork that passed) may still have to close what it
    /// opened; the others ignore it.
    fn filtered(&mut self, _fact: &Fact, _tracker: &Tracker) -> io::Result<()> {
        Ok(())
    }
    /// End of a batch: a good moment to write buffered lines out.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Called once at the end.
    fn finish(&mut self, _summary: &Summary, _tracker: &Tracker) -> io::Result<()> {
        Ok(())
    }
}

/// Fans facts out to several sinks; a sink that fails is reported once and then left out, so a
/// full disk or a closed pipe never stops the trace (or harms the traced command).
pub struct Fanout {
    sinks: Vec<(String, Box<dyn Sink>)>,
    failed: Vec<(String, io::Error)>,
}

impl Fanout {
    /// Empty.
    pub fn new() -> Self {
        Fanout {
            sinks: Vec::new(),
            failed: Vec::new(),
        }
    }

    /// Adds a sink under a name used in error messages.
    pub fn add(&mut self, name: impl Into<String>, sink: Box<dyn Sink>) {
        self.sinks.push((name.into(), sink));
    }

    fn each(&mut self, mut f: impl FnMut(&mut dyn Sink) -> io::Result<()>) {
        let mut i = 0;
        while i < self.sinks.len() {
            if let Err(e) = f(self.sinks[i].1.as_mut()) {
                let (name, _) = self.sinks.remove(i);
                self.failed.push((name, e));
            } else {
                i += 1;
            }
        }
    }

    /// See [`Sink::start`].
    pub fn start(&mut self, h: &Header) {
        self.each(|s| s.start(h));
    }
    /// See [`Sink::fact`].
    pub fn fact(&mut self, fact: &Fact, t: &Tracker) {
        self.each(|s| s.fact(fact, t));
    }
    /// See [`Sink::refresh`].
    pub fn refresh(&mut self, t: &Tracker) {
        for (_, s) in &mut self.sinks {
            s.refresh(t);
        }
    }
    /// See [`Sink::filtered`].
    pub fn filtered(&mut self, fact: &Fact, t: &Tracker) {
        self.each(|s| s.filtered(fact, t));
    }
    /// See [`Sink::flush`].
    pub fn flush(&mut self) {
        self.each(|s| s.flush());
    }
    /// See [`Sink::finish`].
    pub fn finish(&mut self, sum: &Summary, t: &Tracker) {
        self.each(|s| s.finish(sum, t));
    }
    /// Sinks that failed, with their first error.
    pub fn failures(&self) -> &[(String, io::Error)] {
        &self.failed
    }
}

impl Default for Fanout {
    fn default() -> Self {
        Self::new()
    }
}

/// Where a [`LineWriter`] writes.
pub enum LineDest {
    /// A regular file: on a failed write it is cut back to its last whole line.
    File(std::fs::File),
    /// Anything else (stdout, a pipe).
    Stream(Box<dyn io::Write + Send>),
}

/// A writer that emits only whole lines, each batch in one `write`, so a killed tracer never
/// leaves a torn line behind; a write that fails half-way (a full disk) is cut back.
pub struct LineWriter {
    out: LineDest,
    buf: Vec<u8>,
    good_len: u64,
}

impl LineWriter {
    /// Wraps a destination.
    pub fn new(out: LineDest) -> Self {
        LineWriter {
            out,
            buf: Vec::with_capacity(64 << 10),
            good_len: 0,
        }
    }
    /// The pending buffer; append exactly one line ending in `\n` per call to [`line_done`](Self::line_done).
    pub fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
    /// Marks the end of a line; writes out when the buffer is large.
    pub fn line_done(&mut self) -> io::Result<()> {
        if self.buf.len() >= 60 << 10 {
            self.flush()
        } else {
            Ok(())
        }
    }
    /// Writes all complete lines.
    pub fn flush(&mut self) -> io::Result<()> {
        use std::io::Write;
        if self.buf.is_empty() {
            return Ok(());
        }
        let r = match &mut self.out {
            LineDest::File(f) => match f.write_all(&self.buf) {
                Ok(()) => {
                    self.good_len += self.buf.len() as u64;
                    Ok(())
                }
                Err(e) => {
                    let _ = f.set_len(self.good_len);
                    Err(e)
                }
            },
            LineDest::Stream(w) => w.write_all(&self.buf).and_then(|_| w.flush()),
        };
        self.buf.clear();
        r
    }
}
