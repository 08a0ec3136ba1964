//! The ptrace backend: the command's own tree, from event stops only.
//!
//! For where the connector is refused (containers, user namespaces, old kernels without
//! CAP_NET_ADMIN). One thread (`pt-ptrace`) is the tracer: it forks the command, seizes it
//! (`PTRACE_SEIZE` with fork/vfork/clone/exec tracing, so every descendant is attached
//! automatically), waits for stops and answers them. There are no syscall stops, so a traced
//! process stops about six times per fork+exec+exit, not once per system call. What it yields is
//! the same [`Event`] the connector yields; the model cannot tell them apart. Measured behaviour
//! this code relies on is in `docs/facts/ptrace-facts.md`:
//!
//! - argv is read at the exec stop, when `/proc/PID/cmdline` already holds the new argv and the
//!   process cannot exit: it is always complete (A1). It is read from the new stack itself
//!   (`PTRACE_GETREGS` and `process_vm_readv`: the same bytes, no `/proc` file to open), with
//!   `cmdline` as the fallback.
//! - Stops arrive out of order under concurrency: a new task's first stop (or more) can come
//!   before its parent's fork/clone event (A3). Such a task is held at its first stop until the
//!   parent's event names it, so the model always sees fork → exec → exit.
//! - Group-stops (SIGSTOP, SIGTSTP, job control) are answered with `PTRACE_LISTEN`, so the process
//!   stays stopped as it would untraced; signal-delivery stops are re-injected untouched (A0).
//! - A non-leader exec reports the exec under the leader's pid with the old thread id in the
//!   event message; that thread never exits on its own (A3).
//! - No `PTRACE_O_EXITKILL`: if proctrace dies, the kernel detaches every tracee and they run on
//!   (A5), as with the connector, rather than killing the build.
//!
//! What to do at each stop is decided by `stops::Tracees`, a pure state machine tested with
//! the stop orders real kernels produce; this file is the shell around it: it waits, decodes each
//! wait status and performs the machine's actions (the `ptrace` requests, the `/proc` reads, the
//! events out).
//!
//! The floor of the mechanism is one blocking `waitpid` and one `PTRACE_CONT` per stop, and the
//! tracer keeps to it: it sleeps in a blocking `waitpid` (no signal wait before it, no empty
//! `WNOHANG` poll after each stop), asks the kernel only what the stop needs (a fork's new pid;
//! an exec's former thread id only when the process has had threads) and reads an exec's `/proc`
//! files by path. With usage capture (exit stops), a task is let go at its exit stop
//! (`PTRACE_DETACH`, its exit status being the stop's event message), which spares the exit
//! notification that would follow: one stop fewer per process than exit stops cost otherwise
//! (`stops` says when a task stays attached). Every `/proc` file opened for a process costs a proc
//! inode made and later torn down (≈10–15 µs each on the project's VM, more than the reading):
//! what is read is the least the figures need (`usage`, `BENCHMARKS.md`). A batch of events
//! goes out at the first stop [`BATCH_PAUSE_NS`] after it began.
//! What else must wake it — a request from another thread, a batch left when the stops cease, a
//! held task to let go — comes as a signal of its own ([`sys::Alarm`]: a POSIX timer aimed at
//! the tracer thread, with a handler that does nothing and no `SA_RESTART`), which ends the
//! `waitpid` with `EINTR`. The timer runs (every [`TICK`]) only while there is something to send
//! or a task held, and a requester sets it going at once: a signal that lands just before the
//! `waitpid` is followed by the next one.
//! SIGCHLD stays blocked and is never taken (the kernel queues one and drops the rest).
//!
//! Timestamps are CLOCK_MONOTONIC read when the tracer collects the stop (not when it happened):
//! precise to the tracer's wakeup latency, typically tens of microseconds, more under load.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use self::stops::{Action, CommandStart, Found, Stop, Tracees};
use super::{CaptureMsg, CaptureOptions, Notice, SpawnError};
use crate::capture::procfs;
use crate::capture::usage::{ExitReader, IoRead, ThreadSum};
use crate::model::event::{Event, ExecDetails, Pid};
use crate::model::session::CaptureSummary;

mod files;
mod stops;

/// Batch size that is sent at once.
const BATCH_MAX: usize = 512;
/// Stops collected, at most, before a marker or the end goes out.
const COLLECT_MAX: usize = 256;
/// How long a batch waits for more before a stop sends it to the model thread (one wake-up of
/// it per burst), in the stops' clock (ns).
const BATCH_PAUSE_NS: u64 = 2_000_000;
/// The alarm's period while it runs: how long a batch can wait once the stops cease (twice
/// that if a signal is lost just before a `waitpid`), and how often a held task is looked at
/// (against [`stops::HOLD_MAX_NS`]). Longer than [`BATCH_PAUSE_NS`]: in a burst the stops send the
/// batches, and each tick costs a wake-up of its own.
const TICK: Duration = Duration::from_millis(10);

enum Request {
    Spawn(
        Vec<String>,
        Vec<(OsString, OsString)>,
        Sender<Result<Pid, SpawnError>>,
    ),
    Marker(u32),
    Stop,
}

/// The running tracer thread.
pub struct PtraceBackend {
    /// Events and notices.
    pub rx: Receiver<CaptureMsg>,
    tx: Sender<CaptureMsg>,
    requests: Sender<Request>,
    recycle: Sender<Vec<Event>>,
    /// Wakes the tracer thread.
    alarm: Arc<sys::Alarm>,
    thread: Option<JoinHandle<()>>,
    /// Reads exec details at each exec stop.
    pub enrich: bool,
    /// Reports file calls through its seccomp filter (`--files`).
    files: bool,
}

