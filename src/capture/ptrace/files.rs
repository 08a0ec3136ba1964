//! `--files` under the ptrace backend, without privilege: a seccomp filter the command is
//! started with stops each process at its file system calls, and the tracer reads what they
//! name there (docs/files.md, "Under the ptrace backend").
//!
//! - **The filter** (classic BPF, installed in the command's process right before its exec and
//!   inherited by everything it starts) returns `SECCOMP_RET_TRACE` for `open`, `openat`,
//!   `openat2`, `creat` (not with `O_PATH` or `O_DIRECTORY`: no file is read or written),
//!   `rename`, `renameat`, `renameat2`, `unlink`, `unlinkat` (not `AT_REMOVEDIR`), `link`,
//!   `linkat`, `symlink`, `symlinkat`, `mknod` and `mknodat`, and `SECCOMP_RET_ALLOW` for
//!   everything else — the calls by which a name is opened, created, renamed or removed, as
//!   fanotify reports them (directories are not: no `mkdir`, `rmdir`, directory opens). Calls of
//!   another architecture's table (a 32-bit program, x32) are allowed untraced: a blind spot.
//! - **At the seccomp stop** ([`FileCalls::entry`]): `PTRACE_GET_SYSCALL_INFO` gives the call and
//!   its arguments. A read-only open (no `O_CREAT`, `O_TRUNC`, `O_NOFOLLOW`: most of a build's,
//!   its failed include probes too) is judged there and then: its path (`process_vm_readv`, at
//!   most `PATH_MAX` bytes, kept as bytes) resolved as the kernel will resolve it (an `O_PATH`
//!   open through `/proc/TID/cwd` or `/proc/TID/fd/DIRFD` for a relative one) to a file that is no
//!   directory and that proctrace may read is a `read` of its canonical path; one stop, not two.
//!   For the other calls, what the result cannot tell is read now: for a rename, unlink or a name
//!   created, the path with its directory resolved to its canonical path; for an `O_CREAT` open
//!   without `O_EXCL`, whether the name exists yet (`faccessat` through the same links). The
//!   tracee is then resumed with `PTRACE_SYSCALL`, so that it stops again when the call returns.
//! - **At the syscall-exit stop** ([`FileCalls::exit`]): a failed call is no use of a file. A
//!   successful open is named by what it opened — `readlink` of `/proc/TID/fd/N`, the kernel's
//!   own canonical path of the file, whatever the call's path was (relative, through symlinks) —
//!   and is a `read` or a `write`, preceded by a `create` when the name did not exist before (or
//!   `O_EXCL` succeeded). Renames, removals and names made are as read at entry.
//!
//! A read-only open costs one stop, any other traced call two (about 20–40 µs each on the
//! project's VM); the noise filter
//! ([`crate::capture::files::is_noise`]) applies as with fanotify. A filter that returns
//! `SECCOMP_RET_TRACE` while no tracer is attached fails the call with `ENOSYS`: with `--files`
//! the tracees are therefore seized with `PTRACE_O_EXITKILL` (as `strace --seccomp-bpf` does)
//! and what still runs when proctrace ends is ended with it.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::capture::files::{FilesOptions, is_noise};
use crate::model::bytes;
use crate::model::event::{Event, FileAccess, Pid};

/// The kernel's longest path, NUL included: a longer one fails the call (`ENAMETOOLONG`).
const PATH_MAX: usize = 4096;

/// `PR_SET_NO_NEW_PRIVS` (not in every libc).
pub const PR_SET_NO_NEW_PRIVS: libc::c_int = 38;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const AUDIT_ARCH: u32 = 0;

/// Whether this build can report file calls through seccomp (its system call table is known
/// here: x86_64 and aarch64).
pub const SUPPORTED: bool = AUDIT_ARCH != 0;

/// x32 system calls carry this bit in their number (x86_64 only).
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// Offsets in `struct seccomp_data { int nr; u32 arch; u64 ip; u64 args[6]; }`.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low 32 bits of argument `i` (little-endian).
const fn arg_lo(i: u32) -> u32 {
    16 + 8 * i
}

