//! What a process cost, read from `/proc` and the kernel's process CPU clocks while it is
//! stopped at `PTRACE_EVENT_EXIT` (the ptrace backend's counterpart of taskstats): the same
//! [`Usage`] as `proctrace-taskstats` yields.
//!
//! At that stop `do_exit` has not yet released anything: the address space (`VmHWM`), the I/O
//! counters and the thread group's CPU are all still readable, and nothing the process does
//! afterwards but the kernel's own exit work (a few ms of freeing memory) is missing.
//!
//! | field | source | resolution, scope |
//! |---|---|---|
//! | CPU total | process CPU clock `CPUCLOCK_SCHED` (`clock_gettime` of `(~pid << 3) \| 2`) | ns, all threads, dead ones included (`sum_exec_runtime`) |
//! | user/system split | clocks `CPUCLOCK_VIRT` and `CPUCLOCK_PROF` (tick samples), split like `cputime_adjust` | as `wait4` |
//! | fallback | `/proc/PID/stat` utime, stime | clock ticks (10 ms at `USER_HZ` 100), adjusted like `wait4` |
//! | `max_rss_kib` | `/proc/TID/status` `VmHWM` | KiB, the address space's peak |
//! | chars, bytes | a process that never had a child: `/proc/TGID/io` once, at its leader's last stop (all its threads, the exited ones included); else `/proc/TGID/task/TID/io` of each thread at its own exit stop, summed | bytes, exact (taskstats rounds to KiB) |
//! | context switches | `/proc/TID/status` of each thread at its own exit stop, summed | each thread's final switch after its stop is missing |
//! | `cpu_delay_ns` | `/proc/TID/schedstat` 2nd field (`sched_info.run_delay`, what taskstats reports as `cpu_delay_total`) of each thread at its own exit stop, summed | ns; `None` if the kernel lacks `CONFIG_SCHED_INFO` (no such file) |
//! | `io_delay_ns` | — | `None`: `/proc` has block I/O delay only in clock ticks, for the whole process |
//! | the kernel's name | `Name:` of the leader's `/proc/TID/status` (unescaped: the kernel writes `\n` and `\\` for a newline and a backslash) | bytes, exact |
//!
//! Why these files and paths (each measured on the project's 2-vCPU VM, CPU time of the tracer
//! per exit stop, `BENCHMARKS.md`, "ptrace with usage at its floor"): every `/proc` file opened
//! for a process costs a new proc inode the first time (≈7 µs here) besides what making its text
//! costs (`status` ≈6 µs, `io` ≈1.4 µs, `schedstat` ≈0.7 µs), so the fewest files are read, by
//! the shortest path. `/proc/TID/…` reaches a thread's own `status` and `schedstat` (per-task
//! files) without the `task/` and `task/TID/` lookups; `io` under `/proc/TGID/` is the whole
//! process's (its threads live and dead) *plus the children it reaped* (the kernel adds a reaped
//! child's counters to its parent's), so it is read there only for a process that never created
//! one (no fork, vfork or process clone seen: nothing can have been reaped), and per thread
//! under `task/TID/` otherwise. The name comes with `status`, so `comm` is not opened. Each file
//! is one `open`, one `read` and one `close` (a short read is its end: these files hand over at
//! once all they have), into a buffer kept from one exit to the next.
//!
//! Not used, also measured: `wait4`'s `rusage` as the tracer reaps a traced process is
//! `getrusage(RUSAGE_BOTH)` of it — its own figures *plus every child it reaped* (a traced
//! grandchild that spun 100 ms and reaped a child that spun 200 ms came out at 300 ms), and
//! `ru_maxrss` is the peak over the address spaces it had before its exec too (for a vfork or
//! `posix_spawn` child, its parent's); `/proc/TID/stat` has no peak, no I/O and no switches; a
//! descriptor opened at an earlier stop and `pread` at the exit saves nothing (the open costs
//! the same wherever it is made) and holds descriptors.
//!
//! Reading a process that is not stopped gives a snapshot, not its final figures.

use std::io;

use crate::model::event::{KernelName, Pid};
pub use taskstats::Usage;

