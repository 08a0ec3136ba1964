//! The one event type every backend yields and the tracker consumes.
//!
//! Backends (the kernel connector today, ptrace later) translate what they see into these; the
//! tracker never learns where an event came from. Timestamps are CLOCK_MONOTONIC nanoseconds.
//! [`Event::ExecDetails`] is the enrichment read from `/proc` right after an exec: it travels in the
//! same stream so that a recorded capture replays exactly as it ran.

/// Task and process ids as the kernel numbers them (init pid namespace).
pub type Pid = i32;

/// What a process cost: [`taskstats::Usage`], whichever backend measured it.
pub use taskstats::Usage;

pub use crate::model::argv::Argv;

use std::sync::Arc;

/// State of a process that outlived the traced command, as git's `child_ready` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackgroundState {
    /// Alive when released.
    Ready,
    /// Still alive when the wait for it ran out.
    Timeout,
    /// Could not be probed.
    Error,
}

impl BackgroundState {
    /// git's spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            BackgroundState::Ready => "ready",
            BackgroundState::Timeout => "timeout",
            BackgroundState::Error => "error",
        }
    }
}

/// What a process was running after an exec: read from `/proc` (connector, ptrace's exec stop),
/// or copied by the eBPF programs at the exec.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExecDetails {
    /// Command line; `None` when it could not be read (the process was already gone).
    pub argv: Option<Argv>,
    /// Resolved executable path (shared: a saved trace's reader hands out one copy of each
    /// path it sees repeated).
    pub exe: Option<Arc<str>>,
    /// Working directory (shared, as `exe`).
    pub cwd: Option<Arc<str>>,
    /// Effective uid: the owner of `/proc/PID` (root for a process that is not dumpable).
    pub uid: Option<u32>,
    /// The process's short name (`comm`): the base name of `argv[0]` when argv was read (what the
    /// kernel sets on exec), else read from `/proc/PID/comm`.
    pub comm: Option<String>,
    /// The path the exec was given (`bprm->filename`, as the caller wrote it: `./configure` for
    /// a script run as `/bin/sh ./configure`, relative to the caller's working directory), which
    /// `/proc` cannot give: only the eBPF backend knows it (`None` elsewhere). Shared, as `exe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<Arc<str>>,
}

/// A span of work a process reported about itself: a git Trace2 region (`region_enter` to
/// `region_leave`), from `run --trace2` or a saved Trace2 stream.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Region {
    /// Entered (same clock as every other `ts`).
    pub ts: u64,
    /// Left.
    pub end: u64,
    /// The reporting thread's Trace2 name (`main`, `th01:preload`, ...).
    pub thread: String,
    /// Trace2 category (`index`, `fetch`, ...); empty when none was given.
    pub category: String,
    /// Trace2 label (`do_read_index`, ...); empty when none was given.
    pub label: String,
    /// The `region_enter` message, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg: Option<String>,
    /// Depth: 1 for a region entered at top level of its thread, as Trace2 counts it.
    pub nesting: u32,
}

/// What a [`Data`] point holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataValue {
    /// Trace2 `data`: a string or a number, as written.
    Text(String),
    /// Trace2 `data_json`: a JSON value, as written.
    Json(String),
    /// Trace2 `timer`/`th_timer` (key = the timer's name): intervals and times, ns.
    Timer {
        /// Start/stop pairs.
        intervals: u64,
        /// Total.
        total_ns: u64,
        /// Shortest interval.
        min_ns: u64,
        /// Longest interval.
        max_ns: u64,
        /// Per thread (`th_timer`) rather than process-wide.
        per_thread: bool,
    },
    /// Trace2 `counter`/`th_counter` (key = the counter's name).
    Counter {
        /// The value.
        count: u64,
        /// Per thread (`th_counter`).
        per_thread: bool,
    },
}

/// A value a process reported about itself (Trace2 `data`, `data_json`, timers, counters).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Data {
    /// When it was reported.
    pub ts: u64,
    /// The reporting thread's Trace2 name.
    pub thread: String,
    /// Trace2 category.
    pub category: String,
    /// Key (for timers and counters: their name).
    pub key: String,
    /// Region depth it was reported at (Trace2 `nesting`).
    pub nesting: u32,
    /// The value.
    pub value: DataValue,
}

/// How a process used a file (`--files`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileAccess {
    /// Opened it for reading only (fanotify: closed without writing).
    Read,
    /// Opened it for writing (fanotify: closed after opening for writing).
    Write,
    /// Created its name.
    Create,
    /// Renamed it (to [`Event::File`]'s `to`).
    Rename,
    /// Deleted its name.
    Delete,
}

impl FileAccess {
    /// Every access, in the order the JSON Lines name them.
    pub const ALL: [FileAccess; 5] = [
        FileAccess::Read,
        FileAccess::Write,
        FileAccess::Create,
        FileAccess::Rename,
        FileAccess::Delete,
    ];

