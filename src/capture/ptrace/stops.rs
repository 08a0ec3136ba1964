//! What the ptrace tracer does at each stop, as a pure state machine: decoded stops in, actions
//! out.
//!
//! It exists so that the rules of the stop order (`docs/facts/ptrace-facts.md`, A0 and A3) can be
//! tested with the sequences real kernels produce, without a kernel: the live loop in
//! [`super`] waits, [`decode`]s each wait status, hands the stop to [`Tracees::on_stop`] and
//! performs the [`Action`]s it gets back, in order. This module must never make a system call,
//! read `/proc` or a clock: what it cannot know — whether a clone made a thread, a released task's
//! process and parent, the time — comes in as arguments.
//!
//! The rules:
//!
//! - **Held new tasks.** A task whose first stop (`PTRACE_EVENT_STOP`) comes before its parent's
//!   fork/vfork/clone event is unknown: it is held in that stop ([`Action::Hold`]) until the
//!   parent's event names it, so the model always sees fork → exec → exit. Its fork is timed at
//!   the earlier of the two stops. Killed while held (SIGKILL ends even a ptrace-stop), its exit is
//!   kept and goes out right after its fork. A task held longer than [`HOLD_MAX_NS`] (its parent
//!   was killed in between) is taken in with the process and parent `/proc` gives, and let go.
//! - **Exec from a non-leader thread.** The exec is reported under the leader's pid, with the old
//!   thread id as the event message: that thread is forgotten (it never reports an exit), and the
//!   leader, whose exit stop came before, lives on as the process's one thread.
//! - **Group-stops** (a stop signal's `PTRACE_EVENT_STOP`) are answered with `PTRACE_LISTEN`, so
//!   the process stays stopped as it would untraced; any other event stop runs on.
//! - **Signals** of signal-delivery stops are re-injected untouched.
//! - **Exit stops** (usage capture only): each thread's figures are read at its exit stop; the
//!   stop of a process's last running thread is where the process's figures are read. A thread
//!   other than a leader, and a leader whose process has no other thread left, is let go there
//!   (`PTRACE_DETACH`, [`Action::Detach`]) and its exit is the stop's, with the wait status the
//!   kernel gives as the stop's event message: the tracer is spared the exit notification that
//!   would follow, one wake-up per process. The command stays attached (proctrace reaps it), and
//!   so does a leader that leaves before its threads (its exit is the process's, later).
//! - **Gone processes.** A process whose exit the tracer has (at its exit stop, or collected as
//!   its tracer) is still a zombie for its parent: it may signal it, and if the parent dies
//!   first, proctrace (the subreaper) reaps it once more. It is remembered as gone
//!   ([`GONE_REMEMBERED`]) so that neither is taken for an untraced process.
//! - **Untraced processes** (blind spots): a process the tracer never saw start — a
//!   `clone(CLONE_UNTRACED)` child, and so everything it starts — is found when it signals a
//!   traced parent (a `SIGCHLD` whose sender is no known task, [`Tracees::child_signal`]), when
//!   it exits as proctrace's own child (an orphan reparented to proctrace, the subreaper), or,
//!   still running at the end, as a child of a traced task or of proctrace
//!   ([`Tracees::find_running_untraced`]). Each is reported once ([`Action::Untraced`]): the
//!   trace is known to be incomplete.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::model::event::{Event, Pid};

/// How many recent exits are remembered: a traced child's `SIGCHLD` reaches its parent after
/// the tracer collected its exit, and must not be taken for an untraced process's.
pub const RECENT_EXITS: usize = 4096;

/// Most untraced processes remembered as reported (so that one seen signalling its parent and
/// then exiting is counted once); past it the memory is cleared, and one might count twice.
pub const UNTRACED_REMEMBERED: usize = 65_536;

/// Most processes remembered as gone (their zombie may outlive thousands of other exits, until
/// their parent reaps them); past it the oldest is forgotten, and a zombie of it reaped by
/// proctrace much later would count as untraced. The other way round, an untraced process that
/// takes a gone one's pid (before a traced one does, which ends the memory of it) is missed.
pub const GONE_REMEMBERED: usize = 65_536;

