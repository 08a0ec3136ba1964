//! Reading `/proc` for each exec as early as possible, on a thread with its own socket.
//!
//! A short-lived process's argv is readable only until it exits, often well under a millisecond
//! after its exec. The drain thread must not touch `/proc` (per-event work there loses events), and
//! a hand-off from it costs a thread wakeup — enough for `/bin/true` to be gone. So the enricher
//! subscribes to the connector itself with an EXEC-only filter (kernel-side on 6.6+, classic BPF
//! before): the kernel wakes it directly, and it reads at once. The model thread collects each
//! result by (tgid, exec timestamp) — the same event seen on two sockets. If the enricher's socket
//! ever overflows, only enrichment suffers; the main stream and its loss accounting are untouched.
//! Execs outside the model's scope are read too: the price of not waiting for the model.
//!
//! Woken at once is not yet running at once. A SCHED_OTHER reader waits its turn behind the
//! processes it races: after vfork/posix_spawn the parent and the exec'd child take the CPUs,
//! and `/bin/true` has exited before the reader runs (argv was read for ~40% of such execs at
//! nice -10). So the reader thread, and nothing else in proctrace, asks for SCHED_FIFO, with
//! SCHED_RESET_ON_FORK so that nothing it could ever fork inherits it (the traced command is
//! spawned from the main thread, which stays SCHED_OTHER). A real-time thread must not be able to
//! starve the machine, so it bounds itself: it re-checks after at most one batch of reads, and
//! when its own CPU time in a 100 ms window exceeds a budget it drops to SCHED_OTHER (nice −10)
//! until the window ends. Where real time is not allowed (no privilege, RLIMIT_RTPRIO 0, a cpu
//! cgroup without real-time runtime) it falls back to nice −10, then to normal priority;
//! [`ReaderPriority`] says which it got.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use cnproc::{Connector, EventKind, Options, Received, abi};

use crate::capture::procfs;
use crate::model::event::{ExecDetails, Pid};

/// One exec: process and the exec's timestamp (which identifies it on every socket).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecNotice {
    /// Process.
    pub tgid: Pid,
    /// Exec timestamp.
    pub ts: u64,
}

/// How far past the wanted exec a result may be before the wanted one is presumed lost
/// (timestamps are not ordered across CPUs, by up to ~0.1 ms).
const REORDER_SLACK_NS: u64 = 5_000_000;

/// How the argv reader thread ended up scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderPriority {
    /// SCHED_FIFO (with SCHED_RESET_ON_FORK), within its own CPU budget.
    Realtime,
    /// SCHED_OTHER at nice −10.
    Niced,
    /// Ordinary priority: neither was allowed.
    Normal,
}

impl ReaderPriority {
    /// `realtime`, `nice` or `normal`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReaderPriority::Realtime => "realtime",
            ReaderPriority::Niced => "nice",
            ReaderPriority::Normal => "normal",
        }
    }
}

/// How to start the enricher. `From<&cnproc::Options>` gives the defaults (real time on).
#[derive(Debug, Clone)]
pub struct EnrichOptions {
    /// The connector options the main socket uses; the enricher's socket takes its own event
    /// mask and buffer size from them.
    pub connector: Options,
    /// Try SCHED_FIFO for the reader thread (default true); off, it stays at nice −10.
    pub realtime: bool,
}

impl From<&Options> for EnrichOptions {
    fn from(o: &Options) -> Self {
        EnrichOptions {
            connector: o.clone(),
            realtime: true,
        }
    }
}

/// The model thread's side of the enricher.
pub struct Enricher {
    results: Receiver<(ExecNotice, ExecDetails)>,
    early: VecDeque<(ExecNotice, ExecDetails)>,
    stop: Arc<AtomicBool>,
    waker: cnproc::Waker,
    thread: Option<std::thread::JoinHandle<()>>,
    priority: ReaderPriority,
    demotions: Arc<AtomicU64>,
}

