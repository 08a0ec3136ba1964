//! The kernel connector backend: a thread that only drains the socket and hands batches on; the
//! command is spawned with std and reaped by a thread of its own.
//!
//! Per-event work in the draining loop causes loss (see `docs/facts/connector-facts.md` §14), so this thread does
//! nothing but receive, decode into [`Event`]s and send. Batches travel as `Vec`s that the consumer
//! returns for reuse, so the steady state allocates nothing per event.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use cnproc::{Connector, EventKind, Received};

use super::{CaptureMsg, CaptureOptions, Notice, SpawnError};
use crate::capture::enrich::{self, Enricher};
use crate::capture::signals;
use crate::capture::usage_join::UsageJoin;
use crate::model::event::{Event, Pid};
use crate::model::session::CaptureSummary;

/// Converts one connector item into the tracker's vocabulary. Acks and unknown types give `None`.
pub fn convert(item: &Received) -> Option<Event> {
    let ev = match item {
        Received::Loss(l) => {
            return Some(Event::Lost {
                ts: l.timestamp_ns,
                count: l.count,
            });
        }
        Received::Event(ev) => ev,
    };
    let ts = ev.timestamp_ns;
    Some(match ev.kind {
        EventKind::Fork {
            parent_tgid,
            child_pid,
            child_tgid,
            ..
        } => Event::Fork {
            ts,
            parent_tgid,
            child_pid,
            child_tgid,
        },
        EventKind::Exec { tgid, .. } => Event::Exec { ts, tgid },
        EventKind::Exit {
            pid,
            tgid,
            exit_code,
            parent_tgid,
            ..
        } => Event::Exit {
            ts,
            pid,
            tgid,
            status: exit_code,
            parent_tgid,
        },
        EventKind::Coredump { tgid, .. } => Event::Coredump { ts, tgid },
        EventKind::Uid { tgid, ruid, euid, .. } => Event::Uid { ts, tgid, ruid, euid },
        EventKind::Gid { tgid, rgid, egid, .. } => Event::Gid { ts, tgid, rgid, egid },
        EventKind::Sid { tgid, .. } => Event::Sid { ts, tgid },
        EventKind::Ptrace {
            tgid, tracer_tgid, ..
        } => Event::Ptrace {
            ts,
            tgid,
            tracer: tracer_tgid,
        },
        EventKind::Comm { pid, tgid, comm } => {
            let end = comm.iter().position(|&c| c == 0).unwrap_or(comm.len());
            Event::Comm {
                ts,
                pid,
                tgid,
                comm: crate::model::bytes::encode(&comm[..end]).into_owned(),
            }
        }
        EventKind::Ack { .. } | EventKind::Unknown { .. } => return None,
    })
}

/// [`convert`], with each process's figures put just ahead of its exits: the taskstats queue is
/// drained once, at the batch's first exit, when every exit of the batch has its record queued
/// (or dropped) already. A batch without exits costs no system call. The creation of a thread
/// is passed on to the join before any record that may follow it is taken in (see
/// [`UsageJoin::thread_started`]).
fn convert_with_usage(items: &[Received], usage: &mut UsageJoin, batch: &mut Vec<Event>) {
    let mut drained = false;
    for (i, item) in items.iter().enumerate() {
        let Some(ev) = convert(item) else { continue };
        if let Event::Fork {
            child_pid,
            child_tgid,
            ..
        } = ev
            && child_pid != child_tgid
            && !drained
        {
            usage.thread_started(child_tgid);
        }
        if let Event::Exit { tgid, .. } = ev {
            if !drained {
                // Threads created later in this batch: before the drain, which may take in
                // their leaders' records.
                for later in &items[i..] {
                    if let Received::Event(cnproc::ProcEvent {
                        kind:
                            EventKind::Fork {
                                child_pid,
                                child_tgid,
                                ..
                            },
                        ..
                    }) = later
                        && child_pid != child_tgid
                    {
                        usage.thread_started(*child_tgid);
                    }
                }
                usage.drain();
                drained = true;
            }
            if let Some((u, comm)) = usage.take_named(tgid) {
                if let Some(comm) = comm {
                    batch.push(Event::ExitName { tgid, comm });
                }
                batch.push(Event::Usage {
                    tgid,
                    usage: Box::new(u),
                });
            }
        }
        batch.push(ev);
    }
}

