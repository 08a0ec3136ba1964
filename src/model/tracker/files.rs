//! The files each process used (`--files`): per process, the first time of each path and
//! access, in the order first seen, never more than the caps (a process opening a million
//! temporary files costs a bounded amount; what is dropped is counted). Part of [`Tracker`].

use std::collections::HashMap;

use super::*;
use crate::model::event::FileAccess;

/// Most file uses one process's record keeps; more are dropped and counted
/// ([`TrackerStats::files_dropped`]).
pub const FILES_PER_PROCESS_MAX: usize = 100_000;
/// Most file uses all records keep together; more are dropped and counted.
pub const FILES_HELD_MAX: u64 = 2_000_000;

/// How long after its exit a process's record waits for file uses read late (fanotify is read
/// by a thread of its own), when records are not retained: 2 s of trace time.
pub const LATE_USES_NS: u64 = 2_000_000_000;

/// One use of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileUse {
    /// When it was first used this way.
    pub ts: u64,
    /// How.
    pub access: FileAccess,
    /// The absolute path (the model's text).
    pub path: Box<str>,
    /// A rename's new path.
    pub to: Option<Box<str>>,
}

/// The files a process used, each path and access once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileSet {
    /// In the order first seen.
    pub uses: Vec<FileUse>,
    /// Each path in `uses`, with the accesses it was used with (bit `access as u8`).
    seen: HashMap<Box<str>, u8>,
}

impl FileSet {
    /// The uses of `access`, in order.
    pub fn of(&self, access: FileAccess) -> impl Iterator<Item = &FileUse> {
        self.uses.iter().filter(move |u| u.access == access)
    }

    /// How many distinct paths were used with `access`.
    pub fn count(&self, access: FileAccess) -> usize {
        self.of(access).count()
    }
}

impl Tracker {
    /// File uses will come (`--files`): from the start, records not retained wait
    /// [`LATE_USES_NS`] after their exit for uses read late.
    pub fn expect_files(&mut self) {
        self.files_seen = true;
    }

    /// A file use of the instance of `tgid` running at `ts`, kept the first time (both paths).
    pub(super) fn apply_file(
        &mut self,
        ts: u64,
        tgid: Pid,
        access: FileAccess,
        path: &str,
        to: Option<&str>,
        facts: &mut Vec<Fact>,
    ) {
        self.files_seen = true;
        self.late_clock = self.late_clock.max(ts);
        let Some(id) = self.lookup_at(tgid, ts) else {
            // Not a process of the trace (fanotify sees the whole filesystem).
            return;
        };
        let full = self.stats.files >= FILES_HELD_MAX;
        let added = self.with(id, |r| {
            // The program's own file, read by the exec: part of the exec, not of its work.
            let own_program = access == FileAccess::Read
                && r.execs.iter().any(|e| {
                    e.details
                        .as_ref()
                        .and_then(|d| d.exe.as_deref())
                        .is_some_and(|x| x == path)
                });
            if own_program {
                return Some(None);
            }
            let set = r.files.get_or_insert_with(Default::default);
            let bit = 1u8 << (access as u8);
            // A rename is kept each time (the same name can be renamed to several).
            let seen = set.seen.get(path).copied().unwrap_or(0);
            if access != FileAccess::Rename && seen & bit != 0 {
                return Some(None);
            }
            if full || set.uses.len() >= FILES_PER_PROCESS_MAX {
                return None;
            }
            let index = set.uses.len();
            let path: Box<str> = Box::from(path);
            set.uses.push(FileUse {
                ts,
                access,
                path: path.clone(),
                to: to.map(Box::from),
            });
            *set.seen.entry(path).or_insert(0) |= bit;
            Some(Some(index))
        });
        match added {
            Some(Some(Some(index))) => {
                self.stats.files += 1;
                facts.push(Fact::File { id, index });
            }
            Some(Some(None)) | None => {}
            Some(None) => self.stats.files_dropped += 1,
        }
    }
}