/// Subscribes an EXEC-only socket and starts the enricher thread on it. Returns once the thread
/// has set its scheduling, so everything spawned afterwards meets a reader already in place.
pub fn start(opts: impl Into<EnrichOptions>) -> Result<Enricher, cnproc::OpenError> {
    let EnrichOptions {
        connector: base,
        realtime,
    } = opts.into();
    let opts = Options {
        event_mask: Some(abi::what::EXEC),
        // Execs are a fraction of all events; a smaller buffer absorbs their bursts.
        recv_buffer: (base.recv_buffer / 4).max(1 << 20),
        ..base
    };
    let mut conn = Connector::open(&opts)?;
    let waker = conn.waker();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let demotions = Arc::new(AtomicU64::new(0));
    let demotions2 = Arc::clone(&demotions);
    let (rtx, rrx) = mpsc::channel();
    let (ready_tx, ready_rx) = mpsc::sync_channel(1);
    let thread = std::thread::Builder::new()
        .name("pt-enrich".into())
        .spawn(move || {
            let mut sched = Sched::enter(realtime, demotions2);
            let _ = ready_tx.send(sched.priority);
            let mut items: Vec<Received> = Vec::with_capacity(256);
            while !stop2.load(Ordering::Acquire) {
                items.clear();
                if conn.recv(&mut items, sched.wait_ms()).is_err() {
                    return;
                }
                let execs = items.iter().filter_map(|it| match it {
                    Received::Event(ev) => match ev.kind {
                        EventKind::Exec { tgid, .. } => Some((tgid, ev.timestamp_ns)),
                        _ => None,
                    },
                    Received::Loss(_) => None,
                });
                for (i, (tgid, ts)) in execs.enumerate() {
                    // Bounded work between checks: one recvmmsg batch's worth of reads. The
                    // first check of a wakeup also re-promotes after a demotion.
                    if i % READS_PER_CHECK == 0 {
                        sched.check();
                    }
                    let d = procfs::exec_details(tgid);
                    if rtx.send((ExecNotice { tgid, ts }, d)).is_err() {
                        return;
                    }
                }
                if items.is_empty() {
                    sched.check(); // a timeout: maybe the end of a demotion
                }
            }
        })
        .map_err(|e| cnproc::OpenError::Sys {
            call: "spawn enricher",
            source: e,
        })?;
    let priority = ready_rx.recv().unwrap_or(ReaderPriority::Normal);
    Ok(Enricher {
        results: rrx,
        early: VecDeque::new(),
        stop,
        waker,
        thread: Some(thread),
        priority,
        demotions,
    })
}

impl Enricher {
    /// How the reader thread is scheduled (for the end line and summary).
    pub fn reader_priority(&self) -> ReaderPriority {
        self.priority
    }

    /// How many times the real-time reader went over its CPU budget and ran at SCHED_OTHER for
    /// the rest of a window.
    pub fn demotions(&self) -> u64 {
        self.demotions.load(Ordering::Relaxed)
    }