impl PtraceBackend {
    /// Starts the tracer thread. SIGCHLD is best blocked in every thread (see
    /// [`crate::capture::signals::block_stop_signals`]): nobody takes it.
    pub fn start(opts: &CaptureOptions) -> Result<PtraceBackend, crate::ProctraceError> {
        let io = |what: &str, e: std::io::Error| crate::ProctraceError::Io(what.into(), e);
        if opts.files.is_some() && !files::SUPPORTED {
            return Err(crate::ProctraceError::Unavailable(
                "--files under ptrace needs this build's system call table (x86_64 or aarch64)".into(),
            ));
        }
        let (tx, rx) = mpsc::channel();
        let (requests, req_rx) = mpsc::channel();
        let (recycle, recycled) = mpsc::channel();
        let files = opts.files.is_some();
        let tracer = Tracer {
            tx: tx.clone(),
            requests: req_rx,
            recycled,
            usage: opts.usage.then(ExitReader::default),
            groups: HashMap::new(),
            tracees: Tracees::new(opts.usage, opts.enrich),
            actions: Vec::new(),
            batch: Vec::with_capacity(BATCH_MAX),
            notices: Vec::new(),
            stops: 0,
            untraced: 0,
            my_pid_ns: sys::pid_ns(None),
            warned: HashSet::new(),
            unprivileged: !sys::has_cap_sys_ptrace(),
            my_pid: std::process::id() as Pid,
            argv_buf: Vec::new(),
            files: opts.files.as_ref().map(|f| files::FileCalls::new(f.clone())),
            filter: opts.files.as_ref().map(|_| files::Filter::new()),
        };
        let (alarm_tx, alarm_rx) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("pt-ptrace".into())
            .spawn(move || {
                sys::block_sigchld();
                if files {
                    // Every file call of the tree waits for this thread: it is served first
                    // when allowed (root), and nothing it forks inherits that.
                    sys::favour_this_thread();
                }
                match sys::Alarm::new(sys::gettid()) {
                    Ok(alarm) => {
                        let alarm = Arc::new(alarm);
                        let _ = alarm_tx.send(Ok(alarm.clone()));
                        tracer.run(&alarm)
                    }
                    Err(e) => {
                        let _ = alarm_tx.send(Err(e));
                    }
                }
            })
            .map_err(|e| io("starting the ptrace thread", e))?;
        let alarm = alarm_rx
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("it ended at once")))
            .map_err(|e| io("starting the ptrace thread's timer", e))?;
        Ok(PtraceBackend {
            rx,
            tx,
            requests,
            recycle,
            alarm,
            thread: Some(thread),
            enrich: opts.enrich,
            files: opts.files.is_some(),
        })
    }

    fn ask(&self, r: Request) -> bool {
        let ok = self.requests.send(r).is_ok();
        // After the send: the tracer looks at its requests after each wake-up.
        self.alarm.kick();
        ok
    }
}

impl super::CaptureBackend for PtraceBackend {
    fn name(&self) -> &'static str {
        "ptrace"
    }

    fn argv_reader(&self) -> &'static str {
        if self.enrich { "exec-stop" } else { "off" }
    }

    /// Forks, seizes and execs the command on the tracer thread; returns once it has exec'd
    /// (its fork and exec are queued by then) or failed to.
    fn spawn(&mut self, argv: &[String], env: &[(OsString, OsString)]) -> Result<Pid, SpawnError> {
        let (reply, answer) = mpsc::channel();
        let gone = || SpawnError {
            code: crate::exit_codes::INTERNAL,
            error: std::io::Error::other("the ptrace thread is gone"),
        };
        if !self.ask(Request::Spawn(argv.to_vec(), env.to_vec(), reply)) {
            return Err(gone());
        }
        answer.recv().unwrap_or_else(|_| Err(gone()))
    }

    fn rx(&self) -> &Receiver<CaptureMsg> {
        &self.rx
    }

    /// A [`super::Notice::Marker`] queued by the tracer thread after what it has.
    fn request_marker(&self, n: u32) -> super::Marker {
        self.ask(Request::Marker(n));
        super::Marker::Notice(n)
    }

    /// They follow each exec in the stream: read at the exec stop.
    fn take_details(&mut self) -> super::Details {
        super::Details::InStream
    }

    fn request_stop(&mut self) {
        self.ask(Request::Stop);
    }

    fn sender(&self) -> Sender<CaptureMsg> {
        self.tx.clone()
    }

    fn recycle(&self, batch: Vec<Event>) {
        if self.recycle.send(batch).is_err() {
            // The tracer thread is gone: the batch is simply freed.
        }
    }

    fn captures_files(&self) -> bool {
        self.files
    }
}

