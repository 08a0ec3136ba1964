//! What a process cost, in one struct shared by both sources (taskstats and, in proctrace's
//! ptrace backend, `/proc/PID/{stat,status,io}` at the exit stop), and the summing of a
//! process's threads.

use std::collections::HashMap;

use crate::parse::{TaskExit, TaskRecord};

/// What a process (all its threads) cost. Units are the struct's own (ns, KiB, bytes), whatever
/// the source's resolution: taskstats reports CPU in µs, `/proc/PID/stat` in clock ticks (10 ms
/// at `USER_HZ` 100).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Usage {
    /// User CPU, ns.
    pub cpu_user_ns: u64,
    /// System CPU, ns.
    pub cpu_sys_ns: u64,
    /// Peak resident set of the process's last address space (the one it exited with), KiB.
    pub max_rss_kib: u64,
    /// Bytes through read-like calls (`rchar`). From taskstats each thread's figure is rounded
    /// down to a KiB, as are the other byte counts here (crate docs).
    pub read_chars: u64,
    /// Bytes through write-like calls (`wchar`).
    pub write_chars: u64,
    /// Bytes read from storage (`read_bytes`).
    pub read_bytes: u64,
    /// Bytes dirtied for storage (`write_bytes`).
    pub write_bytes: u64,
    /// Dirtied bytes truncated before writeback (`cancelled_write_bytes`).
    pub cancelled_write_bytes: u64,
    /// Voluntary context switches.
    pub vol_ctx_switches: u64,
    /// Involuntary context switches.
    pub invol_ctx_switches: u64,
    /// Time runnable but waiting for a CPU, ns (`None` when the source has no figure).
    pub cpu_delay_ns: Option<u64>,
    /// Time waiting for synchronous block I/O, ns (`None` when not accounted: taskstats needs
    /// `kernel.task_delayacct=1`).
    pub io_delay_ns: Option<u64>,
}

impl Usage {
    /// One task's figures. `io_delay` says whether block I/O delay accounting was on.
    pub fn from_task(r: &TaskRecord, io_delay: bool) -> Usage {
        let (cpu_user_ns, cpu_sys_ns) = split_cpu(r.utime_us * 1000, r.stime_us * 1000, r.run_ns);
        Usage {
            cpu_user_ns,
            cpu_sys_ns,
            max_rss_kib: r.hiwater_rss_kib,
            read_chars: r.read_char,
            write_chars: r.write_char,
            read_bytes: r.read_bytes,
            write_bytes: r.write_bytes,
            cancelled_write_bytes: r.cancelled_write_bytes,
            vol_ctx_switches: r.nvcsw,
            invol_ctx_switches: r.nivcsw,
            cpu_delay_ns: Some(r.cpu_delay_ns),
            io_delay_ns: io_delay.then_some(r.blkio_delay_ns),
        }
    }

    /// Adds another thread of the same process: sums, except the peak RSS (threads share the
    /// address space, so it is the maximum).
    pub fn add_thread(&mut self, o: &Usage) {
        self.cpu_user_ns += o.cpu_user_ns;
        self.cpu_sys_ns += o.cpu_sys_ns;
        self.max_rss_kib = self.max_rss_kib.max(o.max_rss_kib);
        self.read_chars += o.read_chars;
        self.write_chars += o.write_chars;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.cancelled_write_bytes += o.cancelled_write_bytes;
        self.vol_ctx_switches += o.vol_ctx_switches;
        self.invol_ctx_switches += o.invol_ctx_switches;
        self.cpu_delay_ns = add_opt(self.cpu_delay_ns, o.cpu_delay_ns);
        self.io_delay_ns = add_opt(self.io_delay_ns, o.io_delay_ns);
    }
}

/// The kernel's `cputime_adjust` (what `wait4` and `/proc/PID/stat` report): the precise run
/// time `rtime`, split between user and system in the proportion of the tick samples.
pub fn split_cpu(utime_ns: u64, stime_ns: u64, rtime_ns: u64) -> (u64, u64) {
    if rtime_ns == 0 {
        return (utime_ns, stime_ns); // no scheduler figure: the samples as they are
    }
    if stime_ns == 0 {
        return (rtime_ns, 0);
    }
    if utime_ns == 0 {
        return (0, rtime_ns);
    }
    let stime = (stime_ns as u128 * rtime_ns as u128 / (utime_ns as u128 + stime_ns as u128)) as u64;
    (rtime_ns - stime, stime)
}

