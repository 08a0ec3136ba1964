//! Saved traces into events: the inputs of `analyze`, `diff` and `replay`.
//!
//! Every input turns a file (or a directory of files) into the model's [`Event`]s, so a saved
//! trace goes through the same [`crate::engine::Engine`] and the same outputs as a live run.
//! Formats are told apart by content, never by file name ([`detect`]):
//!
//! - [`capture`]: proctrace's `--record` capture (`{"e":"header",...}` lines): replays exactly.
//! - [`jsonl`]: proctrace's `-o` JSON Lines (`{"event":"start","ts":...,"tool":"proctrace"`).
//! - [`trace2`]: git Trace2 event streams (`{"event":"version","sid":...}` lines), a file with
//!   many processes' lines interleaved or a directory of per-session files, from git or any
//!   other producer.
//!
//! Bad input is an error naming the file and line ([`InputError`]); with `lenient`, bad lines
//! are skipped and counted in [`InputStats`] instead. A truncated last line (a writer killed
//! mid-line) is never an error: it is counted.

use std::path::{Path, PathBuf};

use crate::model::event::Event;
use crate::model::session::{Header, Mode, Summary, Tool};

pub mod capture;
pub mod jsonl;
pub mod notes;
pub mod trace2;

/// What a saved trace is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `proctrace run --record` capture.
    Capture,
    /// `proctrace -o` JSON Lines.
    Jsonl,
    /// git Trace2 event stream(s).
    Trace2,
}

impl Format {
    /// Its name in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Capture => "proctrace capture",
            Format::Jsonl => "proctrace JSON Lines",
            Format::Trace2 => "Trace2 event stream",
        }
    }
}

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file or directory could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A line is not what its format allows (strict mode).
    #[error("{}:{line}: {msg}", path.display())]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        msg: String,
    },
    /// The file is not a trace proctrace can read, or the inputs do not go together.
    #[error("{}: {msg}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        msg: String,
    },
}

/// Reading options shared by every input.
#[derive(Debug, Clone, Default)]
pub struct InputOptions {
    /// Skip and count bad lines instead of failing on the first.
    pub lenient: bool,
    /// proctrace itself, for the header of a trace that does not record one (the commands pass
    /// [`Tool::this_process`]; `None`: a neutral stand-in, for tests).
    pub tool: Option<Tool>,
}

impl InputOptions {
    /// The header of an analysis of `paths` (Trace2 streams record no session of their own).
    pub fn analyze_header(&self, paths: &[PathBuf], ts: u64, real_minus_mono: i64) -> Header {
        Header {
            mode: Mode::Analyze {
                inputs: paths.iter().map(|p| p.display().to_string()).collect(),
            },
            ..self.fallback_header(paths, ts, real_minus_mono)
        }
    }

    /// The header for a trace that records none: `Replay` of `paths`, starting at `ts`.
    pub fn fallback_header(&self, paths: &[PathBuf], ts: u64, real_minus_mono: i64) -> Header {
        let path = paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" ");
        Header {
            mode: Mode::Replay { path },
            ts,
            real_minus_mono,
            tool: self.tool.clone().unwrap_or_else(|| Tool {
                pid: 0,
                argv: vec!["proctrace".into()],
                version: env!("CARGO_PKG_VERSION").into(),
                parent_sid: None,
                host: None,
                utc_offset: None,
            }),
            backend: None,
        }
    }
}

/// Counts kept while reading, for the summary and `analyze --json`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct InputStats {
    /// Files read.
    pub files: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Lines read (bad ones included).
    pub lines: u64,
    /// Bad lines skipped (`--lenient`).
    pub skipped_lines: u64,
    /// Files whose last line was cut short (a writer killed mid-line): ignored.
    pub truncated: u64,
    /// Distinct Trace2 sessions (SIDs); `None` for proctrace's own formats.
    pub sessions: Option<u64>,
    /// Trace2 `too_many_files` events: a directory target hit its `maxFiles` limit, so later
    /// processes wrote nothing (they appear only as their parents' children).
    pub too_many_files: u64,
    /// Trace2 lines older than events already fed (beyond the reorder window, or a file
    /// waiting for a descriptor): still read, their events fed out of time order.
    pub late_lines: u64,
}

