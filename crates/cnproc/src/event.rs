//! Decoded process events: what the kernel said, in native types, with nothing inferred.
//!
//! Pids are the kernel's (init pid namespace); `pid` is the task (thread) id and `tgid` the
//! process id. Interpretation — threads versus processes, provisional leader exits, pid reuse —
//! belongs to the consumer, not here.

/// One event from the process events connector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcEvent {
    /// `cn_msg.seq`: the generating CPU's event counter (used for loss accounting).
    pub seq: u32,
    /// CPU that generated the event.
    pub cpu: u32,
    /// Kernel `ktime_get_ns()`: CLOCK_MONOTONIC nanoseconds, host clock (no time-namespace offset).
    pub timestamp_ns: u64,
    /// What happened.
    pub kind: EventKind,
}

/// The event-specific part of a [`ProcEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// Reply to a control message: `ack` is the request's ack + 1, `err` a positive errno or 0.
    Ack {
        /// `cn_msg.ack` of the reply.
        ack: u32,
        /// Positive errno, 0 on success.
        err: u32,
    },
    /// A new task. `child_pid != child_tgid` means a thread of `child_tgid`.
    Fork {
        /// Real parent task id.
        parent_pid: i32,
        /// Real parent process id.
        parent_tgid: i32,
        /// New task id.
        child_pid: i32,
        /// New task's process id.
        child_tgid: i32,
    },
    /// A successful execve (always reported on the thread-group leader).
    Exec {
        /// Task id.
        pid: i32,
        /// Process id.
        tgid: i32,
    },
    /// Credentials changed: real and effective uid.
    Uid {
        /// Task id.
        pid: i32,
        /// Process id.
        tgid: i32,
        /// Real uid.
        ruid: u32,
        /// Effective uid.
        euid: u32,
    },
    /// Credentials changed: real and effective gid.
    Gid {
        /// Task id.
        pid: i32,
        /// Process id.
        tgid: i32,
        /// Real gid.
        rgid: u32,
        /// Effective gid.
        egid: u32,
    },
    /// setsid().
    Sid {
        /// Task id.
        pid: i32,
        /// Process id.
        tgid: i32,
    },
    /// ptrace attach/seize (tracer set) or detach (tracer 0).
    Ptrace {
        /// Traced task id.
        pid: i32,
        /// Traced process id.
        tgid: i32,
        /// Tracer task id, 0 on detach.
        tracer_pid: i32,
        /// Tracer process id, 0 on detach.
        tracer_tgid: i32,
    },
    /// Thread name change (not reported on exec).
    Comm {
        /// Task id.
        pid: i32,
        /// Process id.
        tgid: i32,
        /// New name, NUL-padded.
        comm: [u8; 16],
    },
    /// A core-dumping signal was delivered; an EXIT follows.
    Coredump {
        /// Task id.
        pid: i32,
        /// Process id.
        tgid: i32,
        /// Parent task id.
        parent_pid: i32,
        /// Parent process id.
        parent_tgid: i32,
    },
    /// A task exited (sent for every thread).
    Exit {
        /// Task id.
        pid: i32,
        /// Process id.
        tgid: i32,
        /// Wait status (`exit(3)` → 0x300, SIGTERM → 0xf).
        exit_code: u32,
        /// Signal sent to the parent: 17 (SIGCHLD) for processes, -1 for threads.
        exit_signal: i32,
        /// Real parent at exit; 0 when the parent had already reaped or ignores SIGCHLD.
        parent_pid: i32,
        /// Real parent's process id at exit.
        parent_tgid: i32,
    },
    /// An event type this crate does not know; ignored by consumers, kept for accounting.
    Unknown {
        /// The raw `what` value.
        what: u32,
    },
}

impl EventKind {
    /// The task id the event is about (the child for FORK), if any.
    pub fn pid(&self) -> Option<i32> {
        match *self {
            EventKind::Fork { child_pid, .. } => Some(child_pid),
            EventKind::Exec { pid, .. }
            | EventKind::Uid { pid, .. }
            | EventKind::Gid { pid, .. }
            | EventKind::Sid { pid, .. }
            | EventKind::Ptrace { pid, .. }
            | EventKind::Comm { pid, .. }
            | EventKind::Coredump { pid, .. }
            | EventKind::Exit { pid, .. } => Some(pid),
            EventKind::Ack { .. } | EventKind::Unknown { .. } => None,
        }
    }
}

/// How a task ended, decoded from a wait status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStatus {
    /// Exited normally with this code.
    Exited(i32),
    /// Killed by this signal; `core` when a core dump was written.
    Signaled {
        /// Signal number.
        signal: i32,
        /// Core dumped.
        core: bool,
    },
}

impl WaitStatus {
    /// Decodes a wait status as `waitpid` would (`WIFEXITED`/`WTERMSIG`/`WCOREDUMP`).
    pub fn from_raw(status: u32) -> WaitStatus {
        let sig = (status & 0x7f) as i32;
        if sig == 0 {
            WaitStatus::Exited(((status >> 8) & 0xff) as i32)
        } else {
            WaitStatus::Signaled {
                signal: sig,
                core: status & 0x80 != 0,
            }
        }
    }

    /// The status a shell would report: the code, or 128 + signal.
    pub fn shell_code(&self) -> i32 {
        match *self {
            WaitStatus::Exited(c) => c,
            WaitStatus::Signaled { signal, .. } => 128 + signal,
        }
    }
}
