//! The ring buffer's records, as `bpf/proctrace.bpf.c` writes them (native endianness, C
//! layout): decoded from bytes, never reinterpreted in place. The layout is the C file's
//! `fork_record`, `exec_record`, `exit_record` and `rename_record`, and changes only with it.
//!
//! It must never panic on a short or unknown record: those decode to `None` (counted by the
//! reader as rejected).

use crate::model::event::Pid;

const KIND_FORK: u32 = 1;
const KIND_EXEC: u32 = 2;
const KIND_EXIT: u32 = 3;
const KIND_RENAME: u32 = 4;

/// `exec_record.flags`: the argv copy failed (the process's argv is read from `/proc`).
pub const EXEC_ARGV_READ_FAILED: u32 = 1;

/// `exec_record.flags`: the process is a session leader.
pub const EXEC_SESSION_LEADER: u32 = 2;

/// `exec_record.flags` for the executable's path (the working directory's: these `<< 8`):
/// the file was deleted (`/proc` says ` (deleted)` after its path).
const PATH_DELETED: u32 = 4;
/// ... the path is not whole (too long, too deep, unreadable): its bytes are not to be used.
const PATH_INCOMPLETE: u32 = 8;
const CWD_SHIFT: u32 = 8;
const EXIT_GROUP_DEAD: u32 = 1;
const EXIT_SESSION_LEADER: u32 = 2;

/// Bytes of argv the kernel side copies at most (`ARGV_CAP`).
pub const ARGV_CAP: u64 = 32768;

/// Offset of `exec_record.data`.
const EXEC_DATA: usize = 96;

/// A path the kernel side walked (`/proc/PID/exe`'s or `/proc/PID/cwd`'s, as `d_path` makes
/// them for proctrace).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelPath<'a> {
    /// The whole path; `deleted`: `/proc` shows it with ` (deleted)` after it.
    Whole {
        /// Its bytes.
        path: &'a [u8],
        /// The file or directory was deleted.
        deleted: bool,
    },
    /// The walk did not give it whole (longer than 4 KiB, more than 64 components and mount
    /// crossings, a name that could not be read): to be read from `/proc`, or unknown.
    Incomplete,
}

impl<'a> KernelPath<'a> {
    fn of(bytes: &'a [u8], flags: u32) -> KernelPath<'a> {
        if flags & PATH_INCOMPLETE != 0 || bytes.is_empty() {
            KernelPath::Incomplete
        } else {
            KernelPath::Whole {
                path: bytes,
                deleted: flags & PATH_DELETED != 0,
            }
        }
    }
}

/// A task's real and effective uid and gid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Creds {
    /// Real uid.
    pub ruid: u32,
    /// Effective uid.
    pub euid: u32,
    /// Real gid.
    pub rgid: u32,
    /// Effective gid.
    pub egid: u32,
}