/// `/proc/PID/io`'s fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IoCounters {
    /// `rchar`.
    pub rchar: u64,
    /// `wchar`.
    pub wchar: u64,
    /// `read_bytes`.
    pub read_bytes: u64,
    /// `write_bytes`.
    pub write_bytes: u64,
    /// `cancelled_write_bytes`.
    pub cancelled_write_bytes: u64,
}

/// Parses `/proc/PID/io` (`name: value` lines). `None` if a field is missing or not a number.
pub fn parse_io(text: &str) -> Option<IoCounters> {
    let mut c = IoCounters::default();
    let mut seen = 0u8;
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v: u64 = v.trim().parse().ok()?;
        let (slot, bit) = match k {
            "rchar" => (&mut c.rchar, 1),
            "wchar" => (&mut c.wchar, 2),
            "read_bytes" => (&mut c.read_bytes, 4),
            "write_bytes" => (&mut c.write_bytes, 8),
            "cancelled_write_bytes" => (&mut c.cancelled_write_bytes, 16),
            _ => continue,
        };
        *slot = v;
        seen |= bit;
    }
    (seen == 31).then_some(c)
}

/// What the exit stop takes from `/proc/TID/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatusFields {
    /// `Name:` unescaped: the task's `comm`, bytes as the kernel holds them.
    pub name: Option<KernelName>,
    /// `VmHWM` in KiB (absent for kernel threads and after the address space is gone).
    pub hwm_kib: Option<u64>,
    /// The task's voluntary context switches.
    pub vol: Option<u64>,
    /// The task's involuntary context switches.
    pub invol: Option<u64>,
}

/// Parses `/proc/TID/status` (bytes: the name need not be UTF-8).
pub fn parse_status(text: &[u8]) -> StatusFields {
    let mut f = StatusFields::default();
    for line in text.split(|&c| c == b'\n') {
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            continue;
        };
        let (k, v) = (&line[..colon], &line[colon + 1..]);
        if k == b"Name" {
            f.name = unescape_name(v.strip_prefix(b"\t").unwrap_or(v));
            continue;
        }
        let num = || {
            std::str::from_utf8(v)
                .ok()?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        };
        match k {
            b"VmHWM" => f.hwm_kib = num(),
            b"voluntary_ctxt_switches" => f.vol = num(),
            b"nonvoluntary_ctxt_switches" => f.invol = num(),
            _ => {}
        }
    }
    f
}

/// The `Name:` value of a status file as the name it stands for: the kernel escapes a newline
/// as `\n` and a backslash as `\\` there, and nothing else (`proc_task_name`).
fn unescape_name(v: &[u8]) -> Option<KernelName> {
    let mut out = [0u8; KernelName::MAX];
    let mut n = 0;
    let mut i = 0;
    while i < v.len() && n < out.len() {
        let c = match (v[i], v.get(i + 1)) {
            (b'\\', Some(b'n')) => {
                i += 1;
                b'\n'
            }
            (b'\\', Some(b'\\')) => {
                i += 1;
                b'\\'
            }
            (c, _) => c,
        };
        out[n] = c;
        n += 1;
        i += 1;
    }
    KernelName::new(&out[..n])
}

/// From `/proc/PID/stat`: `(utime, stime)` in clock ticks (fields 14 and 15, after the
/// parenthesised comm, which may itself hold spaces and parentheses).
pub fn parse_stat_times(text: &str) -> Option<(u64, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    // rest starts at field 3 (state): utime is field 14, the 12th here.
    let utime = f.nth(11)?.parse().ok()?;
    let stime = f.next()?.parse().ok()?;
    Some((utime, stime))
}

/// From `/proc/PID/task/TID/schedstat` (`run_ns run_delay_ns timeslices`): the time the task
/// spent runnable, waiting for a CPU, ns.
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// Reads a process's figures at its leader's stop, its I/O as `io` says (the other threads'
/// switches and run-queue wait are not in them); meant for a process stopped at
/// `PTRACE_EVENT_EXIT`. Fails if the process is gone or its `io` is unreadable (it needs ptrace
/// access, which a tracer has). The ptrace backend uses [`ExitReader`] at every thread's stop.
pub fn read_at_exit(pid: Pid, io: IoRead) -> io::Result<Usage> {
    let mut r = ExitReader::default();
    let mut sum = ThreadSum::default();
    let t = r.thread(pid, pid, io)?;
    sum.add(&t);
    r.process(pid, &sum, io)
}