    /// Its name on a JSON Lines `file` line.
    pub fn name(self) -> &'static str {
        match self {
            FileAccess::Read => "read",
            FileAccess::Write => "write",
            FileAccess::Create => "create",
            FileAccess::Rename => "rename",
            FileAccess::Delete => "delete",
        }
    }

    /// The access a name stands for.
    pub fn from_name(s: &str) -> Option<FileAccess> {
        FileAccess::ALL.into_iter().find(|a| a.name() == s)
    }
}

/// One lifecycle event. Not serialisable itself: the capture file has its own definition of it
/// ([`crate::capture_file`]), so a change here is not a change of a saved format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A new task; `child_pid != child_tgid` is a thread of `child_tgid`.
    Fork {
        /// When.
        ts: u64,
        /// Real parent process (for a thread: the process's parent, not the creating thread).
        parent_tgid: Pid,
        /// New task id.
        child_pid: Pid,
        /// New task's process.
        child_tgid: Pid,
    },
    /// A successful exec by process `tgid`.
    Exec {
        /// When.
        ts: u64,
        /// The process.
        tgid: Pid,
    },
    /// Details of the most recent exec of `tgid`.
    ExecDetails {
        /// The process.
        tgid: Pid,
        /// What `/proc` said.
        details: ExecDetails,
    },
    /// A task exited; `status` is the wait status.
    Exit {
        /// When.
        ts: u64,
        /// Task id.
        pid: Pid,
        /// Process id.
        tgid: Pid,
        /// Wait status (code << 8, or signal | 0x80 for core).
        status: u32,
        /// Real parent at exit as the kernel reported it (0 when already reaped); only used for
        /// processes that were never seen forking.
        parent_tgid: Pid,
    },
    /// A core-dumping signal hit the process.
    Coredump {
        /// When.
        ts: u64,
        /// Process id.
        tgid: Pid,
    },
    /// Real/effective uid changed.
    Uid {
        /// When.
        ts: u64,
        /// Process id.
        tgid: Pid,
        /// Real uid.
        ruid: u32,
        /// Effective uid.
        euid: u32,
    },
    /// Real/effective gid changed.
    Gid {
        /// When.
        ts: u64,
        /// Process id.
        tgid: Pid,
        /// Real gid.
        rgid: u32,
        /// Effective gid.
        egid: u32,
    },
    /// The process became a session leader.
    Sid {
        /// When.
        ts: u64,
        /// Process id.
        tgid: Pid,
    },
    /// A tracer attached (`tracer != 0`) or detached.
    Ptrace {
        /// When.
        ts: u64,
        /// Traced process.
        tgid: Pid,
        /// Tracer process, 0 on detach.
        tracer: Pid,
    },
    /// A thread was renamed.
    Comm {
        /// When.
        ts: u64,
        /// Task id.
        pid: Pid,
        /// Process id.
        tgid: Pid,
        /// New name.
        comm: String,
    },
    /// A process's parent as read from `/proc` after events were lost: lets the model take in a
    /// process whose FORK never arrived, when it descends from one being followed.
    Ancestry {
        /// The process.
        tgid: Pid,
        /// Its parent now (may differ from the parent at fork after reparenting).
        ppid: Pid,
        /// Fork time estimated from `/proc` start time (tick precision).
        start_ns: Option<u64>,
    },
    /// The traced command (`run`): the tree to follow starts at this process.
    Root {
        /// The command's process.
        tgid: Pid,
    },
    /// A process that existed before tracing began (`watch -p PID` and its descendants, read
    /// from `/proc`; `run --include-daemons`: a daemon, or a process under it, taken in when it
    /// started a process during the run); its parent must come first for the link to be made.
    Existing {
        /// The process.
        tgid: Pid,
        /// Its parent.
        ppid: Pid,
        /// Fork time from `/proc` start time (tick precision); for a daemon, when the run began
        /// following it.
        start_ns: Option<u64>,
        /// What it runs.
        details: Option<ExecDetails>,
        /// When `/proc` was read for it (CLOCK_MONOTONIC, taken before the read): its fork and
        /// exec stamped earlier are already in what was read, and when they arrive afterwards
        /// from the backend (subscribed before the read, so nothing falls between) they are not
        /// applied again. `None` for a saved trace's, which has no such duplicates.
        seen_ns: Option<u64>,
        /// A daemon whose work during the run is in the trace (`run --include-daemons`): a
        /// node of its own, `ran in …`, not under its parent.
        daemon: Option<crate::model::elsewhere::DaemonKind>,
    },
    /// The process outlived the traced command (`run` decides this after the command exits).
    Background {
        /// When it was released or given up on.
        ts: u64,
        /// The process.
        tgid: Pid,
        /// Ready, timeout or error.
        state: BackgroundState,
        /// Report it now (`false`: only mark it, so its exit says it outlived the command).
        report: bool,
    },
    /// The process was found gone with no exit event (a probe after the command ended).
    Gone {
        /// When it was found gone.
        ts: u64,
        /// The process.
        tgid: Pid,
    },
    /// A region the process reported (Trace2); arrives when the region ends, possibly after
    /// the process's exit.
    Region {
        /// The process.
        tgid: Pid,
        /// The region.
        region: Region,
    },
    /// A value the process reported (Trace2).
    Data {
        /// The process.
        tgid: Pid,
        /// The value.
        data: Data,
    },
    /// What process `tgid` cost (CPU, peak memory, I/O, waiting), all its threads summed, as
    /// the kernel accounted it at exit (taskstats, or `/proc` at the ptrace exit stop). A backend
    /// sends it before the process's final [`Event::Exit`]; the tracker keeps it in the record
    /// and every output reads it from there. Never sent when the figures are not known.
    Usage {
        /// The process.
        tgid: Pid,
        /// Its figures (boxed: an event stays as small as the others, most carry none).
        usage: Box<Usage>,
    },
    /// The kernel's name for process `tgid` when it exited (taskstats' `ac_comm`, or the comm
    /// of `/proc/PID/stat` at the ptrace exit stop; a JSON Lines `exit` line's `comm`). A
    /// backend sends it before the process's final [`Event::Exit`], beside [`Event::Usage`];
    /// the tracker takes it as the process's name (its last exec's, or a rename's, whatever
    /// was missed before). Not a rename: no line says it.
    ExitName {
        /// The process.
        tgid: Pid,
        /// Its `comm` at exit.
        comm: KernelName,
    },
    /// Process `tgid` used a file (`--files`): the first time of each path and access is
    /// kept. `ts` is when proctrace learned of it (fanotify has no timestamps: within
    /// milliseconds after the access).
    File {
        /// When.
        ts: u64,
        /// The process.
        tgid: Pid,
        /// How.
        access: FileAccess,
        /// The absolute path (the model's text: bytes that are not UTF-8 kept, see
        /// [`crate::model::bytes`]).
        path: String,
        /// A rename's new path.
        to: Option<String>,
    },
    /// Events the backend knows it missed.
    Lost {
        /// When the loss was detected, if known.
        ts: Option<u64>,
        /// How many events.
        count: u64,
    },
}