/// Pause between back-to-back wakeups in a busy stream (see the drain loop).
const DRAIN_PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

/// A running drain thread.
pub struct Capture {
    tx: Sender<CaptureMsg>,
    stop: Arc<AtomicBool>,
    waker: cnproc::Waker,
    handle: Option<JoinHandle<()>>,
    /// Batches from the drain thread.
    pub rx: Receiver<CaptureMsg>,
    recycle: Sender<Vec<Event>>,
}

impl Capture {
    /// Starts draining `conn` on its own thread; with `usage`, each process's figures go out
    /// just ahead of its exit (see [`crate::capture::usage_join`]).
    pub fn start(mut conn: Connector, mut usage: Option<UsageJoin>) -> std::io::Result<Capture> {
        let (tx, rx) = mpsc::channel();
        let (recycle, recycled) = mpsc::channel::<Vec<Event>>();
        let stop = Arc::new(AtomicBool::new(false));
        let waker = conn.waker();
        let stop2 = Arc::clone(&stop);
        let tx_out = tx.clone();
        let handle = std::thread::Builder::new()
            .name("pt-drain".into())
            .spawn(move || {
                enrich::raise_priority();
                let mut items: Vec<Received> = Vec::with_capacity(4096);
                let mut last_busy: Option<std::time::Instant> = None;
                loop {
                    items.clear();
                    let stopping = stop2.load(Ordering::Acquire);
                    let r = conn.recv(&mut items, if stopping { 0 } else { 500 });
                    if let Err(e) = r {
                        let _ = tx.send(CaptureMsg::Failed(e.to_string()));
                        return;
                    }
                    if stopping {
                        conn.finish(&mut items);
                    }
                    if stopping && let Some(u) = usage.as_mut() {
                        u.finish();
                    }
                    if !items.is_empty() {
                        let mut batch = recycled.try_recv().unwrap_or_default();
                        batch.clear();
                        match usage.as_mut() {
                            None => batch.extend(items.iter().filter_map(convert)),
                            Some(u) => convert_with_usage(&items, u, &mut batch),
                        }
                        if tx.send(CaptureMsg::Events(batch)).is_err() {
                            return;
                        }
                    }
                    if !stopping && !items.is_empty() {
                        // In a busy stream, let events gather: one wakeup per burst instead of one
                        // per event. Every wakeup is paid for by the traced processes too (the
                        // kernel wakes us from their fork/exec/exit path), so this is most of
                        // proctrace's overhead. The buffer holds tens of thousands of events; the
                        // enricher has its own socket and is woken at once. An isolated event is
                        // passed on without delay, and a stop request cuts the pause short.
                        let now = std::time::Instant::now();
                        if last_busy.is_some_and(|t| now.duration_since(t) < DRAIN_PAUSE) {
                            conn.pause(DRAIN_PAUSE);
                        }
                        last_busy = Some(now);
                    }
                    if stopping {
                        let s = conn.stats();
                        let _ = tx.send(CaptureMsg::Done(CaptureSummary {
                            rejected: s.rejected(),
                            overflows: s.overflows,
                            socket_drops: s.socket_drops,
                            events: s.events,
                            receive_buffer: 0,
                            usage_lost: usage.as_ref().map_or(0, |u| u.lost()),
                            usage_incomplete: usage.as_ref().map_or(0, |u| u.incomplete()),
                            // The connector sees every process of the machine's pid namespace.
                            untraced: 0,
                            files_lost: 0,
                        }));
                        return;
                    }
                }
            })?;
        Ok(Capture {
            tx: tx_out,
            stop,
            waker,
            handle: Some(handle),
            rx,
            recycle,
        })
    }

