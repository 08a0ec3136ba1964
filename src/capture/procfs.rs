//! Reading `/proc` for what the connector does not carry: argv, exe, cwd, uid, start time.
//!
//! Runs right after an exec arrives, on the enricher thread (or, for an exec it missed, the model
//! thread) — never on the thread that drains the socket. A process that is already gone is a normal outcome: its fields come back `None`, and
//! the caller keeps the kernel's comm rather than guessing.

use std::fs;

use crate::model::bytes;
use crate::model::event::{Argv, ExecDetails, Pid};
use std::sync::Arc;

/// Reads the exec details of process `pid`. Never fails: missing pieces are `None`.
pub fn exec_details(pid: Pid) -> ExecDetails {
    // `/proc/PID` is looked up once and everything else relative to it (one path component
    // each, and all from the same process even if the pid were reused meanwhile).
    match sys::ProcDir::open(pid) {
        Some(dir) => details_from(&dir),
        None => ExecDetails::default(),
    }
}

/// [`exec_details`] of a process that cannot go away while it is read — a tracee held in a
/// ptrace stop, whose pid cannot be reused before the tracer resumes it — each file by its
/// path (`/proc/PID/cmdline`, `readlink /proc/PID/exe`, …): no directory handle to open and
/// close, two system calls fewer per exec. Not for a running process (the connector's).
pub fn stopped_exec_details(pid: Pid) -> ExecDetails {
    stopped_exec_details_with(pid, None)
}

/// [`stopped_exec_details`] with argv already read (the NUL-terminated words, as
/// `/proc/PID/cmdline` would give them): `cmdline` is then not opened.
pub fn stopped_exec_details_with(pid: Pid, cmdline: Option<&[u8]>) -> ExecDetails {
    match sys::ProcPath::new(pid) {
        Some(path) => details_given(&path, cmdline),
        None => ExecDetails::default(),
    }
}

/// The command line of process `pid` alone (`None`: gone, a kernel thread, or unreadable).
pub fn cmdline(pid: Pid) -> Option<Argv> {
    use sys::ProcFiles as _;
    let path = sys::ProcPath::new(pid)?;
    let mut buf = [0u8; 4096];
    let mut spill = Vec::new();
    path.read(c"cmdline", &mut buf, &mut spill)
        .and_then(split_cmdline)
}

fn details_from(dir: &impl sys::ProcFiles) -> ExecDetails {
    details_given(dir, None)
}

fn details_given(dir: &impl sys::ProcFiles, cmdline: Option<&[u8]>) -> ExecDetails {
    // Cheapest first and fewest: every read here competes with the process we are reading
    // (cmdline needs its memory map), so no /proc/PID/status: the owner of /proc/PID is the
    // process's effective uid, and comm is read only when argv could not be. Buffers are on the
    // stack: the only allocations are the strings handed back.
    let mut buf = [0u8; 4096];
    let mut spill = Vec::new();
    // cmdline first: it is the piece that races the process's exit.
    let argv = match cmdline {
        Some(b) => split_cmdline(b),
        None => dir.read(c"cmdline", &mut buf, &mut spill).and_then(split_cmdline),
    };
    let exe = dir
        .readlink(c"exe", &mut buf)
        .map(|b| Arc::from(bytes::encode(b)));
    let cwd = dir
        .readlink(c"cwd", &mut buf)
        .map(|b| Arc::from(bytes::encode(b)));
    let uid = dir.owner();
    let comm = match &argv {
        Some(a) => a.first().map(|a0| comm_from_argv0(a0, exe.as_deref())),
        None => dir
            .read(c"comm", &mut buf, &mut spill)
            .map(|b| text(b.trim_ascii_end())),
    };
    ExecDetails {
        argv,
        exe,
        cwd,
        uid,
        comm,
        // Not in /proc: the path the exec was given is gone once it ran.
        filename: None,
    }
}

/// Bytes as the model's text, every byte kept ([`bytes`]).
fn text(b: &[u8]) -> String {
    bytes::encode(b).into_owned()
}