/// A system call the filter traces, and how its arguments are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    /// `(dirfd?, path, flags)`: the path's argument, the dirfd's (`None`: `AT_FDCWD`), the
    /// flags' (`None`: fixed flags).
    Open {
        dirfd: Option<usize>,
        path: usize,
        flags: Option<usize>,
        fixed: i32,
    },
    /// `openat2(dirfd, path, how, size)`: the flags are in `how`.
    Openat2,
    /// `(olddirfd?, old, newdirfd?, new)`.
    Rename {
        old_dirfd: Option<usize>,
        old: usize,
        new_dirfd: Option<usize>,
        new: usize,
    },
    /// `(dirfd?, path)`.
    Unlink { dirfd: Option<usize>, path: usize },
    /// A name made: `(dirfd?, path)` of the new name.
    Make { dirfd: Option<usize>, path: usize },
}

/// The calls traced, by number, on this architecture.
fn calls() -> Vec<(libc::c_long, Call)> {
    let open = |dirfd, path, flags| Call::Open {
        dirfd,
        path,
        flags,
        fixed: 0,
    };
    let mut v = vec![
        (libc::SYS_openat, open(Some(0), 1, Some(2))),
        (libc::SYS_openat2, Call::Openat2),
        (
            libc::SYS_renameat2,
            Call::Rename {
                old_dirfd: Some(0),
                old: 1,
                new_dirfd: Some(2),
                new: 3,
            },
        ),
        (
            libc::SYS_unlinkat,
            Call::Unlink {
                dirfd: Some(0),
                path: 1,
            },
        ),
        (
            libc::SYS_linkat,
            Call::Make {
                dirfd: Some(2),
                path: 3,
            },
        ),
        (
            libc::SYS_symlinkat,
            Call::Make {
                dirfd: Some(1),
                path: 2,
            },
        ),
        (
            libc::SYS_mknodat,
            Call::Make {
                dirfd: Some(0),
                path: 1,
            },
        ),
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        (
            libc::SYS_renameat,
            Call::Rename {
                old_dirfd: Some(0),
                old: 1,
                new_dirfd: Some(2),
                new: 3,
            },
        ),
        (libc::SYS_open, open(None, 0, Some(1))),
        (
            libc::SYS_creat,
            Call::Open {
                dirfd: None,
                path: 0,
                flags: None,
                fixed: libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
            },
        ),
        (
            libc::SYS_rename,
            Call::Rename {
                old_dirfd: None,
                old: 0,
                new_dirfd: None,
                new: 1,
            },
        ),
        (libc::SYS_unlink, Call::Unlink { dirfd: None, path: 0 }),
        (libc::SYS_link, Call::Make { dirfd: None, path: 1 }),
        (libc::SYS_symlink, Call::Make { dirfd: None, path: 1 }),
        (libc::SYS_mknod, Call::Make { dirfd: None, path: 0 }),
    ]);
    v
}

/// The seccomp program (see the module docs).
#[derive(Debug, Clone)]
pub struct Filter(Vec<libc::sock_filter>);

/// A jump target while the program is assembled.
#[derive(Clone, Copy)]
enum To {
    Next,
    Allow,
    Trace,
    /// The flags check of the open whose flags are argument `i`.
    Flags(u32),
    /// The `AT_REMOVEDIR` check of `unlinkat`.
    Rmdir,
}