/// Where a process's I/O counters are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoRead {
    /// Each thread's own, `/proc/TGID/task/TID/io`, at its exit stop, summed.
    Thread,
    /// The whole process's, `/proc/TGID/io`, once at its last thread's stop: all its threads,
    /// *and the children it reaped* — for a process known to have had none.
    Process,
}

/// Reads what the ptrace backend needs at exit stops, with a buffer kept from one exit to the
/// next (no allocation per exit once it has grown).
///
/// Context switches, the peak and the run-queue wait are read per thread, at each thread's own
/// exit stop, and summed ([`ThreadSum`]): `/proc/PID/status` has the context switches of one
/// thread only. I/O is read per thread too ([`IoRead::Thread`]) unless the process never had a
/// child ([`IoRead::Process`]): `/proc/PID/io` also counts the I/O of every child the process
/// reaped. CPU comes from the process CPU clocks at the last thread's stop, which count the
/// threads that exited before (and no children).
#[derive(Debug, Default)]
pub struct ExitReader {
    buf: Vec<u8>,
}

/// One thread's own figures at its exit stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThreadAtExit {
    /// `VmHWM` of its address space, KiB (`None` once the address space is gone).
    pub hwm_kib: Option<u64>,
    /// Its voluntary context switches.
    pub vol: u64,
    /// Its involuntary context switches.
    pub invol: u64,
    /// Its own I/O counters (zero when not read: [`IoRead::Process`]).
    pub io: IoCounters,
    /// Its time waiting for a CPU, ns (`None`: not exposed by this kernel).
    pub cpu_delay_ns: Option<u64>,
    /// Its name (`comm`) as the kernel has it.
    pub name: Option<KernelName>,
}

/// A process's threads' figures summed as they reach their exit stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThreadSum {
    /// The largest peak seen (the threads share one address space).
    pub hwm_kib: Option<u64>,
    /// Voluntary context switches.
    pub vol: u64,
    /// Involuntary context switches.
    pub invol: u64,
    /// I/O counters.
    pub io: IoCounters,
    /// Time waiting for a CPU, ns; `None` once a thread had no figure.
    pub cpu_delay_ns: Option<u64>,
    /// Threads added.
    pub threads: u32,
}

impl ThreadSum {
    /// Adds one thread.
    pub fn add(&mut self, t: &ThreadAtExit) {
        self.hwm_kib = match (self.hwm_kib, t.hwm_kib) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.vol += t.vol;
        self.invol += t.invol;
        self.io.rchar += t.io.rchar;
        self.io.wchar += t.io.wchar;
        self.io.read_bytes += t.io.read_bytes;
        self.io.write_bytes += t.io.write_bytes;
        self.io.cancelled_write_bytes += t.io.cancelled_write_bytes;
        self.cpu_delay_ns = match self.threads {
            0 => t.cpu_delay_ns,
            _ => self.cpu_delay_ns.zip(t.cpu_delay_ns).map(|(a, b)| a + b),
        };
        self.threads += 1;
    }
}

/// `/proc/A/NAME` or `/proc/A/task/B/NAME`, NUL-terminated, built on the stack.
struct ProcPath {
    bytes: [u8; 64],
    len: usize,
}

impl ProcPath {
    fn new(tgid: Pid, tid: Option<Pid>, name: &str) -> ProcPath {
        use std::io::Write as _;
        let mut bytes = [0u8; 64];
        let room = bytes.len() - 1; // the NUL stays
        let mut w = &mut bytes[..room];
        // At most "/proc/" + 11 + "/task/" + 11 + "/" + "schedstat": 45 bytes, always fits
        // (else the path is empty, and opening it fails).
        let written = match tid {
            Some(tid) => write!(w, "/proc/{tgid}/task/{tid}/{name}"),
            None => write!(w, "/proc/{tgid}/{name}"),
        };
        let len = if written.is_ok() { room - w.len() } else { 0 };
        bytes[len] = 0;
        ProcPath { bytes, len }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("/proc/?")
    }
}

