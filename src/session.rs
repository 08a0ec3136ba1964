//! The model thread's loop: batches from a backend → tracker → sinks, with `/proc` enrichment
//! right after each exec and an optional recording of everything for replay.
//!
//! Shared by `run` and `watch`. Owns no policy about when to stop; the commands decide that.

use std::io::Write;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use crate::capture::{Capture, CaptureMsg};
use crate::enrich::{Enricher, ExecNotice};
use crate::event::{Event, Pid};
use crate::procfs;
use crate::sink::{CaptureSummary, Fanout, Header, Summary};
use crate::tracker::{Fact, Followup, Tracker};

/// What a call to [`Session::pump`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pumped {
    /// Processed a batch of events.
    Events,
    /// A child of ours was reaped.
    ChildExited {
        /// Its pid.
        pid: Pid,
        /// Its wait status.
        status: i32,
    },
    /// A signal asked us to stop.
    Interrupted(i32),
    /// Nothing within the timeout.
    Idle,
    /// The backend stopped (after [`Session::stop`]) or failed.
    Ended,
}

/// One tracing session.
pub struct Session {
    /// The model.
    pub tracker: Tracker,
    /// Outputs.
    pub sinks: Fanout,
    capture: Capture,
    facts: Vec<Fact>,
    enrich: bool,
    record: Option<std::io::BufWriter<std::fs::File>>,
    barrier: Option<(Pid, String, bool)>,
    barrier_count: u32,
    capture_stats: Option<cnproc::Stats>,
    failure: Option<String>,
    /// Receive buffer the kernel granted.
    pub receive_buffer: u64,
    enricher: Option<Enricher>,
    clocks: std::sync::OnceLock<procfs::Clocks>,
    record_redact: bool,
    flush_due: Option<Instant>,
}

/// Longest time a line waits in memory before it is written.
const FLUSH_EVERY: Duration = Duration::from_millis(50);

impl Session {
    /// Wires a running capture to a tracker and sinks.
    pub fn new(capture: Capture, tracker: Tracker, sinks: Fanout, enrich: bool) -> Session {
        Session {
            tracker,
            sinks,
            capture,
            facts: Vec::with_capacity(256),
            enrich,
            record: None,
            barrier: None,
            barrier_count: 0,
            capture_stats: None,
            failure: None,
            receive_buffer: 0,
            enricher: None,
            clocks: std::sync::OnceLock::new(),
            record_redact: true,
            flush_due: None,
        }
    }

    /// Starts the drain thread (and, with `enrich`, the enricher) on a subscribed connector and
    /// wires them to a tracker and sinks; `record` also writes every event for replay.
    pub fn open(
        conn: cnproc::Connector,
        conn_opts: &cnproc::Options,
        tracker: Tracker,
        sinks: Fanout,
        enrich: bool,
        record: Option<&str>,
        redact: bool,
    ) -> Result<Session, crate::ProctraceError> {
        use crate::ProctraceError::Io;
        let receive_buffer = conn.receive_buffer() as u64;
        // The enricher subscribes before the command exists, so it sees every exec the main
        // socket will.
        let enricher = match enrich {
            true => Some(crate::enrich::start(conn_opts).map_err(crate::ProctraceError::Connector)?),
            false => None,
        };
        let capture = Capture::start(conn).map_err(|e| Io("starting capture".into(), e))?;
        let mut s = Session::new(capture, tracker, sinks, enrich);
        s.receive_buffer = receive_buffer;
        s.enricher = enricher;
        s.record_redact = redact;
        if let Some(path) = record {
            s.record_to(path)
                .map_err(|e| Io(format!("cannot create capture file '{path}'"), e))?;
        }
        Ok(s)
    }

    /// Also writes every event (enrichment included) to `path`, one JSON object a line, for
    /// `proctrace replay`.
    pub fn record_to(&mut self, path: &str) -> std::io::Result<()> {
        self.record = Some(std::io::BufWriter::new(std::fs::File::create(path)?));
        Ok(())
    }

    /// Emits the header to the sinks.
    pub fn start(&mut self, h: &Header) {
        self.sinks.start(h);
        self.flush_outputs();
    }

    /// Facts produced outside event processing (seeding, background marks) go out through here.
    pub fn dispatch(&mut self, facts: Vec<Fact>) {
        for f in &facts {
            self.sinks.fact(f, &self.tracker);
        }
        self.flush_outputs();
        self.tracker.sweep();
    }