    /// The details read for this exec; `None` if the enricher did not see it (the caller then
    /// reads `/proc` itself). Results for execs the model never asks about are skipped.
    pub fn take(&mut self, want: ExecNotice) -> Option<ExecDetails> {
        if let Some(i) = self.early.iter().position(|(n, _)| *n == want) {
            let found = self.early.remove(i).map(|(_, d)| d);
            // Anything older than what was asked for will never be asked for.
            while self.early.front().is_some_and(|(n, _)| n.ts < want.ts) {
                self.early.pop_front();
            }
            return found;
        }
        if self
            .early
            .back()
            .is_some_and(|(n, _)| n.ts > want.ts + REORDER_SLACK_NS)
        {
            return None; // the enricher's socket dropped this one
        }
        let deadline = Instant::now() + Duration::from_millis(500);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.results.recv_timeout(left) {
                Ok((n, d)) if n == want => return Some(d),
                Ok(other) => {
                    // Results arrive in stream order; a later one is kept for a later request,
                    // an earlier one was for an exec out of scope.
                    let past = other.0.ts > want.ts + REORDER_SLACK_NS;
                    if other.0.ts >= want.ts {
                        self.early.push_back(other);
                        if self.early.len() > 4096 {
                            self.early.pop_front();
                        }
                    }
                    if past {
                        return None;
                    }
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }
}

impl Drop for Enricher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.waker.wake();
        // Joined so that its socket's IGNORE reaches the kernel before proctrace exits.
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Asks the scheduler to run the calling thread ahead of ordinary work, when allowed (root):
/// the reads race the traced processes' exits. Failure is harmless.
pub fn raise_priority() {
    sys::set_nice(-10);
}

/// SCHED_FIFO priority of the reader. Any real-time priority already runs ahead of every
/// SCHED_OTHER task, which is all the reader needs to win its race; within 1–99 it only orders
/// real-time threads among themselves. 10 is low on purpose: the kernel's threaded interrupt
/// handlers (50) and its own real-time threads, and anything that chose a higher priority for
/// latency-critical work, still preempt it. (Measured here: `docs/facts/ptrace-facts.md` B1.)
const RT_PRIORITY: i32 = 10;

/// The reader's CPU budget while real-time: at most `BUDGET_NS` of its own CPU time per
/// `WINDOW_NS` of wall time, else SCHED_OTHER (nice −10) for the rest of the window. A read
/// costs tens of µs and a spawn of even `/bin/true` some 500 µs, so real workloads stay far below
/// it (a few % per spawner); a pathological exec storm costs others at most 30% of one CPU to
/// real time (the kernel's own RT throttling, left alone, allows 95%).
const WINDOW_NS: u64 = 100_000_000;
const BUDGET_NS: u64 = 30_000_000;

/// Reads between budget checks: one recvmmsg batch.
const READS_PER_CHECK: usize = 64;

/// What the budget says to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Stay,
    Demote,
    Promote,
}

/// The CPU budget of a real-time reader, per fixed window (pure: the caller reads the clocks).
/// The thread's CPU clock is a system call, the monotonic clock is not; since CPU time grows no
/// faster than wall time, the CPU clock is read only once enough wall time has passed for the
/// budget to be possibly used up: a few times per window, not once per wakeup.
#[derive(Debug)]
struct Budget {
    window_start: u64,
    cpu_at_start: u64,
    /// No need to read the CPU clock before this (monotonic ns).
    next_cpu_check: u64,
    over: bool,
}

impl Budget {
    fn new(now: u64, cpu: u64) -> Budget {
        Budget {
            window_start: now,
            cpu_at_start: cpu,
            next_cpu_check: now + BUDGET_NS,
            over: false,
        }
    }

    /// `now`: monotonic ns; `cpu`: reads the thread's CPU time, ns (called only when needed).
    fn check(&mut self, now: u64, cpu: impl FnOnce() -> u64) -> Verdict {
        if now.saturating_sub(self.window_start) >= WINDOW_NS {
            let was_over = self.over;
            *self = Budget::new(now, cpu());
            return if was_over { Verdict::Promote } else { Verdict::Stay };
        }
        if self.over || now < self.next_cpu_check {
            return Verdict::Stay;
        }
        let used = cpu().saturating_sub(self.cpu_at_start);
        if used > BUDGET_NS {
            self.over = true;
            return Verdict::Demote;
        }
        self.next_cpu_check = now + (BUDGET_NS - used);
        Verdict::Stay
    }

