//! The connector backend's taskstats side: what each process cost, joined with its exit.
//!
//! The kernel builds a task's taskstats record in `do_exit` (`taskstats_exit`) before it sends
//! the task's cn_proc exit message (`proc_exit_connector`, at the end of `do_exit`), and queues
//! both synchronously. So when the drain thread holds a cn_proc EXIT, the record of that task is
//! already in the taskstats socket's queue, or was dropped. [`UsageJoin::drain`] takes what is
//! queued without waiting; the drain thread calls it once per received batch that holds an
//! exit, so a batch without exits costs no system call, and the taskstats socket never wakes
//! anybody (nobody polls it). [`UsageJoin::take_named`] then hands out a completed process's figures
//! just ahead of its exit in the event stream.
//!
//! It must never delay or lose an exit: nothing here waits, and an exit whose record is missing
//! simply goes out without figures. Records the kernel dropped on a full socket are counted
//! ([`UsageJoin::lost`]).

use std::collections::HashMap;

use taskstats::{Accumulator, Listener, Received};

use crate::model::event::{KernelName, Pid, Usage};

/// Completed processes whose exit has not come through after this many drains are forgotten
/// (their cn_proc exit was lost): keeps `ready` bounded in a long `watch` with loss.
const STALE_ROUNDS: u64 = 10_000;
/// Looks for stale entries only when this many are waiting.
const STALE_CHECK: usize = 4096;

/// A completed process's figures waiting for its exit.
#[derive(Debug)]
struct Ready {
    usage: Usage,
    /// The leader's `ac_comm`: the process's name at exit.
    comm: Option<KernelName>,
    /// Threads summed.
    threads: u32,
    /// The drain round it came in.
    round: u64,
}

/// Pure part of the join: records in, figures out by tgid. See the module docs.
#[derive(Debug, Default)]
pub struct Joiner {
    acc: Accumulator,
    /// Completed processes waiting for their exit.
    ready: HashMap<u32, Ready>,
    round: u64,
    /// Task records the kernel dropped (socket full).
    lost: u64,
    /// Processes left out because some of their threads' records were lost.
    incomplete: u64,
    /// Which (at most [`TGIDS_KEPT`]): a backend that sees only the traced tree counts those
    /// of its own processes ([`UsageJoin::incomplete_traced`]).
    incomplete_tgids: std::collections::HashSet<u32>,
    /// Groups left out because their leader's record had gone out alone, before the event of a
    /// thread's creation was seen (not a loss).
    split: u64,
    /// Multi-threaded processes left out because they started before the listener (not a loss).
    predates: u64,
    /// Completed processes forgotten because their exit never came.
    stale: u64,
}

impl Joiner {
    /// An empty joiner; `io_delay` says whether block I/O delays are accounted.
    pub fn new(io_delay: bool) -> Joiner {
        Joiner {
            acc: Accumulator::new(io_delay),
            ..Joiner::default()
        }
    }

    /// Takes in what the listener received in one drain, `listening_us` after the listener
    /// registered.
    pub fn feed(&mut self, items: &[Received], listening_us: u64) {
        self.round += 1;
        for item in items {
            match item {
                Received::Exit(exit) => {
                    let splits = self.acc.split_groups();
                    let Some(p) = self.acc.feed(exit) else { continue };
                    if p.threads_lost {
                        // Some thread's figures are missing: leave the process out, never guess.
                        // A group whose leader went out alone before (it made its threads before
                        // this listener saw them: any process on the machine, while `run` starts)
                        // lost nothing; only a missing record is a loss.
                        if self.acc.split_groups() > splits {
                            self.split += 1;
                        } else if p.elapsed_us >= listening_us {
                            // It was running before the listener: the records of threads that
                            // ended before then never came. Nothing was lost.
                            self.predates += 1;
                        } else {
                            self.incomplete += 1;
                            if self.incomplete_tgids.len() < TGIDS_KEPT {
                                self.incomplete_tgids.insert(p.tgid);
                            }
                        }
                        self.ready.remove(&p.tgid);
                        continue;
                    }
                    let r = Ready {
                        usage: p.usage,
                        comm: KernelName::new(p.comm()),
                        threads: p.threads,
                        round: self.round,
                    };
                    self.ready.insert(p.tgid, r);
                }
                Received::Loss(l) => self.lost += l.count,
            }
        }
        if self.ready.len() >= STALE_CHECK {
            let (round, before) = (self.round, self.ready.len());
            self.ready.retain(|_, r| round - r.round < STALE_ROUNDS);
            self.stale += (before - self.ready.len()) as u64;
        }
    }

