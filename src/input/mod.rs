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
//! Inputs behave like files: `-` (stdin), `/dev/stdin`, pipes, FIFOs and process substitution
//! read exactly as a file does; each is opened once and its format told from a buffered prefix
//! of that one reader ([`source`]). Inputs that never end (devices, `/proc`, `/sys`) are
//! refused before a byte is read; an empty input is bad input (`PATH: empty: not a trace`).
//!
//! Bad input is an error naming the file and line ([`InputError`]); with `lenient`, bad lines
//! are skipped and counted in [`InputStats`] instead. A truncated last line (a writer killed
//! mid-line) is never an error: it is counted. No line may be longer than
//! [`InputOptions::max_line`]: memory stays bounded whatever the input. Lines of proctrace's own
//! formats come in time order within a window ([`lines`]); what comes later than that is
//! counted ([`InputStats::late_lines`]), never misplaced silently.

use std::path::{Path, PathBuf};

use crate::model::escape;
use crate::model::event::Event;
use crate::model::session::{Header, Mode, Summary, Tool};

pub mod capture;
pub mod jsonl;
pub mod lines;
pub mod notes;
pub mod source;
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

/// A path in a message, escaped for people: a trace's file name, like the text a message quotes
/// from the trace (an unknown event's name), can hold what a terminal would act on
/// ([`escape`]).
fn shown(p: &Path) -> String {
    escape::text(&crate::model::bytes::from_os(p.as_os_str())).into_owned()
}

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file or directory could not be read.
    #[error("{}: {source}", shown(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A line is not what its format allows (strict mode).
    #[error("{}:{line}: {}", shown(path), escape::text(msg))]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        msg: String,
    },
    /// The file is not a trace proctrace can read, or the inputs do not go together.
    #[error("{}: {}", shown(path), escape::text(msg))]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        msg: String,
    },
}

/// Reading options shared by every input.
#[derive(Debug, Clone)]
pub struct InputOptions {
    /// Skip and count bad lines instead of failing on the first.
    pub lenient: bool,
    /// proctrace itself, for the header of a trace that does not record one (the commands pass
    /// [`Tool::this_process`]; `None`: a neutral stand-in, for tests).
    pub tool: Option<Tool>,
    /// The longest line read, in bytes: a longer one is an error (lenient: skipped and
    /// counted), read in bounded memory. Default [`source::DEFAULT_MAX_LINE`] (64 MiB).
    pub max_line: usize,
}

impl Default for InputOptions {
    fn default() -> Self {
        InputOptions {
            lenient: false,
            tool: None,
            max_line: source::DEFAULT_MAX_LINE,
        }
    }
}

/// A path as the model's text, every byte kept ([`crate::model::bytes`]).
fn text_of(p: &std::path::Path) -> String {
    crate::model::bytes::from_os(p.as_os_str()).into_owned()
}

impl InputOptions {
    /// The header of an analysis of `paths` (Trace2 streams record no session of their own).
    pub fn analyze_header(&self, paths: &[PathBuf], ts: u64, real_minus_mono: i64) -> Header {
        Header {
            mode: Mode::Analyze {
                inputs: paths.iter().map(|p| text_of(p)).collect(),
            },
            ..self.fallback_header(paths, ts, real_minus_mono)
        }
    }