impl Event {
    /// The event's timestamp, if it has one.
    pub fn ts(&self) -> Option<u64> {
        match *self {
            Event::Fork { ts, .. }
            | Event::Exec { ts, .. }
            | Event::Exit { ts, .. }
            | Event::Coredump { ts, .. }
            | Event::Uid { ts, .. }
            | Event::Gid { ts, .. }
            | Event::Sid { ts, .. }
            | Event::Ptrace { ts, .. }
            | Event::Comm { ts, .. }
            | Event::Background { ts, .. }
            | Event::Gone { ts, .. }
            | Event::File { ts, .. } => Some(ts),
            Event::Lost { ts, .. } => ts,
            Event::Region { ref region, .. } => Some(region.end),
            Event::Data { ref data, .. } => Some(data.ts),
            Event::ExecDetails { .. }
            | Event::Usage { .. }
            | Event::ExitName { .. }
            | Event::Ancestry { .. }
            | Event::Root { .. }
            | Event::Existing { .. } => None,
        }
    }
}

/// A kernel name (`comm`) held inline, as the kernel gives it (bytes, at most
/// [`KernelName::MAX`]): an event carries it without an allocation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KernelName {
    bytes: [u8; KernelName::MAX],
    len: u8,
}

impl KernelName {
    /// The longest name kept: taskstats' `TS_COMM_LEN` (the kernel's `TASK_COMM_LEN` is 16,
    /// NUL included).
    pub const MAX: usize = 32;

    /// The name in `bytes` up to its first NUL, cut at [`KernelName::MAX`]; `None` when empty.
    pub fn new(bytes: &[u8]) -> Option<KernelName> {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        let b = &bytes[..end.min(Self::MAX)];
        if b.is_empty() {
            return None;
        }
        let mut k = KernelName {
            bytes: [0; Self::MAX],
            len: b.len() as u8,
        };
        k.bytes[..b.len()].copy_from_slice(b);
        Some(k)
    }

    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for KernelName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitStatus {
    /// Exited with this code.
    Code(i32),
    /// Killed by this signal.
    Signal {
        /// Signal number.
        signal: i32,
        /// A core file was written.
        core: bool,
    },
}

impl ExitStatus {
    /// Decodes a wait status (as `waitpid(2)` and the kernel's exit events give it: the code in
    /// bits 8-15, or the signal in bits 0-6 with the core flag 0x80).
    pub fn from_wait(status: u32) -> ExitStatus {
        match (status & 0x7f) as i32 {
            0 => ExitStatus::Code(((status >> 8) & 0xff) as i32),
            signal => ExitStatus::Signal {
                signal,
                core: status & 0x80 != 0,
            },
        }
    }

    /// What a shell reports: the code, or 128 + signal.
    pub fn shell_code(&self) -> i32 {
        match *self {
            ExitStatus::Code(c) => c,
            ExitStatus::Signal { signal, .. } => 128 + signal,
        }
    }

    /// Exited with 0.
    pub fn success(&self) -> bool {
        *self == ExitStatus::Code(0)
    }
}