/// The system calls behind [`exec_details`]: the only `unsafe` for them.
mod sys {
    use std::ffi::CStr;
    use std::io::Read;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    use crate::model::event::Pid;

    /// Where [`super::details_from`] reads a process's files: the open calls differ, the
    /// reading does not.
    pub trait ProcFiles {
        /// Opens file `name` of the process for reading: a descriptor, or negative.
        fn open_file(&self, name: &CStr) -> libc::c_int;
        /// `readlink` of link `name` of the process into `buf`: its length, or negative.
        fn read_link(&self, name: &CStr, buf: &mut [u8]) -> isize;
        /// Owner of the process's `/proc` directory: its effective uid (root when it is not
        /// dumpable).
        fn owner(&self) -> Option<u32>;

        /// All of file `name`: in `buf` when it fits, else in `spill`. `None` when it cannot be
        /// opened or read.
        fn read<'a>(&self, name: &CStr, buf: &'a mut [u8], spill: &'a mut Vec<u8>) -> Option<&'a [u8]> {
            let fd = self.open_file(name);
            if fd < 0 {
                return None;
            }
            // SAFETY: `fd` was just returned by open/openat and belongs to nothing else.
            let mut f = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
            let n = f.read(buf).ok()?;
            if n < buf.len() {
                // These /proc files hand over all that exists of what is asked for: a short
                // read is the end, and another read() to see 0 would only cost a system call.
                return Some(&buf[..n]);
            }
            spill.clear();
            spill.extend_from_slice(buf);
            loop {
                match f.read(buf).ok()? {
                    0 => return Some(spill),
                    k => spill.extend_from_slice(&buf[..k]),
                }
            }
        }