    /// The header for a trace that records none: `Replay` of `paths`, starting at `ts`.
    pub fn fallback_header(&self, paths: &[PathBuf], ts: u64, real_minus_mono: i64) -> Header {
        let path = paths.iter().map(|p| text_of(p)).collect::<Vec<_>>().join(" ");
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
            refused: Vec::new(),
            files: false,
            daemons: Vec::new(),
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
    /// Lines older than events already fed, still read, their events fed out of time order:
    /// Trace2 lines beyond its reorder window ([`trace2::WINDOW_NS`]) or in a file waiting for a
    /// descriptor; lines of proctrace's own formats beyond theirs ([`lines::WINDOW`] lines).
    pub late_lines: u64,
    /// Lines of proctrace's own formats that came after a later line and were put back in time
    /// order (within the window).
    pub reordered_lines: u64,
    /// Lines longer than [`InputOptions::max_line`], skipped (`--lenient`; also counted in
    /// `skipped_lines`).
    pub long_lines: u64,
    /// Entries of a Trace2 directory that are not regular files (FIFOs, sockets, devices,
    /// directories, symlinks): skipped, not read.
    pub skipped_entries: u64,
}

impl InputStats {
    /// These counts with those of the [`lines::Lines`] they were read through.
    pub(crate) fn with_lines(mut self, c: lines::LineCounts) -> InputStats {
        self.lines = c.lines;
        self.bytes = c.bytes;
        self.late_lines += c.late;
        self.reordered_lines += c.reordered;
        self.long_lines += c.long;
        self.skipped_lines += c.long;
        self
    }
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

/// An I/O error while reading `path` as an [`InputError`]: a line over the limit
/// ([`source::LineTooLong`]) names its line.
pub fn read_error(path: &Path, e: std::io::Error) -> InputError {
    if let Some(t) = e.get_ref().and_then(|x| x.downcast_ref::<source::LineTooLong>()) {
        return InputError::Line {
            path: path.to_path_buf(),
            line: t.line,
            msg: t.to_string(),
        };
    }
    InputError::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

/// Tells a file's format from its first non-blank line; a directory is a Trace2 target
/// directory (one file per session). Opens and reads the file's first line; [`open`] does
/// this on the reader it then reads from.
pub fn detect(path: &Path) -> Result<Format, InputError> {
    let opts = InputOptions::default();
    match source::open(path, opts.max_line, false)? {
        source::Opened::Dir(_) => Ok(Format::Trace2),
        source::Opened::Bytes { name, mut reader, .. } => format_of(&name, &mut reader, opts.max_line),
    }
}

/// The format of an opened input, from its first non-blank line (nothing consumed). An empty
/// or blank input is bad input.
fn format_of<R: std::io::Read>(
    name: &Path,
    reader: &mut source::LineReader<R>,
    max_line: usize,
) -> Result<Format, InputError> {
    let (no, line) = reader.first_line().map_err(|e| read_error(name, e))?;
    let bad = |msg: &str| InputError::Format {
        path: name.to_path_buf(),
        msg: msg.into(),
    };
    if line.is_empty() {
        return Err(bad(if reader.ended() {
            "empty: not a trace (no lines)"
        } else {
            "blank lines longer than the line limit: not a trace"
        }));
    }
    if line.len() > max_line {
        return Err(InputError::Line {
            path: name.to_path_buf(),
            line: no,
            msg: source::LineTooLong {
                line: no,
                max: max_line,
            }
            .to_string(),
        });
    }
    detect_line(line).ok_or_else(|| {
        bad(
            "not a proctrace capture, proctrace JSON Lines or a Trace2 event stream \
             (its first line is neither)",
        )
    })
}

/// [`detect`] on the first bytes of a file: the fast check, on the layout proctrace and git
/// write.
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

/// A first line's format: [`detect_bytes`], else the line parsed as JSON (any spacing and key
/// order: `jq -S` sorts keys).
pub fn detect_line(line: &[u8]) -> Option<Format> {
    use std::borrow::Cow;
    if let Some(f) = detect_bytes(line) {
        return Some(f);
    }
    /// The members that tell the formats apart; the rest is skipped unread.
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        e: Option<Cow<'a, str>>,
        #[serde(borrow)]
        event: Option<Cow<'a, str>>,
        #[serde(borrow)]
        tool: Option<Cow<'a, str>>,
        #[serde(borrow)]
        sid: Option<Cow<'a, str>>,
        ts: Option<serde::de::IgnoredAny>,
    }
    let p: Probe<'_> = serde_json::from_slice(line.trim_ascii()).ok()?;
    match (p.e, p.event) {
        (Some(_), None) => Some(Format::Capture),
        (None, Some(ev)) if ev == "start" && p.tool.as_deref() == Some("proctrace") && p.ts.is_some() => {
            Some(Format::Jsonl)
        }
        (None, Some(_)) if p.sid.is_some() => Some(Format::Trace2),
        // A file whose lines are out of order (shuffled, reversed) starts with any line.
        (None, Some(ev)) if JSONL_EVENTS.contains(&ev.as_ref()) && p.ts.is_some() => Some(Format::Jsonl),
        _ => None,
    }
}

/// The `event`s of proctrace's JSON Lines (a Trace2 line has a `sid` besides).
const JSONL_EVENTS: &[&str] = &[
    "start",
    "fork",
    "exec",
    "exit",
    "background",
    "lost",
    "uid",
    "gid",
    "setsid",
    "ptrace",
    "comm",
    "region",
    "data",
    "timer",
    "counter",
    "end",
];

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Opens the inputs named on a command line: one proctrace trace (capture or JSON Lines), or
/// any number of Trace2 files and directories, read as one set of sessions. `-` is stdin (at
/// most once). Each input is opened once and read from that one reader.
pub fn open(paths: &[PathBuf], opts: &InputOptions) -> Result<Box<dyn Input>, InputError> {
    if paths.is_empty() {
        return Err(InputError::Format {
            path: PathBuf::new(),
            msg: "no input".into(),
        });
    }
    if paths.iter().filter(|p| source::is_stdin(p)).count() > 1 {
        return Err(InputError::Format {
            path: PathBuf::from(source::STDIN_NAME),
            msg: "named more than once (`-` is read once)".into(),
        });
    }
    let many = paths.len() > 1;
    let mut opened = Vec::with_capacity(paths.len());
    for path in paths {
        let o = source::open(path, opts.max_line, opts.lenient)?;
        opened.push(match o {
            source::Opened::Dir(d) => (Format::Trace2, trace2::Named::Dir(d)),
            source::Opened::Bytes {
                name,
                mut reader,
                regular,
            } => {
                let f = format_of(&name, &mut reader, opts.max_line)?;
                let first = match f {
                    Format::Trace2 => trace2::first_time_of(reader.first_line().map_or(&[][..], |l| l.1)),
                    _ => 0,
                };
                // Many regular files are opened again as the merge reaches them (descriptors
                // stay under the limit); a stream is read from the one reader.
                let reader = (!(many && regular && f == Format::Trace2)).then_some(reader);
                (
                    f,
                    trace2::Named::File {
                        path: if regular { path.clone() } else { name.clone() },
                        name,
                        first,
                        reader,
                    },
                )
            }
        });
    }
    match opened[0].0 {
        Format::Trace2 => {
            if let Some(i) = opened.iter().position(|o| o.0 != Format::Trace2) {
                return Err(InputError::Format {
                    path: source::display_name(&paths[i]),
                    msg: format!(
                        "is a {}; it cannot be read together with Trace2 streams",
                        opened[i].0.as_str()
                    ),
                });
            }
            let named = opened.into_iter().map(|o| o.1).collect();
            Ok(Box::new(trace2::Trace2Input::open_named(named, paths, opts)?))
        }
        f if many => Err(InputError::Format {
            path: source::display_name(&paths[1]),
            msg: format!(
                "only one {} at a time ({} is one)",
                f.as_str(),
                source::display_name(&paths[0]).display()
            ),
        }),
        f => {
            let Some((
                _,
                trace2::Named::File {
                    name,
                    reader: Some(reader),
                    ..
                },
            )) = opened.pop()
            else {
                return Err(InputError::Format {
                    path: source::display_name(&paths[0]),
                    msg: "not a file".into(),
                });
            };
            Ok(match f {
                Format::Capture => Box::new(capture::CaptureInput::new(reader, &name, opts)?),
                _ => Box::new(jsonl::JsonlInput::new(reader, &name, opts)?),
            })
        }
    }
}

/// Opens one proctrace trace file (`-`: stdin) for a reader of its format: refused if it never
/// ends, empty or not that format ([`Format::Capture`] or [`Format::Jsonl`]).
pub(crate) fn open_one(
    path: &Path,
    want: Format,
    opts: &InputOptions,
) -> Result<(PathBuf, source::LineReader<std::fs::File>), InputError> {
    match source::open(path, opts.max_line, opts.lenient)? {
        source::Opened::Dir(_) => Err(InputError::Format {
            path: path.to_path_buf(),
            msg: format!("is a directory, not a {}", want.as_str()),
        }),
        source::Opened::Bytes { name, mut reader, .. } => {
            format_of(&name, &mut reader, opts.max_line)
                .map(|_| ())
                .or_else(|e| match e {
                    // Not recognised is for the format's own reader to say, line by line.
                    InputError::Format { ref msg, .. } if msg.starts_with("not a proctrace") => Ok(()),
                    e => Err(e),
                })?;
            Ok((name, reader))
        }
    }
}