/// A saved trace, opened: its header is known; its events are fed once, in order.
pub trait Input {
    /// The session's header: recorded, or made up from what the trace says.
    fn header(&self) -> &Header;
    /// Feeds every event, in order and by value (the model keeps what it needs without copying),
    /// to `feed`. Called once.
    fn feed_all(&mut self, feed: &mut dyn FnMut(Event)) -> Result<(), InputError>;
    /// The summary the trace recorded, if any (known after [`feed_all`](Self::feed_all)).
    fn recorded_summary(&self) -> Option<&Summary>;
    /// Counts (final after [`feed_all`](Self::feed_all)).
    fn stats(&self) -> InputStats;
}

/// Tells a file's format from its first non-blank line; a directory is a Trace2 target
/// directory (one file per session).
pub fn detect(path: &Path) -> Result<Format, InputError> {
    let io = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    if std::fs::metadata(path).map_err(io)?.is_dir() {
        return Ok(Format::Trace2);
    }
    use std::io::Read;
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path)
        .map_err(io)?
        .take(64 << 10)
        .read_to_end(&mut head)
        .map_err(io)?;
    detect_bytes(&head).ok_or_else(|| InputError::Format {
        path: path.to_path_buf(),
        msg: "not a proctrace capture, proctrace JSON Lines or a Trace2 event stream \
              (its first line is neither)"
            .into(),
    })
}

/// [`detect`] on the first bytes of a file.
pub fn detect_bytes(head: &[u8]) -> Option<Format> {
    let line = head
        .split(|&b| b == b'\n')
        .map(|l| l.trim_ascii())
        .find(|l| !l.is_empty())?;
    if line.starts_with(b"{\"e\":") {
        return Some(Format::Capture);
    }
    if line.starts_with(b"{\"event\":\"start\",\"ts\":") && contains(line, b"\"tool\":\"proctrace\"") {
        return Some(Format::Jsonl);
    }
    // The same line as a JSON tool may rewrite it (`jq -S`, Python's spaces).
    if line.starts_with(b"{") && jsonl::is_start_line(line) {
        return Some(Format::Jsonl);
    }
    if line.starts_with(b"{") && contains(line, b"\"event\":") && contains(line, b"\"sid\":") {
        return Some(Format::Trace2);
    }
    None
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Opens the inputs named on a command line: one proctrace trace (capture or JSON Lines), or
/// any number of Trace2 files and directories, read as one set of sessions.
pub fn open(paths: &[PathBuf], opts: &InputOptions) -> Result<Box<dyn Input>, InputError> {
    let Some(first) = paths.first() else {
        return Err(InputError::Format {
            path: PathBuf::new(),
            msg: "no input".into(),
        });
    };
    let formats = paths.iter().map(|p| detect(p)).collect::<Result<Vec<_>, _>>()?;
    match formats[0] {
        Format::Trace2 => {
            if let Some(i) = formats.iter().position(|f| *f != Format::Trace2) {
                return Err(InputError::Format {
                    path: paths[i].clone(),
                    msg: format!(
                        "is a {}; it cannot be read together with Trace2 streams",
                        formats[i].as_str()
                    ),
                });
            }
            trace2_input(paths, opts)
        }
        f if paths.len() > 1 => Err(InputError::Format {
            path: paths[1].clone(),
            msg: format!("only one {} at a time ({} is one)", f.as_str(), first.display()),
        }),
        Format::Capture => Ok(Box::new(capture::CaptureInput::open(first, opts)?)),
        Format::Jsonl => jsonl_input(first, opts),
    }
}

// Filled in by the JSON Lines and Trace2 inputs.
fn jsonl_input(path: &Path, opts: &InputOptions) -> Result<Box<dyn Input>, InputError> {
    Ok(Box::new(jsonl::JsonlInput::open(path, opts)?))
}

fn trace2_input(paths: &[PathBuf], opts: &InputOptions) -> Result<Box<dyn Input>, InputError> {
    Ok(Box::new(trace2::Trace2Input::open(paths, opts)?))
}
