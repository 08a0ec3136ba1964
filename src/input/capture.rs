//! `proctrace run --record` captures: a header line, every event (with the `/proc` details the
//! live run read) and the summary. They replay exactly as they ran.
//!
//! Read as a stream: memory does not grow with the file. Lines come through [`Lines`]: bounded,
//! and in the order they were recorded, which is the order the live run took its events in
//! (time order but for events from different sources a little apart): a replay is that run
//! again. A line more than [`CAPTURE_TOLERANCE_NS`] older than one before it is counted late
//! ([`InputStats::late_lines`]), so a capture put out of order is said, not silently replayed.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::lines::{CAPTURE_TOLERANCE_NS, Lines, Order, capture_key};
use super::{Format, Input, InputError, InputOptions, InputStats};
use crate::model::event::Event;
use crate::model::session::{Header, Summary};

pub use crate::capture_file::{Line, parse_line};

/// A capture being read.
pub struct CaptureInput<R> {
    path: PathBuf,
    lines: Lines<R>,
    header: Header,
    /// Events read while looking for the header or the first timestamp.
    pending: Vec<Event>,
    summary: Option<Summary>,
    stats: InputStats,
    lenient: bool,
    /// The number of the line read last.
    line_no: u64,
}

impl CaptureInput<super::source::LineReader<std::fs::File>> {
    /// Opens a capture file (`-`: stdin), once; refused if it never ends or is empty.
    pub fn open(path: &Path, opts: &InputOptions) -> Result<Self, InputError> {
        let (name, reader) = super::open_one(path, Format::Capture, opts)?;
        CaptureInput::new(reader, &name, opts)
    }
}

impl<R: BufRead> CaptureInput<R> {
    /// Reads a capture from `input`; `path` names it in errors. Reads up to the header (or the
    /// first timestamped event of a capture without one).
    pub fn new(input: R, path: &Path, opts: &InputOptions) -> Result<Self, InputError> {
        let mut me = CaptureInput {
            path: path.to_path_buf(),
            lines: Lines::new(
                input,
                path,
                opts.max_line,
                opts.lenient,
                capture_key,
                Order::AsRecorded {
                    tolerance: CAPTURE_TOLERANCE_NS,
                },
            ),
            header: opts.fallback_header(&[path.to_path_buf()], 0, 0),
            pending: Vec::new(),
            summary: None,
            stats: InputStats {
                files: 1,
                ..Default::default()
            },
            lenient: opts.lenient,
            line_no: 0,
        };
        while let Some(line) = me.next_line()? {
            match line {
                Line::Header(h) => {
                    me.header = h;
                    break;
                }
                Line::Summary(s) => me.summary = Some(s),
                Line::Event(e) => {
                    let ts = e.ts();
                    me.pending.push(e);
                    if let Some(ts) = ts {
                        me.header.ts = ts;
                        break;
                    }
                }
            }
        }
        Ok(me)
    }

    /// The next good line; `None` at the end (or at a truncated last line).
    fn next_line(&mut self) -> Result<Option<Line>, InputError> {
        while let Some(l) = self.lines.next_line() {
            self.line_no = l.no;
            match parse_line(l.text.trim_ascii()) {
                Ok(line) => return Ok(Some(line)),
                Err(_) if !l.complete => {
                    self.stats.truncated += 1;
                    return Ok(None);
                }
                Err(_) if self.lenient => self.stats.skipped_lines += 1,
                Err(e) => {
                    return Err(InputError::Line {
                        path: self.path.clone(),
                        line: l.no,
                        msg: format!("not a proctrace capture line: {e}"),
                    });
                }
            }
        }
        match self.lines.take_error() {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }
}

impl<R: BufRead> Input for CaptureInput<R> {
    fn header(&self) -> &Header {
        &self.header
    }

    fn feed_all(&mut self, feed: &mut dyn FnMut(Event)) -> Result<(), InputError> {
        for e in std::mem::take(&mut self.pending) {
            feed(e);
        }
        while let Some(line) = self.next_line()? {
            match line {
                Line::Event(e) => feed(e),
                Line::Summary(s) => self.summary = Some(s),
                // A second header (two captures concatenated) is not a capture.
                Line::Header(_) => {
                    let msg = "a second header: two captures in one file?".to_string();
                    if !self.lenient {
                        return Err(InputError::Line {
                            path: self.path.clone(),
                            line: self.line_no,
                            msg,
                        });
                    }
                    self.stats.skipped_lines += 1;
                }
            }
        }
        Ok(())
    }

    fn recorded_summary(&self) -> Option<&Summary> {
        self.summary.as_ref()
    }

    fn stats(&self) -> InputStats {
        self.stats.with_lines(self.lines.counts())
    }
}