impl ExitReader {
    /// All of a `/proc` file, read with one `open`, as few `read`s as it takes (a short read is
    /// the end: these files hand over all they have at once) and one `close`.
    fn read(&mut self, path: &ProcPath) -> io::Result<&[u8]> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        if self.buf.len() < 4096 {
            self.buf.resize(4096, 0);
        }
        // SAFETY: the path is NUL-terminated (its last byte is never written) and outlives the
        // call.
        let fd = unsafe { libc::open(path.bytes.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by open and belongs to nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut len = 0;
        loop {
            let room = &mut self.buf[len..];
            // SAFETY: reads at most `room.len()` bytes into `room`, live and exclusively
            // borrowed.
            let n = unsafe { libc::read(fd.as_raw_fd(), room.as_mut_ptr().cast(), room.len()) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let n = n as usize;
            let asked = room.len();
            len += n;
            if n < asked {
                break;
            }
            // Full: there may be more.
            let grown = self.buf.len() * 2;
            self.buf.resize(grown, 0);
        }
        Ok(&self.buf[..len])
    }

    fn bad(path: &ProcPath) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: unexpected format", path.as_str()),
        )
    }

    fn io_counters(&mut self, path: &ProcPath) -> io::Result<IoCounters> {
        let text = self.read(path)?;
        std::str::from_utf8(text)
            .ok()
            .and_then(parse_io)
            .ok_or_else(|| Self::bad(path))
    }

    /// Thread `tid` of `tgid`, stopped at its exit: its own context switches, run-queue wait,
    /// name and its address space's peak, and its own I/O when `io` is [`IoRead::Thread`].
    pub fn thread(&mut self, tgid: Pid, tid: Pid, io: IoRead) -> io::Result<ThreadAtExit> {
        let status = parse_status(self.read(&ProcPath::new(tid, None, "status"))?);
        let io = match io {
            IoRead::Thread => self.io_counters(&ProcPath::new(tgid, Some(tid), "io"))?,
            IoRead::Process => IoCounters::default(),
        };
        let path = ProcPath::new(tid, None, "schedstat");
        let cpu_delay_ns = match self.read(&path) {
            Ok(text) => Some(
                std::str::from_utf8(text)
                    .ok()
                    .and_then(parse_schedstat)
                    .ok_or_else(|| Self::bad(&path))?,
            ),
            // No CONFIG_SCHED_INFO: the file does not exist; the figure is left out.
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        Ok(ThreadAtExit {
            hwm_kib: status.hwm_kib,
            vol: status.vol.unwrap_or(0),
            invol: status.invol.unwrap_or(0),
            io,
            cpu_delay_ns,
            name: status.name,
        })
    }

    /// The whole process's figures at its last thread's exit stop: CPU from the process CPU
    /// clocks of `tgid` (all its threads, the exited ones included), I/O from `/proc/TGID/io`
    /// when `io` is [`IoRead::Process`], the rest from `sum`.
    pub fn process(&mut self, tgid: Pid, sum: &ThreadSum, io: IoRead) -> io::Result<Usage> {
        let io = match io {
            IoRead::Process => self.io_counters(&ProcPath::new(tgid, None, "io"))?,
            IoRead::Thread => sum.io,
        };
        let (cpu_user_ns, cpu_sys_ns) = match process_clocks(tgid) {
            Some((virt, prof, sched)) => taskstats::split_cpu(virt, prof.saturating_sub(virt), sched),
            None => stat_cpu(tgid)?,
        };
        Ok(Usage {
            cpu_user_ns,
            cpu_sys_ns,
            max_rss_kib: sum.hwm_kib.unwrap_or(0),
            read_chars: io.rchar,
            write_chars: io.wchar,
            read_bytes: io.read_bytes,
            write_bytes: io.write_bytes,
            cancelled_write_bytes: io.cancelled_write_bytes,
            vol_ctx_switches: sum.vol,
            invol_ctx_switches: sum.invol,
            cpu_delay_ns: sum.cpu_delay_ns,
            io_delay_ns: None,
        })
    }
}

/// User and system CPU of the whole process from `/proc/PID/stat`, ns: `wait4`'s figures
/// truncated to clock ticks (10 ms each at `USER_HZ` 100). The fallback when the process CPU
/// clocks cannot be read.
pub fn stat_cpu(pid: Pid) -> io::Result<(u64, u64)> {
    let path = format!("/proc/{pid}/stat");
    // Bytes: the comm in the line need not be UTF-8 (only the numbers after it are read).
    let (ut, st) = parse_stat_times(&String::from_utf8_lossy(&std::fs::read(&path)?))
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("{path}: unexpected format")))?;
    let tick = 1_000_000_000 / clock_ticks();
    Ok((ut * tick, st * tick))
}