    /// Process `tgid` created a thread (seen in the event stream, before any exit of the
    /// process): hold its leader's record until the group's last thread, so a leader that calls
    /// `pthread_exit` first gets the whole group's figures, never its own alone.
    pub fn thread_started(&mut self, tgid: Pid) {
        let tgid = tgid as u32;
        match self.ready.get(&tgid) {
            // The leader's record came alone in an earlier drain, before the event of the
            // thread's creation was read: its figures are the leader's only. Leave the process
            // out; the group's rest comes with the aggregate and is left out too (a split).
            Some(r) if r.threads == 1 => {
                self.ready.remove(&tgid);
            }
            // The whole group is in already (thread creation and exit all between two drains).
            Some(_) => {}
            None => self.acc.expect_threads(tgid),
        }
    }

    /// The figures of process `tgid`, if its last thread's record is in.
    pub fn take(&mut self, tgid: Pid) -> Option<Usage> {
        self.take_named(tgid).map(|(u, _)| u)
    }

    /// [`Joiner::take`] with the process's name at exit (the leader's `ac_comm`), when the
    /// record has one.
    pub fn take_named(&mut self, tgid: Pid) -> Option<(Usage, Option<KernelName>)> {
        if self.ready.is_empty() {
            return None;
        }
        self.ready.remove(&(tgid as u32)).map(|r| (r.usage, r.comm))
    }

    /// Task records the kernel dropped so far.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Processes left out because a thread's record was lost.
    pub fn incomplete(&self) -> u64 {
        self.incomplete
    }

    /// Groups left out because their leader's record went out alone (see the field).
    pub fn split_groups(&self) -> u64 {
        self.split
    }

    /// Multi-threaded processes left out because they started before the listener.
    pub fn predating(&self) -> u64 {
        self.predates
    }
}

/// Most process ids the join keeps to tell which incomplete processes were traced.
const TGIDS_KEPT: usize = 1 << 20;

/// The taskstats listener and the join, owned by the connector's drain thread.
pub struct UsageJoin {
    /// Traced processes that ended without figures ([`UsageJoin::ended_without_figures`]).
    unfigured: std::collections::HashSet<u32>,
    listener: Listener,
    /// When the listener registered.
    opened: std::time::Instant,
    joiner: Joiner,
    items: Vec<Received>,
    failed: Option<String>,
}

impl UsageJoin {
    /// Registers for exit records on every CPU with a receive buffer of `buffer` bytes (the
    /// kernel doubles it). `Err` says why taskstats cannot be used here.
    pub fn open(buffer: usize) -> Result<UsageJoin, taskstats::OpenError> {
        let listener = Listener::open(&taskstats::Options {
            recv_buffer: buffer,
            ..taskstats::Options::default()
        })?;
        let joiner = Joiner::new(listener.io_delay_accounting());
        Ok(UsageJoin {
            listener,
            opened: std::time::Instant::now(),
            unfigured: Default::default(),
            joiner,
            items: Vec::with_capacity(256),
            failed: None,
        })
    }

    /// The join when costs are asked for (`opts.usage`) and taskstats can be used here; where it
    /// is refused, says so once and the capture goes on without figures.
    pub fn when_asked(opts: &super::CaptureOptions) -> Option<UsageJoin> {
        if !opts.usage {
            return None;
        }
        match UsageJoin::open(opts.usage_buffer) {
            Ok(u) => Some(u),
            Err(e) => {
                crate::say!("proctrace: no per-process cost figures (CPU, memory, I/O): taskstats: {e}");
                None
            }
        }
    }

    /// Takes every record queued now, without waiting. After a receive error the join stops
    /// (exits go on without figures) and [`failure`](Self::failure) says why.
    pub fn drain(&mut self) {
        if self.failed.is_some() {
            return;
        }
        self.items.clear();
        if let Err(e) = self.listener.recv(&mut self.items, 0) {
            self.fail(e);
        }
        self.joiner.feed(&self.items, self.listening_us());
    }

