//! The kernel connector backend: a thread that only drains the socket and hands batches on.
//!
//! Per-event work in the draining loop causes loss (see connector-facts §14), so this thread does
//! nothing but receive, decode into [`Event`]s and send. Batches travel as `Vec`s that the consumer
//! returns for reuse, so the steady state allocates nothing per event.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use cnproc::{Connector, EventKind, Received};

use crate::event::Event;

/// What the drain thread sends.
#[derive(Debug)]
pub enum CaptureMsg {
    /// Events in queue order.
    Events(Vec<Event>),
    /// The backend stopped; final counters.
    Done(cnproc::Stats),
    /// Receiving failed; the capture is over.
    Failed(String),
    /// A child of the tracer was reaped (sent by the reaper thread).
    ChildExited {
        /// Its pid.
        pid: i32,
        /// Its wait status.
        status: i32,
    },
    /// A stop signal arrived for the tracer itself.
    Interrupted(i32),
}

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
                comm: String::from_utf8_lossy(&comm[..end]).into_owned(),
            }
        }
        EventKind::Ack { .. } | EventKind::Unknown { .. } => return None,
    })
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
    /// Starts draining `conn` on its own thread.
    pub fn start(mut conn: Connector) -> std::io::Result<Capture> {
        let (tx, rx) = mpsc::channel();
        let (recycle, recycled) = mpsc::channel::<Vec<Event>>();
        let stop = Arc::new(AtomicBool::new(false));
        let waker = conn.waker();
        let stop2 = Arc::clone(&stop);
        let tx_out = tx.clone();
        let handle = std::thread::Builder::new()
            .name("pt-drain".into())
            .spawn(move || {
                crate::enrich::raise_priority();
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
                    if !items.is_empty() {
                        let mut batch = recycled.try_recv().unwrap_or_default();
                        batch.clear();
                        batch.extend(items.iter().filter_map(convert));
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
                        let _ = tx.send(CaptureMsg::Done(conn.stats()));
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