/// How long a new task waits at its first stop for its parent's fork/clone event before it is
/// taken in with the parent `/proc` names (its parent was killed in between), in ns.
pub const HOLD_MAX_NS: u64 = 50_000_000;

/// One stop or exit of a tracee, as `waitpid` reported it and `PTRACE_GETEVENTMSG` completed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The task is gone (`WIFEXITED` or `WIFSIGNALED`): its wait status.
    Exited {
        /// The wait status.
        status: i32,
    },
    /// A signal-delivery stop.
    Signal {
        /// The signal about to be delivered.
        sig: i32,
    },
    /// `PTRACE_EVENT_FORK`: the stopped task forked `child`.
    Fork {
        /// The new process.
        child: Pid,
    },
    /// `PTRACE_EVENT_VFORK` (`vfork`, and glibc's `posix_spawn`).
    Vfork {
        /// The new process.
        child: Pid,
    },
    /// `PTRACE_EVENT_CLONE`.
    Clone {
        /// The new task.
        child: Pid,
        /// It is a thread of the stopped task's process (`CLONE_THREAD`), not a process.
        thread: bool,
    },
    /// `PTRACE_EVENT_EXEC`, reported under the process's pid.
    Exec {
        /// The thread id that called exec (differs from the pid for a non-leader exec); `None`
        /// when the event message could not be read.
        former: Option<Pid>,
    },
    /// `PTRACE_EVENT_EXIT`: the task is about to exit, everything still readable.
    Exiting {
        /// The wait status it will exit with (the event message); `None` when it could not be
        /// read.
        status: Option<i32>,
    },
    /// `PTRACE_EVENT_SECCOMP`: a file system call the `--files` filter traces, at its entry.
    Seccomp,
    /// A syscall-exit stop (`SIGTRAP | 0x80`, `PTRACE_O_TRACESYSGOOD`): a traced file call
    /// returned.
    SyscallExit,
    /// `PTRACE_EVENT_STOP`: a group-stop, or a new task's first stop.
    Trap {
        /// The stop's signal (SIGTRAP for a new task's first stop, a stop signal for a group-stop).
        sig: i32,
    },
    /// Another ptrace event (one not asked for, or one whose event message could not be read).
    OtherEvent,
    /// Neither a stop nor an exit (e.g. continued): nothing to answer.
    Other,
}

/// Decodes a wait status. `event_msg` is asked for the event message of fork, vfork, clone, exec
/// and exit events only; `is_thread(child)` for clone events only.
pub fn decode(
    status: i32,
    event_msg: impl FnOnce() -> Option<u64>,
    is_thread: impl FnOnce(Pid) -> bool,
) -> Stop {
    if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
        return Stop::Exited { status };
    }
    if !libc::WIFSTOPPED(status) {
        return Stop::Other;
    }
    let sig = libc::WSTOPSIG(status);
    match (status >> 16) & 0xffff {
        // Only with PTRACE_O_TRACESYSGOOD (`--files`), which marks syscall stops so.
        0 if sig == libc::SIGTRAP | 0x80 => Stop::SyscallExit,
        0 => Stop::Signal { sig },
        event @ (libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK | libc::PTRACE_EVENT_CLONE) => {
            let Some(child) = event_msg() else {
                return Stop::OtherEvent;
            };
            let child = child as Pid;
            match event {
                libc::PTRACE_EVENT_FORK => Stop::Fork { child },
                libc::PTRACE_EVENT_VFORK => Stop::Vfork { child },
                _ => Stop::Clone {
                    child,
                    thread: is_thread(child),
                },
            }
        }
        libc::PTRACE_EVENT_EXEC => Stop::Exec {
            former: event_msg().map(|m| m as Pid),
        },
        libc::PTRACE_EVENT_EXIT => Stop::Exiting {
            status: event_msg().map(|m| m as i32),
        },
        libc::PTRACE_EVENT_STOP => Stop::Trap { sig },
        libc::PTRACE_EVENT_SECCOMP => Stop::Seccomp,
        _ => Stop::OtherEvent,
    }
}