impl Filter {
    /// The program for this architecture.
    pub fn new() -> Filter {
        // Assembled with symbolic jumps, then resolved (classic BPF jumps forward only, at most
        // 255 instructions: the program is about 30).
        let mut ins: Vec<(u16, u32, To, To)> = Vec::new();
        let ld = |off: u32| {
            (
                (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
                off,
                To::Next,
                To::Next,
            )
        };
        let jeq = |k: u32, t: To, f: To| ((libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16, k, t, f);
        ins.push(ld(ARCH));
        ins.push(jeq(AUDIT_ARCH, To::Next, To::Allow));
        ins.push(ld(NR));
        #[cfg(target_arch = "x86_64")]
        ins.push((
            (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16,
            X32_SYSCALL_BIT,
            To::Allow,
            To::Next,
        ));
        for (nr, call) in calls() {
            let to = match call {
                Call::Open { flags: Some(i), .. } => To::Flags(i as u32),
                Call::Unlink { dirfd: Some(_), .. } => To::Rmdir,
                _ => To::Trace,
            };
            ins.push(jeq(nr as u32, to, To::Next));
        }
        let ret = |k: u32| ((libc::BPF_RET | libc::BPF_K) as u16, k, To::Next, To::Next);
        // None of the calls: allowed.
        ins.push(((libc::BPF_JMP | libc::BPF_JA) as u16, 0, To::Allow, To::Allow));
        // Labels after the list (jumps go forward only), the two returns last.
        let no_file = (libc::O_PATH | libc::O_DIRECTORY) as u32;
        let jset = |k: u32, t: To, f: To| ((libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16, k, t, f);
        let mut flags_at = Vec::new();
        for i in [1u32, 2] {
            flags_at.push((i, ins.len()));
            ins.push(ld(arg_lo(i)));
            ins.push(jset(no_file, To::Allow, To::Trace));
        }
        let rmdir = ins.len();
        ins.push(ld(arg_lo(2)));
        ins.push(jset(libc::AT_REMOVEDIR as u32, To::Allow, To::Trace));
        let allow = ins.len();
        ins.push(ret(libc::SECCOMP_RET_ALLOW));
        let trace = ins.len();
        ins.push(ret(libc::SECCOMP_RET_TRACE));
        // Forward jumps are relative to the next instruction.
        let resolve = |at: usize, to: To| -> u8 {
            let target = match to {
                To::Next => at + 1,
                To::Allow => allow,
                To::Trace => trace,
                To::Flags(i) => flags_at.iter().find(|f| f.0 == i).map_or(trace, |f| f.1),
                To::Rmdir => rmdir,
            };
            u8::try_from(target.saturating_sub(at + 1)).unwrap_or(0)
        };
        let ja = (libc::BPF_JMP | libc::BPF_JA) as u16;
        let prog = ins
            .iter()
            .enumerate()
            .map(|(at, &(code, k, t, f))| {
                if code == ja {
                    // An unconditional jump: its offset is `k`.
                    return libc::sock_filter {
                        code,
                        jt: 0,
                        jf: 0,
                        k: u32::from(resolve(at, t)),
                    };
                }
                libc::sock_filter {
                    code,
                    jt: resolve(at, t),
                    jf: resolve(at, f),
                    k,
                }
            })
            .collect();
        Filter(prog)
    }

    /// The program's instructions.
    pub fn instructions(&self) -> &[libc::sock_filter] {
        &self.0
    }
}

impl Default for Filter {
    fn default() -> Filter {
        Filter::new()
    }
}

/// Installs `filter` in the calling process (async-signal-safe: meant for a forked child before
/// its exec). Without CAP_SYS_ADMIN the kernel wants `no_new_privs` first: it is set then, and
/// only then. Returns the errno of the failure.
///
/// # Safety
/// May be called between fork and exec: it makes system calls only.
pub unsafe fn install(filter: &libc::sock_fprog) -> Result<(), i32> {
    let set = |f: &libc::sock_fprog| {
        // SAFETY: `f` points at a live program; seccomp reads it and returns.
        unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                f as *const libc::sock_fprog,
            )
        }
    };
    if set(filter) == 0 {
        return Ok(());
    }
    // SAFETY: reading errno right after the failed call.
    let e = unsafe { *libc::__errno_location() };
    if e != libc::EACCES {
        return Err(e);
    }
    // SAFETY: prctl with constant arguments.
    if unsafe { libc::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 || set(filter) != 0 {
        // SAFETY: as above.
        return Err(unsafe { *libc::__errno_location() });
    }
    Ok(())
}

/// `struct ptrace_syscall_info` (`PTRACE_GET_SYSCALL_INFO`, Linux 5.3), its union as words.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct SyscallInfo {
    op: u8,
    pad: [u8; 3],
    arch: u32,
    instruction_pointer: u64,
    stack_pointer: u64,
    /// entry/seccomp: `nr`, `args[6]`, (seccomp) `ret_data`; exit: `rval`, `is_error`.
    data: [u64; 8],
}

const PTRACE_GET_SYSCALL_INFO: libc::c_uint = 0x420e;
const OP_EXIT: u8 = 2;
const OP_SECCOMP: u8 = 3;

fn syscall_info(tid: Pid) -> Option<SyscallInfo> {
    let mut info = SyscallInfo::default();
    // SAFETY: the kernel writes at most size_of::<SyscallInfo>() bytes into `info`.
    let n = unsafe {
        libc::ptrace(
            PTRACE_GET_SYSCALL_INFO,
            tid,
            std::mem::size_of::<SyscallInfo>(),
            &mut info as *mut SyscallInfo,
        )
    };
    (n > 0).then_some(info)
}

/// What a traced call will be, once it returns.
#[derive(Debug)]
enum Pending {
    /// An open: its flags, and whether its name existed before (`None`: not asked: no
    /// `O_CREAT`).
    Open { flags: i32, existed: Option<bool> },
    /// A rename, a removal or a name made: the access and the canonical path(s), read at entry.
    Named {
        access: FileAccess,
        path: String,
        to: Option<String>,
    },
}

/// The file calls of the tracees, from their seccomp stop to their syscall-exit stop.
#[derive(Debug)]
pub struct FileCalls {
    /// The calls traced, by number (made once).
    table: Vec<(libc::c_long, Call)>,
    /// Per thread: the call in flight, from when.
    pending: HashMap<Pid, (u64, Pid, Pending)>,
    /// What is left out (`--files-all`, `--files-ignore`).
    keep: FilesOptions,
    /// Calls whose path could not be read (counted as `files_lost`).
    pub lost: u64,
    /// proctrace runs as root: it may read any file.
    root: bool,
    /// Scratch buffers (reused).
    path: Vec<u8>,
    link: Vec<u8>,
    /// Files this trace saw made by an open (`O_CREAT`, the name absent at the call), by device
    /// and inode, with when that call returned: two processes racing to make one file both
    /// find it absent, and only the first to return is said to have made it.
    made: HashMap<(u64, u64), u64>,
}

/// Most entries of [`FileCalls::made`] before the old ones are let go.
const MADE_KEPT: usize = 4096;

impl FileCalls {
    /// Nothing in flight; `keep`: what is left out.
    pub fn new(keep: FilesOptions) -> FileCalls {
        FileCalls {
            table: calls(),
            pending: HashMap::new(),
            keep,
            lost: 0,
            // SAFETY: geteuid has no preconditions.
            root: unsafe { libc::geteuid() } == 0,
            path: Vec::with_capacity(PATH_MAX),
            link: Vec::with_capacity(PATH_MAX),
            made: HashMap::new(),
        }
    }

    /// Whether thread `tid` is between a seccomp stop and its syscall-exit stop: every restart
    /// of it must then be `PTRACE_SYSCALL`, or that stop is lost.
    pub fn in_flight(&self, tid: Pid) -> bool {
        !self.pending.is_empty() && self.pending.contains_key(&tid)
    }

    /// The thread is gone (or exits): what it had in flight is dropped.
    pub fn forget(&mut self, tid: Pid) {
        if !self.pending.is_empty() {
            self.pending.remove(&tid);
        }
    }

    /// At the seccomp stop of thread `tid` of process `tgid`, collected at `ts`: true when the
    /// call is to be followed to its return (restart with `PTRACE_SYSCALL`).
    pub fn entry(&mut self, tid: Pid, tgid: Pid, ts: u64, out: &mut Vec<Event>) -> bool {
        let Some(info) = syscall_info(tid) else {
            // Not to be read (a kernel before 5.3 has no PTRACE_GET_SYSCALL_INFO): counted, so
            // that an empty list is never taken for a complete one.
            self.lost += 1;
            return false;
        };
        if info.op != OP_SECCOMP || info.arch != AUDIT_ARCH {
            return false;
        }
        let nr = info.data[0];
        let Some(&(_, call)) = self.table.iter().find(|&&(n, _)| n as u64 == nr) else {
            return false;
        };
        let args = &info.data[1..7];
        let dirfd = |i: Option<usize>| i.map_or(libc::AT_FDCWD, |i| args[i] as i32);
        let pending = match call {
            Call::Open {
                dirfd: d,
                path,
                flags,
                fixed,
            } => {
                let flags = flags.map_or(fixed, |i| args[i] as i32);
                if plain_read(flags) {
                    self.read_now(tid, tgid, ts, dirfd(d), args[path], out);
                    return false;
                }
                self.open(tid, dirfd(d), args[path], flags)
            }
            Call::Openat2 => {
                // struct open_how { u64 flags; u64 mode; u64 resolve; }.
                let mut how = [0u8; 24];
                if read_mem(tid, args[2], &mut how) != how.len() {
                    self.lost += 1;
                    return false;
                }
                let word = |i: usize| {
                    let mut w = [0u8; 8];
                    w.copy_from_slice(&how[8 * i..8 * i + 8]);
                    u64::from_ne_bytes(w)
                };
                let (flags, resolve) = (word(0) as i32, word(2));
                if flags & (libc::O_PATH | libc::O_DIRECTORY) != 0 {
                    return false;
                }
                // RESOLVE_* rules of its own: judged by its result, not by proctrace's lookup.
                if resolve == 0 && plain_read(flags) {
                    self.read_now(tid, tgid, ts, args[0] as i32, args[1], out);
                    return false;
                }
                self.open(tid, args[0] as i32, args[1], flags)
            }
            Call::Rename {
                old_dirfd,
                old,
                new_dirfd,
                new,
            } => {
                let from = self.canonical(tid, dirfd(old_dirfd), args[old]);
                let to = self.canonical(tid, dirfd(new_dirfd), args[new]);
                match (from, to) {
                    (Some(path), Some(to)) => Some(Pending::Named {
                        access: FileAccess::Rename,
                        path,
                        to: Some(to),
                    }),
                    _ => None,
                }
            }
            Call::Unlink { dirfd: d, path } => {
                self.canonical(tid, dirfd(d), args[path])
                    .map(|path| Pending::Named {
                        access: FileAccess::Delete,
                        path,
                        to: None,
                    })
            }
            Call::Make { dirfd: d, path } => {
                self.canonical(tid, dirfd(d), args[path])
                    .map(|path| Pending::Named {
                        access: FileAccess::Create,
                        path,
                        to: None,
                    })
            }
        };
        match pending {
            Some(p) => {
                self.pending.insert(tid, (ts, tgid, p));
                true
            }
            None => false,
        }
    }

    /// A read-only open, judged at its entry (one stop, not two): a use when its name resolves
    /// now as the call will resolve it (through `/proc/TID/cwd` or the dirfd's link, `..` and
    /// symbolic links followed) to a file that is not a directory and that proctrace may read
    /// (`faccessat(R_OK, AT_EACCESS)`); named by that file's canonical path.
    fn read_now(&mut self, tid: Pid, tgid: Pid, ts: u64, dirfd: i32, ptr: u64, out: &mut Vec<Event>) {
        if !self.read_path(tid, ptr) {
            return;
        }
        // Most of a process's reads are what every process reads at start (its libraries, the
        // locale files, probed one after the other); named absolutely, as they are, they are
        // left out before anything is resolved.
        if !self.keep.all
            && self.path.first() == Some(&b'/')
            && is_noise(FileAccess::Read, &bytes::encode(&self.path))
        {
            return;
        }
        self.through_links(tid, dirfd, 0..self.path.len());
        if let Some(path) = readable_file(&self.link, self.root) {
            push_use(&self.keep, out, ts, tgid, FileAccess::Read, path, None);
        }
    }

    /// An open's pending state: whether its name exists now matters only with `O_CREAT`.
    fn open(&mut self, tid: Pid, dirfd: i32, path: u64, flags: i32) -> Option<Pending> {
        let existed = if flags & libc::O_CREAT == 0 {
            None
        } else if flags & libc::O_EXCL != 0 {
            Some(false) // success means it made the name
        } else {
            Some(self.exists(tid, dirfd, path)?)
        };
        Some(Pending::Open { flags, existed })
    }

    /// At the syscall-exit stop of thread `tid`: the uses of the call that returned, appended to
    /// `out`.
    pub fn exit(&mut self, tid: Pid, out: &mut Vec<Event>) {
        let Some((ts, tgid, pending)) = self.pending.remove(&tid) else {
            return;
        };
        let Some(info) = syscall_info(tid) else {
            self.lost += 1;
            return;
        };
        // rval, is_error.
        if info.op != OP_EXIT || info.data[1] & 0xff != 0 {
            return;
        }
        let keep = &self.keep;
        let mut push = |access: FileAccess, path: String, to: Option<String>| {
            push_use(keep, out, ts, tgid, access, path, to);
        };
        match pending {
            Pending::Named { access, path, to } => push(access, path, to),
            Pending::Open { flags, existed } => {
                let fd = info.data[0] as i64;
                let Some(path) = fd_path(tid, fd, &mut self.link) else {
                    self.lost += 1;
                    return;
                };
                if existed == Some(false)
                    && (flags & libc::O_EXCL != 0
                        || first_to_make(&mut self.made, &self.pending, tid, fd, ts))
                {
                    push(FileAccess::Create, path.clone(), None);
                }
                let access = if flags & libc::O_ACCMODE == libc::O_RDONLY {
                    FileAccess::Read
                } else {
                    FileAccess::Write
                };
                push(access, path, None);
            }
        }
    }

    /// The path argument at `ptr` into `self.path` (bytes, no NUL); false when it cannot be
    /// read (counted as lost) or is longer than the kernel takes.
    fn read_path(&mut self, tid: Pid, ptr: u64) -> bool {
        self.path.clear();
        self.path.resize(PATH_MAX, 0);
        // Up to the end of the page first (one page for the kernel to pin: most paths end
        // there), then the rest of PATH_MAX if the NUL is not in it.
        let first = (4096 - (ptr % 4096) as usize).min(PATH_MAX);
        let mut n = read_mem(tid, ptr, &mut self.path[..first]);
        let mut end = memchr::memchr(0, &self.path[..n]);
        if end.is_none() && n == first && first < PATH_MAX {
            n += read_mem(tid, ptr + first as u64, &mut self.path[first..]);
            end = memchr::memchr(0, &self.path[first..n]).map(|e| first + e);
        }
        match end {
            Some(end) => {
                self.path.truncate(end);
                true
            }
            None => {
                // Unreadable, or no NUL within PATH_MAX: the call fails (ENAMETOOLONG), or it
                // could not be seen.
                self.lost += u64::from(n < PATH_MAX);
                false
            }
        }
    }

    /// `/proc/TID/cwd/` or `/proc/TID/fd/DIRFD/` (for a relative path) followed by the path
    /// just read, NUL-terminated, in `self.link`: the name as the tracee's call will resolve it,
    /// from proctrace (the links lead into the tracee's directory).
    fn through_links(&mut self, tid: Pid, dirfd: i32, part: std::ops::Range<usize>) {
        self.link.clear();
        let rel = self.path.first() != Some(&b'/');
        if rel {
            let mut n = itoa::Buffer::new();
            self.link.extend_from_slice(b"/proc/");
            self.link.extend_from_slice(n.format(tid).as_bytes());
            if dirfd == libc::AT_FDCWD {
                self.link.extend_from_slice(b"/cwd/");
            } else {
                self.link.extend_from_slice(b"/fd/");
                self.link.extend_from_slice(n.format(dirfd).as_bytes());
                self.link.push(b'/');
            }
        }
        self.link.extend_from_slice(&self.path[part]);
        self.link.push(0);
    }

    /// Whether the name the tracee's `open` will create exists now (`None`: the path could not
    /// be read).
    fn exists(&mut self, tid: Pid, dirfd: i32, ptr: u64) -> Option<bool> {
        if !self.read_path(tid, ptr) {
            return None;
        }
        self.through_links(tid, dirfd, 0..self.path.len());
        // SAFETY: `link` is NUL-terminated (pushed above).
        let r = unsafe { libc::faccessat(libc::AT_FDCWD, self.link.as_ptr().cast(), libc::F_OK, 0) };
        Some(r == 0)
    }

    /// The canonical path of the name the tracee's call names (`ptr`, relative to `dirfd`): its
    /// directory resolved now (it exists before the call and after), then its last component.
    /// `None` when the path cannot be read, its directory does not exist, or it names no entry
    /// (ends in `/`, `.` or `..`: the call fails).
    fn canonical(&mut self, tid: Pid, dirfd: i32, ptr: u64) -> Option<String> {
        if !self.read_path(tid, ptr) {
            return None;
        }
        let p = &self.path;
        let slash = memchr::memrchr(b'/', p);
        let name = slash.map_or(0, |s| s + 1)..p.len();
        if matches!(&p[name.clone()], b"" | b"." | b"..") {
            return None;
        }
        // The directory part: "/" for "/name", "" (the dirfd itself) for "name".
        let dir_end = match slash {
            Some(0) => 1,
            Some(s) => s,
            None => 0,
        };
        self.through_links(tid, dirfd, 0..dir_end);
        if dir_end == 0 {
            // "name": the dirfd's directory itself (drop the trailing "/" of the link).
            let nul = self.link.len() - 1;
            self.link.remove(nul - 1);
        }
        let mut dir = dir_path(&self.link)?;
        if !dir.ends_with('/') {
            dir.push('/');
        }
        dir.push_str(&bytes::encode(&self.path[name]));
        Some(dir)
    }
}

/// An open that only reads, and names an existing file (no `O_CREAT`, `O_TRUNC`, `O_TMPFILE`;
/// `O_NOFOLLOW` fails on a link, which proctrace's own lookup would not see: judged by its
/// result).
fn plain_read(flags: i32) -> bool {
    flags & libc::O_ACCMODE == libc::O_RDONLY
        && flags & (libc::O_CREAT | libc::O_TRUNC | libc::O_NOFOLLOW | libc::O_TMPFILE) == 0
}

/// Whether the open of thread `tid` that returned `fd` (it entered at `entered`, the name then
/// absent) is the first of the calls in flight together to make that file: another such call
/// that returned after this one entered made it, or this one did. (Which of two racing calls
/// made the file, neither stop can tell; one of them is said to.) A file made, removed and made
/// again under the same inode number later is new again: only overlapping calls are compared.
fn first_to_make(
    made: &mut HashMap<(u64, u64), u64>,
    pending: &HashMap<Pid, (u64, Pid, Pending)>,
    tid: Pid,
    fd: i64,
    entered: u64,
) -> bool {
    let mut link = [0u8; 48];
    let mut w = &mut link[..];
    if std::io::Write::write_fmt(&mut w, format_args!("/proc/{tid}/fd/{fd}\0")).is_err() {
        return true;
    }
    // SAFETY: all-zero is a valid `stat`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `link` is NUL-terminated; `st` is written by stat.
    if unsafe { libc::stat(link.as_ptr().cast(), &mut st) } != 0 {
        return true;
    }
    let now = crate::capture::procfs::mono_now();
    if made.len() >= MADE_KEPT {
        // What returned before every call now in flight entered overlaps none of them.
        let oldest = pending.values().map(|p| p.0).min().unwrap_or(now).min(entered);
        made.retain(|_, &mut returned| returned >= oldest);
        if made.len() >= MADE_KEPT {
            made.clear();
        }
    }
    let key = (st.st_dev, st.st_ino);
    match made.get(&key) {
        Some(&returned) if returned >= entered => false,
        _ => {
            made.insert(key, now);
            true
        }
    }
}

/// One use for the output, unless it is left out (noise without `--files-all`, `--files-ignore`).
fn push_use(
    keep: &FilesOptions,
    out: &mut Vec<Event>,
    ts: u64,
    tgid: Pid,
    access: FileAccess,
    path: String,
    to: Option<String>,
) {
    if !keep.leaves_out(access, &path) {
        out.push(Event::File {
            ts,
            tgid,
            access,
            path,
            to,
        });
    }
}

/// The canonical path of the file the NUL-terminated `link` resolves to, when it is a file
/// (not a directory) that proctrace may read; `None` otherwise.
fn readable_file(link: &[u8], root: bool) -> Option<String> {
    // SAFETY: `link` is NUL-terminated; the result is checked.
    let fd = unsafe { libc::open(link.as_ptr().cast(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just returned by open and belongs to nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: all-zero is a valid `stat`; fstat accepts O_PATH descriptors and fills `st`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 || st.st_mode & libc::S_IFMT == libc::S_IFDIR {
        return None;
    }
    // Root may read any file (CAP_DAC_OVERRIDE): nothing to ask.
    // SAFETY: `link` is NUL-terminated.
    if !root
        && unsafe { libc::faccessat(libc::AT_FDCWD, link.as_ptr().cast(), libc::R_OK, libc::AT_EACCESS) } != 0
    {
        return None;
    }
    let mut own = [0u8; 32];
    let mut w = &mut own[..];
    std::io::Write::write_fmt(&mut w, format_args!("/proc/self/fd/{}\0", fd.as_raw_fd())).ok()?;
    read_link(&own)
}

/// Reads up to `buf.len()` bytes of tracee `tid`'s memory at `addr`; how many (0: none could).
fn read_mem(tid: Pid, addr: u64, buf: &mut [u8]) -> usize {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as usize as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: `local` is `buf`, live and exclusively borrowed; `remote` is an address in the
    // tracee, checked by the kernel. A fault there ends the read early (a partial count).
    let n = unsafe { libc::process_vm_readv(tid, &local, 1, &remote, 1, 0) };
    n.max(0) as usize
}

/// `readlink` of the NUL-terminated `link` into a fresh `String` (the model's text).
fn read_link(link: &[u8]) -> Option<String> {
    let mut buf = [0u8; PATH_MAX];
    // SAFETY: `link` is NUL-terminated; readlink writes at most `buf.len()` bytes into `buf`.
    let n = unsafe { libc::readlink(link.as_ptr().cast(), buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 || n as usize >= buf.len() {
        return None;
    }
    Some(bytes::encode(&buf[..n as usize]).into_owned())
}

/// The canonical path of the file tracee `tid` has open as `fd` (`/proc/TID/fd/N`); a file
/// removed since is named as it was (the kernel's ` (deleted)` taken off).
fn fd_path(tid: Pid, fd: i64, scratch: &mut Vec<u8>) -> Option<String> {
    if fd < 0 {
        return None;
    }
    let mut n = itoa::Buffer::new();
    scratch.clear();
    scratch.extend_from_slice(b"/proc/");
    scratch.extend_from_slice(n.format(tid).as_bytes());
    scratch.extend_from_slice(b"/fd/");
    scratch.extend_from_slice(n.format(fd).as_bytes());
    scratch.push(0);
    let mut p = read_link(scratch)?;
    if !p.starts_with('/') {
        return None; // not a file (a pipe, a socket: `pipe:[…]`)
    }
    if let Some(kept) = p.strip_suffix(" (deleted)") {
        p.truncate(kept.len());
    }
    Some(p)
}

/// The canonical path of the directory the NUL-terminated `link` leads to: opened as a path
/// (`O_PATH`), then read back from `/proc/self/fd`.
fn dir_path(link: &[u8]) -> Option<String> {
    use std::io::Write as _;
    // SAFETY: `link` is NUL-terminated; the result is checked.
    let fd = unsafe {
        libc::open(
            link.as_ptr().cast(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just returned by open and belongs to nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut own = [0u8; 32];
    let mut w = &mut own[..];
    write!(w, "/proc/self/fd/{}\0", fd.as_raw_fd()).ok()?;
    let p = read_link(&own)?;
    // A directory removed since is named by the kernel with " (deleted)": nothing to report in.
    (!p.ends_with(" (deleted)")).then_some(p)
}

#[cfg(test)]
mod tests;