/// One decoded record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record<'a> {
    /// `sched_process_fork`.
    Fork {
        /// `bpf_ktime_get_ns`.
        ts: u64,
        /// The new task's real parent's process.
        parent_tgid: Pid,
        /// The new task.
        child_pid: Pid,
        /// Its process (`!= child_pid`: a thread).
        child_tgid: Pid,
        /// The process that forked.
        creator_tgid: Pid,
        /// That process is a session leader.
        creator_leader: bool,
        /// The new task's credentials (its creator's).
        creds: Creds,
    },
    /// `sched_process_exec`.
    Exec {
        /// When.
        ts: u64,
        /// The process.
        tgid: Pid,
        /// The exec'ing thread before the exec.
        old_pid: Pid,
        /// Credentials after the exec.
        creds: Creds,
        /// [`EXEC_ARGV_READ_FAILED`].
        flags: u32,
        /// The whole argv's length in the process's memory.
        argv_full: u64,
        /// The kernel's name for it (`comm`), NUL-padded.
        comm: &'a [u8],
        /// `bprm->filename`: the path that was exec'd (a script's, for a script).
        filename: &'a [u8],
        /// The executable (`/proc/PID/exe`: a script's interpreter).
        exe: KernelPath<'a>,
        /// The working directory (`/proc/PID/cwd`).
        cwd: KernelPath<'a>,
        /// argv as copied: NUL-separated, at most [`ARGV_CAP`] bytes.
        argv: &'a [u8],
    },
    /// `sched_process_exit`.
    Exit {
        /// When.
        ts: u64,
        /// The task.
        pid: Pid,
        /// Its process.
        tgid: Pid,
        /// The wait status.
        status: u32,
        /// Real parent's process at exit.
        parent_tgid: Pid,
        /// The process's last task.
        group_dead: bool,
        /// The process is a session leader.
        session_leader: bool,
        /// Credentials at exit.
        creds: Creds,
    },
    /// `task_rename`: a thread's new name (the exec's own renaming included).
    Rename {
        /// When.
        ts: u64,
        /// The thread.
        pid: Pid,
        /// Its process.
        tgid: Pid,
        /// The new name, NUL-padded.
        comm: &'a [u8],
    },
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// Decodes one record; `None` for one that is short, inconsistent or of an unknown kind.
pub fn decode(b: &[u8]) -> Option<Record<'_>> {
    let kind = u32_at(b, 0)?;
    let ts = u64_at(b, 8)?;
    let pid = |off| u32_at(b, off).map(|v| v as Pid);
    let creds = |ruid, euid, rgid, egid| {
        Some(Creds {
            ruid: u32_at(b, ruid)?,
            euid: u32_at(b, euid)?,
            rgid: u32_at(b, rgid)?,
            egid: u32_at(b, egid)?,
        })
    };
    match kind {
        KIND_FORK => Some(Record::Fork {
            ts,
            parent_tgid: pid(4)?,
            child_pid: pid(16)?,
            child_tgid: pid(20)?,
            creator_tgid: pid(24)?,
            creator_leader: u32_at(b, 28)? != 0,
            creds: creds(32, 36, 40, 44)?,
        }),
        KIND_EXIT => Some(Record::Exit {
            ts,
            pid: pid(4)?,
            tgid: pid(16)?,
            status: u32_at(b, 20)?,
            parent_tgid: pid(24)?,
            group_dead: u32_at(b, 28)? & EXIT_GROUP_DEAD != 0,
            session_leader: u32_at(b, 28)? & EXIT_SESSION_LEADER != 0,
            creds: creds(32, 36, 40, 44)?,
        }),
        KIND_RENAME => Some(Record::Rename {
            ts,
            pid: pid(4)?,
            tgid: pid(16)?,
            comm: b.get(24..40)?,
        }),
        KIND_EXEC => {
            let flags = u32_at(b, 28)?;
            let data = b.get(EXEC_DATA..)?;
            // filename, exe, cwd, argv, one after the other.
            let mut at = 0usize;
            let mut part = |len: usize| {
                let p = data.get(at..at.checked_add(len)?)?;
                at += len;
                Some(p)
            };
            let filename = part(u32_at(b, 44)? as usize)?;
            let exe = part(u32_at(b, 80)? as usize)?;
            let cwd = part(u32_at(b, 84)? as usize)?;
            let argv = part(u32_at(b, 40)? as usize)?;
            Some(Record::Exec {
                ts,
                tgid: pid(4)?,
                old_pid: pid(16)?,
                creds: creds(64, 24, 68, 72)?,
                flags,
                argv_full: u64_at(b, 32)?,
                comm: b.get(48..64)?,
                filename,
                exe: KernelPath::of(exe, flags),
                cwd: KernelPath::of(cwd, flags >> CWD_SHIFT),
                argv,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec_bytes(filename: &[u8], exe: &[u8], cwd: &[u8], argv: &[u8], full: u64, flags: u32) -> Vec<u8> {
        let mut b = vec![0u8; EXEC_DATA];
        b[0..4].copy_from_slice(&KIND_EXEC.to_ne_bytes());
        b[4..8].copy_from_slice(&42u32.to_ne_bytes());
        b[8..16].copy_from_slice(&7u64.to_ne_bytes());
        b[16..20].copy_from_slice(&43u32.to_ne_bytes());
        b[28..32].copy_from_slice(&flags.to_ne_bytes());
        b[32..40].copy_from_slice(&full.to_ne_bytes());
        b[40..44].copy_from_slice(&(argv.len() as u32).to_ne_bytes());
        b[44..48].copy_from_slice(&(filename.len() as u32).to_ne_bytes());
        b[48..51].copy_from_slice(b"sh\0");
        b[80..84].copy_from_slice(&(exe.len() as u32).to_ne_bytes());
        b[84..88].copy_from_slice(&(cwd.len() as u32).to_ne_bytes());
        b.extend_from_slice(filename);
        b.extend_from_slice(exe);
        b.extend_from_slice(cwd);
        b.extend_from_slice(argv);
        b
    }

    #[test]
    fn an_exec_record_gives_its_filename_paths_and_argv() {
        let flags = PATH_DELETED | (PATH_INCOMPLETE << CWD_SHIFT);
        let b = exec_bytes(
            b"./x.sh",
            b"/usr/bin/dash",
            b"",
            b"/bin/sh\0./x.sh\0\0",
            16,
            flags,
        );
        let Some(Record::Exec {
            tgid,
            old_pid,
            filename,
            exe,
            cwd,
            argv,
            argv_full,
            ts,
            ..
        }) = decode(&b)
        else {
            panic!("not an exec: {:?}", decode(&b));
        };
        assert_eq!((tgid, old_pid, ts, argv_full), (42, 43, 7, 16));
        assert_eq!(filename, b"./x.sh");
        assert_eq!(
            exe,
            KernelPath::Whole {
                path: b"/usr/bin/dash",
                deleted: true
            }
        );
        assert_eq!(cwd, KernelPath::Incomplete);
        assert_eq!(argv, b"/bin/sh\0./x.sh\0\0");
        // A path flagged incomplete is never used, whatever bytes came with it.
        let b = exec_bytes(b"x", b"/a/partial", b"/tmp", b"x\0", 2, PATH_INCOMPLETE);
        let Some(Record::Exec { exe, cwd, .. }) = decode(&b) else {
            panic!("not an exec");
        };
        assert_eq!(exe, KernelPath::Incomplete);
        assert_eq!(
            cwd,
            KernelPath::Whole {
                path: b"/tmp",
                deleted: false
            }
        );
    }

    #[test]
    fn short_and_inconsistent_records_are_refused() {
        let b = exec_bytes(b"./x.sh", b"/bin/x", b"/", b"a\0", 2, 0);
        for n in 0..b.len() {
            assert_eq!(decode(&b[..n]), None, "{n} bytes");
        }
        let mut unknown = b.clone();
        unknown[0] = 9;
        assert_eq!(decode(&unknown), None);
        for len_at in [40, 44, 80, 84] {
            let mut long = b.clone();
            long[len_at..len_at + 4].copy_from_slice(&u32::MAX.to_ne_bytes());
            assert_eq!(decode(&long), None, "length at {len_at}");
        }
    }
}