/// What to do, in this order, for the stops given to [`Tracees`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Restart the task (`PTRACE_CONT`), delivering `sig` (0: none).
    Resume {
        /// The task.
        pid: Pid,
        /// The signal to deliver.
        sig: i32,
    },
    /// Let the group-stopped task stay stopped while its notifications keep coming
    /// (`PTRACE_LISTEN`).
    Listen {
        /// The task.
        pid: Pid,
    },
    /// Leave the task in its stop: it is held until its parent's event (nothing to do now).
    Hold {
        /// The task.
        pid: Pid,
    },
    /// An event for the model.
    Emit(Event),
    /// Read the exec's details from `/proc` now, while the process is stopped at its exec (its
    /// argv is complete and it cannot exit), and emit them (only when enriching).
    ReadExec {
        /// The process.
        tgid: Pid,
    },
    /// Read the figures of thread `tid` at its exit stop and add them to its process's; when
    /// `last`, the process's figures are complete: read and emit them (usage capture only).
    ReadUsage {
        /// The process.
        tgid: Pid,
        /// The thread at its exit stop.
        tid: Pid,
        /// It is the process's last running thread.
        last: bool,
        /// The process's I/O counters are to be read once, for the whole process (it is the
        /// leader's last stop, and the process never had a child whose counters the kernel
        /// would have added to its own), not thread by thread.
        whole_io: bool,
    },
    /// Let the task go from its exit stop (`PTRACE_DETACH`): its exit is emitted already.
    Detach {
        /// The task.
        pid: Pid,
    },
    /// Read what the file call the task stopped at names, and restart it (`--files`).
    FileCall {
        /// The thread.
        pid: Pid,
        /// Its process.
        tgid: Pid,
        /// When the stop was collected.
        ts: u64,
    },
    /// The task's traced file call returned: its result, then restart it (`--files`).
    FileReturn {
        /// The thread.
        pid: Pid,
    },
    /// The process ended without its last thread's exit stop: drop the figures gathered for it.
    ForgetUsage {
        /// The process.
        tgid: Pid,
    },
    /// The command (the root of the traced tree) ended with this wait status.
    CommandExited {
        /// The wait status.
        status: i32,
    },
    /// A process the tracer never saw start (it and its descendants are not traced): count it
    /// and say what can be seen of it. Once per process.
    Untraced {
        /// The process.
        pid: Pid,
        /// How it was found.
        found: Found,
    },
}

/// How an untraced process was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// It signalled (`SIGCHLD`) this traced parent: it exists still, `/proc` may name it.
    Signalled {
        /// The traced parent.
        parent: Pid,
    },
    /// It exited as proctrace's child (an orphan reparented to the subreaper): gone, reaped.
    Reaped,
    /// It was still running at the end of tracing, a child of this traced task (or of
    /// proctrace: an orphan).
    Running {
        /// Its parent.
        parent: Pid,
    },
}

/// Where the command is on its way to its exec ([`Tracees::command_stop`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandStart {
    /// Not at its exec yet.
    Pending,
    /// It exec'd: it is the root of the traced tree now.
    Running,
    /// It ended before it could exec, with this wait status.
    Failed {
        /// The wait status.
        status: i32,
    },
}

/// What the tracer knows of one task.
#[derive(Debug, Clone, Copy)]
struct Task {
    tgid: Pid,
    /// Parent process at fork.
    ppid: Pid,
    /// Past its `PTRACE_EVENT_EXIT` stop.
    exiting: bool,
}

impl Task {
    fn new(tgid: Pid, ppid: Pid) -> Task {
        Task {
            tgid,
            ppid,
            exiting: false,
        }
    }
}

/// A task seen at its first stop before its parent's fork/clone event: held stopped.
#[derive(Debug, Clone, Copy)]
struct Held {
    /// When it stopped (and was held).
    ts: u64,
    /// Killed while held: its exit's time and wait status.
    exit: Option<(u64, i32)>,
    /// The signal of the stop it is held in (SIGTRAP for a new task's first stop).
    stop_sig: i32,
}

