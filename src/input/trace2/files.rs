//! Many Trace2 files as one stream: ordered by the time of their first event and merged by time,
//! a file opened when the merge reaches its first event and closed at its end, so that at most
//! half the descriptor limit is open at once. It never holds a file's lines: each goes to the
//! [`super::stream::Stream`] as it is read.

use std::cell::Cell;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use trace2::reader::{EventReader, ReadOptions};

use super::stream::Stream;
use super::{first_time_of, input_error, ns};
use crate::input::InputError;
use crate::input::source::{LineReader, MERGE_BUFFER};
use crate::model::event::Event;

/// A file to read and the time of its first event (where the merge opens it).
pub(super) struct FileStart {
    /// Where to open it (a regular file), and its name in messages.
    pub(super) path: PathBuf,
    pub(super) first: u64,
    /// Already open (a stream named on the command line: never opened again).
    pub(super) reader: Option<LineReader<File>>,
}

/// How the files are read.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reading {
    pub(super) lenient: bool,
    pub(super) max_line: usize,
}

/// The time of a file's first event (0 when its first line has none: opened first), from its
/// first line (bounded by the limit).
pub(super) fn first_time(path: &Path, max_line: usize) -> Result<u64, InputError> {
    let io = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let mut r = LineReader::with_capacity(8 << 10, file, max_line, true);
    Ok(first_time_of(r.first_line().map_err(io)?.1))
}

/// How many files the merge keeps open at once: half the soft limit on descriptors (the rest
/// is the outputs' and the process's), at least 4, at most 4096.
pub(super) fn max_open_files() -> usize {
    use nix::sys::resource::{Resource, getrlimit};
    let soft = getrlimit(Resource::RLIMIT_NOFILE).map_or(1024, |(soft, _)| soft);
    usize::try_from(soft / 2).unwrap_or(4096).clamp(4, 4096)
}

/// Bytes read and lines over the limit dropped, of files already closed.
#[derive(Default)]
pub(super) struct Tally {
    bytes: Cell<u64>,
    long_lines: Cell<u64>,
}

/// A file's reader, line-bounded, that adds its counts to a [`Tally`] when it is dropped (the
/// [`EventReader`] that owns it does not give it back).
pub(super) struct Tallied {
    inner: LineReader<File>,
    tally: Rc<Tally>,
}

impl Tallied {
    fn new(r: LineReader<File>, tally: &Rc<Tally>) -> Tallied {
        Tallied {
            inner: r.limit_lines(),
            tally: Rc::clone(tally),
        }
    }
}

impl Drop for Tallied {
    fn drop(&mut self) {
        let t = &self.tally;
        t.bytes.set(t.bytes.get() + self.inner.bytes_read());
        t.long_lines.set(t.long_lines.get() + self.inner.long_lines());
    }
}

impl std::io::Read for Tallied {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read(buf)
    }
}

impl BufRead for Tallied {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.inner.consume(amt)
    }
}

/// `fs`'s reader: the one it came with, or the file opened (again) by path.
fn reader_of(fs: &mut FileStart, how: Reading, tally: &Rc<Tally>) -> Result<Tallied, InputError> {
    let r = match fs.reader.take() {
        Some(r) => r,
        None => LineReader::with_capacity(
            MERGE_BUFFER,
            File::open(&fs.path).map_err(|source| InputError::Io {
                path: fs.path.clone(),
                source,
            })?,
            how.max_line,
            how.lenient,
        ),
    };
    Ok(Tallied::new(r, tally))
}

/// One file of the merge, open, with its next event.
pub(super) struct OpenFile {
    pub(super) path: PathBuf,
    pub(super) reader: EventReader<Tallied>,
    /// The time of the last event that had one (for lines without `time`).
    pub(super) last: u64,
}

impl OpenFile {
    /// The next event and the time it is merged at, or None at the end (the error, if any,
    /// goes to `err`).
    pub(super) fn next(&mut self, err: &mut Option<InputError>) -> Option<(u64, trace2::Event<'static>)> {
        match self.reader.next()? {
            Ok(rec) => {
                if let Some(t) = rec.event.time {
                    self.last = self.last.max(ns(t));
                }
                Some((self.last, rec.event))
            }
            Err(e) => {
                *err = Some(input_error(e, &self.path));
                None
            }
        }
    }
}

/// Reads `files` (sorted by first time) through `st`: one file straight through; several as a
/// k-way merge by time that opens a file when the merge reaches its first event and closes it
/// at its end, so open files are the sessions overlapping in time (waiting, at the descriptor
/// limit, for one to close: its lines then come late, counted).
pub(super) fn read_files(
    mut files: Vec<FileStart>,
    how: Reading,
    st: &mut Stream,
    feed: &mut dyn FnMut(Event),
) {
    let tally = Rc::new(Tally::default());
    read_all(&mut files, how, st, feed, &tally);
    st.stats.bytes += tally.bytes.get();
    st.stats.long_lines += tally.long_lines.get();
}

fn read_all(
    files: &mut [FileStart],
    how: Reading,
    st: &mut Stream,
    feed: &mut dyn FnMut(Event),
    tally: &Rc<Tally>,
) {
    let lenient = how.lenient;
    if let [one] = files {
        match reader_of(one, how, tally) {
            Ok(r) => {
                st.read(r, &one.path, feed);
            }
            Err(e) => st.error = Some(e),
        }
        return;
    }
    let cap = max_open_files();
    let mut open: Vec<Option<(OpenFile, trace2::Event<'static>)>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut heap: BinaryHeap<std::cmp::Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut next = 0;
    let mut n_open = 0;
    let mut err = None;
    let close = |st: &mut Stream, f: OpenFile| st.count(f.reader.stats());
    'merge: loop {
        // Open the files that start before the earliest pending event.
        while let Some(fs) = files.get_mut(next) {
            let head = heap.peek().map(|r| r.0.0);
            if head.is_some_and(|h| fs.first > h || n_open >= cap) {
                break;
            }
            next += 1;
            st.stats.files += 1;
            let reader = match reader_of(fs, how, tally) {
                Ok(r) => r,
                Err(e) => {
                    err = Some(e);
                    break 'merge;
                }
            };
            let mut of = OpenFile {
                path: fs.path.clone(),
                reader: EventReader::new(
                    reader,
                    fs.path.display().to_string(),
                    ReadOptions {
                        lenient,
                        rewrite: Some(crate::model::bytes::hold_line),
                    },
                ),
                last: fs.first,
            };
            match of.next(&mut err) {
                Some((t, ev)) => {
                    let slot = free.pop().unwrap_or_else(|| {
                        open.push(None);
                        open.len() - 1
                    });
                    open[slot] = Some((of, ev));
                    heap.push(std::cmp::Reverse((t, slot)));
                    n_open += 1;
                }
                None => {
                    close(st, of);
                    if err.is_some() {
                        break 'merge;
                    }
                }
            }
        }
        let Some(std::cmp::Reverse((_, slot))) = heap.pop() else {
            break;
        };
        let Some((mut of, ev)) = open[slot].take() else {
            continue;
        };
        st.take(&ev, feed);
        match of.next(&mut err) {
            Some((t, ev)) => {
                open[slot] = Some((of, ev));
                heap.push(std::cmp::Reverse((t, slot)));
            }
            None => {
                close(st, of);
                free.push(slot);
                n_open -= 1;
                if err.is_some() {
                    break;
                }
            }
        }
    }
    for (of, _) in open.into_iter().flatten() {
        close(st, of);
    }
    if err.is_some() {
        st.error = err;
    }
}