impl Drop for PtraceBackend {
    fn drop(&mut self) {
        self.ask(Request::Stop);
        // The tracer thread's exit detaches every tracee still attached (they run on).
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a process's threads had at their exit stops (usage capture only; [`Tracees`] says which
/// stop is the process's last).
#[derive(Debug, Clone, Copy, Default)]
struct Group {
    /// What the threads that already stopped at their exit had.
    sum: ThreadSum,
    /// A thread's figures could not be read: the process gets none.
    incomplete: bool,
    /// The leader's name, read at its exit stop (a leader that left before its threads).
    leader_name: Option<crate::model::event::KernelName>,
}

struct Tracer {
    tx: Sender<CaptureMsg>,
    requests: Receiver<Request>,
    recycled: Receiver<Vec<Event>>,
    /// Reads what each process cost at its last thread's exit stop (`None`: `--no-usage`, and
    /// no exit stops are asked for).
    usage: Option<ExitReader>,
    /// Per process, while usage is measured.
    groups: HashMap<Pid, Group>,
    /// What to do at each stop.
    tracees: Tracees,
    /// The actions for the stop at hand (reused).
    actions: Vec<Action>,
    batch: Vec<Event>,
    notices: Vec<Notice>,
    stops: u64,
    /// Processes found that were never traced ([`Action::Untraced`]).
    untraced: u64,
    /// proctrace's pid namespace (`/proc/self/ns/pid`): a signal's sender pid is only compared
    /// with the tasks' when the receiver is in it too.
    my_pid_ns: Option<std::path::PathBuf>,
    warned: HashSet<String>,
    unprivileged: bool,
    my_pid: Pid,
    /// argv read from a tracee's stack at its exec (reused; [`ARGV_BUF_KEPT`]).
    argv_buf: Vec<u8>,
    /// `--files`: the file calls in flight (`None`: not asked).
    files: Option<files::FileCalls>,
    /// `--files`: the seccomp program the command starts with.
    filter: Option<files::Filter>,
}

/// The argv buffer is kept from one exec to the next up to this capacity; a larger one (a huge
/// argv) is freed after use.
const ARGV_BUF_KEPT: usize = 1 << 20;

impl Tracer {
    fn run(mut self, alarm: &sys::Alarm) {
        let mut markers: Vec<u32> = Vec::new();
        // When the first event of the batch at hand was collected (stops' clock), and whether
        // this thread set the alarm going (a requester may have too).
        let mut since: Option<u64> = None;
        let mut armed = false;
        let mut first: Option<Request> = None;
        loop {
            // Requests: no system call when there are none.
            let mut stopping = false;
            while let Some(r) = first.take().or_else(|| self.requests.try_recv().ok()) {
                match r {
                    Request::Spawn(argv, env, reply) => {
                        let r = self.spawn(&argv, &env);
                        // The command's fork and exec go out before the caller learns its pid.
                        self.send_batch();
                        since = None;
                        let _ = reply.send(r);
                    }
                    Request::Marker(n) => markers.push(n),
                    Request::Stop => stopping = true,
                }
            }
            if stopping || !markers.is_empty() {
                // Everything that happened before the request is collected first (the one
                // place an empty `WNOHANG` poll is worth it: a marker or the end), up to a
                // bound (a storm of stops does not hold the answer back).
                for _ in 0..COLLECT_MAX {
                    let Some((pid, status)) = sys::wait_any() else {
                        break;
                    };
                    self.on_stop(pid, status);
                }
                self.send_out();
                since = None;
                for n in markers.drain(..) {
                    let _ = self.tx.send(CaptureMsg::Notice(Notice::Marker(n)));
                }
            }
            if stopping {
                let mut actions = std::mem::take(&mut self.actions);
                // TracerPid names the tracing thread: this one.
                let tracer = sys::gettid();
                self.tracees.find_running_untraced(
                    self.my_pid,
                    sys::children,
                    |c| sys::tracer_of(c) == Some(tracer),
                    &mut actions,
                );
                self.tracees.release_all(procfs::tgid_ppid, &mut actions);
                self.perform(actions);
                self.send_batch();
                let left = self.tracees.processes_left();
                if self.files.is_some() && left > 0 {
                    crate::say!(
                        "proctrace: --files: {left} process{} of the tree still running {} ended with proctrace: the seccomp filter that reports {} file calls would fail them (ENOSYS) once nobody traces {} (--wait-bg waits for them)",
                        if left == 1 { "" } else { "es" },
                        if left == 1 { "is" } else { "are" },
                        if left == 1 { "its" } else { "their" },
                        if left == 1 { "it" } else { "them" },
                    );
                }
                let _ = self.tx.send(CaptureMsg::Done(CaptureSummary {
                    events: self.stops,
                    untraced: self.untraced,
                    files_lost: self.files.as_ref().map_or(0, |f| f.lost),
                    ..CaptureSummary::default()
                }));
                alarm.set(false);
                // Returning detaches every remaining tracee; they run on untraced.
                return;
            }
            match sys::wait_blocking() {
                sys::Waited::Stop(pid, status) => {
                    let ts = self.on_stop(pid, status);
                    if self.tracees.has_held() {
                        self.release_overdue(ts);
                    }
                    if !self.notices.is_empty() || self.batch.len() >= BATCH_MAX {
                        self.send_out();
                        since = None;
                    } else if !self.batch.is_empty() {
                        match since {
                            // A batch goes out at the first stop a pause after it began.
                            Some(t) if ts.saturating_sub(t) >= BATCH_PAUSE_NS => {
                                self.send_batch();
                                since = None;
                            }
                            Some(_) => {}
                            None => since = Some(ts),
                        }
                    }
                    if !armed && (since.is_some() || self.tracees.has_held()) {
                        alarm.set(true);
                        armed = true;
                    }
                }
                sys::Waited::Interrupted => {
                    // The alarm (or a requester): what waited goes out.
                    let idle = self.batch.is_empty();
                    if self.tracees.has_held() {
                        self.release_overdue(procfs::mono_now());
                    }
                    self.send_out();
                    since = None;
                    if idle && !self.tracees.has_held() {
                        // Nothing came since the last tick: the alarm stops (and a request sent
                        // before this is seen at the top of the loop, after it).
                        alarm.set(false);
                        armed = false;
                    }
                }
                sys::Waited::NoChildren => {
                    // No tracee and no child: nothing can stop until a request comes.
                    self.send_out();
                    since = None;
                    alarm.set(false);
                    armed = false;
                    match self.requests.recv() {
                        Ok(r) => first = Some(r),
                        Err(_) => first = Some(Request::Stop),
                    }
                }
            }
        }
    }

    /// Sends the batch and then the notices.
    fn send_out(&mut self) {
        self.send_batch();
        for n in std::mem::take(&mut self.notices) {
            let _ = self.tx.send(CaptureMsg::Notice(n));
        }
    }

    fn release_overdue(&mut self, now: u64) {
        let mut actions = std::mem::take(&mut self.actions);
        self.tracees.release_overdue(now, procfs::tgid_ppid, &mut actions);
        self.perform(actions);
    }

    fn send_batch(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let mut next = self.recycled.try_recv().unwrap_or_default();
        next.clear();
        let batch = std::mem::replace(&mut self.batch, next);
        let _ = self.tx.send(CaptureMsg::Events(batch));
    }

    /// Answers one stop; returns when it was collected (CLOCK_MONOTONIC ns).
    fn on_stop(&mut self, pid: Pid, status: i32) -> u64 {
        self.stops += 1;
        let ts = procfs::mono_now();
        // An exec's event message (the thread that exec'd) is asked for only when the process
        // has had other threads: otherwise it is the process's own pid.
        let known = (status >> 16) & 0xffff == libc::PTRACE_EVENT_EXEC && self.tracees.single_threaded(pid);
        // /proc/TID/task lists the threads of TID's process, whichever of them TID is.
        let stop = stops::decode(
            status,
            || {
                if known {
                    Some(pid as u64)
                } else {
                    sys::event_msg(pid)
                }
            },
            |new| sys::is_thread_of(pid, new),
        );
        if let Some(f) = self.files.as_mut()
            && matches!(stop, Stop::Exited { .. } | Stop::Exiting { .. })
        {
            // Whatever file call it was in, it will not return.
            f.forget(pid);
        }
        let mut actions = std::mem::take(&mut self.actions);
        if stop == (Stop::Signal { sig: libc::SIGCHLD }) {
            // One more request per child exit of a traced parent: who sent it. A sender the
            // tracer does not know is a child it never saw start (CLONE_UNTRACED). Its pid is
            // the receiver's namespace's: compared only when that is proctrace's.
            if let Some(child) = sys::sigchld_sender(pid)
                && self.tracees.is_unknown(child)
                && self.my_pid_ns.is_some()
                && sys::pid_ns(Some(pid)) == self.my_pid_ns
                && sys::tracer_of(child) != Some(sys::gettid())
            {
                self.tracees.child_signal(pid, child, &mut actions);
            }
        }
        self.tracees.on_stop(pid, stop, ts, &mut actions);
        self.perform(actions);
        ts
    }

    /// Performs the actions in order (the `/proc` reads while the task is still stopped, before
    /// it is resumed) and keeps the emptied vector for the next stop.
    fn perform(&mut self, mut actions: Vec<Action>) {
        for action in actions.drain(..) {
            match action {
                Action::Resume { pid, sig } => self.resume(pid, sig),
                Action::Listen { pid } => {
                    sys::listen(pid);
                    // The command's group-stop is job control (no-op for any other task).
                    crate::capture::signals::command_stopped(pid);
                }
                Action::Hold { .. } => {}
                Action::Emit(event) => self.batch.push(event),
                Action::ReadExec { tgid } => {
                    // Stopped at its exec: its pid cannot be taken by another before it is
                    // resumed, so its files are read by path; argv from its new stack, as the
                    // kernel just wrote it (`/proc/PID/cmdline` when that cannot be read).
                    let argv = sys::argv_at_exec(tgid, &mut self.argv_buf);
                    let details = procfs::stopped_exec_details_with(tgid, argv.then_some(&self.argv_buf[..]));
                    if self.argv_buf.capacity() > ARGV_BUF_KEPT {
                        self.argv_buf = Vec::new();
                    }
                    self.warn_about(tgid, &details);
                    self.batch.push(Event::ExecDetails { tgid, details });
                }
                Action::ReadUsage {
                    tgid,
                    tid,
                    last,
                    whole_io,
                } => self.read_usage(tgid, tid, last, whole_io),
                Action::Detach { pid } => sys::detach(pid),
                Action::FileCall { pid, tgid, ts } => {
                    let follow = self
                        .files
                        .as_mut()
                        .is_some_and(|f| f.entry(pid, tgid, ts, &mut self.batch));
                    if follow {
                        sys::resume_to_return(pid, 0);
                    } else {
                        sys::resume(pid, 0);
                    }
                }
                Action::FileReturn { pid } => {
                    if let Some(f) = self.files.as_mut() {
                        f.exit(pid, &mut self.batch);
                    }
                    sys::resume(pid, 0);
                }
                Action::ForgetUsage { tgid } => {
                    self.groups.remove(&tgid);
                }
                Action::CommandExited { status } => {
                    crate::capture::signals::command_reaped(status);
                    self.notices.push(Notice::CommandExited(status));
                }
                Action::Untraced { pid, found } => self.on_untraced(pid, found),
            }
        }
        self.actions = actions;
    }

    /// Restarts `pid` delivering `sig`: up to its next syscall-exit stop when a file call of it
    /// is in flight (`--files`), else until its next event.
    fn resume(&self, pid: Pid, sig: i32) {
        if self.files.as_ref().is_some_and(|f| f.in_flight(pid)) {
            sys::resume_to_return(pid, sig);
        } else {
            sys::resume(pid, sig);
        }
    }

    /// At `tid`'s exit stop: its own figures are added to its process's; at the process's last
    /// thread, the process's figures go out as [`Event::Usage`], ahead of its exit. Cost: two
    /// small `/proc` reads per thread (its `status` and `schedstat`, by `/proc/TID/`), its `io`
    /// (`whole_io`: once for the process, else the thread's own), three clock reads per process.
    fn read_usage(&mut self, tgid: Pid, tid: Pid, last: bool, whole_io: bool) {
        let Some(reader) = self.usage.as_mut() else { return };
        let io = if whole_io { IoRead::Process } else { IoRead::Thread };
        let read = reader.thread(tgid, tid, io);
        if !last {
            let g = self.groups.entry(tgid).or_default();
            match read {
                Ok(t) => {
                    g.sum.add(&t);
                    if tid == tgid {
                        g.leader_name = t.name;
                    }
                }
                Err(_) => g.incomplete = true, // no figures rather than wrong ones
            }
            return;
        }
        // The last thread: a process that never had another needs no entry of its own.
        let mut g = self.groups.remove(&tgid).unwrap_or_default();
        let Ok(t) = read else { return };
        if g.incomplete {
            return;
        }
        g.sum.add(&t);
        if tid == tgid {
            g.leader_name = t.name;
        }
        if let Ok(usage) = reader.process(tgid, &g.sum, io) {
            // The kernel's name now, at the last exit stop (the process cannot go before it
            // is resumed): what it ran last, whatever argv said or was not read. The leader's,
            // read with its figures; `comm` only when the leader's could not be.
            if let Some(comm) = g.leader_name.or_else(|| exit_comm(tgid)) {
                self.batch.push(Event::ExitName { tgid, comm });
            }
            self.batch.push(Event::Usage {
                tgid,
                usage: Box::new(usage),
            });
        }
    }

    /// A process the tracer never saw start: counted (the end line and the summary say the trace
    /// is incomplete), and the first one said on stderr with what `/proc` still shows of it (a
    /// process found signalling its parent is still there, its parent stopped; one found at its
    /// exit is gone).
    fn on_untraced(&mut self, pid: Pid, found: Found) {
        self.untraced += 1;
        if !self.warned.insert("untraced".into()) {
            return;
        }
        let what = match found {
            Found::Signalled { parent } => {
                let seen = Self::seen_of(pid);
                format!("pid {pid} (child of traced {parent}{seen}) signalled its parent")
            }
            Found::Reaped => format!("pid {pid} exited as proctrace's child (an orphan)"),
            Found::Running { parent } => {
                let seen = Self::seen_of(pid);
                let of = if parent == self.my_pid {
                    "an orphan, child of proctrace".to_string()
                } else {
                    format!("child of traced {parent}")
                };
                format!("pid {pid} ({of}{seen}) was still running at the end")
            }
        };
        crate::say!(
            "proctrace: {what} but was never seen starting (clone(CLONE_UNTRACED)?): it and what it started are not in the trace; the end line counts such processes (untraced)"
        );
    }

    /// `, comm C, argv A`: what `/proc` still shows of `pid` (nothing when it is gone).
    fn seen_of(pid: Pid) -> String {
        let comm = procfs::stat(pid).map(|s| s.comm);
        let argv = procfs::exec_details(pid).argv;
        let mut seen = String::new();
        if let Some(c) = comm {
            seen.push_str(&format!(", comm {}", crate::model::naming::quote_argv([c], true)));
        }
        if let Some(a) = argv {
            seen.push_str(&format!(
                ", argv {}",
                crate::model::naming::quote_argv(a.iter(), true)
            ));
        }
        seen
    }

    /// What the user should know about a program run under ptrace: tracers cannot trace, and
    /// setuid programs lose their privileges when proctrace is unprivileged.
    fn warn_about(&mut self, pid: Pid, d: &ExecDetails) {
        let Some(comm) = d.comm.as_deref() else { return };
        if matches!(
            comm,
            "strace" | "ltrace" | "gdb" | "proctrace" | "rr" | "lldb" | "perf-trace"
        ) && self.warned.insert(format!("tracer:{comm}"))
        {
            crate::say!(
                "proctrace: {comm} (pid {pid}) runs under the ptrace backend and cannot ptrace (a process has one tracer); use --backend connector to trace it"
            );
        }
        if self.unprivileged
            && let Some(exe) = d.exe.as_deref()
            && sys::is_setid(pid)
            && self.warned.insert(format!("setid:{exe}"))
        {
            crate::say!(
                "proctrace: {} is setuid/setgid or has file capabilities; traced by an unprivileged ptrace it runs without them (as under strace)",
                crate::model::escape::text(exe)
            );
        }
    }

    /// Forks the command, seizes it, lets it exec, and waits for the outcome.
    fn spawn(&mut self, argv: &[String], env: &[(OsString, OsString)]) -> Result<Pid, SpawnError> {
        let prepared = sys::Prepared::new(argv, env).map_err(SpawnError::from_io)?;
        let child = sys::fork_waiting(&prepared, self.filter.as_ref()).map_err(SpawnError::from_io)?;
        let pid = child.pid;
        crate::capture::signals::command_forked(pid);
        let fork_ts = procfs::mono_now();
        if let Err(e) = sys::seize(pid, self.usage.is_some(), self.files.is_some()) {
            child.abandon();
            return Err(SpawnError {
                code: crate::exit_codes::UNAVAILABLE,
                error: std::io::Error::new(e.kind(), explain_seize(&e)),
            });
        }
        let err_pipe = child.release();
        self.tracees.command_forked(pid, self.my_pid);
        // The first stop of the command is its exec (success) or its exit (it could not exec).
        loop {
            let Some(status) = sys::wait_for(pid) else {
                return Err(SpawnError::from_io(std::io::Error::other("the command vanished")));
            };
            let ts = procfs::mono_now();
            // No fork or clone before its exec, and its exec is its own: no event message needed.
            let stop = stops::decode(status, || None, |_| false);
            let mut actions = std::mem::take(&mut self.actions);
            let start = self
                .tracees
                .command_stop(pid, stop, fork_ts, ts, self.my_pid, &mut actions);
            if start == CommandStart::Running {
                self.stops += 1;
            }
            self.perform(actions);
            match start {
                CommandStart::Pending => {}
                CommandStart::Running => return Ok(pid),
                CommandStart::Failed { status } => {
                    self.groups.remove(&pid);
                    let error = match sys::read_errno(&err_pipe) {
                        Some((sys::Stage::Exec, n)) => std::io::Error::from_raw_os_error(n),
                        Some((sys::Stage::Filter, n)) => {
                            let e = std::io::Error::from_raw_os_error(n);
                            std::io::Error::new(
                                e.kind(),
                                format!(
                                    "--files: the seccomp filter that reports its file calls could not be installed: {e}"
                                ),
                            )
                        }
                        None => std::io::Error::other("it ended before it could exec"),
                    };
                    let code = if libc::WIFEXITED(status) {
                        libc::WEXITSTATUS(status)
                    } else {
                        128 + libc::WTERMSIG(status)
                    };
                    return Err(SpawnError { code, error });
                }
            }
        }
    }
}

fn explain_seize(e: &std::io::Error) -> String {
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    let why = match scope {
        Some(3) => {
            " (kernel.yama.ptrace_scope is 3: ptrace is disabled on this machine until reboot)".to_string()
        }
        Some(2) => {
            " (kernel.yama.ptrace_scope is 2: only CAP_SYS_PTRACE may attach; run as root)".to_string()
        }
        _ if e.raw_os_error() == Some(libc::EPERM) => {
            " (is proctrace itself being traced, or does a seccomp policy forbid ptrace?)".to_string()
        }
        _ => String::new(),
    };
    format!("cannot trace it with ptrace: {e}{why}")
}

/// The system calls, in one place.
mod sys {
    use std::ffi::{CString, OsString};
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    use crate::model::event::Pid;

    const OPTIONS: libc::c_int = libc::PTRACE_O_TRACEFORK
        | libc::PTRACE_O_TRACEVFORK
        | libc::PTRACE_O_TRACECLONE
        | libc::PTRACE_O_TRACEEXEC;

    fn check(r: libc::c_int) -> io::Result<libc::c_int> {
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }

    pub fn gettid() -> Pid {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() }
    }

    fn sigchld_set() -> libc::sigset_t {
        // SAFETY: the set is initialised by sigemptyset before use.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGCHLD);
            set
        }
    }