/// The tracer's knowledge of its tracees, driven by their stops.
#[derive(Debug, Default)]
pub struct Tracees {
    /// Exit stops are asked for and each process's figures read at its last thread's.
    usage: bool,
    /// Exec details are read at each exec stop.
    enrich: bool,
    tasks: HashMap<Pid, Task>,
    held: HashMap<Pid, Held>,
    /// Per process, while usage is measured: threads not yet at their exit stop.
    running: HashMap<Pid, u32>,
    root: Option<Pid>,
    /// The last [`RECENT_EXITS`] tasks whose exit was collected, oldest first, and as a set.
    recent_exits: VecDeque<Pid>,
    recent_set: HashSet<Pid>,
    /// Untraced processes already reported.
    untraced: HashSet<Pid>,
    /// Processes that have had a thread besides their leader since they were seen starting
    /// (until the leader's exit): only their execs may come from another thread.
    threaded: HashSet<Pid>,
    /// Processes that have created a process (a child the tracer saw, or an untraced one found
    /// signalling them) since they were seen starting, until the leader's exit: the kernel may
    /// have added a reaped child's I/O to theirs.
    parents: HashSet<Pid>,
    /// Tasks let go at their exit stop, oldest first, and as a set: their exit is known, what
    /// the kernel says of them later is not news ([`GONE_REMEMBERED`]).
    gone_order: VecDeque<Pid>,
    gone: HashSet<Pid>,
}

impl Tracees {
    /// A tracer that reads usage at exit stops (`usage`) and exec details at exec stops
    /// (`enrich`).
    pub fn new(usage: bool, enrich: bool) -> Tracees {
        Tracees {
            usage,
            enrich,
            ..Tracees::default()
        }
    }

    /// Whether process `tgid` has had no thread but its leader: an exec stop of it is then
    /// the leader's own, and its former thread id need not be asked for.
    pub fn single_threaded(&self, tgid: Pid) -> bool {
        self.tasks.contains_key(&tgid) && !self.threaded.contains(&tgid)
    }

    /// Processes still traced (their leader not yet exited), held ones included.
    pub fn processes_left(&self) -> usize {
        self.tasks.iter().filter(|(tid, t)| **tid == t.tgid).count() + self.held.len()
    }

    /// Whether a task is held (the caller then wakes within [`HOLD_MAX_NS`] to let it go).
    pub fn has_held(&self) -> bool {
        !self.held.is_empty()
    }

    /// The command, forked by `parent` (proctrace) and seized, waits to exec.
    pub fn command_forked(&mut self, pid: Pid, parent: Pid) {
        self.add_task(pid, Task::new(pid, parent));
    }

    /// A stop of the command before it runs: its exec makes it the root (its fork is timed at
    /// `fork_ts`); a signal before (a terminal's SIGINT) is passed on; its end means it could not
    /// exec.
    pub fn command_stop(
        &mut self,
        pid: Pid,
        stop: Stop,
        fork_ts: u64,
        ts: u64,
        parent: Pid,
        out: &mut Vec<Action>,
    ) -> CommandStart {
        match stop {
            Stop::Exited { status } => {
                self.tasks.remove(&pid);
                self.running.remove(&pid);
                CommandStart::Failed { status }
            }
            Stop::Exec { .. } => {
                out.push(Action::Emit(Event::Fork {
                    ts: fork_ts,
                    parent_tgid: parent,
                    child_pid: pid,
                    child_tgid: pid,
                }));
                self.root = Some(pid);
                self.on_exec(pid, pid, ts, out);
                out.push(Action::Resume { pid, sig: 0 });
                CommandStart::Running
            }
            Stop::Signal { sig } => {
                out.push(Action::Resume { pid, sig });
                CommandStart::Pending
            }
            Stop::Other => CommandStart::Pending,
            _ => {
                out.push(Action::Resume { pid, sig: 0 });
                CommandStart::Pending
            }
        }
    }