    /// A sender other threads use to put notices in the same queue as the events.
    pub fn sender(&self) -> Sender<CaptureMsg> {
        self.tx.clone()
    }

    /// Gives a processed batch back for reuse.
    pub fn recycle(&self, batch: Vec<Event>) {
        let _ = self.recycle.send(batch);
    }

    /// Asks the thread to drain what is queued, account for final losses and stop. The last
    /// messages are still to be read from [`rx`](Self::rx), ending with [`CaptureMsg::Done`].
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.waker.wake();
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.request_stop();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The connector backend: the drain thread, the enricher, and the command's reaper.
pub struct ConnectorBackend {
    /// The drain thread.
    pub capture: Capture,
    /// The `/proc` reader, until the engine takes it.
    pub enricher: Option<Enricher>,
    /// Receive buffer the kernel granted, bytes.
    pub receive_buffer: u64,
    argv_reader: &'static str,
    reaper_stop: Arc<AtomicBool>,
}

impl ConnectorBackend {
    /// Subscribes (the kernel's ack is in before this returns), starts the enricher on its own
    /// EXEC-only socket when asked, and the drain thread.
    pub fn open(opts: &CaptureOptions) -> Result<ConnectorBackend, crate::ProctraceError> {
        let conn = Connector::open(&opts.connector)?;
        let receive_buffer = conn.receive_buffer() as u64;
        // The enricher subscribes before the command exists, so it sees every exec the main
        // socket will.
        let enricher = match opts.enrich {
            true => Some(enrich::start(enrich::EnrichOptions {
                connector: opts.connector.clone(),
                realtime: opts.realtime,
            })?),
            false => None,
        };
        let argv_reader = enricher.as_ref().map_or("off", |e| e.reader_priority().as_str());
        // Taskstats registers after the connector, so every exit it reports has its cn_proc
        // message; where it is refused, say so once and go on without figures.
        let usage = UsageJoin::when_asked(opts);
        let capture = Capture::start(conn, usage)
            .map_err(|e| crate::ProctraceError::Io("starting capture".into(), e))?;
        Ok(ConnectorBackend {
            capture,
            enricher,
            receive_buffer,
            argv_reader,
            reaper_stop: Arc::new(AtomicBool::new(false)),
        })
    }
}

impl super::CaptureBackend for ConnectorBackend {
    fn name(&self) -> &'static str {
        "connector"
    }

    fn argv_reader(&self) -> &'static str {
        self.argv_reader
    }

    /// Spawns the command with a clean signal mask and starts reaping: the command's status comes
    /// as [`Notice::CommandExited`]; adopted orphans are reaped silently.
    fn spawn(
        &mut self,
        argv: &[String],
        env: &[(std::ffi::OsString, std::ffi::OsString)],
    ) -> Result<Pid, SpawnError> {
        spawn_command(argv, env, self.capture.sender(), Arc::clone(&self.reaper_stop))
    }

    fn rx(&self) -> &std::sync::mpsc::Receiver<CaptureMsg> {
        &self.capture.rx
    }

    fn sender(&self) -> std::sync::mpsc::Sender<CaptureMsg> {
        self.capture.sender()
    }

    fn recycle(&self, batch: Vec<Event>) {
        self.capture.recycle(batch)
    }

    /// A rename of one of proctrace's threads, which the engine recognises in the stream.
    fn request_marker(&self, n: u32) -> super::Marker {
        super::Marker::Rename(rename_marker(n))
    }

    /// Read from `/proc` when the model asks, from the enricher's early read when it has one.
    fn take_details(&mut self) -> super::Details {
        super::Details::Proc(self.enricher.take())
    }

    fn request_stop(&mut self) {
        self.reaper_stop.store(true, Ordering::Release);
        self.capture.request_stop();
    }

    fn receive_buffer(&self) -> u64 {
        self.receive_buffer
    }

    /// Nothing to do: the connector passes on every process's events.
    fn follow_also(&mut self, _pids: &[Pid]) -> Result<(), String> {
        Ok(())
    }
}