        /// Target of symlink `name` (`exe`, `cwd`). The kernel fails these with ENAMETOOLONG
        /// beyond PATH_MAX − 1 bytes, so a 4 KiB `buf` holds any of them.
        fn readlink<'a>(&self, name: &CStr, buf: &'a mut [u8]) -> Option<&'a [u8]> {
            let n = self.read_link(name, buf);
            if n < 0 || n as usize >= buf.len() {
                return None; // gone (or, not possible for /proc, truncated)
            }
            Some(&buf[..n as usize])
        }
    }

    /// `/proc/<pid>/` as NUL-terminated bytes and its length without the NUL, built without
    /// allocating: "/proc/" + at most 10 digits + "/".
    fn pid_dir(pid: Pid) -> Option<([u8; 18], usize)> {
        if pid <= 0 {
            return None;
        }
        let mut path = [0u8; 18];
        path[..6].copy_from_slice(b"/proc/");
        let mut digits = [0u8; 10];
        let mut n = pid as u32;
        let mut len = 0;
        loop {
            digits[len] = b'0' + (n % 10) as u8;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for (i, d) in digits[..len].iter().rev().enumerate() {
            path[6 + i] = *d;
        }
        path[6 + len] = b'/';
        Some((path, 7 + len))
    }

    /// `/proc/<pid>` held open as a directory (`O_PATH`: a handle for lookups, nothing read).
    pub struct ProcDir(OwnedFd);

    impl ProcDir {
        /// `None` when the process is gone (or `pid` is not a pid).
        pub fn open(pid: Pid) -> Option<ProcDir> {
            let (path, _) = pid_dir(pid)?;
            // SAFETY: `path` is NUL-terminated (its last byte is never written) and outlives
            // the call.
            let fd = unsafe {
                libc::open(
                    path.as_ptr().cast(),
                    libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                )
            };
            if fd < 0 {
                return None;
            }
            // SAFETY: `fd` was just returned by open and belongs to nothing else.
            Some(ProcDir(unsafe { OwnedFd::from_raw_fd(fd) }))
        }
    }

    impl ProcFiles for ProcDir {
        fn open_file(&self, name: &CStr) -> libc::c_int {
            // SAFETY: `name` is NUL-terminated and the directory descriptor is open.
            unsafe {
                libc::openat(
                    self.0.as_raw_fd(),
                    name.as_ptr(),
                    libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOCTTY,
                )
            }
        }

        fn read_link(&self, name: &CStr, buf: &mut [u8]) -> isize {
            // SAFETY: `name` is NUL-terminated; readlinkat writes at most `buf.len()` bytes into
            // `buf`, which is live and exclusively borrowed.
            unsafe {
                libc::readlinkat(
                    self.0.as_raw_fd(),
                    name.as_ptr(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                )
            }
        }

        fn owner(&self) -> Option<u32> {
            // SAFETY: all-zero is a valid `stat` (plain integers).
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: `st` is a live `stat` to write into; fstat accepts O_PATH descriptors.
            let rc = unsafe { libc::fstat(self.0.as_raw_fd(), &mut st) };
            (rc == 0).then_some(st.st_uid)
        }
    }

    /// `/proc/<pid>/` as a path, each file opened by its full path (for a process that cannot
    /// be replaced by another of the same pid while it is read).
    pub struct ProcPath {
        dir: [u8; 18],
        len: usize,
    }

    impl ProcPath {
        /// `None` when `pid` is not a pid.
        pub fn new(pid: Pid) -> Option<ProcPath> {
            let (dir, len) = pid_dir(pid)?;
            Some(ProcPath { dir, len })
        }

        /// `/proc/<pid>/<name>` NUL-terminated in `out` (`None` for a name too long, which
        /// only this file's own names could be).
        fn path<'a>(&self, name: &CStr, out: &'a mut [u8; 64]) -> Option<&'a mut [u8; 64]> {
            let name = name.to_bytes_with_nul();
            if self.len + name.len() > out.len() {
                return None;
            }
            out[..self.len].copy_from_slice(&self.dir[..self.len]);
            out[self.len..self.len + name.len()].copy_from_slice(name);
            Some(out)
        }
    }

    impl ProcFiles for ProcPath {
        fn open_file(&self, name: &CStr) -> libc::c_int {
            let mut buf = [0u8; 64];
            let Some(path) = self.path(name, &mut buf) else {
                return -1;
            };
            // SAFETY: `path` is NUL-terminated (written by `path`) and outlives the call.
            unsafe {
                libc::open(
                    path.as_ptr().cast(),
                    libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOCTTY,
                )
            }
        }

        fn read_link(&self, name: &CStr, buf: &mut [u8]) -> isize {
            let mut p = [0u8; 64];
            let Some(path) = self.path(name, &mut p) else {
                return -1;
            };
            // SAFETY: `path` is NUL-terminated; readlink writes at most `buf.len()` bytes into
            // `buf`, which is live and exclusively borrowed.
            unsafe { libc::readlink(path.as_ptr().cast(), buf.as_mut_ptr().cast(), buf.len()) }
        }

        fn owner(&self) -> Option<u32> {
            let mut dir = self.dir;
            dir[self.len - 1] = 0; // "/proc/<pid>", without the slash
            // SAFETY: all-zero is a valid `stat` (plain integers).
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: `dir` is NUL-terminated; `st` is a live `stat` to write into.
            let rc = unsafe { libc::stat(dir.as_ptr().cast(), &mut st) };
            (rc == 0).then_some(st.st_uid)
        }
    }
}

/// The kernel names a process after the path it exec'd (base name, at most 15 bytes), which is
/// almost always `argv[0]`; the resolved executable stands in when `argv[0]` is empty.
pub fn comm_from_argv0(argv0: &str, exe: Option<&str>) -> String {
    let src = if argv0.is_empty() {
        exe.unwrap_or(argv0)
    } else {
        argv0
    };
    let base = src.rsplit('/').next().unwrap_or(src);
    // 15 of the bytes it stands for, as the kernel counts (a held byte is one).
    let raw = bytes::decode(base);
    // The kernel cuts bytes, not characters: a character cut there stays as its bytes.
    bytes::encode(&raw[..raw.len().min(15)]).into_owned()
}

/// NUL-separated argv. Empty (a zombie, or a kernel thread) means unavailable.
pub fn split_cmdline(b: &[u8]) -> Option<Argv> {
    if b.is_empty() {
        return None;
    }
    Some(Argv::from_nul_separated(b))
}