    /// Final drain and loss accounting; call once, at the end.
    pub fn finish(&mut self) {
        if self.failed.is_some() {
            return;
        }
        self.items.clear();
        if let Err(e) = self.listener.finish(&mut self.items) {
            self.fail(e);
        }
        self.joiner.feed(&self.items, self.listening_us());
    }

    fn listening_us(&self) -> u64 {
        self.opened.elapsed().as_micros() as u64
    }

    fn fail(&mut self, e: taskstats::RecvError) {
        crate::say!(
            "proctrace: taskstats stopped ({e}); processes that end from now on have no cost figures"
        );
        self.failed = Some(e.to_string());
    }

    /// See [`Joiner::take_named`].
    pub fn take_named(&mut self, tgid: Pid) -> Option<(Usage, Option<KernelName>)> {
        self.joiner.take_named(tgid)
    }

    /// See [`Joiner::thread_started`].
    pub fn thread_started(&mut self, tgid: Pid) {
        self.joiner.thread_started(tgid);
    }

    /// Task records the kernel dropped so far.
    pub fn lost(&self) -> u64 {
        self.joiner.lost()
    }

    /// Processes left out because a thread's record was lost (every process of the machine:
    /// taskstats reports them all).
    pub fn incomplete(&self) -> u64 {
        self.joiner.incomplete()
    }

    /// A traced process ended with no figures: remembered, for [`incomplete_traced`](Self::incomplete_traced).
    pub fn ended_without_figures(&mut self, tgid: Pid) {
        if self.unfigured.len() < TGIDS_KEPT {
            self.unfigured.insert(tgid as u32);
        }
    }

    /// Of the processes left out because a thread's record was lost, those that were traced
    /// (ended without figures): for a backend that does not see the rest of the machine's
    /// threads start (eBPF filtered to the tree), whose other processes would count otherwise.
    pub fn incomplete_traced(&self) -> u64 {
        self.joiner.incomplete_tgids.intersection(&self.unfigured).count() as u64
    }

    /// Receive buffer the kernel granted, bytes.
    pub fn effective_buffer(&self) -> usize {
        self.listener.effective_buffer()
    }

    /// Why receiving stopped, if it did.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskstats::{Loss, TaskExit, TaskRecord};

    /// How long the listener has been registered at each feed of these tests, µs.
    const LISTENING: u64 = 1_000_000;

    fn exit(pid: u32, tgid: u32, run_ms: u64, group: bool) -> Received {
        let t = TaskRecord {
            version: 16,
            pid,
            tgid: Some(tgid),
            utime_us: run_ms * 1000,
            run_ns: run_ms * 1_000_000,
            hiwater_rss_kib: 100 + pid as u64,
            write_char: 1024,
            ..TaskRecord::default()
        };
        let g = TaskRecord {
            utime_us: 2 * run_ms * 1000,
            run_ns: 2 * run_ms * 1_000_000,
            ..TaskRecord::default()
        };
        Received::Exit(TaskExit {
            pid,
            task: t,
            group: group.then_some((tgid, g)),
        })
    }

    #[test]
    fn the_name_at_exit_is_the_leaders() {
        let named = |pid, tgid, comm: &[u8], group| {
            let Received::Exit(mut x) = exit(pid, tgid, 1, group) else {
                unreachable!()
            };
            x.task.comm[..comm.len()].copy_from_slice(comm);
            Received::Exit(x)
        };
        let mut j = Joiner::new(false);
        j.feed(&[named(11, 10, b"worker", false)], LISTENING);
        j.feed(&[named(10, 10, b"cc1", true)], LISTENING);
        let (_, comm) = j.take_named(10).unwrap();
        assert_eq!(comm.unwrap().as_bytes(), b"cc1");
        // A record without a name (a kernel that fills none) gives none, not an empty one.
        j.feed(&[exit(20, 20, 1, false)], LISTENING);
        assert_eq!(j.take_named(20).unwrap().1, None);
    }

