//! Many Trace2 files as one stream: ordered by the time of their first event and merged by time,
//! a file opened when the merge reaches its first event and closed at its end, so that at most
//! half the descriptor limit is open at once. It never holds a file's lines: each goes to the
//! [`super::stream::Stream`] as it is read.

use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

use trace2::reader::{EventReader, ReadOptions};

use super::stream::Stream;
use super::{input_error, ns};
use crate::input::InputError;
use crate::model::event::Event;

/// A file to read and the time of its first event (where the merge opens it).
pub(super) struct FileStart {
    pub(super) path: PathBuf,
    pub(super) first: u64,
}

/// The time of a file's first event (0 when its first line has none: opened first).
pub(super) fn first_time(path: &Path) -> Result<u64, InputError> {
    let file = std::fs::File::open(path).map_err(|source| InputError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut r = EventReader::new(
        std::io::BufReader::with_capacity(8 << 10, file),
        String::new(),
        ReadOptions { lenient: true },
    );
    let mut first = 0;
    let _ = r.for_each_event(|ev, _| {
        first = ev.time.map_or(0, ns);
        false
    });
    Ok(first)
}

/// How many files the merge keeps open at once: half the soft limit on descriptors (the rest
/// is the outputs' and the process's), at least 4, at most 4096.
pub(super) fn max_open_files() -> usize {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given, nothing else.
    let soft = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } {
        0 => r.rlim_cur,
        _ => 1024,
    };
    usize::try_from(soft / 2).unwrap_or(4096).clamp(4, 4096)
}

/// One file of the merge, open, with its next event.
pub(super) struct OpenFile {
    pub(super) path: PathBuf,
    pub(super) reader: EventReader<std::io::BufReader<std::fs::File>>,
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
pub(super) fn read_files(files: &[FileStart], lenient: bool, st: &mut Stream, feed: &mut dyn FnMut(Event)) {
    if let [one] = files {
        st.stats.bytes += std::fs::metadata(&one.path).map(|m| m.len()).unwrap_or(0);
        match std::fs::File::open(&one.path) {
            Ok(f) => {
                st.read(std::io::BufReader::with_capacity(256 << 10, f), &one.path, feed);
            }
            Err(source) => {
                st.error = Some(InputError::Io {
                    path: one.path.clone(),
                    source,
                })
            }
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
        while let Some(fs) = files.get(next) {
            let head = heap.peek().map(|r| r.0.0);
            if head.is_some_and(|h| fs.first > h || n_open >= cap) {
                break;
            }
            next += 1;
            st.stats.files += 1;
            let file = match std::fs::File::open(&fs.path) {
                Ok(f) => f,
                Err(source) => {
                    err = Some(InputError::Io {
                        path: fs.path.clone(),
                        source,
                    });
                    break 'merge;
                }
            };
            st.stats.bytes += file.metadata().map(|m| m.len()).unwrap_or(0);
            let mut of = OpenFile {
                path: fs.path.clone(),
                reader: EventReader::new(
                    std::io::BufReader::with_capacity(64 << 10, file),
                    fs.path.display().to_string(),
                    ReadOptions { lenient },
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