/// Spawns the command with a clean signal mask and starts reaping it (and adopted orphans):
/// its status comes as [`Notice::CommandExited`] on `notify`. Shared with the eBPF backend.
pub(super) fn spawn_command(
    argv: &[String],
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    notify: Sender<CaptureMsg>,
    stop: Arc<AtomicBool>,
) -> Result<Pid, SpawnError> {
    let Some((prog, args)) = argv.split_first() else {
        return Err(SpawnError::from_io(std::io::ErrorKind::NotFound.into()));
    };
    // The model's text stands for bytes (crate::model::bytes): run as those bytes.
    use crate::model::bytes::to_os;
    let mut command = std::process::Command::new(to_os(prog));
    command.args(args.iter().map(|a| to_os(a)));
    command.envs(env.iter().map(|(k, v)| (k, v)));
    // SAFETY: the closure only calls async-signal-safe functions (setpgid, tcsetpgrp,
    // sigaction, sigprocmask via the helper).
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            signals::child_before_exec();
            Ok(())
        });
    }
    let child = command.spawn().map_err(SpawnError::from_io)?;
    let pid = child.id() as Pid;
    signals::command_forked(pid);
    drop(child); // reaped by the reaper thread, not by std
    spawn_reaper(pid, notify, stop).map_err(SpawnError::from_io)?;
    Ok(pid)
}

/// Reaps every child of proctrace (the command and adopted orphans) and reports the command's
/// status as [`Notice::CommandExited`]; a stop of the command is job control
/// ([`signals::command_stopped`]).
fn spawn_reaper(cmd: Pid, notify: Sender<CaptureMsg>, stop: Arc<AtomicBool>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("pt-reaper".into())
        .spawn(move || {
            while !stop.load(Ordering::Acquire) {
                let mut status = 0;
                // SAFETY: waitpid with a valid out pointer.
                let pid = unsafe { libc::waitpid(-1, &mut status, libc::WUNTRACED) };
                if pid > 0 && libc::WIFSTOPPED(status) {
                    signals::command_stopped(pid);
                } else if pid == cmd {
                    signals::command_reaped(status);
                    if notify
                        .send(CaptureMsg::Notice(Notice::CommandExited(status)))
                        .is_err()
                    {
                        return;
                    }
                } else if pid <= 0 {
                    // No children right now (ECHILD) or interrupted: look again shortly.
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            }
        })?;
    Ok(())
}

/// A marker made by renaming the calling thread: the kernel reports it as a COMM event queued
/// after everything generated before the rename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rename {
    /// The renamed thread.
    pub tid: Pid,
    /// Its marker name.
    pub name: String,
    old: [u8; 17],
}

/// Renames the calling thread to a marker name for marker `n`.
pub fn rename_marker(n: u32) -> Rename {
    let name = format!("pt-sync-{}", n % 1_000_000);
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    let mut old = [0u8; 17];
    let mut cname = [0u8; 17];
    cname[..name.len().min(15)].copy_from_slice(&name.as_bytes()[..name.len().min(15)]);
    // SAFETY: PR_GET_NAME writes at most 16 bytes into a 17-byte buffer; PR_SET_NAME reads a
    // NUL-terminated string (cname has a NUL at index 15 or earlier).
    unsafe {
        libc::prctl(libc::PR_GET_NAME, old.as_mut_ptr(), 0, 0, 0);
        libc::prctl(libc::PR_SET_NAME, cname.as_ptr(), 0, 0, 0);
    }
    Rename { tid, name, old }
}

impl Rename {
    /// Gives the thread its name back (ps and top show it).
    pub fn restore(&self) {
        // SAFETY: old is NUL-terminated (17 bytes, at most 16 written by PR_GET_NAME).
        unsafe { libc::prctl(libc::PR_SET_NAME, self.old.as_ptr(), 0, 0, 0) };
    }
}