/// `Name:` and the real uid from `/proc/<pid>/status`.
pub fn parse_status(b: &[u8]) -> (Option<String>, Option<u32>) {
    let mut name = None;
    let mut uid = None;
    for line in b.split(|&c| c == b'\n') {
        if let Some(v) = line.strip_prefix(b"Name:\t") {
            name = Some(text(v));
        } else if let Some(v) = line.strip_prefix(b"Uid:\t") {
            uid = std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.split('\t').next())
                .and_then(|s| s.parse().ok());
            break;
        }
    }
    (name, uid)
}

/// Fields of `/proc/<pid>/stat` the tracker needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// comm.
    pub comm: String,
    /// State letter.
    pub state: char,
    /// Parent pid.
    pub ppid: Pid,
    /// Start time in clock ticks since boot.
    pub starttime: u64,
}

/// Parses `/proc/<pid>/stat` (comm may contain spaces and parentheses: split at the last `)`).
pub fn parse_stat(s: &str) -> Option<Stat> {
    let open = s.find('(')?;
    let close = s.rfind(')')?;
    let comm = s.get(open + 1..close)?.to_string();
    let mut rest = s.get(close + 2..)?.split(' ');
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    // Fields 5..=21 skipped; starttime is field 22 (index 19 after state).
    let starttime = rest.nth(17)?.parse().ok()?;
    Some(Stat {
        comm,
        state,
        ppid,
        starttime,
    })
}

/// Reads and parses `/proc/<pid>/stat`.
pub fn stat(pid: Pid) -> Option<Stat> {
    // Bytes: a comm that is not UTF-8 is kept (and must not lose the rest of the line).
    parse_stat(&bytes::encode(&fs::read(format!("/proc/{pid}/stat")).ok()?))
}

/// Process id and parent process id of task `tid` (any thread), from `/proc/TID/status`.
pub fn tgid_ppid(tid: Pid) -> Option<(Pid, Pid)> {
    let s = fs::read(format!("/proc/{tid}/status")).ok()?;
    let s = bytes::encode(&s);
    let field = |name: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<Pid>().ok())
    };
    Some((field("Tgid:")?, field("PPid:")?))
}

/// Clock conversions between `/proc` start times and connector timestamps.
#[derive(Debug, Clone, Copy)]
pub struct Clocks {
    /// CLOCK_BOOTTIME − CLOCK_MONOTONIC, ns.
    pub boot_minus_mono: i64,
    /// CLOCK_REALTIME − CLOCK_MONOTONIC, ns.
    pub real_minus_mono: i64,
    /// Clock ticks per second (`USER_HZ`).
    pub ticks_per_sec: u64,
}

impl Clocks {
    /// Samples the clocks now.
    pub fn sample() -> Clocks {
        let mono = clock_ns(libc::CLOCK_MONOTONIC);
        let boot = clock_ns(libc::CLOCK_BOOTTIME);
        let real = clock_ns(libc::CLOCK_REALTIME);
        let mono2 = clock_ns(libc::CLOCK_MONOTONIC);
        let mono_mid = mono + (mono2 - mono) / 2;
        // SAFETY: sysconf is always safe to call.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        Clocks {
            boot_minus_mono: boot - mono_mid,
            real_minus_mono: real - mono_mid,
            ticks_per_sec: if hz > 0 { hz as u64 } else { 100 },
        }
    }

    /// Approximate monotonic fork time of a process from its `/proc` start time (tick precision).
    pub fn starttime_to_mono(&self, starttime: u64) -> u64 {
        let ns =
            starttime as i128 * 1_000_000_000 / self.ticks_per_sec as i128 - self.boot_minus_mono as i128;
        ns.max(0) as u64
    }

    /// The `/proc` start time a process forked at monotonic `ts` has.
    pub fn mono_to_starttime(&self, ts: u64) -> u64 {
        let boot = ts as i128 + self.boot_minus_mono as i128;
        (boot.max(0) as u128 * self.ticks_per_sec as u128 / 1_000_000_000) as u64
    }
}