    #[test]
    fn a_process_is_handed_out_once_when_its_last_thread_is_in() {
        let mut j = Joiner::new(false);
        j.feed(&[exit(11, 10, 5, false)], LISTENING);
        assert_eq!(j.take(10), None, "a thread alone does not complete its process");
        j.feed(&[exit(10, 10, 5, true), exit(20, 20, 1, false)], LISTENING);
        let u = j.take(10).unwrap();
        assert_eq!(u.cpu_user_ns + u.cpu_sys_ns, 10_000_000, "threads summed");
        assert_eq!(u.write_chars, 2048);
        assert_eq!(j.take(10), None, "handed out once");
        assert_eq!(j.take(20).unwrap().max_rss_kib, 120);
        assert_eq!((j.lost(), j.incomplete()), (0, 0));
    }

    #[test]
    fn losses_are_counted_and_incomplete_processes_left_out() {
        let mut j = Joiner::new(false);
        // Thread 31's record was dropped: the aggregate counts more CPU than arrived.
        j.feed(
            &[Received::Loss(Loss { count: 1 }), exit(30, 30, 5, true)],
            LISTENING,
        );
        assert_eq!(j.take(30), None, "never a partial figure");
        assert_eq!((j.lost(), j.incomplete()), (1, 1));
    }

    #[test]
    fn a_leader_leaving_first_gets_the_whole_groups_figures() {
        let mut j = Joiner::new(false);
        j.thread_started(40);
        j.feed(&[exit(40, 40, 5, false)], LISTENING);
        assert_eq!(j.take(40), None, "the leader alone is not the process");
        j.feed(&[exit(41, 40, 5, true)], LISTENING);
        let u = j.take(40).unwrap();
        assert_eq!(u.cpu_user_ns + u.cpu_sys_ns, 10_000_000, "both threads");
        assert_eq!((j.lost(), j.incomplete()), (0, 0));
    }

    #[test]
    fn a_leader_read_before_its_threads_creation_is_left_out() {
        let mut j = Joiner::new(false);
        // The leader's record was drained before the event of its thread's creation was read.
        j.feed(&[exit(50, 50, 5, false)], LISTENING);
        j.thread_started(50);
        assert_eq!(j.take(50), None, "never the leader's figures alone");
        j.feed(&[exit(51, 50, 5, true)], LISTENING);
        assert_eq!(j.take(50), None);
        assert_eq!((j.incomplete(), j.split_groups()), (0, 1), "not a loss");
        // A whole group already in (created and ended between two drains) is kept.
        j.feed(&[exit(61, 60, 5, false), exit(60, 60, 5, true)], LISTENING);
        j.thread_started(60);
        assert!(j.take(60).is_some());
    }

    #[test]
    fn a_group_split_by_an_unseen_thread_creation_is_no_loss() {
        let mut j = Joiner::new(false);
        // A process whose threads were made before the listener: its leader looks alone.
        j.feed(&[exit(70, 70, 5, false)], LISTENING);
        assert!(j.take(70).is_some());
        j.feed(&[exit(71, 70, 5, true)], LISTENING);
        assert_eq!(j.take(70), None);
        assert_eq!((j.lost(), j.incomplete(), j.split_groups()), (0, 0, 1));
    }

    #[test]
    fn a_process_older_than_the_listener_is_no_loss() {
        let mut j = Joiner::new(false);
        // Its other thread ended before the listener registered: the aggregate counts more.
        let Received::Exit(mut e) = exit(80, 80, 5, true) else {
            unreachable!()
        };
        e.task.etime_us = 3 * LISTENING;
        j.feed(&[Received::Exit(e)], LISTENING);
        assert_eq!(j.take(80), None, "never a partial figure");
        assert_eq!((j.incomplete(), j.predating()), (0, 1));
        // The same, started after the listener: a record was lost.
        e.task.etime_us = LISTENING / 2;
        j.feed(&[Received::Exit(e)], LISTENING);
        assert_eq!((j.incomplete(), j.predating()), (1, 1));
    }

    #[test]
    fn exits_that_never_come_are_forgotten() {
        let mut j = Joiner::new(false);
        for pid in 1..=STALE_CHECK as u32 {
            j.feed(&[exit(pid, pid, 1, false)], LISTENING);
        }
        assert_eq!(j.ready.len(), STALE_CHECK, "all recent");
        for _ in 0..STALE_ROUNDS {
            j.feed(&[], LISTENING);
        }
        j.feed(&[exit(1_000_000, 1_000_000, 1, false)], LISTENING);
        assert_eq!(j.ready.len(), 1, "only the fresh one is kept");
        assert_eq!(j.stale, STALE_CHECK as u64);
    }
}
