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

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// The model thread's side of the enricher.
pub struct Enricher {
    /// How the reader thread runs.
    pub mode: ReaderMode,
    results: Receiver<(ExecNotice, ExecDetails)>,
    early: VecDeque<(ExecNotice, ExecDetails)>,
    stop: Arc<AtomicBool>,
    waker: cnproc::Waker,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Subscribes an EXEC-only socket and starts the enricher thread on it.
pub fn start(base: &Options) -> Result<Enricher, cnproc::OpenError> {
    let opts = Options {
        event_mask: Some(abi::what::EXEC),
        // Execs are a fraction of all events; a smaller buffer absorbs their bursts.
        recv_buffer: (base.recv_buffer / 4).max(1 << 20),
        ..base.clone()
    };
    let mut conn = Connector::open(&opts)?;
    let waker = conn.waker();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let (rtx, rrx) = mpsc::channel();
    let mode = ReaderMode::default();
    let mode2 = mode.clone();
    let thread = std::thread::Builder::new()
        .name("pt-enrich".into())
        .spawn(move || {
            mode2.set(raise_priority());
            let mut items: Vec<Received> = Vec::with_capacity(256);
            while !stop2.load(Ordering::Acquire) {
                items.clear();
                if conn.recv(&mut items, 500).is_err() {
                    return;
                }
                for it in &items {
                    if let Received::Event(ev) = it {
                        if let EventKind::Exec { tgid, .. } = ev.kind {
                            let d = procfs::exec_details(tgid);
                            if rtx
                                .send((
                                    ExecNotice {
                                        tgid,
                                        ts: ev.timestamp_ns,
                                    },
                                    d,
                                ))
                                .is_err()
                            {
                                return;
                            }
                        }
                    }
                }
            }
        })
        .map_err(|e| cnproc::OpenError::Sys {
            call: "spawn enricher",
            source: e,
        })?;
    Ok(Enricher {
        mode,
        results: rrx,
        early: VecDeque::new(),
        stop,
        waker,
        thread: Some(thread),
    })
}

impl Enricher {
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

/// How the reader thread got to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderPriority {
    /// Real-time (SCHED_FIFO).
    Realtime,
    /// SCHED_OTHER at nice -10.
    Niced,
    /// Ordinary priority.
    Normal,
}

impl ReaderPriority {
    /// The name in the end line and summary.
    pub fn as_str(&self) -> &'static str {
        match self {
            ReaderPriority::Realtime => "realtime",
            ReaderPriority::Niced => "nice",
            ReaderPriority::Normal => "normal",
        }
    }
}

/// The reader thread's priority, published by the thread once it has tried.
#[derive(Debug, Clone, Default)]
pub struct ReaderMode(Arc<std::sync::atomic::AtomicU8>);

impl ReaderMode {
    fn set(&self, p: ReaderPriority) {
        let v = match p {
            ReaderPriority::Realtime => 1,
            ReaderPriority::Niced => 2,
            ReaderPriority::Normal => 3,
        };
        self.0.store(v, Ordering::Release);
    }

    /// The priority, once the thread has set it.
    pub fn get(&self) -> Option<ReaderPriority> {
        match self.0.load(Ordering::Acquire) {
            1 => Some(ReaderPriority::Realtime),
            2 => Some(ReaderPriority::Niced),
            3 => Some(ReaderPriority::Normal),
            _ => None,
        }
    }
}

/// Asks the scheduler to run the calling thread ahead of ordinary work, when allowed (root):
/// the reads race the traced processes' exits. Failure is harmless.
pub fn raise_priority() -> ReaderPriority {
    // SAFETY: gettid has no preconditions; setpriority on our own tid with a valid value.
    let r = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, -10)
    };
    if r == 0 {
        ReaderPriority::Niced
    } else {
        ReaderPriority::Normal
    }
}
