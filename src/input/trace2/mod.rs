//! git Trace2 event streams as the model's events: any number of files (many processes' lines
//! interleaved) and target directories (one file per session, the `git-trace2-discard`
//! sentinel included), from git or any other producer.
//!
//! Reading is one pass over every line that keeps, per session (SID), only what makes the
//! process tree: its command line, exits, execs, children (`child_start`/`child_exit`/
//! `child_ready`) and the regions and data it reported (paired by [`super::notes::NoteBuilder`]).
//!
//! It streams: memory follows the sessions alive at once, not the size of the input.
//! - Sessions are grouped in **families** by their SID's first component (a root and every
//!   session under it: one process tree). A family lives from its first line until all its
//!   processes ended (`atexit`/`signal` of every session) and no line of it came for
//!   [`WINDOW_NS`] (2 s of stream time: the time of the latest line; or [`WINDOW_LINES`] lines
//!   were read since, for streams whose times jump back); then it is built into events (below)
//!   and dropped. Families with a session that never ends (killed) live to the end.
//!   A line for a family already built (a detached fork writing more than the window after
//!   its parent's `atexit`) starts a new family: its session becomes a root of its own.
//! - Built events wait in a heap and are fed in time order once nothing can come before them:
//!   earlier than every live family's first time and than the window behind stream time.
//!   Writers append in near time order, so lines up to the window out of order come out in
//!   order. A line older than events already fed (beyond the window) is still read and its
//!   events fed, out of order, and counted (`late_lines`); never dropped. At most
//!   [`MAX_HELD`] events wait (beyond, the oldest go).
//! - Nothing is fed before it is known whether the trace has one root (a `Root` event comes
//!   first then): at a second root, or at the end.
//! - pids are claimed as families are built: a pid alive in an earlier-built process over the
//!   same time gets a stand-in; what was fed and ended is forgotten.
//! - Files: one file is read straight through; several (a target directory, or many paths)
//!   are ordered by the time of their first event (only the first line is read at open) and
//!   merged by time, a file opened when the merge reaches its first event and closed at its
//!   end: open files are the sessions overlapping in time, at most half the descriptor soft
//!   limit (a file waits for one to close beyond that; its lines may then come late).
//!
//! Then sessions become processes:
//! - A session whose parent SID (`parent/child`, parts opaque) is absent is a root.
//! - A child session that follows its parent's `exec` (and has the same `-P<pid>` suffix, when
//!   both have one) is the same process exec'ing: an [`Event::Exec`] on it.
//! - Every `child_start` is a process (fork and exec at `child_start`, exit from `child_exit`,
//!   background from `child_ready`), with or without a session of its own (hooks via sh, ssh,
//!   editors). A child session is matched to its parent's `child_start` by pid (the parent's
//!   `child_exit` pid = the SID's `-P` suffix), else by time (the `child_start`'s span contains
//!   the session's start) and argv. A session inside a `child_start`'s span whose pid differs
//!   (the child was a shell, a hook script) is that child's child. A session no `child_start`
//!   accounts for is a child of its parent's process.
//! - A session that writes another `exit` after its `atexit` (a detached fork: `git
//!   maintenance run --detach`, `gc --auto`) has a forked child reported as background; what
//!   the session writes after the first `atexit` is that child's.
//! - A `signal` event is an exit by that signal; a session with neither `exit` nor `atexit`
//!   (killed mid-write) has its parent's `child_exit` status (128+N when it wrote no exit: signal
//!   N) or stays running: no guessed status.
//!
//! pids: the parent's `child_exit`/`child_ready` pid, else the SID's `-P<hex>` suffix, else a
//! stand-in above `PID_MAX_LIMIT` (4194304) so it never collides with a real one; the same pid
//! alive twice at once (streams from many hosts) gets a stand-in for the later one. Failed
//! spawns (`child_exit` pid -1) are not processes.
//!
//! Within a family, matching (child sessions to `child_start`s, execs) sees the whole family, as
//! it always did: the look-ahead is the family's life plus the window.
//!
//! Times: the model's clock is UTC ns (`real_minus_mono = 0`); an event without `time` (brief
//! streams) is placed at `version.time + t_abs`, else at the last time its session showed.
//!
//! By job: `files` merges many files by time (descriptor-limited); `stream` takes each line
//! into its family's `session` state and builds families as they end; `build` turns one
//! family into processes; `order` holds built events in time order and hands out pids. This
//! module opens the inputs and is the [`Input`].

mod build;
mod files;
mod order;
mod session;
mod stream;
#[cfg(test)]
mod tests;

