//! The files each process used (`--files`): per process, the first time of each path and
//! access, in the order first seen, never more than the caps (a process opening a million
//! temporary files costs a bounded amount; what is dropped is counted). Part of [`Tracker`].

use std::hash::BuildHasher;

use hashbrown::HashTable;

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
#[derive(Debug, Clone, Default)]
pub struct FileSet {
    /// In the order first seen.
    pub uses: Vec<FileUse>,
    /// Each distinct path of `uses`: the index of its first use there and the accesses it was
    /// used with (bit `access as u8`), hashed by that path, which is kept once, in `uses` (a
    /// map keyed by a copy of the path held every path twice: `--files` memory is the paths).
    seen: HashTable<(u32, u8)>,
}

/// What `seen` hashes a path with.
fn hash_path(path: &str) -> u64 {
    foldhash::fast::FixedState::with_seed(0x66_696c_6573).hash_one(path)
}

impl PartialEq for FileSet {
    fn eq(&self, other: &Self) -> bool {
        // `seen` is derived from `uses`.
        self.uses == other.uses
    }
}

impl Eq for FileSet {}

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
            let FileSet { uses, seen } = &mut **r.files.get_or_insert_with(Default::default);
            let bit = 1u8 << (access as u8);
            let hash = hash_path(path);
            let known = seen.find_mut(hash, |&(i, _)| {
                uses.get(i as usize).is_some_and(|u| &*u.path == path)
            });
            // A rename is kept each time (the same name can be renamed to several).
            if access != FileAccess::Rename && known.as_ref().is_some_and(|k| k.1 & bit != 0) {
                return Some(None);
            }
            if full || uses.len() >= FILES_PER_PROCESS_MAX {
                return None;
            }
            let index = uses.len();
            match known {
                Some(k) => k.1 |= bit,
                None => {
                    seen.insert_unique(hash, (index as u32, bit), |&(i, _)| {
                        uses.get(i as usize).map_or(0, |u| hash_path(&u.path))
                    });
                }
            }
            uses.push(FileUse {
                ts,
                access,
                path: Box::from(path),
                to: to.map(Box::from),
            });
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
