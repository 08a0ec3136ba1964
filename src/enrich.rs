//! Reading `/proc` for each exec as early as possible, on a thread of its own.
//!
//! A short-lived process's argv is readable only until it exits, often well under a millisecond
//! after its exec. The drain thread must not touch `/proc` (per-event work there loses events), and
//! the model thread may be busy with a backlog, so a dedicated thread takes exec notices straight
//! from the drain thread and reads at once. The model thread then collects each result in stream
//! order. Execs outside the model's scope are read too: the price of not waiting for the model.

use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use crate::event::{ExecDetails, Pid};
use crate::procfs;

/// One exec to read: process and the exec's timestamp (which identifies it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecNotice {
    /// Process.
    pub tgid: Pid,
    /// Exec timestamp.
    pub ts: u64,
}

/// The model thread's side of the enricher.
pub struct Enricher {
    results: Receiver<(ExecNotice, ExecDetails)>,
    early: VecDeque<(ExecNotice, ExecDetails)>,
}

/// Starts the enricher thread; returns the sender the drain thread notifies and the handle the
/// model thread collects from.
pub fn start() -> std::io::Result<(Sender<ExecNotice>, Enricher)> {
    let (tx, rx) = mpsc::channel::<ExecNotice>();
    let (rtx, rrx) = mpsc::channel();
    std::thread::Builder::new()
        .name("pt-enrich".into())
        .spawn(move || {
            raise_priority();
            while let Ok(n) = rx.recv() {
                let d = procfs::exec_details(n.tgid);
                if rtx.send((n, d)).is_err() {
                    return;
                }
            }
        })?;
    Ok((
        tx,
        Enricher {
            results: rrx,
            early: VecDeque::new(),
        },
    ))
}

impl Enricher {
    /// The details read for this exec; `None` if the enricher never saw it (then the caller reads
    /// `/proc` itself). Results for execs the model never asks about are skipped.
    pub fn take(&mut self, want: ExecNotice) -> Option<ExecDetails> {
        if let Some(i) = self.early.iter().position(|(n, _)| *n == want) {
            let found = self.early.remove(i).map(|(_, d)| d);
            // Anything older than what was asked for will never be asked for.
            while self.early.front().is_some_and(|(n, _)| n.ts < want.ts) {
                self.early.pop_front();
            }
            return found;
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.results.recv_timeout(left) {
                Ok((n, d)) if n == want => return Some(d),
                Ok(other) => {
                    // Results arrive in stream order; a later one is kept for a later request,
                    // an earlier one was for an exec out of scope.
                    if other.0.ts >= want.ts {
                        self.early.push_back(other);
                        if self.early.len() > 4096 {
                            self.early.pop_front();
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }
}

/// Asks the scheduler to run the calling thread ahead of ordinary work, when allowed (root):
/// the reads race the traced processes' exits. Failure is harmless.
pub fn raise_priority() {
    // SAFETY: gettid has no preconditions; setpriority on our own tid with a valid value.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, -10);
    }
}