    /// Answers one stop of `pid`, collected at `ts`.
    pub fn on_stop(&mut self, pid: Pid, stop: Stop, ts: u64, out: &mut Vec<Action>) {
        match stop {
            Stop::Exited { status } => self.on_exit(pid, status, ts, out),
            // A signal-delivery stop: pass the signal on untouched.
            Stop::Signal { sig } => out.push(Action::Resume { pid, sig }),
            Stop::Fork { child } | Stop::Vfork { child } => {
                self.on_new_task(pid, child, false, ts, out);
                out.push(Action::Resume { pid, sig: 0 });
            }
            Stop::Clone { child, thread } => {
                self.on_new_task(pid, child, thread, ts, out);
                out.push(Action::Resume { pid, sig: 0 });
            }
            Stop::Exec { former } => {
                self.on_exec(pid, former.unwrap_or(pid), ts, out);
                out.push(Action::Resume { pid, sig: 0 });
            }
            Stop::Exiting { status } => self.on_exit_stop(pid, status, ts, out),
            Stop::Trap { sig } => {
                if self.tasks.contains_key(&pid) {
                    restart_after_stop(pid, sig, out);
                } else {
                    // Its parent's event has not come yet: keep it here until it does.
                    self.held.entry(pid).or_insert(Held {
                        ts,
                        exit: None,
                        stop_sig: sig,
                    });
                    out.push(Action::Hold { pid });
                }
            }
            Stop::OtherEvent => out.push(Action::Resume { pid, sig: 0 }),
            Stop::Seccomp => out.push(Action::FileCall {
                pid,
                tgid: self.tgid_of(pid),
                ts,
            }),
            Stop::SyscallExit => out.push(Action::FileReturn { pid }),
            Stop::Other => {}
        }
    }

    /// A traced `parent` is about to receive a `SIGCHLD` that names `child` as its sender (the
    /// signal's `si_pid`, read only for a kernel-sent `SIGCHLD`, in the tracer's pid namespace):
    /// a child that is no known task, held or recently exited was never traced.
    pub fn child_signal(&mut self, parent: Pid, child: Pid, out: &mut Vec<Action>) {
        if child <= 0
            || self.tasks.contains_key(&child)
            || self.held.contains_key(&child)
            || self.recent_set.contains(&child)
            || self.gone.contains(&child)
        {
            return;
        }
        // It has a child: its I/O counters may hold that child's once it reaps it.
        let parent_tgid = self.tgid_of(parent);
        self.parents.insert(parent_tgid);
        self.note_untraced(child, Found::Signalled { parent }, out);
    }

    /// Whether `pid` would be news to [`child_signal`](Self::child_signal) (the caller then
    /// checks, at a cost, that the signal's pid is in its namespace before telling it).
    pub fn is_unknown(&self, pid: Pid) -> bool {
        pid > 0
            && !self.tasks.contains_key(&pid)
            && !self.held.contains_key(&pid)
            && !self.recent_set.contains(&pid)
            && !self.gone.contains(&pid)
            && !self.untraced.contains(&pid)
    }

    fn note_untraced(&mut self, pid: Pid, found: Found, out: &mut Vec<Action>) {
        if self.untraced.len() >= UNTRACED_REMEMBERED {
            self.untraced.clear();
        }
        if self.untraced.insert(pid) {
            out.push(Action::Untraced { pid, found });
        }
    }

    fn exited(&mut self, pid: Pid) {
        if self.recent_exits.len() >= RECENT_EXITS
            && let Some(old) = self.recent_exits.pop_front()
        {
            self.recent_set.remove(&old);
        }
        if self.recent_set.insert(pid) {
            self.recent_exits.push_back(pid);
        }
    }

    /// Lets go the tasks held since [`HOLD_MAX_NS`] before `now`, taking each in with the process
    /// and parent `facts` gives (`None`: itself, parent unknown).
    pub fn release_overdue(
        &mut self,
        now: u64,
        facts: impl FnMut(Pid) -> Option<(Pid, Pid)>,
        out: &mut Vec<Action>,
    ) {
        self.release(|h| now.saturating_sub(h.ts) >= HOLD_MAX_NS, facts, out);
    }

    /// At the end of tracing: the children `children(parent)` gives of every traced task still
    /// there, and of proctrace itself (`me`: orphans reparented to it), that the tracer never
    /// knew and that are not traced (`traced(child)`: a new task whose first stop has not been
    /// collected yet is): untraced processes still running, found before they are let go.
    pub fn find_running_untraced(
        &mut self,
        me: Pid,
        mut children: impl FnMut(Pid, &mut Vec<Pid>),
        mut traced: impl FnMut(Pid) -> bool,
        out: &mut Vec<Action>,
    ) {
        let mut parents: Vec<Pid> = self.tasks.keys().copied().collect();
        parents.sort_unstable();
        parents.push(me);
        let mut found = Vec::new();
        for parent in parents {
            found.clear();
            children(parent, &mut found);
            for &child in &found {
                if self.is_unknown(child) && !traced(child) {
                    self.note_untraced(child, Found::Running { parent }, out);
                }
            }
        }
    }