fn add_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(a? + b?)
}

fn add_raw(raw: (u64, u64, u64), r: &TaskRecord) -> (u64, u64, u64) {
    (
        raw.0 + r.utime_us * 1000,
        raw.1 + r.stime_us * 1000,
        raw.2 + r.run_ns,
    )
}

/// A whole process's figures, with what the caller needs to join them with the process's exit
/// from another source (cn_proc) safely against pid reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessUsage {
    /// Process id (thread group id), initial pid namespace.
    pub tgid: u32,
    /// Threads summed, the leader included.
    pub threads: u32,
    /// Sum over the threads.
    pub usage: Usage,
    /// The leader's wait status (`ac_exitcode`; 0 if the leader's record was not seen).
    pub exit_code: u32,
    /// The leader's `ac_comm` (NUL-padded; the last thread's if the leader's was not seen).
    pub comm: [u8; crate::abi::TS_COMM_LEN],
    /// Parent's tgid as the kernel saw it at exit (after reparenting).
    pub ppid: u32,
    /// Start of the leader, seconds since the epoch (truncated: `now - elapsed`, computed at exit
    /// in whole seconds, so ±1 s against any other clock).
    pub btime_s: u64,
    /// The process's elapsed time at its last thread's exit, µs (`ac_tgetime`, v12+; else the
    /// leader's `ac_etime`).
    pub elapsed_us: u64,
    /// The kernel's thread group aggregate counted more CPU than the thread records summed here:
    /// some thread's record was lost, or the leader's went out alone before (see
    /// [`Accumulator`]); either way figures are missing from `usage`.
    pub threads_lost: bool,
}

impl ProcessUsage {
    /// `comm` up to its first NUL.
    pub fn comm(&self) -> &[u8] {
        let end = self.comm.iter().position(|&b| b == 0).unwrap_or(self.comm.len());
        &self.comm[..end]
    }
}

/// Sums the records of a process's threads and yields the process once its last thread exited.
///
/// A process is complete when the kernel sends the thread group aggregate (last exit of a
/// multi-threaded process), or when a leader (`pid == tgid`) exits with no other thread of it
/// pending. One case is ambiguous in the kernel's records: a multi-threaded process whose leader
/// exits first (`pthread_exit` in `main`) — the leader's record looks like a single-threaded
/// exit. A caller that knows the process has had other threads (it saw one created, e.g. from
/// the process events connector) says so with [`Accumulator::expect_threads`] before the
/// leader's record comes: the leader is then held and summed with the rest until the aggregate
/// closes the group. Without that, such a leader is yielded alone and the group's later threads,
/// completed by the aggregate, come as a second `ProcessUsage` with the same tgid,
/// `exit_code`/`comm` of the last thread and [`ProcessUsage::threads_lost`] set:
/// [`Accumulator::split_groups`] counts these.
#[derive(Debug, Default)]
pub struct Accumulator {
    pending: HashMap<u32, Pending>,
    io_delay: bool,
    split: u64,
}

#[derive(Debug)]
struct Pending {
    /// Tick samples and run time summed, ns, to split once like `thread_group_cputime_adjusted`.
    raw: (u64, u64, u64),
    usage: Usage,
    threads: u32,
    leader: Option<TaskRecord>,
}

impl Pending {
    /// No thread in yet. `Usage::from_task` always has a CPU delay figure, and an I/O delay
    /// figure only when it is accounted: the sums start from 0 where a figure will be added.
    fn empty(io_delay: bool) -> Pending {
        Pending {
            usage: Usage {
                cpu_delay_ns: Some(0),
                io_delay_ns: io_delay.then_some(0),
                ..Usage::default()
            },
            threads: 0,
            leader: None,
            raw: (0, 0, 0),
        }
    }
}