    /// Handles one message from the backend, waiting up to `timeout` for it.
    pub fn pump(&mut self, timeout: Duration) -> Pumped {
        let wait = match self.flush_due {
            Some(due) => timeout.min(due.saturating_duration_since(Instant::now())),
            None => timeout,
        };
        let msg = match self.capture.rx.recv_timeout(wait) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                if self.flush_due.is_some_and(|d| Instant::now() >= d) {
                    self.flush_outputs();
                }
                return Pumped::Idle;
            }
            Err(RecvTimeoutError::Disconnected) => return Pumped::Ended,
        };
        self.handle(msg)
    }

    fn handle(&mut self, msg: CaptureMsg) -> Pumped {
        match msg {
            CaptureMsg::Events(batch) => {
                self.process(&batch);
                self.capture.recycle(batch);
                Pumped::Events
            }
            CaptureMsg::ChildExited { pid, status } => Pumped::ChildExited { pid, status },
            CaptureMsg::Interrupted(sig) => Pumped::Interrupted(sig),
            CaptureMsg::Done(stats) => {
                self.capture_stats = Some(stats);
                Pumped::Ended
            }
            CaptureMsg::Failed(e) => {
                self.failure = Some(e);
                Pumped::Ended
            }
        }
    }

    fn process(&mut self, batch: &[Event]) {
        for ev in batch {
            if let (Some((tid, name, seen)), Event::Comm { pid, comm, .. }) = (self.barrier.as_mut(), ev) {
                if pid == tid && comm == name {
                    *seen = true;
                    continue;
                }
            }
            let mut followup = self.tracker.apply(ev, &mut self.facts);
            if let Followup::ResolveAncestry(pid) = followup {
                for anc in self.ancestry(pid) {
                    self.record_event(&anc);
                    self.tracker.apply(&anc, &mut self.facts);
                }
                followup = self.tracker.apply(ev, &mut self.facts);
            }
            self.record_event(ev);
            if let Followup::ReadExecDetails(pid) = followup {
                let details = match (self.enrich, self.enricher.as_mut(), ev.ts()) {
                    (false, _, _) => Default::default(),
                    (true, Some(e), Some(ts)) => e
                        .take(ExecNotice { tgid: pid, ts })
                        .unwrap_or_else(|| procfs::exec_details(pid)),
                    (true, _, _) => procfs::exec_details(pid),
                };
                if self.record.is_some() {
                    self.record_event(&Event::ExecDetails {
                        tgid: pid,
                        details: details.clone(),
                    });
                }
                self.tracker.apply_exec_details(pid, details, &mut self.facts);
            }
            for f in self.facts.drain(..) {
                self.sinks.fact(&f, &self.tracker);
            }
        }
        // Output is written in batches at most FLUSH_EVERY apart: one write per event storm
        // instead of one per wakeup. Lines stay whole either way.
        let now = Instant::now();
        match self.flush_due {
            Some(due) if now >= due => self.flush_outputs(),
            Some(_) => {}
            None => self.flush_due = Some(now + FLUSH_EVERY),
        }
        self.tracker.sweep();
    }

    fn flush_outputs(&mut self) {
        self.flush_due = None;
        self.sinks.flush();
        if let Some(rec) = self.record.as_mut() {
            let _ = rec.flush();
        }
    }

    fn record_event(&mut self, ev: &Event) {
        let Some(rec) = self.record.as_mut() else { return };
        // A capture is an output too: URL credentials stay out of it unless asked for.
        if let (true, Event::ExecDetails { tgid, details }) = (self.record_redact, ev) {
            if let Some(argv) = &details.argv {
                let redacted: Vec<_> = argv.iter().map(|a| crate::redact::redact_arg(a)).collect();
                if redacted.iter().any(|a| matches!(a, std::borrow::Cow::Owned(_))) {
                    let mut d = details.clone();
                    d.argv = Some(redacted.into_iter().map(|a| a.into_owned()).collect());
                    let _ = serde_json::to_writer(
                        &mut *rec,
                        &Event::ExecDetails {
                            tgid: *tgid,
                            details: d,
                        },
                    );
                    let _ = rec.write_all(b"\n");
                    return;
                }
            }
        }
        let _ = serde_json::to_writer(&mut *rec, ev);
        let _ = rec.write_all(b"\n");
    }

    /// `/proc` ancestry of `pid` up to the first process the tracker follows, oldest first; empty
    /// when it does not descend from one (or is gone).
    fn ancestry(&self, pid: Pid) -> Vec<Event> {
        let clocks = self.clocks.get_or_init(procfs::Clocks::sample);
        let mut chain = Vec::new();
        let mut cur = pid;
        for _ in 0..64 {
            let Some(st) = procfs::stat(cur) else {
                return Vec::new();
            };
            chain.push(Event::Ancestry {
                tgid: cur,
                ppid: st.ppid,
                start_ns: Some(clocks.starttime_to_mono(st.starttime)),
            });
            if self.tracker.lookup(st.ppid).is_some() {
                chain.reverse();
                return chain;
            }
            if st.ppid <= 1 {
                break;
            }
            cur = st.ppid;
        }
        Vec::new()
    }

    /// Makes the kernel emit a marker event (a COMM rename of this thread) and processes events
    /// until it comes through. Everything generated before the call has then been seen. Returns
    /// false when the marker did not arrive in time.
    pub fn barrier(&mut self, timeout: Duration) -> bool {
        self.barrier_count += 1;
        let name = format!("pt-sync-{}", self.barrier_count % 1_000_000);
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        self.barrier = Some((tid, name.clone(), false));
        let Ok(cname) = std::ffi::CString::new(name) else {
            return false;
        };
        let mut old_name = [0u8; 17];
        // SAFETY: PR_GET_NAME writes at most 16 bytes; PR_SET_NAME reads a NUL-terminated string.
        unsafe {
            libc::prctl(libc::PR_GET_NAME, old_name.as_mut_ptr(), 0, 0, 0);
            libc::prctl(libc::PR_SET_NAME, cname.as_ptr(), 0, 0, 0);
        }
        let deadline = Instant::now() + timeout;
        let seen = loop {
            if self.barrier.as_ref().is_some_and(|b| b.2) {
                break true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.pump(left) == Pumped::Ended {
                break false;
            }
        };
        self.barrier = None;
        // Give the thread its name back (ps and top show it).
        // SAFETY: old_name is NUL-terminated (17 bytes, at most 16 written).
        unsafe { libc::prctl(libc::PR_SET_NAME, old_name.as_ptr(), 0, 0, 0) };
        seen
    }

    /// Processes until `done` holds or `timeout` passes; other notices are returned to the caller
    /// through `on_notice`.
    pub fn pump_until(
        &mut self,
        timeout: Duration,
        mut done: impl FnMut(&Tracker) -> bool,
        mut on_notice: impl FnMut(Pumped),
    ) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if done(&self.tracker) {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            match self.pump(left.min(Duration::from_millis(200))) {
                Pumped::Events | Pumped::Idle => {}
                Pumped::Ended => return done(&self.tracker),
                other => on_notice(other),
            }
        }
    }

    /// Stops the backend, processing everything it still had (including final loss accounting).
    pub fn stop(&mut self) {
        self.capture.request_stop();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.pump(Duration::from_millis(200)) == Pumped::Ended {
                break;
            }
        }
        self.flush_outputs();
    }

    /// Capture counters (complete after [`stop`](Self::stop)).
    pub fn capture_summary(&self) -> CaptureSummary {
        let s = self.capture_stats.unwrap_or_default();
        CaptureSummary {
            rejected: s.rejected(),
            overflows: s.overflows,
            socket_drops: s.socket_drops,
            events: s.events,
            receive_buffer: self.receive_buffer,
        }
    }

    /// Why the backend failed, if it did.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// The summary for sinks.
    pub fn summary(&self, status: Option<crate::event::ExitStatus>, background: u64) -> Summary {
        Summary {
            ts: procfs::mono_now(),
            status,
            stats: self.tracker.stats(),
            capture: self.capture_summary(),
            background,
            root: None,
            tracer_cpu_ns: Some(procfs::self_cpu_ns()),
        }
    }

    /// A sender for other threads (reaper, signal handler) to wake the model loop.
    pub fn notifier(&self) -> std::sync::mpsc::Sender<CaptureMsg> {
        self.capture.sender()
    }
}
