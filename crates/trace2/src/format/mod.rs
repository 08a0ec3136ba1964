//! Formatting: turning an [`Event`] into one line of bytes, per target.
//!
//! Each of git's three targets is one implementation of [`Target`]:
//! [`EventTarget`] (JSON lines), [`NormalTarget`] and [`PerfTarget`]. A target
//! only appends bytes to a buffer; where the line goes is the business of
//! [`crate::dst::Destination`]. Formatters are pure apart from reading the
//! clock (for a missing `time`) and the local time zone.

mod event;
mod normal;
mod perf;

pub use event::EventTarget;
pub use normal::NormalTarget;
pub use perf::PerfTarget;

use crate::event::Event;

/// Per-target options, as git reads them from `GIT_TRACE2_*_BRIEF` and
/// `GIT_TRACE2_EVENT_NESTING`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatOptions {
    /// Brief mode: normal and perf drop the time and file:line prefix; the
    /// event target drops `file`/`line` everywhere and `time` except on
    /// `version` and `atexit`.
    pub brief: bool,
    /// Event target only: region and data events deeper than this are not
    /// written (git's default is 2).
    pub event_nesting: u32,
    /// Normal and perf only: the time column's zone, seconds east of UTC.
    /// `None` (git's behaviour) reads the local time zone for every event;
    /// a fixed offset makes the output independent of the environment.
    pub utc_offset: Option<i64>,
}

impl Default for FormatOptions {
    fn default() -> Self {
        FormatOptions {
            brief: false,
            event_nesting: 2,
            utc_offset: None,
        }
    }
}

/// One of git's output layouts.
pub trait Target {
    /// Appends the line for `ev` (without the final LF) to `out`.
    /// Returns `false`, leaving `out` untouched, if this target does not
    /// write this event at all (normal skips regions, event filters deep
    /// nesting, every target skips [`crate::EventKind::Other`]).
    fn format(&self, ev: &Event<'_>, opts: &FormatOptions, out: &mut Vec<u8>) -> bool;
}

/// Names the three targets; also a [`Target`] itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TargetKind {
    /// `GIT_TRACE2`: human-readable lines.
    Normal,
    /// `GIT_TRACE2_PERF`: columns for performance work.
    Perf,
    /// `GIT_TRACE2_EVENT`: JSON lines.
    Event,
}

impl TargetKind {
    /// All three, in the order git visits them for every event.
    pub const ALL: [TargetKind; 3] = [TargetKind::Normal, TargetKind::Perf, TargetKind::Event];

    /// The environment-variable suffix: `_TRACE2`, `_TRACE2_PERF`, `_TRACE2_EVENT`.
    pub fn env_suffix(&self) -> &'static str {
        match self {
            TargetKind::Normal => "_TRACE2",
            TargetKind::Perf => "_TRACE2_PERF",
            TargetKind::Event => "_TRACE2_EVENT",
        }
    }
}

impl Target for TargetKind {
    fn format(&self, ev: &Event<'_>, opts: &FormatOptions, out: &mut Vec<u8>) -> bool {
        match self {
            TargetKind::Normal => NormalTarget.format(ev, opts, out),
            TargetKind::Perf => PerfTarget.format(ev, opts, out),
            TargetKind::Event => EventTarget.format(ev, opts, out),
        }
    }
}

/// Formats `ev` for `target` into `out` (appending, no final LF).
/// Returns whether anything was written; see [`Target::format`].
pub fn format_event(target: TargetKind, ev: &Event<'_>, opts: &FormatOptions, out: &mut Vec<u8>) -> bool {
    target.format(ev, opts, out)
}

/// `%.6f`.
pub(crate) fn push_f6(out: &mut Vec<u8>, v: f64) {
    use std::io::Write;
    let _ = write!(out, "{v:.6}");
}

/// The normal and perf time column: `HH:MM:SS.uuuuuu` in the zone `opts` names
/// (the local one by default), now if the event has no time.
pub(crate) fn push_time(ev: &Event<'_>, opts: &FormatOptions, out: &mut Vec<u8>) {
    let t = ev.time.unwrap_or_else(crate::Timestamp::now);
    match opts.utc_offset {
        Some(off) => t.write_time_at_offset(off, out),
        None => t.write_local_time(out),
    }
}

/// Any integer in decimal.
pub(crate) fn push_int(out: &mut Vec<u8>, v: impl std::fmt::Display) {
    use std::io::Write;
    let _ = write!(out, "{v}");
}

/// Appends `s` padded with spaces on the right to `width` bytes (no truncation).
pub(crate) fn push_padded(out: &mut Vec<u8>, s: &[u8], width: usize) {
    out.extend_from_slice(s);
    for _ in s.len()..width {
        out.push(b' ');
    }
}