impl Accumulator {
    /// A new accumulator; `io_delay` says whether block I/O delay accounting is on.
    pub fn new(io_delay: bool) -> Accumulator {
        Accumulator {
            pending: HashMap::new(),
            io_delay,
            split: 0,
        }
    }

    /// Says that process `tgid` has (or had) more than one thread: its records are held until
    /// the kernel's thread group aggregate closes it, even when its leader exits first. Call it
    /// before the leader's record is fed (a thread's creation precedes its leader's exit).
    /// Calling it again for the same process costs one map look-up.
    pub fn expect_threads(&mut self, tgid: u32) {
        let io_delay = self.io_delay;
        self.pending
            .entry(tgid)
            .or_insert_with(|| Pending::empty(io_delay));
    }

    /// Feeds one task exit; returns the process when this was its last thread.
    pub fn feed(&mut self, exit: &TaskExit) -> Option<ProcessUsage> {
        let tgid = exit.tgid();
        let u = Usage::from_task(&exit.task, self.io_delay);
        let is_leader = exit.pid == tgid;
        let done = exit.group.is_some() || (is_leader && !self.pending.contains_key(&tgid));
        if !done {
            let io_delay = self.io_delay;
            let p = self
                .pending
                .entry(tgid)
                .or_insert_with(|| Pending::empty(io_delay));
            p.raw = add_raw(p.raw, &exit.task);
            p.usage.add_thread(&u);
            p.threads += 1;
            if is_leader {
                p.leader = Some(exit.task);
            }
            return None;
        }
        let (mut usage, mut threads, leader, mut raw) = match self.pending.remove(&tgid) {
            Some(p) => (p.usage, p.threads, p.leader, p.raw),
            None => {
                if exit.group.is_some() && !is_leader {
                    self.split += 1;
                }
                let p = Pending::empty(self.io_delay);
                (p.usage, p.threads, p.leader, p.raw)
            }
        };
        usage.add_thread(&u);
        raw = add_raw(raw, &exit.task);
        (usage.cpu_user_ns, usage.cpu_sys_ns) = split_cpu(raw.0, raw.1, raw.2);
        threads += 1;
        let lead = if is_leader {
            exit.task
        } else {
            leader.unwrap_or(exit.task)
        };
        Some(ProcessUsage {
            tgid,
            threads,
            usage,
            exit_code: lead.exit_code,
            comm: lead.comm,
            ppid: lead.ppid,
            btime_s: lead.btime_s,
            elapsed_us: exit.task.tgetime_us.unwrap_or(lead.etime_us),
            threads_lost: exit
                .group
                .is_some_and(|(_, g)| g.run_ns > raw.2 || (g.utime_us + g.stime_us) * 1000 > raw.0 + raw.1),
        })
    }

    /// Processes with threads seen but not yet complete.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Aggregates that arrived with no pending thread and not from the leader: a leader that
    /// exited before its threads (its record went out alone), or earlier records lost.
    pub fn split_groups(&self) -> u64 {
        self.split
    }

