//! Reading `/proc` for what the connector does not carry: argv, exe, cwd, uid, start time.
//!
//! Runs right after an exec arrives, on the model thread — never on the thread that drains the
//! socket. A process that is already gone is a normal outcome: its fields come back `None`, and
//! the caller keeps the kernel's comm rather than guessing.

use std::fs;
use std::io::Read;

use crate::model::event::{ExecDetails, Pid};

/// Reads the exec details of process `pid`. Never fails: missing pieces are `None`.
pub fn exec_details(pid: Pid) -> ExecDetails {
    // Cheapest first and fewest: every read here competes with the process we are reading
    // (cmdline needs its memory map), so no /proc/PID/status: the owner of /proc/PID is the
    // process's effective uid, and comm is read only when argv could not be.
    let mut path = ProcPath::new(pid);
    let argv = read_small(path.file("cmdline")).and_then(|b| split_cmdline(&b));
    let exe = fs::read_link(path.file("exe"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned());
    let cwd = fs::read_link(path.file("cwd"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned());
    let uid = {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(path.file("")).ok().map(|m| m.uid())
    };
    let comm = match &argv {
        Some(a) => a.first().map(|a0| comm_from_argv0(a0, exe.as_deref())),
        None => {
            read_small(path.file("comm")).map(|b| String::from_utf8_lossy(b.trim_ascii_end()).into_owned())
        }
    };
    ExecDetails {
        argv,
        exe,
        cwd,
        uid,
        comm,
    }
}

/// The kernel names a process after the path it exec'd (base name, at most 15 bytes), which is
/// almost always argv[0]; the resolved executable stands in when argv[0] is empty.
fn comm_from_argv0(argv0: &str, exe: Option<&str>) -> String {
    let src = if argv0.is_empty() {
        exe.unwrap_or(argv0)
    } else {
        argv0
    };
    let base = src.rsplit('/').next().unwrap_or(src);
    let mut end = base.len().min(15);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    base[..end].to_string()
}

/// `/proc/<pid>/<file>` without allocating a new string per file.
struct ProcPath {
    buf: String,
    base: usize,
}

impl ProcPath {
    fn new(pid: Pid) -> Self {
        let mut buf = String::with_capacity(32);
        buf.push_str("/proc/");
        buf.push_str(&pid.to_string());
        buf.push('/');
        let base = buf.len();
        ProcPath { buf, base }
    }
    fn file(&mut self, name: &str) -> &str {
        self.buf.truncate(self.base);
        self.buf.push_str(name);
        &self.buf
    }
}

fn read_small(path: &str) -> Option<Vec<u8>> {
    let mut f = fs::File::open(path).ok()?;
    let mut b = Vec::with_capacity(512);
    f.read_to_end(&mut b).ok()?;
    Some(b)
}

/// NUL-separated argv. Empty (a zombie, or a kernel thread) means unavailable.
pub fn split_cmdline(b: &[u8]) -> Option<Vec<String>> {
    if b.is_empty() {
        return None;
    }
    let b = b.strip_suffix(b"\0").unwrap_or(b);
    Some(
        b.split(|&c| c == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    )
}

/// `Name:` and the real uid from `/proc/<pid>/status`.
pub fn parse_status(b: &[u8]) -> (Option<String>, Option<u32>) {
    let mut name = None;
    let mut uid = None;
    for line in b.split(|&c| c == b'\n') {
        if let Some(v) = line.strip_prefix(b"Name:\t") {
            name = Some(String::from_utf8_lossy(v).into_owned());
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
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Process id and parent process id of task `tid` (any thread), from `/proc/TID/status`.
pub fn tgid_ppid(tid: Pid) -> Option<(Pid, Pid)> {
    let s = fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
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
            Some(vec!["ls".into(), "-l".into(), "".into(), "x".into()])
        );
        assert_eq!(split_cmdline(b""), None);
        let (n, u) = parse_status(b"Name:\tbash\nUmask:\t0022\nState:\tS\nUid:\t1000\t1000\t1000\t1000\n");
        assert_eq!(n.as_deref(), Some("bash"));
        assert_eq!(u, Some(1000));
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