/// Reads a clock in nanoseconds.
pub fn clock_ns(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write into.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// CPU time used by this process so far (user + system, every thread), ns.
pub fn self_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID).max(0) as u64
}

/// Monotonic now, as connector timestamps count.
pub fn mono_now() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC).max(0) as u64
}

/// Every process in `/proc` with its parent: for seeding `-p PID` and `watch`.
pub fn all_processes() -> Vec<(Pid, Stat)> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut v = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<Pid>().ok()) else {
            continue;
        };
        if let Some(st) = stat(pid) {
            v.push((pid, st));
        }
    }
    v.sort_by_key(|(p, st)| (st.starttime, *p));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_hostile_comm() {
        let s = "123 (a) b (c)) S 1 123 123 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 4567 1000 10 18446744073709551615";
        let st = parse_stat(s).unwrap();
        assert_eq!(st.comm, "a) b (c)");
        assert_eq!(st.state, 'S');
        assert_eq!(st.ppid, 1);
        assert_eq!(st.starttime, 4567);
    }

    #[test]
    fn cmdline_and_status() {
        assert_eq!(
            split_cmdline(b"ls\0-l\0\0x\0"),
            Some(Argv::from(["ls", "-l", "", "x"]))
        );
        assert_eq!(split_cmdline(b""), None);
        let (n, u) = parse_status(b"Name:\tbash\nUmask:\t0022\nState:\tS\nUid:\t1000\t1000\t1000\t1000\n");
        assert_eq!(n.as_deref(), Some("bash"));
        assert_eq!(u, Some(1000));
    }

    #[test]
    fn long_argv_gone_and_zombie() {
        use std::process::{Command, Stdio};
        // Longer than the stack buffer: `cat` waits on stdin before touching its file argument.
        let long = "x".repeat(10_000);
        let mut cat = Command::new("cat")
            .args(["-", &long])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = cat.id() as Pid;
        let mut d = exec_details(pid);
        for _ in 0..200 {
            if d.argv.as_ref().is_some_and(|a| a.len() == 3) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            d = exec_details(pid);
        }
        assert_eq!(d.argv, Some(Argv::from(["cat", "-", long.as_str()])));
        assert_eq!(d.comm.as_deref(), Some("cat"));
        assert!(d.exe.is_some_and(|e| e.ends_with("/cat")));
        assert_eq!(
            d.cwd,
            std::env::current_dir()
                .ok()
                .map(|p| Arc::from(p.to_string_lossy()))
        );
        // SAFETY: geteuid has no preconditions.
        assert_eq!(d.uid, Some(unsafe { libc::geteuid() }));
        drop(cat.stdin.take());
        cat.wait().unwrap();
        // Reaped: nothing at all, and no error.
        assert_eq!(exec_details(pid), ExecDetails::default());

        // A zombie: no argv, exe or cwd; its owner and comm are still there.
        let z = Command::new("true").spawn().unwrap();
        let zpid = z.id() as Pid;
        for _ in 0..400 {
            if stat(zpid).is_some_and(|s| s.state == 'Z') {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let d = exec_details(zpid);
        assert_eq!((d.argv, d.exe, d.cwd), (None, None, None));
        assert_eq!(d.comm.as_deref(), Some("true"));
        assert!(d.uid.is_some());
        let mut z = z;
        z.wait().unwrap();
        assert_eq!(exec_details(0), ExecDetails::default());
        assert_eq!(exec_details(-1), ExecDetails::default());
    }

    #[test]
    fn own_process_reads_back() {
        let d = exec_details(std::process::id() as Pid);
        assert!(d.argv.is_some_and(|a| !a.is_empty()));
        assert!(d.exe.is_some());
        let me = stat(std::process::id() as Pid).unwrap();
        let c = Clocks::sample();
        let back = c.mono_to_starttime(c.starttime_to_mono(me.starttime));
        assert!(back.abs_diff(me.starttime) <= 1);
    }
}
