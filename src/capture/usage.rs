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
//! | `max_rss_kib` | `/proc/PID/task/TID/status` `VmHWM` | KiB, the address space's peak |
//! | chars, bytes | `/proc/PID/task/TID/io` of each thread at its own exit stop, summed | bytes, exact (taskstats rounds to KiB); not `/proc/PID/io`, which adds reaped children's |
//! | context switches | `/proc/PID/task/TID/status` of each thread at its own exit stop, summed | each thread's final switch after its stop is missing |
//! | `cpu_delay_ns` | `/proc/PID/task/TID/schedstat` 2nd field (`sched_info.run_delay`, what taskstats reports as `cpu_delay_total`) of each thread at its own exit stop, summed | ns; `None` if the kernel lacks `CONFIG_SCHED_INFO` (no such file) |
//! | `io_delay_ns` | — | `None`: `/proc` has block I/O delay only in clock ticks, for the whole process |
//!
//! Reading a process that is not stopped gives a snapshot, not its final figures.

use std::io;

use crate::model::event::Pid;
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

/// From `/proc/PID/status`: `VmHWM` in KiB (absent for kernel threads and after the address
/// space is gone) and the task's voluntary and involuntary context switches.
pub fn parse_status(text: &str) -> (Option<u64>, Option<u64>, Option<u64>) {
    let (mut hwm, mut vol, mut invol) = (None, None, None);
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let num = || v.split_whitespace().next().and_then(|n| n.parse::<u64>().ok());
        match k {
            "VmHWM" => hwm = num(),
            "voluntary_ctxt_switches" => vol = num(),
            "nonvoluntary_ctxt_switches" => invol = num(),
            _ => {}
        }
    }
    (hwm, vol, invol)
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

/// Reads a single-threaded process's figures; meant for a process stopped at
/// `PTRACE_EVENT_EXIT`. Fails if the process is gone or its `io` is unreadable (it needs ptrace
/// access, which a tracer has). The ptrace backend uses [`ExitReader`] at every thread's stop.
pub fn read_at_exit(pid: Pid) -> io::Result<Usage> {
    let mut r = ExitReader::default();
    let mut sum = ThreadSum::default();
    let t = r.thread(pid, pid)?;
    sum.add(&t);
    r.process(pid, &sum)
}

/// Reads what the ptrace backend needs at exit stops, with buffers kept from one exit to the
/// next (no allocation per exit once they have grown).
///
/// Everything but CPU is read per thread, from `/proc/TGID/task/TID/{status,io}`, at each
/// thread's own exit stop, and summed ([`ThreadSum`]): `/proc/PID/io` would also count the I/O
/// of every child the process reaped (the kernel adds a reaped child's counters to its
/// parent's), and `/proc/PID/status` has the context switches of one thread only. CPU comes
/// from the process CPU clocks at the last thread's stop, which count the threads that exited
/// before (and no children).
#[derive(Debug, Default)]
pub struct ExitReader {
    path: String,
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
    /// Its own I/O counters.
    pub io: IoCounters,
    /// Its time waiting for a CPU, ns (`None`: not exposed by this kernel).
    pub cpu_delay_ns: Option<u64>,
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

impl ExitReader {
    fn read(&mut self, tgid: Pid, tid: Pid, file: &str) -> io::Result<&str> {
        use std::fmt::Write as _;
        use std::io::Read as _;
        self.path.clear();
        let _ = write!(self.path, "/proc/{tgid}/task/{tid}/{file}");
        self.buf.clear();
        std::fs::File::open(&self.path)?.read_to_end(&mut self.buf)?;
        std::str::from_utf8(&self.buf).map_err(|_| self.bad())
    }

    fn bad(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: unexpected format", self.path),
        )
    }

    /// Thread `tid` of `tgid`, stopped at its exit: its own context switches, I/O and its
    /// address space's peak.
    pub fn thread(&mut self, tgid: Pid, tid: Pid) -> io::Result<ThreadAtExit> {
        let (hwm_kib, vol, invol) = parse_status(self.read(tgid, tid, "status")?);
        let io = parse_io(self.read(tgid, tid, "io")?).ok_or_else(|| self.bad())?;
        let cpu_delay_ns = match self.read(tgid, tid, "schedstat") {
            Ok(text) => Some(parse_schedstat(text).ok_or_else(|| self.bad())?),
            // No CONFIG_SCHED_INFO: the file does not exist; the figure is left out.
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        Ok(ThreadAtExit {
            hwm_kib,
            vol: vol.unwrap_or(0),
            invol: invol.unwrap_or(0),
            io,
            cpu_delay_ns,
        })
    }

    /// The whole process's figures at its last thread's exit stop: CPU from the process CPU
    /// clocks of `tgid` (all its threads, the exited ones included), the rest from `sum`.
    pub fn process(&mut self, tgid: Pid, sum: &ThreadSum) -> io::Result<Usage> {
        let (cpu_user_ns, cpu_sys_ns) = match process_clocks(tgid) {
            Some((virt, prof, sched)) => taskstats::split_cpu(virt, prof.saturating_sub(virt), sched),
            None => stat_cpu(tgid)?,
        };
        Ok(Usage {
            cpu_user_ns,
            cpu_sys_ns,
            max_rss_kib: sum.hwm_kib.unwrap_or(0),
            read_chars: sum.io.rchar,
            write_chars: sum.io.wchar,
            read_bytes: sum.io.read_bytes,
            write_bytes: sum.io.write_bytes,
            cancelled_write_bytes: sum.io.cancelled_write_bytes,
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
        assert_eq!(parse_status(st), (Some(66976), Some(4), Some(302)));
        assert_eq!(parse_status("Name:\tkworker\n").0, None);
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
    ) -> (Usage, HashMap<String, i64>) {
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
                let u = read_at_exit(pid as Pid).unwrap();
                // The fallback agrees, to its two truncated 10 ms ticks.
                let (su, ss) = stat_cpu(pid as Pid).unwrap();
                let (precise, ticks) = (u.cpu_user_ns + u.cpu_sys_ns, su + ss);
                let slack = 2 * 1_000_000_000 / clock_ticks() + precise / 50;
                assert!(
                    ticks <= precise + 1_000_000 && precise.saturating_sub(ticks) <= slack,
                    "{ticks} {precise}"
                );
                break u;
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
        (usage, truth)
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
        let (u, t) = traced_run(250, 40, bytes, 1, 0);
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
        let (u, t) = traced_run(100, 40, bytes, 3, libc::SIGTERM);
        assert_eq!(t["status"] & 0x7f, libc::SIGTERM as i64);
        check(&u, &t, bytes as u64, 3);
        assert!(
            u.cpu_user_ns + u.cpu_sys_ns >= 3 * 90_000_000,
            "three threads' CPU: {u:?}"
        );
    }
}