    /// Time left in this window, ns.
    fn left(&self, now: u64) -> u64 {
        (self.window_start + WINDOW_NS).saturating_sub(now)
    }
}

/// The reader thread's scheduling, kept within its budget.
struct Sched {
    priority: ReaderPriority,
    rt_prio: i32,
    budget: Budget,
    demoted: bool,
    demotions: Arc<AtomicU64>,
}

impl Sched {
    /// Sets the calling thread's scheduling: SCHED_FIFO if `realtime` and allowed, else nice
    /// −10 if allowed, else unchanged.
    fn enter(realtime: bool, demotions: Arc<AtomicU64>) -> Sched {
        // Nice first: it is also what a demoted real-time thread runs at.
        let niced = sys::set_nice(-10);
        let mut rt_prio = 0;
        if realtime {
            // An unprivileged process may have a small RLIMIT_RTPRIO: use what it allows.
            for prio in [RT_PRIORITY, sys::rtprio_limit().min(RT_PRIORITY as u64) as i32] {
                if prio >= 1 && sys::set_fifo(prio) {
                    rt_prio = prio;
                    break;
                }
            }
        }
        let priority = match (rt_prio > 0, niced) {
            (true, _) => ReaderPriority::Realtime,
            (false, true) => ReaderPriority::Niced,
            (false, false) => ReaderPriority::Normal,
        };
        Sched {
            priority,
            rt_prio,
            budget: Budget::new(procfs::mono_now(), thread_cpu_ns()),
            demoted: false,
            demotions,
        }
    }

    /// Applies the budget's verdict (real time only).
    fn check(&mut self) {
        if self.priority != ReaderPriority::Realtime {
            return;
        }
        match self.budget.check(procfs::mono_now(), thread_cpu_ns) {
            Verdict::Stay => {}
            Verdict::Demote => {
                self.demotions.fetch_add(1, Ordering::Relaxed);
                if sys::set_other() {
                    self.demoted = true;
                } else {
                    // Cannot step down: stop competing instead, until the window ends.
                    let left = self.budget.left(procfs::mono_now());
                    std::thread::sleep(Duration::from_nanos(left));
                }
            }
            Verdict::Promote => {
                if self.demoted && sys::set_fifo(self.rt_prio) {
                    self.demoted = false;
                }
            }
        }
    }

    /// How long to wait for events: while demoted, no longer than the window (so the next
    /// wakeup promotes it back).
    fn wait_ms(&self) -> i32 {
        if self.demoted {
            let left = self.budget.left(procfs::mono_now());
            (left / 1_000_000 + 1).min(500) as i32
        } else {
            500
        }
    }
}

fn thread_cpu_ns() -> u64 {
    procfs::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).max(0) as u64
}