    /// Lets go every held task (tracing stops), as [`release_overdue`](Self::release_overdue).
    pub fn release_all(&mut self, facts: impl FnMut(Pid) -> Option<(Pid, Pid)>, out: &mut Vec<Action>) {
        self.release(|_| true, facts, out);
    }

    fn release(
        &mut self,
        which: impl Fn(&Held) -> bool,
        mut facts: impl FnMut(Pid) -> Option<(Pid, Pid)>,
        out: &mut Vec<Action>,
    ) {
        let mut due: Vec<Pid> = self
            .held
            .iter()
            .filter(|(_, h)| which(h))
            .map(|(&p, _)| p)
            .collect();
        due.sort_unstable();
        for pid in due {
            let Some(h) = self.held.remove(&pid) else { continue };
            let (tgid, ppid) = facts(pid).unwrap_or((pid, 0));
            self.add_task(pid, Task::new(tgid, ppid));
            out.push(Action::Emit(Event::Fork {
                ts: h.ts,
                parent_tgid: ppid,
                child_pid: pid,
                child_tgid: tgid,
            }));
            match h.exit {
                Some((xts, status)) => self.on_exit(pid, status, xts, out),
                None => restart_after_stop(pid, h.stop_sig, out),
            }
        }
    }

    fn tgid_of(&self, tid: Pid) -> Pid {
        self.tasks.get(&tid).map_or(tid, |t| t.tgid)
    }

    fn add_task(&mut self, tid: Pid, t: Task) {
        // A gone task's id taken again: its zombie is reaped.
        if !self.gone.is_empty() {
            self.gone.remove(&tid);
        }
        if t.tgid != tid {
            self.threaded.insert(t.tgid);
        }
        if self.usage {
            *self.running.entry(t.tgid).or_default() += 1;
        }
        self.tasks.insert(tid, t);
    }

    /// One thread of `tgid` will not reach its exit stop (or has); true when it was the last.
    fn thread_done(&mut self, tgid: Pid) -> bool {
        let Some(running) = self.running.get_mut(&tgid) else {
            return false;
        };
        *running = running.saturating_sub(1);
        if *running == 0 {
            self.running.remove(&tgid);
            return true;
        }
        false
    }

    fn on_new_task(&mut self, parent: Pid, new: Pid, thread: bool, ts: u64, out: &mut Vec<Action>) {
        if self.tasks.contains_key(&new) {
            // Let go from its first stop already, after waiting too long for this event.
            return;
        }
        let parent_tgid = self.tgid_of(parent);
        if !thread {
            self.parents.insert(parent_tgid);
        }
        let child_tgid = if thread { parent_tgid } else { new };
        let ppid = if thread {
            self.tasks.get(&parent).map_or(0, |t| t.ppid)
        } else {
            parent_tgid
        };
        self.add_task(new, Task::new(child_tgid, ppid));
        let held = self.held.remove(&new);
        out.push(Action::Emit(Event::Fork {
            ts: held.map_or(ts, |h| h.ts.min(ts)),
            parent_tgid: if thread { ppid } else { parent_tgid },
            child_pid: new,
            child_tgid,
        }));
        match held {
            Some(Held {
                exit: Some((xts, status)),
                ..
            }) => self.on_exit(new, status, xts, out),
            Some(h) => restart_after_stop(new, h.stop_sig, out),
            None => {}
        }
    }

    fn on_exec(&mut self, pid: Pid, former: Pid, ts: u64, out: &mut Vec<Action>) {
        if former != pid {
            // A non-leader exec: the thread took over the leader's pid and never exits itself.
            // The other threads (the old leader included) went through their exit stops; the
            // process goes on with this one thread.
            self.tasks.remove(&former);
            if let Some(t) = self.tasks.get_mut(&pid) {
                t.exiting = false;
            }
            if let Some(running) = self.running.get_mut(&pid) {
                *running = 1;
            }
        }
        out.push(Action::Emit(Event::Exec { ts, tgid: pid }));
        if self.enrich {
            out.push(Action::ReadExec { tgid: pid });
        }
    }