    /// Blocks SIGCHLD in the calling thread (every thread has it blocked already when proctrace
    /// started as it should; this makes the tracer thread sure of it).
    pub fn block_sigchld() {
        let set = sigchld_set();
        // SAFETY: set is initialised; the old mask is not needed.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    }

    /// The signal that ends the tracer thread's `waitpid` (see [`Alarm`]). A real-time one
    /// nothing else in proctrace uses; only ever sent to the tracer thread.
    fn wake_signal() -> libc::c_int {
        libc::SIGRTMAX() - 3
    }

    extern "C" fn on_wake(_: libc::c_int) {
        // Nothing: being run is the point (the interrupted `waitpid` returns EINTR).
    }

    /// Installs the wake signal's handler, once per process: no `SA_RESTART`, so that a
    /// blocking `waitpid` returns `EINTR` (the tracer's other calls do not block, or are
    /// retried by std).
    fn install_wake_handler() -> io::Result<()> {
        static INSTALLED: std::sync::OnceLock<Option<i32>> = std::sync::OnceLock::new();
        let failed = INSTALLED.get_or_init(|| {
            // SAFETY: sigaction is plain data; all zeroes (no flags, empty mask) is valid.
            let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
            sa.sa_sigaction = on_wake as extern "C" fn(libc::c_int) as libc::sighandler_t;
            // SAFETY: a valid signal number and action; the old action is not needed.
            let r = unsafe { libc::sigaction(wake_signal(), &sa, std::ptr::null_mut()) };
            (r != 0).then(|| io::Error::last_os_error().raw_os_error().unwrap_or(0))
        });
        match failed {
            Some(e) => Err(io::Error::from_raw_os_error(*e)),
            None => Ok(()),
        }
    }

    /// A POSIX timer that sends the wake signal to the tracer thread: every [`TICK`] while
    /// set, so a signal that lands just before the thread enters `waitpid` (and so is lost on
    /// it) is followed by another.
    ///
    /// [`TICK`]: super::TICK
    pub struct Alarm {
        timer: libc::timer_t,
    }

    // SAFETY: a timer id is a handle of the kernel's, valid in every thread of the process; the
    // timer_* calls on it may be made from any thread at once.
    unsafe impl Send for Alarm {}
    // SAFETY: as above.
    unsafe impl Sync for Alarm {}

    impl Alarm {
        /// A stopped alarm for thread `tid` (the calling thread, which gets the wake signal
        /// unblocked).
        pub fn new(tid: Pid) -> io::Result<Alarm> {
            install_wake_handler()?;
            let set = crate::capture::signals::sigset(&[wake_signal()]);
            // SAFETY: set is initialised; the old mask is not needed.
            unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
            // SAFETY: sigevent is plain data; all zeroes is a valid start.
            let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
            sev.sigev_notify = libc::SIGEV_THREAD_ID;
            sev.sigev_signo = wake_signal();
            sev.sigev_notify_thread_id = tid;
            let mut timer: libc::timer_t = std::ptr::null_mut();
            // SAFETY: valid clock, sigevent and out pointer.
            check(unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut timer) })?;
            Ok(Alarm { timer })
        }