/// The scheduling system calls: the only `unsafe` here. All act on the calling thread.
mod sys {
    /// nice for this thread only (a tid is a valid PRIO_PROCESS target on Linux).
    pub fn set_nice(nice: i32) -> bool {
        // SAFETY: gettid has no preconditions; setpriority on our own tid with a valid value.
        unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) == 0
        }
    }

    fn set_policy(policy: libc::c_int, prio: i32) -> bool {
        let param = libc::sched_param { sched_priority: prio };
        // SAFETY: pthread_self is always valid for the calling thread; `param` is a live
        // sched_param. glibc passes SCHED_RESET_ON_FORK through to the kernel.
        unsafe {
            libc::pthread_setschedparam(libc::pthread_self(), policy | libc::SCHED_RESET_ON_FORK, &param) == 0
        }
    }

    /// SCHED_FIFO at `prio`, reset to SCHED_OTHER (and nice ≥ 0) in any child.
    pub fn set_fifo(prio: i32) -> bool {
        set_policy(libc::SCHED_FIFO, prio)
    }

    /// Back to SCHED_OTHER; the nice value set earlier applies again.
    pub fn set_other() -> bool {
        set_policy(libc::SCHED_OTHER, 0)
    }

    /// The soft RLIMIT_RTPRIO (0 when unknown).
    pub fn rtprio_limit() -> u64 {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `r` is a live rlimit to write into.
        match unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut r) } {
            0 => r.rlim_cur,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn budget_demotes_over_budget_and_promotes_next_window() {
        let mut b = Budget::new(1_000 * MS, 5 * MS);
        // Before BUDGET_NS of wall time the budget cannot be used up: no CPU clock read.
        assert_eq!(b.check(1_010 * MS, || unreachable!()), Verdict::Stay);
        assert_eq!(b.check(1_029 * MS, || unreachable!()), Verdict::Stay);
        // 30 ms in, 10 ms used: the next read is due 20 ms later.
        assert_eq!(b.check(1_030 * MS, || 15 * MS), Verdict::Stay);
        assert_eq!(b.check(1_049 * MS, || unreachable!()), Verdict::Stay);
        assert_eq!(b.check(1_050 * MS, || 5 * MS + BUDGET_NS + 1), Verdict::Demote);
        // Demoted: nothing more until the window ends, and the CPU clock is not read.
        assert_eq!(b.check(1_060 * MS, || unreachable!()), Verdict::Stay);
        assert_eq!(b.left(1_060 * MS), 40 * MS);
        assert_eq!(b.check(1_100 * MS, || 80 * MS), Verdict::Promote);
        // The new window counts from its own start.
        assert_eq!(b.check(1_130 * MS, || 80 * MS + BUDGET_NS), Verdict::Stay);
        assert_eq!(b.check(1_200 * MS, || 200 * MS), Verdict::Stay);
        assert_eq!(b.check(1_230 * MS, || 200 * MS + BUDGET_NS + 1), Verdict::Demote);
    }

    fn policy() -> i32 {
        // SAFETY: sched_getscheduler(0) queries the calling thread.
        unsafe { libc::sched_getscheduler(0) }
    }

    fn nice() -> i32 {
        // SAFETY: as in sys::set_nice.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    #[test]
    fn realtime_reader_steps_down_over_budget_and_back() {
        // On a thread of its own: the scheduling changes must not outlive the test.
        std::thread::spawn(|| {
            let demotions = Arc::new(AtomicU64::new(0));
            let mut s = Sched::enter(true, Arc::clone(&demotions));
            if s.priority != ReaderPriority::Realtime {
                eprintln!("real time not allowed here ({}): skipped", s.priority.as_str());
                return;
            }
            assert_eq!(policy(), libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK);
            // A child forked from the reader itself starts as SCHED_OTHER.
            // SAFETY: the child only calls async-signal-safe functions before _exit.
            let child = unsafe { libc::fork() };
            if child == 0 {
                // SAFETY: as above.
                unsafe { libc::_exit(libc::sched_getscheduler(0) & 0xff) };
            }
            let mut status = -1;
            // SAFETY: `status` is a live int; `child` is our child.
            unsafe { libc::waitpid(child, &mut status, 0) };
            assert_eq!(status, 0, "the child's policy (exit code) is SCHED_OTHER");
            // Burn more than the budget, then check: SCHED_OTHER at nice −10 for the rest of
            // the window.
            let t0 = thread_cpu_ns();
            while thread_cpu_ns() - t0 < BUDGET_NS + 2 * MS {
                std::hint::spin_loop();
            }
            s.check();
            assert_eq!(demotions.load(Ordering::Relaxed), 1);
            assert_eq!(policy(), libc::SCHED_OTHER | libc::SCHED_RESET_ON_FORK);
            assert_eq!(nice(), -10);
            assert!(s.wait_ms() <= 101);
            std::thread::sleep(Duration::from_nanos(WINDOW_NS));
            s.check();
            assert_eq!(policy(), libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK);
            assert_eq!(s.wait_ms(), 500);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn realtime_off_means_nice() {
        std::thread::spawn(|| {
            let s = Sched::enter(false, Arc::new(AtomicU64::new(0)));
            assert_ne!(s.priority, ReaderPriority::Realtime);
            assert_eq!(policy(), libc::SCHED_OTHER);
            if s.priority == ReaderPriority::Niced {
                assert_eq!(nice(), -10);
            }
        })
        .join()
        .unwrap();
    }
}