    fn on_exit(&mut self, pid: Pid, status: i32, ts: u64, out: &mut Vec<Action>) {
        if let Some(h) = self.held.get_mut(&pid) {
            h.exit = Some((ts, status));
            return;
        }
        let task = self.tasks.remove(&pid);
        if task.is_some_and(|t| t.tgid == pid) {
            // The leader is reported last: the pid is free for a new process.
            self.threaded.remove(&pid);
            self.parents.remove(&pid);
            if Some(pid) != self.root {
                // Collected as its tracer, it is still a zombie for its parent, which may leave
                // it to proctrace (the subreaper) to reap again.
                self.note_gone(pid);
            }
        }
        match task {
            Some(_) => self.exited(pid),
            // Let go at its exit stop, its exit emitted then: reaped now by proctrace (the
            // subreaper, its parent gone), or its detach failed (killed out of the stop).
            None if self.gone.remove(&pid) => return,
            // Not a task of the traced tree: an untraced process, reparented to proctrace (the
            // subreaper) and reaped here. Seen signalling its parent before, it is counted then.
            None => {
                let known = self.untraced.remove(&pid);
                if !known {
                    out.push(Action::Untraced {
                        pid,
                        found: Found::Reaped,
                    });
                }
            }
        }
        if let Some(t) = task
            && !t.exiting
            && self.thread_done(t.tgid)
        {
            // Its exit stop never came (killed while held, or by a second SIGKILL during it), and
            // it was the process's last thread: no figures for the process.
            out.push(Action::ForgetUsage { tgid: t.tgid });
        }
        out.push(Action::Emit(Event::Exit {
            ts,
            pid,
            tgid: task.map_or(pid, |t| t.tgid),
            status: status as u32,
            parent_tgid: task.map_or(0, |t| t.ppid),
        }));
        if Some(pid) == self.root {
            out.push(Action::CommandExited { status });
        }
    }

    /// `PTRACE_EVENT_EXIT`: `tid` is about to exit (with wait status `status`), with everything
    /// still readable.
    fn on_exit_stop(&mut self, tid: Pid, status: Option<i32>, ts: u64, out: &mut Vec<Action>) {
        let resume = Action::Resume { pid: tid, sig: 0 };
        if !self.usage {
            return out.push(resume);
        }
        let Some(task) = self.tasks.get_mut(&tid) else {
            return out.push(resume);
        };
        if task.exiting {
            return out.push(resume);
        }
        task.exiting = true;
        let tgid = task.tgid;
        if !self.running.contains_key(&tgid) {
            return out.push(resume);
        }
        let last = self.thread_done(tgid);
        let whole_io = last && tid == tgid && !self.parents.contains(&tgid);
        out.push(Action::ReadUsage {
            tgid,
            tid,
            last,
            whole_io,
        });
        // A leader with threads still running leaves before its process ends: it stays
        // attached, and its exit is the process's, reported once the last thread is gone.
        match status {
            Some(status) if Some(tid) != self.root && (tid != tgid || last) => {
                out.push(Action::Detach { pid: tid });
                self.note_gone(tid);
                self.on_exit(tid, status, ts, out);
            }
            _ => out.push(resume),
        }
    }

    fn note_gone(&mut self, pid: Pid) {
        if self.gone_order.len() >= GONE_REMEMBERED
            && let Some(old) = self.gone_order.pop_front()
        {
            self.gone.remove(&old);
        }
        if self.gone.insert(pid) {
            self.gone_order.push_back(pid);
        }
    }
}

/// Restarts a task from a `PTRACE_EVENT_STOP`: a group-stop (a stop signal) stays stopped, as it
/// would untraced, while we keep getting its notifications; anything else (a new task's first
/// stop) runs on.
fn restart_after_stop(pid: Pid, sig: i32, out: &mut Vec<Action>) {
    if matches!(sig, libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU) {
        out.push(Action::Listen { pid });
    } else {
        out.push(Action::Resume { pid, sig: 0 });
    }
}

#[cfg(test)]
mod tests;