use std::io::BufRead;
use std::path::{Path, PathBuf};

use trace2::Timestamp;
use trace2::reader::ReadError;

use super::notes::Clock;
use super::{Input, InputError, InputOptions, InputStats};
use crate::model::event::{Event, ExitStatus, Pid};
use crate::model::session::{Header, Summary};
#[cfg(test)]
use build::cost_figure;
use files::{FileStart, Reading, first_time, read_files};
use stream::Stream;

/// The highest pid Linux hands out (`PID_MAX_LIMIT`); stand-ins are above it.
pub const PID_MAX_LIMIT: Pid = 4_194_304;

/// How far (stream time) a line may lag behind the latest time seen and still be put in order,
/// and how long a family whose processes all ended waits for more lines before it is built.
pub const WINDOW_NS: u64 = 2_000_000_000;

/// Built events held for ordering at most; beyond it the oldest go out (and lines older than
/// them are counted late).
pub const MAX_HELD: usize = 1 << 18;

/// A family whose processes all ended is built at the latest this many lines later, whatever
/// the times say (streams whose times jump back, like files concatenated, never reach a
/// deadline in stream time).
pub const WINDOW_LINES: u64 = 100_000;

/// Git Trace2 event streams, read: an [`Input`].
pub struct Trace2Input {
    header: Header,
    stats: InputStats,
    source: Source,
    /// A bad line (strict mode): reported after what came before it was fed.
    error: Option<InputError>,
}

/// Where the events come from: files, read as they are fed, or events already made (a stream
/// from memory).
enum Source {
    Files { files: Vec<FileStart>, how: Reading },
    Made(Vec<Event>),
    Done,
}

fn ns(t: Timestamp) -> u64 {
    Clock { offset_ns: 0 }.ns(t)
}

fn secs_ns(s: f64) -> u64 {
    if s.is_finite() && s > 0.0 {
        (s * 1e9).round().min(u64::MAX as f64 / 2.0) as u64
    } else {
        0
    }
}

