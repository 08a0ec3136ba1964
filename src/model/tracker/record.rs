//! What the tracker knows about one process instance: its [`ProcessRecord`] and the records of
//! its execs, exit and background state. Every output reads these.
//!
//! Plain data: the tracker alone fills them in (the fields it keeps to itself are `pub(super)`),
//! nothing here applies an event.

use super::{BackgroundState, ProcId};
use crate::model::event::{Argv, Data, ExecDetails, ExitStatus, Pid, Region, Usage};

/// One exec of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRecord {
    /// When.
    pub ts: u64,
    /// What `/proc` said; `None` while pending or when no enrichment was asked for.
    pub details: Option<ExecDetails>,
}

/// How and when a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitRecord {
    /// When (the last task's exit).
    pub ts: u64,
    /// Status; `None` when the exit itself was lost and inferred from pid reuse.
    pub status: Option<ExitStatus>,
}

/// A process outliving the traced command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackgroundRecord {
    /// When it was released (or given up on).
    pub ts: u64,
    /// Ready, timeout or error.
    pub state: BackgroundState,
}

/// Everything known about one process instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessRecord {
    /// Process id (tgid).
    pub pid: Pid,
    /// Parent's process id at fork (0 when unknown).
    pub ppid: Pid,
    /// Parent's record, when tracked.
    pub parent: Option<ProcId>,
    /// Child processes, in fork order (kept only when exited records are retained).
    pub children: Vec<ProcId>,
    /// Fork timestamp; `None` for a process that existed before tracing began and whose start
    /// was not supplied.
    pub start_ns: Option<u64>,
    /// Existed before tracing began.
    pub pre_existing: bool,
    /// Execs in order; empty for a fork without exec.
    pub execs: Vec<ExecRecord>,
    /// The exit, once final.
    pub exit: Option<ExitRecord>,
    /// A COREDUMP event was seen (a core-dumping signal; the file may not have been written).
    pub coredump_signal: bool,
    /// Short name: from the latest exec's details, a rename, or inherited from the parent.
    pub comm: Option<String>,
    /// The kernel's name at exit ([`Event::ExitName`](crate::model::event::Event::ExitName))
    /// differed from the one known before and is now [`ProcessRecord::comm`].
    pub comm_at_exit: bool,
    /// Latest real/effective uid reported by a UID event or read after exec.
    pub uid: Option<(u32, u32)>,
    /// Latest real/effective gid reported by a GID event.
    pub gid: Option<(u32, u32)>,
    /// Became a session leader.
    pub setsid: bool,
    /// Ran in a daemon followed by `run --include-daemons`: the daemon's node (a root:
    /// `parent` is `None`), the processes under it that existed before the run (`pre_existing`),
    /// and the work they started during the run.
    pub ran_in: Option<crate::model::elsewhere::DaemonKind>,
    /// Set when the process outlived the traced command.
    pub background: Option<BackgroundRecord>,
    /// Regions the process reported about itself (Trace2), in the order they ended.
    pub regions: Vec<Region>,
    /// Values the process reported about itself (Trace2 data, timers, counters), in order.
    pub data: Vec<Data>,
    /// What the process cost, when the backend measured it ([`Event::Usage`](crate::model::event::Event::Usage), before the exit).
    /// Boxed: most saved traces have none, and a record stays small.
    pub usage: Option<Box<Usage>>,
    /// The files it used (`--files`): boxed, most records have none.
    pub files: Option<Box<super::files::FileSet>>,
    /// Threads and the leader's provisional exit: boxed, as few processes have threads the
    /// tracker sees start (32 bytes less in every record; 600,000 records of the ingest file).
    pub(super) mt: Option<Box<Threads>>,
    pub(super) details_pending: bool,
}

/// The threads of a multi-threaded process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Threads {
    /// Threads other than the leader known to be alive.
    pub(super) ids: Vec<Pid>,
    /// The leader's exit (time, status) while other threads live on.
    pub(super) leader_exit: Option<(u64, u32)>,
}

impl ProcessRecord {
    pub(super) fn new(
        pid: Pid,
        ppid: Pid,
        parent: Option<ProcId>,
        start_ns: Option<u64>,
        pre_existing: bool,
    ) -> Self {
        ProcessRecord {
            pid,
            ppid,
            parent,
            children: Vec::new(),
            start_ns,
            pre_existing,
            execs: Vec::new(),
            exit: None,
            coredump_signal: false,
            comm: None,
            comm_at_exit: false,
            uid: None,
            gid: None,
            setsid: false,
            ran_in: None,
            background: None,
            regions: Vec::new(),
            data: Vec::new(),
            usage: None,
            files: None,
            mt: None,
            details_pending: false,
        }
    }

    /// Argv of the latest exec, if it was read.
    pub fn argv(&self) -> Option<&Argv> {
        self.execs.last()?.details.as_ref()?.argv.as_ref()
    }

    /// Time from fork to exit, when both are known.
    pub fn duration_ns(&self) -> Option<u64> {
        Some(self.exit?.ts.saturating_sub(self.start_ns?))
    }

    /// Still running (as far as the events say).
    pub fn is_alive(&self) -> bool {
        self.exit.is_none()
    }

    /// The node of a daemon followed by `run --include-daemons` (`ran in …`): its kind.
    pub fn daemon_node(&self) -> Option<crate::model::elsewhere::DaemonKind> {
        self.ran_in.filter(|_| self.parent.is_none())
    }

    /// Threads other than the leader known to be alive.
    pub fn live_threads(&self) -> usize {
        self.mt.as_ref().map_or(0, |m| m.ids.len())
    }
}