        fn arm(&self, first: std::time::Duration, every: std::time::Duration) {
            let ts = |d: std::time::Duration| libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                tv_nsec: d.subsec_nanos() as libc::c_long,
            };
            let spec = libc::itimerspec {
                it_interval: ts(every),
                it_value: ts(first),
            };
            // SAFETY: a live timer and a valid itimerspec; the old value is not needed.
            unsafe { libc::timer_settime(self.timer, 0, &spec, std::ptr::null_mut()) };
        }

        /// Starts the alarm (the first signal after a [`TICK`](super::TICK)), or stops it.
        pub fn set(&self, on: bool) {
            let every = if on {
                super::TICK
            } else {
                std::time::Duration::ZERO
            };
            self.arm(every, every);
        }

        /// Wakes the tracer now, and again every [`TICK`](super::TICK) until it has nothing
        /// left to do (from any thread).
        pub fn kick(&self) {
            self.arm(std::time::Duration::from_nanos(1), super::TICK);
        }
    }

    impl Drop for Alarm {
        fn drop(&mut self) {
            // SAFETY: the timer was created by timer_create and is deleted once, here.
            unsafe { libc::timer_delete(self.timer) };
        }
    }

    /// What a blocking wait gave.
    pub enum Waited {
        /// A stop or exit of a tracee or child: its pid and wait status.
        Stop(Pid, i32),
        /// The wake signal came.
        Interrupted,
        /// Nothing to wait for: no tracee and no child.
        NoChildren,
    }

    /// The next stop or exit of any tracee or child, blocking until one comes or the wake
    /// signal does.
    pub fn wait_blocking() -> Waited {
        let mut status = 0;
        // SAFETY: waitpid with a valid out pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
        if pid > 0 {
            return Waited::Stop(pid, status);
        }
        if pid < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            return Waited::Interrupted;
        }
        Waited::NoChildren
    }

    /// One waiting stop or exit of any tracee or child, without blocking.
    pub fn wait_any() -> Option<(Pid, i32)> {
        let mut status = 0;
        loop {
            // SAFETY: waitpid with a valid out pointer.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL | libc::WNOHANG) };
            if pid > 0 {
                return Some((pid, status));
            }
            if pid < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return None;
        }
    }

    /// The next stop or exit of `pid`, blocking.
    pub fn wait_for(pid: Pid) -> Option<i32> {
        let mut status = 0;
        loop {
            // SAFETY: waitpid with a valid out pointer.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
            if r == pid {
                return Some(status);
            }
            if r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return None;
        }
    }

    /// Restarts a stopped tracee, delivering `sig` (0: none). A tracee that died meanwhile
    /// (ESRCH) is reported by wait later.
    pub fn resume(pid: Pid, sig: libc::c_int) {
        // SAFETY: PTRACE_CONT on a pid with a signal number as data.
        unsafe { libc::ptrace(libc::PTRACE_CONT, pid, 0usize, sig as usize) };
    }

    /// The most argv read from a tracee's stack; past it, `/proc/PID/cmdline` (which the kernel
    /// bounds anyway: argv and the environment share a quarter of the stack limit).
    const ARGV_MAX: usize = 8 << 20;

    /// Appends to `out` up to `len` bytes of tracee `pid`'s memory at `addr`; how many (0 when
    /// none could be read: unmapped, or not allowed).
    fn read_mem(pid: Pid, addr: usize, len: usize, out: &mut Vec<u8>) -> usize {
        out.reserve(len);
        let local = libc::iovec {
            iov_base: out.spare_capacity_mut().as_mut_ptr().cast(),
            iov_len: len,
        };
        let remote = libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: len,
        };
        // SAFETY: `local` is `len` bytes of `out`'s spare capacity (reserved above), written
        // only by the kernel; `remote` is an address in the tracee, which the kernel checks.
        let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
        if n <= 0 {
            return 0;
        }
        let n = n as usize;
        // SAFETY: the kernel wrote `n` bytes (at most `len`) into the spare capacity.
        unsafe { out.set_len(out.len() + n) };
        n
    }

    /// argv of a tracee stopped at its exec, into `out` (each word NUL-terminated, as
    /// `/proc/PID/cmdline` gives it), read from its new stack: at the exec stop no user code
    /// has run yet, the stack pointer is at `argc`, then the `argv` pointers, and the words lie
    /// one after the other from `argv[0]` (the kernel's layout, `create_elf_tables`). Two
    /// system calls (`PTRACE_GETREGS` and usually one `process_vm_readv`) and no `/proc` file:
    /// opening `cmdline` costs a proc inode per process. `false` (and `/proc` is read instead)
    /// for anything unexpected: not a 64-bit process (`cs`), a layout that does not hold
    /// (`argv[1]` must follow `argv[0]`'s end), memory that cannot be read, more than
    /// [`ARGV_MAX`].
    #[cfg(target_arch = "x86_64")]
    pub fn argv_at_exec(pid: Pid, out: &mut Vec<u8>) -> bool {
        /// The 64-bit user code segment (`__USER_CS`); a 32-bit process has another.
        const USER_CS_64: u64 = 0x33;
        // SAFETY: user_regs_struct is plain integers; all zeroes is a valid value.
        let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
        // SAFETY: PTRACE_GETREGS writes one user_regs_struct to the given address.
        let r = unsafe {
            libc::ptrace(
                libc::PTRACE_GETREGS,
                pid,
                0usize,
                &mut regs as *mut libc::user_regs_struct,
            )
        };
        if r != 0 || regs.cs != USER_CS_64 {
            return false;
        }
        let sp = regs.rsp as usize;
        out.clear();
        // argc, the argv pointers and, most often, the words themselves are within a few KiB.
        let got = read_mem(pid, sp, 8192, out);
        let word = |out: &[u8], i: usize| -> Option<usize> {
            let b = out.get(8 * i..8 * i + 8)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            Some(u64::from_ne_bytes(a) as usize)
        };
        let (Some(argc), Some(argv0)) = (word(out, 0), word(out, 1)) else {
            return false;
        };
        if got < 16 || argc == 0 || argc > ARGV_MAX || argv0 < sp.saturating_add(8 * (argc + 1)) {
            return false;
        }
        let argv1 = if argc >= 2 { word(out, 2) } else { None };
        // Keep what was read from argv[0] on; read from there if it was not reached.
        let start = argv0 - sp;
        if start < out.len() {
            out.drain(..start);
        } else {
            out.clear();
            if read_mem(pid, argv0, 8192, out) == 0 {
                return false;
            }
        }
        let (mut words, mut scanned) = (0, 0);
        loop {
            for (i, &b) in out[scanned..].iter().enumerate() {
                if b == 0 {
                    words += 1;
                    if words == 1
                        && let Some(a1) = argv1
                        && a1 != argv0 + scanned + i + 1
                    {
                        return false; // not the layout expected
                    }
                    if words == argc {
                        out.truncate(scanned + i + 1);
                        return true;
                    }
                }
            }
            scanned = out.len();
            if scanned >= ARGV_MAX {
                return false;
            }
            let more = scanned.clamp(8192, 1 << 20);
            if read_mem(pid, argv0 + scanned, more, out) == 0 {
                return false;
            }
        }
    }

    /// Not on this architecture: argv comes from `/proc/PID/cmdline`.
    #[cfg(not(target_arch = "x86_64"))]
    pub fn argv_at_exec(_: Pid, _: &mut Vec<u8>) -> bool {
        false
    }

    /// Lets a tracee go from its exit stop; it exits untraced (its exit is not reported to the
    /// tracer, unless the detach failed because it was killed out of the stop).
    pub fn detach(pid: Pid) {
        // SAFETY: PTRACE_DETACH on a pid stopped at its exit, no signal.
        unsafe { libc::ptrace(libc::PTRACE_DETACH, pid, 0usize, 0usize) };
    }

    /// nice −10 for the calling thread when allowed (root; else nothing changes), with
    /// `SCHED_RESET_ON_FORK` so that the command it forks starts at nice 0 all the same. Under
    /// `--files` every file call of a build waits for the tracer; at the build's own priority
    /// the tracer waits for a CPU behind the compilers it serves (measured on `make -j2` of 150
    /// files: 1.89–2.02 s against 2.16–2.39 s; SCHED_FIFO was worse, 2.31–2.74 s; a short
    /// EEVDF slice, which an unprivileged thread may ask for, did not help).
    pub fn favour_this_thread() {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: the calling thread's own policy, with a live sched_param; then its own nice
        // value (a tid is a valid PRIO_PROCESS target on Linux). Failures leave it as it was.
        unsafe {
            if libc::pthread_setschedparam(
                libc::pthread_self(),
                libc::SCHED_OTHER | libc::SCHED_RESET_ON_FORK,
                &param,
            ) == 0
            {
                libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, -10);
            }
        }
    }

    /// Restarts a stopped tracee, delivering `sig`, to stop again when its system call returns
    /// (`PTRACE_SYSCALL`: a file call followed to its result).
    pub fn resume_to_return(pid: Pid, sig: libc::c_int) {
        // SAFETY: PTRACE_SYSCALL on a pid with a signal number as data.
        unsafe { libc::ptrace(libc::PTRACE_SYSCALL, pid, 0usize, sig as usize) };
    }

    /// Lets a group-stopped tracee stay stopped while we keep getting its notifications.
    pub fn listen(pid: Pid) {
        // SAFETY: PTRACE_LISTEN on a pid in group-stop.
        unsafe { libc::ptrace(libc::PTRACE_LISTEN, pid, 0usize, 0usize) };
    }

    pub fn event_msg(pid: Pid) -> Option<u64> {
        let mut msg: libc::c_ulong = 0;
        // SAFETY: PTRACE_GETEVENTMSG writes one unsigned long to the given address.
        let r = unsafe {
            libc::ptrace(
                libc::PTRACE_GETEVENTMSG,
                pid,
                0usize,
                &mut msg as *mut libc::c_ulong,
            )
        };
        (r == 0).then_some(msg as u64)
    }

    /// Seizes `pid` with the event options (inherited by every task it creates); `exit_stops`
    /// adds `PTRACE_O_TRACEEXIT`, one more stop per exiting task; `files` the seccomp stops of
    /// `--files`, syscall stops told apart (`TRACESYSGOOD`), and `PTRACE_O_EXITKILL`: a tracee
    /// left untraced would fail every file call the filter traces (`ENOSYS`), so what is left
    /// when the tracer ends is ended with it.
    pub fn seize(pid: Pid, exit_stops: bool, files: bool) -> io::Result<()> {
        let mut opts = OPTIONS;
        if exit_stops {
            opts |= libc::PTRACE_O_TRACEEXIT;
        }
        if files {
            opts |= libc::PTRACE_O_TRACESECCOMP | libc::PTRACE_O_TRACESYSGOOD | libc::PTRACE_O_EXITKILL;
        }
        // SAFETY: PTRACE_SEIZE of our own child with option flags as data.
        let r = unsafe { libc::ptrace(libc::PTRACE_SEIZE, pid, 0usize, opts as usize) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Who sent the `SIGCHLD` that stopped tracee `pid`: the child's pid, when the kernel sent
    /// it for a child's exit, stop or continue (not a `kill` from anyone).
    pub fn sigchld_sender(pid: Pid) -> Option<Pid> {
        // SAFETY: siginfo_t is plain data; all zeroes is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: PTRACE_GETSIGINFO writes one siginfo_t to the given address.
        let r = unsafe {
            libc::ptrace(
                libc::PTRACE_GETSIGINFO,
                pid,
                0usize,
                &mut info as *mut libc::siginfo_t,
            )
        };
        if r != 0 || info.si_signo != libc::SIGCHLD {
            return None;
        }
        // CLD_EXITED (1) to CLD_CONTINUED (6): sent by the kernel for a child.
        if !(1..=6).contains(&info.si_code) {
            return None;
        }
        // SAFETY: for SIGCHLD with a CLD_* code the kernel filled the child fields.
        Some(unsafe { info.si_pid() })
    }

    /// The children of task `tid` (`/proc/TID/task/TID/children`; for proctrace itself, of all
    /// its threads), appended to `out`.
    pub fn children(tid: Pid, out: &mut Vec<Pid>) {
        let me = std::process::id() as Pid;
        let paths: Vec<String> = if tid == me {
            std::fs::read_dir("/proc/self/task")
                .map(|d| {
                    d.flatten()
                        .map(|e| format!("/proc/self/task/{}/children", e.file_name().to_string_lossy()))
                        .collect()
                })
                .unwrap_or_default()
        } else {
            vec![format!("/proc/{tid}/task/{tid}/children")]
        };
        for path in paths {
            if let Ok(s) = std::fs::read_to_string(path) {
                out.extend(s.split_ascii_whitespace().filter_map(|p| p.parse::<Pid>().ok()));
            }
        }
    }

    /// The thread tracing `pid` (`TracerPid:` in its status: the tracer's thread id; 0 when
    /// none), when it can be read.
    pub fn tracer_of(pid: Pid) -> Option<Pid> {
        // Bytes: the `Name:` line need not be UTF-8.
        let s = std::fs::read(format!("/proc/{pid}/status")).ok()?;
        let s = String::from_utf8_lossy(&s);
        s.lines()
            .find_map(|l| l.strip_prefix("TracerPid:"))
            .and_then(|v| v.trim().parse().ok())
    }

    /// The pid namespace of `pid` (`None`: proctrace's own), as `/proc/…/ns/pid` names it.
    pub fn pid_ns(pid: Option<Pid>) -> Option<std::path::PathBuf> {
        let path = match pid {
            Some(p) => format!("/proc/{p}/ns/pid"),
            None => "/proc/self/ns/pid".to_string(),
        };
        std::fs::read_link(path).ok()
    }

    /// Whether task `tid` is a thread of process `tgid` (not a process of its own).
    /// (Once per clone event: the path is built on the stack, not allocated.)
    pub fn is_thread_of(tgid: Pid, tid: Pid) -> bool {
        use std::io::Write;
        let mut buf = [0u8; 64];
        let mut w = &mut buf[..];
        if write!(w, "/proc/{tgid}/task/{tid}\0").is_err() {
            return false;
        }
        // SAFETY: buf holds a NUL-terminated path (written above; the rest is zero).
        unsafe { libc::access(buf.as_ptr().cast(), libc::F_OK) == 0 }
    }

    /// The running executable of `pid` is setuid/setgid or carries file capabilities.
    pub fn is_setid(pid: Pid) -> bool {
        use std::os::unix::fs::PermissionsExt;
        let path = format!("/proc/{pid}/exe");
        let mode = std::fs::metadata(&path).map_or(0, |m| m.permissions().mode());
        if mode & 0o6000 != 0 {
            return true;
        }
        let Ok(c) = CString::new(path) else { return false };
        // SAFETY: c is NUL-terminated; a null buffer of size 0 asks only for the size.
        let n = unsafe {
            libc::getxattr(
                c.as_ptr(),
                c"security.capability".as_ptr(),
                std::ptr::null_mut(),
                0,
            )
        };
        n > 0
    }

    /// Whether proctrace has CAP_SYS_PTRACE (then setuid programs keep their privileges).
    pub fn has_cap_sys_ptrace() -> bool {
        let Ok(s) = std::fs::read_to_string("/proc/self/status") else {
            return false;
        };
        s.lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .is_some_and(|caps| caps & (1 << 19) != 0)
    }

    /// Everything the child needs, built before fork (the child may only make async-signal-safe
    /// calls).
    pub struct Prepared {
        candidates: Vec<CString>,
        argv: Vec<CString>,
        envp: Vec<CString>,
    }

    impl Prepared {
        /// `env` is added to proctrace's environment, replacing variables of the same name.
        pub fn new(argv: &[String], env: &[(OsString, OsString)]) -> io::Result<Prepared> {
            let bad = || io::Error::new(io::ErrorKind::InvalidInput, "an argument contains a NUL byte");
            // The model's text stands for bytes (crate::model::bytes): exec'd as those bytes.
            let cargv: Vec<CString> = argv
                .iter()
                .map(|a| CString::new(crate::model::bytes::decode(a).into_owned()).map_err(|_| bad()))
                .collect::<Result<_, _>>()?;
            let Some(prog) = cargv.first().map(|p| p.as_bytes()) else {
                return Err(io::ErrorKind::NotFound.into());
            };
            // execvp's search, done here: a name with a slash is a path; else each PATH entry.
            let mut candidates = Vec::new();
            if prog.contains(&b'/') {
                candidates.push(CString::new(prog).map_err(|_| bad())?);
            } else {
                let path = std::env::var_os("PATH")
                    .map(std::ffi::OsString::into_encoded_bytes)
                    .unwrap_or_else(|| b"/usr/local/bin:/usr/bin:/bin".to_vec());
                for dir in path.split(|&c| c == b':') {
                    let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
                    let mut full = Vec::with_capacity(dir.len() + 1 + prog.len());
                    full.extend_from_slice(dir);
                    full.push(b'/');
                    full.extend_from_slice(prog);
                    candidates.push(CString::new(full).map_err(|_| bad())?);
                }
            }
            let envp = std::env::vars_os()
                .filter(|(k, _)| !env.iter().any(|(n, _)| n == k))
                .chain(env.iter().cloned())
                .filter_map(|(k, v)| {
                    let mut kv = k.into_encoded_bytes();
                    kv.push(b'=');
                    kv.extend(v.into_encoded_bytes());
                    CString::new(kv).ok()
                })
                .collect();
            Ok(Prepared {
                candidates,
                argv: cargv,
                envp,
            })
        }
    }

    fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into fds.
        check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
        // SAFETY: both are new descriptors nobody else owns.
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    }

    /// A forked child waiting for [`Child::release`] before it execs.
    pub struct Child {
        pub pid: Pid,
        go: Option<OwnedFd>,
        err: OwnedFd,
    }

    impl Child {
        /// Lets the child exec; returns the pipe that carries its errno if exec fails.
        pub fn release(mut self) -> OwnedFd {
            self.go = None; // closing the write end wakes the child
            self.err
        }

        /// Kills the child and reaps it.
        pub fn abandon(self) {
            // SAFETY: kill and waitpid on our own child.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                let mut st = 0;
                libc::waitpid(self.pid, &mut st, libc::__WALL);
            }
        }
    }

    /// What a child that could not exec failed at (its error pipe's first word).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Stage {
        /// Installing the `--files` seccomp filter.
        Filter,
        /// The exec.
        Exec,
    }

    /// Forks a child that blocks until released, then restores the default signal mask and
    /// SIGPIPE disposition, installs `filter` (`--files`) and execs the first candidate that
    /// works.
    pub fn fork_waiting(p: &Prepared, filter: Option<&super::files::Filter>) -> io::Result<Child> {
        let (go_r, go_w) = pipe()?;
        let (err_r, err_w) = pipe()?;
        let prog = filter.map(|f| libc::sock_fprog {
            len: f.instructions().len() as libc::c_ushort,
            filter: f.instructions().as_ptr().cast_mut(),
        });
        let mut argv: Vec<*const libc::c_char> = p.argv.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut envp: Vec<*const libc::c_char> = p.envp.iter().map(|a| a.as_ptr()).collect();
        envp.push(std::ptr::null());
        let cands: Vec<*const libc::c_char> = p.candidates.iter().map(|c| c.as_ptr()).collect();
        // SAFETY: fork in a threaded process; the child below only makes async-signal-safe calls
        // (close, read, sigprocmask, signal, seccomp, prctl, execve, write, _exit) on memory
        // prepared before.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: see above; every pointer refers to memory that lives in this copy.
            unsafe {
                // Its own process group (and the terminal's foreground) before it waits, as a
                // shell's job.
                crate::capture::signals::child_before_exec();
                libc::close(go_w.as_raw_fd());
                let mut b = 0u8;
                while libc::read(go_r.as_raw_fd(), (&mut b as *mut u8).cast(), 1) < 0 {}
                let mut empty: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut empty);
                libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                if let Some(prog) = &prog
                    && let Err(e) = super::files::install(prog)
                {
                    let msg = [1i32, e];
                    libc::write(err_w.as_raw_fd(), msg.as_ptr().cast(), 8);
                    libc::_exit(126);
                }
                let mut errno = libc::ENOENT;
                for &c in &cands {
                    libc::execve(c, argv.as_ptr(), envp.as_ptr());
                    let e = *libc::__errno_location();
                    if e == libc::EACCES || errno != libc::EACCES {
                        errno = e;
                    }
                    if !matches!(e, libc::ENOENT | libc::ENOTDIR | libc::EACCES) {
                        break;
                    }
                }
                let msg = [0i32, errno];
                libc::write(err_w.as_raw_fd(), msg.as_ptr().cast(), 8);
                libc::_exit(if errno == libc::ENOENT { 127 } else { 126 });
            }
        }
        drop(go_r);
        drop(err_w);
        Ok(Child {
            pid,
            go: Some(go_w),
            err: err_r,
        })
    }

    /// What a failed child wrote: where it failed and the errno, if anything.
    pub fn read_errno(fd: &OwnedFd) -> Option<(Stage, i32)> {
        let mut m = [0i32; 2];
        // SAFETY: reads at most 8 bytes into a valid [i32; 2].
        let n = unsafe { libc::read(fd.as_raw_fd(), m.as_mut_ptr().cast(), 8) };
        let stage = if m[0] == 1 { Stage::Filter } else { Stage::Exec };
        (n == 8).then_some((stage, m[1]))
    }
}

/// `/proc/TGID/comm` of a process stopped at its exit, without the kernel's line break.
fn exit_comm(tgid: Pid) -> Option<crate::model::event::KernelName> {
    let mut buf = [0u8; crate::model::event::KernelName::MAX + 1];
    let mut f = std::fs::File::open(format!("/proc/{tgid}/comm")).ok()?;
    let n = std::io::Read::read(&mut f, &mut buf).ok()?;
    let name = buf[..n].strip_suffix(b"\n").unwrap_or(&buf[..n]);
    crate::model::event::KernelName::new(name)
}
