//! Sinks turn the tracker's facts into output. They only format: they never decide what a process
//! is, and they never touch the connector.
//!
//! Adding an output format means one new module implementing [`Sink`] and declaring its
//! [`crate::output::OutputSpec`], plus its line in [`crate::output::registry::OUTPUTS`].
//!
//! One sink is not a format: [`progress`], `run`'s live status line on a terminal, which
//! [`crate::output`] adds only when stderr is one. It shows state (what runs now) rather than
//! facts, through [`Sink::refresh`].

use std::io;

use crate::model::event::Event;
use crate::model::session::{Header, Summary};
use crate::model::tracker::{Fact, NotesKept, Tracker};

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
pub mod record;
pub mod text;
pub mod trace2;

/// Output for facts.
pub trait Sink {
    /// Called once before any fact.
    fn start(&mut self, _header: &Header) -> io::Result<()> {
        Ok(())
    }
    /// One fact; `tracker` resolves the records it names.
    fn fact(&mut self, fact: &Fact, tracker: &Tracker) -> io::Result<()>;
    /// Every event the model is fed, as fed (the capture, `--record`, records them); only called
    /// when [`wants_events`](Self::wants_events) says so.
    fn event(&mut self, _event: &Event) -> io::Result<()> {
        Ok(())
    }
    /// Whether this sink reads [`event`](Self::event)s.
    fn wants_events(&self) -> bool {
        false
    }
    /// How long this sink reads the Trace2 notes (regions, data) of a record after their fact:
    /// the model keeps them no longer than the outputs need ([`NotesKept`]).
    fn notes_kept(&self) -> NotesKept {
        NotesKept::AtFact
    }
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

/// Which output a sink is, in messages: "stopped writing {what} to '{path}'".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// What it writes ("JSON Lines").
    pub what: &'static str,
    /// Where (`-` for stdout).
    pub path: String,
}

/// Fans facts out to several sinks; a sink that fails is dropped with its first error and the
/// others go on, so a full disk or a closed pipe never stops the trace (or harms the traced
/// command). The failures are reported at the end ([`crate::output::Outputs::finish`]).
pub struct Fanout {
    sinks: Vec<(Label, Box<dyn Sink>)>,
    failed: Vec<(Label, io::Error)>,
    wants_events: bool,
    /// What reads the notes once the run has ended (the whole-run reports, the text summary):
    /// [`NotesKept::ToEnd`] unless the registry said nothing does.
    at_end: NotesKept,
}

impl Fanout {
    /// Empty.
    pub fn new() -> Self {
        Fanout {
            sinks: Vec::new(),
            failed: Vec::new(),
            wants_events: false,
            at_end: NotesKept::ToEnd,
        }
    }

    /// Nothing reads the records' notes once the run has ended (no whole-run report, no text
    /// summary): they need to be kept only as long as the sinks need them.
    pub fn no_notes_at_end(&mut self) {
        self.at_end = NotesKept::AtFact;
    }

    /// How long the model must keep notes: as long as any sink, or what comes at the end, needs
    /// them.
    pub fn notes_kept(&self) -> NotesKept {
        self.sinks
            .iter()
            .map(|(_, s)| s.notes_kept())
            .fold(self.at_end, NotesKept::max)
    }

    /// Adds a sink writing `what` to `path`.
    pub fn add(&mut self, what: &'static str, path: impl Into<String>, sink: Box<dyn Sink>) {
        self.wants_events |= sink.wants_events();
        self.sinks.push((
            Label {
                what,
                path: path.into(),
            },
            sink,
        ));
    }

    fn each(&mut self, mut f: impl FnMut(&mut dyn Sink) -> io::Result<()>) {
        let mut i = 0;
        while i < self.sinks.len() {
            if let Err(e) = f(self.sinks[i].1.as_mut()) {
                let (label, _) = self.sinks.remove(i);
                self.failed.push((label, e));
                self.wants_events = self.sinks.iter().any(|(_, s)| s.wants_events());
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
    /// See [`Sink::event`]: to the sinks that read events.
    pub fn event(&mut self, ev: &Event) {
        if self.wants_events {
            self.each(|s| if s.wants_events() { s.event(ev) } else { Ok(()) });
        }
    }
    /// Whether a sink reads events (the engine then hands it what it resolves itself, e.g. an
    /// exec's details read from `/proc`).
    pub fn wants_events(&self) -> bool {
        self.wants_events
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
    pub fn failures(&self) -> &[(Label, io::Error)] {
        &self.failed
    }
    /// stdout's reader went away (`| head`): a sink writing to stdout failed with a closed pipe.
    /// `watch` then ends, quietly.
    pub fn stdout_closed(&self) -> bool {
        self.failed
            .iter()
            .any(|(l, e)| l.path == "-" && e.kind() == io::ErrorKind::BrokenPipe)
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
