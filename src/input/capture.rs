//! `proctrace run --record` captures: a header line, every event (with the `/proc` details the
//! live run read) and the summary. They replay exactly as they ran.
//!
//! Read as a stream: memory does not grow with the file.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::{Input, InputError, InputOptions, InputStats};
use crate::model::event::Event;
use crate::model::session::{Header, Summary};

pub use crate::capture_file::{Line, parse_line};

/// A capture being read.
pub struct CaptureInput<R> {
    path: PathBuf,
    input: R,
    header: Header,
    /// Events read while looking for the header or the first timestamp.
    pending: Vec<Event>,
    summary: Option<Summary>,
    stats: InputStats,
    lenient: bool,
    buf: Vec<u8>,
}

impl CaptureInput<std::io::BufReader<std::fs::File>> {
    /// Opens a capture file.
    pub fn open(path: &Path, opts: &InputOptions) -> Result<Self, InputError> {
        let f = std::fs::File::open(path).map_err(|source| InputError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        CaptureInput::new(std::io::BufReader::with_capacity(256 << 10, f), path, opts)
    }
}

impl<R: BufRead> CaptureInput<R> {
    /// Reads a capture from `input`; `path` names it in errors. Reads up to the header (or the
    /// first timestamped event of a capture without one).
    pub fn new(input: R, path: &Path, opts: &InputOptions) -> Result<Self, InputError> {
        let mut me = CaptureInput {
            path: path.to_path_buf(),
            input,
            header: opts.fallback_header(&[path.to_path_buf()], 0, 0),
            pending: Vec::new(),
            summary: None,
            stats: InputStats {
                files: 1,
                ..Default::default()
            },
            lenient: opts.lenient,
            buf: Vec::with_capacity(4096),
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
        loop {
            self.buf.clear();
            let n = self
                .input
                .read_until(b'\n', &mut self.buf)
                .map_err(|source| InputError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            if n == 0 {
                return Ok(None);
            }
            self.stats.bytes += n as u64;
            self.stats.lines += 1;
            let complete = self.buf.last() == Some(&b'\n');
            let line = self.buf.trim_ascii();
            if line.is_empty() {
                continue;
            }
            match parse_line(line) {
                Ok(l) => return Ok(Some(l)),
                Err(_) if !complete => {
                    self.stats.truncated += 1;
                    return Ok(None);
                }
                Err(_) if self.lenient => self.stats.skipped_lines += 1,
                Err(e) => {
                    return Err(InputError::Line {
                        path: self.path.clone(),
                        line: self.stats.lines,
                        msg: format!("not a proctrace capture line: {e}"),
                    });
                }
            }
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
                            line: self.stats.lines,
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
        self.stats
    }
}