/// `sysconf(_SC_CLK_TCK)` (`USER_HZ`, 100 on Linux).
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as u64 } else { 100 }
}

/// The process CPU clocks `(VIRT, PROF, SCHED)` in ns: user samples, user + system samples,
/// precise run time, all threads (dead ones included).
pub fn process_clocks(pid: Pid) -> Option<(u64, u64, u64)> {
    let read = |which: i32| -> Option<u64> {
        // MAKE_PROCESS_CPUCLOCK(pid, which) from the kernel's posix-timers.h.
        let clock = (!pid << 3) | which;
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: ts is a live timespec; an invalid clock id only returns an error.
        let rc = unsafe { libc::clock_gettime(clock as libc::clockid_t, &mut ts) };
        (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    };
    Some((read(1)?, read(0)?, read(2)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::io::{BufRead, BufReader, Read};
    use std::process::{Command, Stdio};

    #[test]
    fn parses_proc_texts() {
        let io = "rchar: 3980\nwchar: 1048576\nsyscr: 8\nsyscw: 16\nread_bytes: 0\nwrite_bytes: 1060864\ncancelled_write_bytes: 4096\n";
        let c = parse_io(io).unwrap();
        assert_eq!(
            (c.rchar, c.wchar, c.write_bytes, c.cancelled_write_bytes),
            (3980, 1048576, 1060864, 4096)
        );
        assert_eq!(parse_io("rchar: 1\nwchar: x\n"), None, "not a number");
        assert_eq!(parse_io("rchar: 1\n"), None, "fields missing");
        let st =
            "Name:\ta\nVmHWM:\t  66976 kB\nvoluntary_ctxt_switches:\t4\nnonvoluntary_ctxt_switches:\t302\n";
        let f = parse_status(st.as_bytes());
        assert_eq!((f.hwm_kib, f.vol, f.invol), (Some(66976), Some(4), Some(302)));
        assert_eq!(f.name.unwrap().as_bytes(), b"a");
        let k = parse_status(b"Name:\tkworker\n");
        assert_eq!((k.hwm_kib, k.name.unwrap().as_bytes()), (None, &b"kworker"[..]));
        // The kernel's escapes undone, every other byte kept (a tab, a trailing space, 0xff).
        let odd = parse_status(b"Name:\ta\\nb\\\\c\td\xffe \nVmHWM:\t1 kB\n");
        assert_eq!(odd.name.unwrap().as_bytes(), b"a\nb\\c\td\xffe ");
        assert_eq!(odd.hwm_kib, Some(1));
        let stat = "42 (a) b (c) R 1 42 42 0 -1 4194560 100 0 0 0 123 45 0 0 20 0 1 0 9 0 0";
        assert_eq!(parse_stat_times(stat), Some((123, 45)));
        assert_eq!(parse_stat_times("42 (a"), None);
        assert_eq!(parse_schedstat("319409 151424 2\n"), Some(151424));
        assert_eq!(parse_schedstat("319409\n"), None);
    }

    /// The ground-truth workload of proctrace-taskstats, built once.
    fn workload() -> std::path::PathBuf {
        static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
        BIN.get_or_init(|| {
            let src = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/crates/taskstats/tests/fixtures/workload.c"
            );
            let dir = std::env::temp_dir().join(format!("proctrace-usage-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let out = dir.join("usage-workload");
            let st = Command::new("cc")
                .args(["-O2", "-Wall", "-pthread", "-o"])
                .arg(&out)
                .arg(src)
                .status()
                .unwrap();
            assert!(st.success());
            out
        })
        .clone()
    }

    /// Runs the workload under the launcher, traces it (it waits for a tracer), reads its
    /// figures at the exit stop, lets it go, and returns them with the launcher's ground truth
    /// (`wait4` rusage and the zombie's `/proc/PID/io`).
    fn traced_run(
        cpu_ms: u32,
        mib: u32,
        bytes: u32,
        threads: u32,
        sig: i32,
    ) -> (Usage, Usage, HashMap<String, i64>) {
        let file = workload().with_extension(format!("out-{threads}-{sig}"));
        let mut child = Command::new(workload())
            .args([
                "launch",
                &cpu_ms.to_string(),
                &mib.to_string(),
                &bytes.to_string(),
                &threads.to_string(),
            ])
            .arg(&file)
            .args([sig.to_string(), "1".into()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let pid: i32 = line.trim().strip_prefix("pid ").unwrap().parse().unwrap();
        let opts = libc::PTRACE_O_TRACEEXIT | libc::PTRACE_O_EXITKILL;
        // SAFETY: plain ptrace calls on a process this test started; results checked.
        unsafe {
            assert_eq!(libc::ptrace(libc::PTRACE_SEIZE, pid, 0, opts as libc::c_long), 0);
        }
        let usage = loop {
            let mut st = 0;
            // SAFETY: waits for the tracee's next stop.
            let r = unsafe { libc::waitpid(pid, &mut st, libc::__WALL) };
            assert_eq!(r, pid, "waitpid: {}", io::Error::last_os_error());
            assert!(
                libc::WIFSTOPPED(st),
                "tracee ended without its exit stop: {st:#x}"
            );
            if st >> 8 == (libc::SIGTRAP | (libc::PTRACE_EVENT_EXIT << 8)) {
                let u = read_at_exit(pid as Pid, IoRead::Thread).unwrap();
                let whole = read_at_exit(pid as Pid, IoRead::Process).unwrap();
                // The fallback agrees, to its two truncated 10 ms ticks.
                let (su, ss) = stat_cpu(pid as Pid).unwrap();
                let (precise, ticks) = (u.cpu_user_ns + u.cpu_sys_ns, su + ss);
                let slack = 2 * 1_000_000_000 / clock_ticks() + precise / 50;
                assert!(
                    ticks <= precise + 1_000_000 && precise.saturating_sub(ticks) <= slack,
                    "{ticks} {precise}"
                );
                break (u, whole);
            }
            let sig = if st >> 16 == 0 { libc::WSTOPSIG(st) } else { 0 };
            // SAFETY: resumes the stopped tracee, passing on a signal it was stopped for.
            unsafe { libc::ptrace(libc::PTRACE_CONT, pid, 0, sig as libc::c_long) };
        };
        // SAFETY: detaches from the tracee stopped at its exit; the launcher reaps it.
        unsafe { libc::ptrace(libc::PTRACE_DETACH, pid, 0, 0) };
        let mut rest = String::new();
        out.read_to_string(&mut rest).unwrap();
        assert!(child.wait().unwrap().success());
        let _ = std::fs::remove_file(&file);
        let mut truth = HashMap::from([("pid".to_string(), pid as i64)]);
        for l in rest.lines() {
            let w: Vec<&str> = l.split_whitespace().collect();
            let pairs = if w[0] == "io" { &w[1..] } else { &w[..] };
            for kv in pairs.chunks(2) {
                truth.insert(kv[0].trim_end_matches(':').to_string(), kv[1].parse().unwrap());
            }
        }
        (usage.0, usage.1, truth)
    }

    fn check(u: &Usage, t: &HashMap<String, i64>, bytes: u64, threads: u64) {
        let cpu = ((u.cpu_user_ns + u.cpu_sys_ns) / 1000) as i64;
        let truth = t["utime_us"] + t["stime_us"];
        assert!(
            (cpu - truth).abs() as f64 <= 10_000.0 + 0.02 * truth as f64,
            "CPU {cpu} µs, wait4 {truth} µs"
        );
        let rss = u.max_rss_kib as i64;
        assert!(
            (rss - t["maxrss_kib"]).abs() as f64 <= 0.02 * t["maxrss_kib"] as f64,
            "RSS {rss}, wait4 {}",
            t["maxrss_kib"]
        );
        assert_eq!(u.write_chars, bytes);
        assert_eq!(u.write_chars as i64, t["wchar"], "wchar exact");
        assert_eq!(u.read_chars as i64, t["rchar"], "rchar exact");
        assert_eq!(u.read_bytes as i64, t["read_bytes"]);
        assert_eq!(u.write_bytes as i64, t["write_bytes"]);
        // Live threads only at the leader's stop; each thread switches again after it.
        assert!(u.vol_ctx_switches as i64 <= t["nvcsw"], "{u:?} {t:?}");
        assert!(u.invol_ctx_switches as i64 <= t["nivcsw"]);
        assert!(u.vol_ctx_switches + u.invol_ctx_switches > 0);
        let _ = threads;
    }

    /// The I/O read once for the whole process (`/proc/PID/io`, a process without children) is
    /// the thread's own read at its path, and the launcher's reading of the zombie's, exactly.
    fn same_io(u: &Usage, whole: &Usage, t: &HashMap<String, i64>) {
        let io = |u: &Usage| {
            (
                u.read_chars,
                u.write_chars,
                u.read_bytes,
                u.write_bytes,
                u.cancelled_write_bytes,
            )
        };
        assert_eq!(io(whole), io(u));
        assert_eq!(whole.write_chars as i64, t["wchar"]);
        assert_eq!(whole.read_chars as i64, t["rchar"]);
    }

    /// The taskstats record of `pid`, waiting for it up to 20 s.
    fn taskstats_of(ts: &mut taskstats::Listener, pid: u32) -> taskstats::ProcessUsage {
        let mut acc = taskstats::Accumulator::new(ts.io_delay_accounting());
        let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut items = Vec::new();
        while std::time::Instant::now() < end {
            items.clear();
            ts.recv(&mut items, 100).unwrap();
            for it in &items {
                if let taskstats::Received::Exit(e) = it
                    && let Some(p) = acc.feed(e)
                    && p.tgid == pid
                {
                    return p;
                }
            }
        }
        panic!("no taskstats record for {pid}");
    }

    #[test]
    fn traced_process_at_its_exit_stop_matches_wait4_and_taskstats() {
        let mut ts = taskstats::Listener::open(&taskstats::Options::default()).unwrap();
        let bytes = 2 << 20;
        let (u, whole, t) = traced_run(250, 40, bytes, 1, 0);
        same_io(&u, &whole, &t);
        // Both backends' figures of the same process agree.
        let k = taskstats_of(&mut ts, t["pid"] as u32).usage;
        let (a, b) = (u.cpu_user_ns + u.cpu_sys_ns, k.cpu_user_ns + k.cpu_sys_ns);
        assert!(
            a.abs_diff(b) as f64 <= 10e6 + 0.02 * b as f64,
            "CPU: ptrace {a} ns, taskstats {b} ns"
        );
        assert!(u.max_rss_kib.abs_diff(k.max_rss_kib) as f64 <= 0.02 * k.max_rss_kib as f64);
        assert_eq!(k.write_chars, u.write_chars);
        assert_eq!(k.read_chars, u.read_chars & !1023, "taskstats rounds to KiB");
        // Both are the thread's run-queue wait (`sched_info.run_delay`); taskstats reads it last.
        let (d, kd) = (u.cpu_delay_ns.unwrap(), k.cpu_delay_ns.unwrap());
        assert!(d <= kd, "schedstat {d} ns, taskstats {kd} ns");
        assert_eq!(t["status"], 0);
        check(&u, &t, bytes as u64, 1);
        // The spin counts its thread's CPU (user and system): the split is the kernel's samples.
        assert!(u.cpu_user_ns + u.cpu_sys_ns >= 250_000_000, "{u:?}");
        assert!(u.max_rss_kib >= 40 << 10);
    }

    #[test]
    fn traced_threads_summed_and_signal_death() {
        let bytes = 256 << 10;
        // 40 MiB: wait4's peak reads the mm's approximate per-CPU RSS counters, VmHWM their exact
        // sum; they were measured 300 KiB apart, 3 % of a 9 MiB process.
        let (u, whole, t) = traced_run(100, 40, bytes, 3, libc::SIGTERM);
        same_io(&u, &whole, &t);
        assert_eq!(t["status"] & 0x7f, libc::SIGTERM as i64);
        check(&u, &t, bytes as u64, 3);
        assert!(
            u.cpu_user_ns + u.cpu_sys_ns >= 3 * 90_000_000,
            "three threads' CPU: {u:?}"
        );
    }
}