    /// Forgets a process's pending threads (e.g. their final record was lost); returns whether
    /// there were any.
    pub fn forget(&mut self, tgid: u32) -> bool {
        self.pending.remove(&tgid).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(pid: u32, tgid: u32, run_ms: u64, rss: u64, wchar: u64) -> TaskRecord {
        TaskRecord {
            version: 16,
            pid,
            tgid: Some(tgid),
            exit_code: if pid == tgid { 3 << 8 } else { 0 },
            utime_us: run_ms * 1000 * 3 / 4,
            stime_us: run_ms * 1000 / 4,
            run_ns: run_ms * 1_000_000 + 7,
            hiwater_rss_kib: rss,
            write_char: wchar,
            nvcsw: 1,
            ..TaskRecord::default()
        }
    }

    fn exit(t: TaskRecord, group: Option<TaskRecord>) -> TaskExit {
        TaskExit {
            pid: t.pid,
            task: t,
            group: group.map(|g| (t.tgid.unwrap_or(t.pid), g)),
        }
    }

    #[test]
    fn single_threaded_process_completes_at_once() {
        let mut acc = Accumulator::new(false);
        let p = acc.feed(&exit(task(10, 10, 40, 900, 5), None)).unwrap();
        assert_eq!((p.tgid, p.threads, p.exit_code), (10, 1, 3 << 8));
        assert_eq!(
            p.usage.cpu_user_ns + p.usage.cpu_sys_ns,
            40_000_007,
            "the precise run time"
        );
        assert_eq!(
            p.usage.cpu_sys_ns, 10_000_001,
            "split in the samples' 3:1 proportion"
        );
        assert_eq!(p.usage.io_delay_ns, None, "not accounted: no figure, not 0");
        assert!(!p.threads_lost);
    }

    #[test]
    fn threads_sum_peak_is_a_maximum_and_the_aggregate_closes() {
        let mut acc = Accumulator::new(true);
        assert_eq!(acc.feed(&exit(task(21, 20, 100, 5000, 0), None)), None);
        assert_eq!(acc.feed(&exit(task(22, 20, 100, 5100, 7), None)), None);
        assert_eq!(acc.pending(), 1);
        let agg = TaskRecord {
            run_ns: 300_000_021,
            utime_us: 225_000,
            stime_us: 75_000,
            ..TaskRecord::default()
        };
        let p = acc.feed(&exit(task(20, 20, 100, 5200, 1), Some(agg))).unwrap();
        assert_eq!(p.threads, 3);
        assert_eq!(p.usage.cpu_user_ns + p.usage.cpu_sys_ns, 300_000_021);
        assert_eq!(p.usage.max_rss_kib, 5200);
        assert_eq!(p.usage.write_chars, 8);
        assert_eq!(p.usage.vol_ctx_switches, 3);
        assert_eq!(p.usage.io_delay_ns, Some(0));
        assert_eq!(p.exit_code, 3 << 8, "the leader's status");
        assert!(!p.threads_lost);
        assert_eq!(acc.pending(), 0);
    }

    #[test]
    fn a_lost_thread_record_is_seen_in_the_aggregate() {
        let mut acc = Accumulator::new(false);
        let agg = TaskRecord {
            run_ns: 200_000_014,
            ..TaskRecord::default()
        };
        // Thread 31's record never arrived.
        let p = acc.feed(&exit(task(30, 30, 100, 10, 0), Some(agg))).unwrap();
        assert!(p.threads_lost);
        assert_eq!(p.threads, 1);
    }

    #[test]
    fn leader_exiting_first_splits_the_process() {
        let mut acc = Accumulator::new(false);
        assert!(
            acc.feed(&exit(task(40, 40, 10, 10, 0), None)).is_some(),
            "looks single-threaded"
        );
        let agg = TaskRecord {
            run_ns: 20_000_014,
            ..TaskRecord::default()
        };
        let rest = acc.feed(&exit(task(41, 40, 10, 10, 0), Some(agg))).unwrap();
        assert_eq!(rest.tgid, 40);
        assert_eq!(acc.split_groups(), 1);
        assert!(rest.threads_lost, "the aggregate counts the leader's share too");
    }

    #[test]
    fn an_expected_group_holds_its_leader_until_the_aggregate() {
        let mut acc = Accumulator::new(false);
        acc.expect_threads(50);
        acc.expect_threads(50);
        assert_eq!(
            acc.feed(&exit(task(50, 50, 10, 700, 1), None)),
            None,
            "the leader is held"
        );
        let agg = TaskRecord {
            run_ns: 20_000_014,
            utime_us: 15_000,
            stime_us: 5_000,
            ..TaskRecord::default()
        };
        let p = acc.feed(&exit(task(51, 50, 10, 800, 2), Some(agg))).unwrap();
        assert_eq!(p.threads, 2);
        assert_eq!(
            p.usage.cpu_user_ns + p.usage.cpu_sys_ns,
            20_000_014,
            "both threads"
        );
        assert_eq!((p.usage.max_rss_kib, p.usage.write_chars), (800, 3));
        assert_eq!(p.exit_code, 3 << 8, "the leader's status, not the last thread's");
        assert!(!p.threads_lost);
        assert_eq!((acc.split_groups(), acc.pending()), (0, 0));
    }
}