fn strings(v: &[std::borrow::Cow<'_, str>]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn status_of(code: i32) -> ExitStatus {
    ExitStatus::Code(code & 0xff)
}

fn wait_status(s: ExitStatus) -> u32 {
    match s {
        ExitStatus::Code(c) => ((c & 0xff) as u32) << 8,
        ExitStatus::Signal { signal, core } => (signal & 0x7f) as u32 | if core { 0x80 } else { 0 },
    }
}

fn input_error(e: ReadError, name: &Path) -> InputError {
    match e {
        ReadError::Malformed { line, reason, .. } => InputError::Line {
            path: name.to_path_buf(),
            line: line as u64,
            msg: format!("not a Trace2 event: {reason}"),
        },
        ReadError::Io { source, .. } => super::read_error(name, source),
    }
}

/// The time of the first event of a file whose first line is `line` (0 when it has none, or is
/// not an event: the merge then opens the file first).
pub(crate) fn first_time_of(line: &[u8]) -> u64 {
    trace2::reader::parse_line_borrowed(line)
        .ok()
        .and_then(|ev| ev.time)
        .map_or(0, ns)
}

/// A Trace2 input named on the command line, opened by [`crate::input::open`].
pub(crate) enum Named {
    /// A target directory (its regular files are read).
    Dir(PathBuf),
    /// A file or stream.
    File {
        /// Where to open it again (a regular file; else its name).
        path: PathBuf,
        /// Its name in messages (`<stdin>` for `-`).
        name: PathBuf,
        /// The time of its first event.
        first: u64,
        /// Open (a stream, or the only input): read from this reader, never opened again.
        reader: Option<crate::input::source::LineReader<std::fs::File>>,
    },
}

impl Trace2Input {
    /// Opens Trace2 event files and target directories (every regular file in them). Only the
    /// first line of each file is read here (to order the files by time); the rest is read
    /// while [`feed_all`](Input::feed_all) runs. A path that cannot be read is an error; a bad
    /// line is one too (strict mode), reported by `feed_all` after what came before it. (As
    /// [`crate::input::open`] opens them, `-` and streams included.)
    pub fn open(paths: &[PathBuf], opts: &InputOptions) -> Result<Trace2Input, InputError> {
        use crate::input::source::{self, Opened};
        let mut named = Vec::with_capacity(paths.len());
        for path in paths {
            named.push(match source::open(path, opts.max_line, opts.lenient)? {
                Opened::Dir(d) => Named::Dir(d),
                Opened::Bytes {
                    name,
                    mut reader,
                    regular,
                } => {
                    let first =
                        first_time_of(reader.first_line().map_err(|e| super::read_error(&name, e))?.1);
                    Named::File {
                        path: if regular { path.clone() } else { name.clone() },
                        name,
                        first,
                        reader: (!regular || paths.len() == 1).then_some(reader),
                    }
                }
            });
        }
        Trace2Input::open_named(named, paths, opts)
    }

    /// [`open`](Self::open) of inputs already opened (and told to be Trace2).
    pub(crate) fn open_named(
        named: Vec<Named>,
        paths: &[PathBuf],
        opts: &InputOptions,
    ) -> Result<Trace2Input, InputError> {
        let mut seen = std::collections::HashSet::new();
        let mut files = Vec::new();
        let mut skipped_entries = 0;
        for n in named {
            match n {
                Named::Dir(dir) => {
                    let io = |source| InputError::Io {
                        path: dir.clone(),
                        source,
                    };
                    let mut names = Vec::new();
                    for e in std::fs::read_dir(&dir).map_err(io)?.filter_map(|e| e.ok()) {
                        // Only regular files: a FIFO, socket or device in a target directory
                        // is not a session's file (and might never end).
                        if e.file_type().is_ok_and(|t| t.is_file()) {
                            names.push(e.path());
                        } else {
                            skipped_entries += 1;
                        }
                    }
                    names.sort();
                    for f in names {
                        // A file named twice (a directory and a file in it) is read once: its
                        // lines twice would look like a second run of every session in it.
                        if !seen.insert(std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone())) {
                            continue;
                        }
                        let first = first_time(&f, opts.max_line)?;
                        files.push(FileStart {
                            path: f,
                            first,
                            reader: None,
                        });
                    }
                }
                Named::File {
                    path,
                    name,
                    first,
                    reader,
                } => {
                    if reader.is_none()
                        && !seen.insert(std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone()))
                    {
                        continue;
                    }
                    files.push(FileStart {
                        path: if reader.is_some() { name } else { path },
                        first,
                        reader,
                    });
                }
            }
        }
        // Stable: files starting together stay in name order.
        files.sort_by_key(|f| f.first);
        let earliest = files
            .iter()
            .map(|f| f.first)
            .filter(|&t| t > 0)
            .min()
            .unwrap_or(0);
        Ok(Trace2Input {
            header: opts.analyze_header(paths, earliest, 0),
            stats: InputStats {
                sessions: Some(0),
                skipped_entries,
                ..Default::default()
            },
            source: Source::Files {
                files,
                how: Reading {
                    lenient: opts.lenient,
                    max_line: opts.max_line,
                },
            },
            error: None,
        })
    }

    /// Reads one stream from memory or any reader (`name` names it in errors and the header),
    /// whole, here. Never fails here and never panics: a bad line is reported by
    /// [`feed_all`](Input::feed_all).
    pub fn from_reader<R: BufRead>(input: R, name: &Path, opts: &InputOptions) -> Trace2Input {
        let mut st = Stream::new(opts.lenient);
        let mut counted = CountingReader { inner: input, n: 0 };
        let mut events = Vec::new();
        let feed = &mut |e| events.push(e);
        st.read(&mut counted, name, feed);
        st.finish(feed);
        st.stats.bytes += counted.n;
        Trace2Input {
            header: opts.analyze_header(&[name.to_path_buf()], st.min_time.unwrap_or(0), 0),
            stats: st.stats,
            source: Source::Made(events),
            error: st.error,
        }
    }
}

struct CountingReader<R> {
    inner: R,
    n: u64,
}

impl<R: BufRead> std::io::Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for CountingReader<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.n += amt as u64;
        self.inner.consume(amt)
    }
}

impl Input for Trace2Input {
    fn header(&self) -> &Header {
        &self.header
    }

    fn feed_all(&mut self, feed: &mut dyn FnMut(Event)) -> Result<(), InputError> {
        match std::mem::replace(&mut self.source, Source::Done) {
            Source::Files { files, how } => {
                let mut st = Stream::new(how.lenient);
                read_files(files, how, &mut st, feed);
                st.finish(feed);
                st.stats.skipped_entries = self.stats.skipped_entries;
                self.stats = st.stats;
                if let Some(e) = st.error {
                    self.error = Some(e);
                }
            }
            Source::Made(events) => events.into_iter().for_each(feed),
            Source::Done => {}
        }
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn recorded_summary(&self) -> Option<&Summary> {
        None
    }

    fn stats(&self) -> InputStats {
        self.stats
    }
}
