//! The one path from events to outputs, shared by live capture and replay.
//!
//! [`Engine::feed`] takes one event: the tracker applies it, its follow-ups are resolved (exec
//! details from `/proc` or from the stream, ancestry after a loss), it goes to the sinks that
//! read events (the capture, `--record`), and the facts go to every sink. [`Session`] wraps an
//! engine around a live [`Backend`]: it pumps the backend's queue, handles markers and notices,
//! and paces output flushes. Replay feeds a saved capture through the same [`Engine`], so a
//! replay equals the live run.

use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use crate::capture::enrich::ExecNotice;
use crate::capture::{Backend, CaptureMsg, Details, Marker, Notice, procfs};
use crate::filter::FactFilter;
use crate::model::event::{Event, ExitStatus, Pid};
use crate::model::session::{CaptureSummary, Header, Summary};
use crate::model::tracker::{Fact, Followup, Tracker};
use crate::sink::Fanout;

/// Events → tracker → sinks, with follow-ups resolved.
pub struct Engine {
    /// The model.
    pub tracker: Tracker,
    /// Outputs.
    pub sinks: Fanout,
    facts: Vec<Fact>,
    details: Details,
    pending: Option<Pid>,
    clocks: std::sync::OnceLock<procfs::Clocks>,
    filter: Option<FactFilter>,
    filtered: u64,
    /// Events come from a live capture (`/proc` can be read about them), not a saved trace.
    live: bool,
}

impl Engine {
    /// An engine whose exec details come from `details`.
    pub fn new(mut tracker: Tracker, sinks: Fanout, details: Details) -> Engine {
        // Regions and data are kept only as long as an output needs them: a traced process
        // flooding proctrace with Trace2 regions costs memory only when something reads them.
        tracker.keep_notes(sinks.notes_kept());
        Engine {
            tracker,
            sinks,
            facts: Vec::with_capacity(256),
            details,
            pending: None,
            clocks: std::sync::OnceLock::new(),
            filter: None,
            filtered: 0,
            live: false,
        }
    }

    /// Lets only the facts `filter` passes reach the sinks (the tracker and the recording still
    /// see every event). An empty filter is no filter.
    pub fn set_filter(&mut self, filter: FactFilter) {
        self.filter = (!filter.is_empty()).then_some(filter);
    }

    /// Facts a filter kept from the sinks; `None` without a filter.
    pub fn filtered(&self) -> Option<u64> {
        self.filter.as_ref().map(|_| self.filtered)
    }

    /// Emits the header to the sinks.
    pub fn start(&mut self, h: &Header) {
        if h.files {
            self.tracker.expect_files();
        }
        self.sinks.start(h);
    }

    /// Takes one event through the model to the sinks.
    pub fn feed(&mut self, ev: &Event) {
        if !matches!(ev, Event::ExecDetails { .. }) {
            self.settle_pending();
        }
        let mut followup = self.tracker.apply(ev, &mut self.facts);
        if let Followup::ResolveAncestry(pid) = followup {
            // Live, `/proc` tells; a replayed capture already holds what the live run found.
            if let Details::Proc(_) = self.details {
                for anc in self.ancestry(pid) {
                    self.record_event(&anc);
                    self.tracker.apply(&anc, &mut self.facts);
                }
            }
            followup = self.tracker.apply(ev, &mut self.facts);
        }
        if let Followup::TakeIn(pid) = followup {
            // A followed daemon's new work (`run --include-daemons`): the daemon, and the
            // processes of it between, come in first. A saved trace has them already.
            let chain = if self.live {
                self.daemon_chain(pid)
            } else {
                Vec::new()
            };
            if chain.is_empty() {
                self.tracker.unfollow(pid);
            }
            for ev in chain {
                self.record_event(&ev);
                self.tracker.apply_owned(ev, &mut self.facts);
            }
            followup = self.tracker.apply(ev, &mut self.facts);
            if let Followup::TakeIn(_) = followup {
                followup = Followup::None;
            }
        }
        self.record_event(ev);
        if let Followup::ReadExecDetails(pid) = followup {
            match &mut self.details {
                Details::InStream => self.pending = Some(pid),
                Details::Proc(enricher) => {
                    let found = match (enricher.as_mut(), ev.ts()) {
                        (Some(e), Some(ts)) => e.take(ExecNotice { tgid: pid, ts }),
                        _ => None,
                    };
                    let details = found.unwrap_or_else(|| procfs::exec_details(pid));
                    if self.sinks.wants_events() {
                        self.record_event(&Event::ExecDetails {
                            tgid: pid,
                            details: details.clone(),
                        });
                    }
                    self.tracker.apply_exec_details(pid, details, &mut self.facts);
                }
            }
        }
        self.emit();
    }

    /// [`feed`](Self::feed) taking the event by value (saved traces): an exec's details, regions
    /// and data move into the model instead of being copied. Same facts in the same order.
    pub fn feed_owned(&mut self, ev: Event) {
        match ev {
            // None of these asks for ancestry or details: the tracker takes them as they are.
            Event::ExecDetails { .. }
            | Event::Region { .. }
            | Event::Data { .. }
            | Event::Existing { .. } => {
                if !matches!(ev, Event::ExecDetails { .. }) {
                    self.settle_pending();
                }
                self.record_event(&ev);
                self.tracker.apply_owned(ev, &mut self.facts);
                self.emit();
            }
            ev => self.feed(&ev),
        }
    }

    /// An exec whose details were to follow in the stream, and did not: it has none.
    fn settle_pending(&mut self) {
        if let Some(p) = self.pending.take() {
            self.tracker
                .apply_exec_details(p, Default::default(), &mut self.facts);
        }
    }

    fn emit(&mut self) {
        for f in self.facts.drain(..) {
            if let Some(filter) = &self.filter
                && !filter.pass(&f, &self.tracker)
            {
                self.filtered += 1;
                self.sinks.filtered(&f, &self.tracker);
                continue;
            }
            self.sinks.fact(&f, &self.tracker);
        }
        self.tracker.release_notes();
    }

    /// After a batch: frees exited records the sinks are done with.
    pub fn after_batch(&mut self) {
        self.tracker.sweep();
    }

    /// Writes buffered output out.
    pub fn flush(&mut self) {
        self.sinks.refresh(&self.tracker);
        self.sinks.flush();
    }

    /// Settles an exec whose details never came (the end of the stream).
    pub fn settle(&mut self) {
        self.settle_pending();
        self.emit();
    }

    /// Ends the session: the summary to the sinks.
    pub fn finish(&mut self, sum: &Summary) {
        self.settle();
        self.sinks.finish(sum, &self.tracker);
        self.flush();
    }

    /// Hands an event, as fed, to the sinks that read events (the capture, `--record`).
    fn record_event(&mut self, ev: &Event) {
        self.sinks.event(ev);
    }

    /// [`Event::Existing`] for `pid`, a process under a followed daemon (or the daemon), and
    /// each of its ancestors up to the daemon or a process already in the model, oldest first,
    /// from `/proc`: the daemon's with its kind and the time following began; the others with
    /// their start, not before that. Empty when one of them is gone (or not followed).
    fn daemon_chain(&self, pid: Pid) -> Vec<Event> {
        let clocks = self.clocks.get_or_init(procfs::Clocks::sample);
        let since = self.tracker.daemons_since().unwrap_or(0);
        let mut chain = Vec::new();
        let mut cur = pid;
        // Bounded: a tree deeper than this under a daemon is not taken in.
        for _ in 0..64 {
            let Some(followed) = self.tracker.followed(cur) else {
                return Vec::new();
            };
            let Some(st) = procfs::stat(cur) else {
                return Vec::new();
            };
            let start = clocks.starttime_to_mono(st.starttime).max(since);
            let top = followed.is_some() || self.tracker.lookup(st.ppid).is_some();
            chain.push(Event::Existing {
                tgid: cur,
                ppid: st.ppid,
                start_ns: Some(if followed.is_some() { since } else { start }),
                details: Some(procfs::exec_details(cur)),
                seen_ns: None,
                daemon: followed,
            });
            if top {
                chain.reverse();
                return chain;
            }
            cur = st.ppid;
        }
        Vec::new()
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
}

/// What a call to [`Session::pump`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pumped {
    /// Processed a batch of events (or a marker).
    Events,
    /// The traced command was reaped with this wait status.
    CommandExited(i32),
    /// A signal asked us to stop.
    Interrupted(i32),
    /// Nothing within the timeout.
    Idle,
    /// The backend stopped (after [`Session::stop`]) or failed.
    Ended,
}

/// Longest time a line waits in memory before it is written.
const FLUSH_EVERY: Duration = Duration::from_millis(50);

/// Longest time a Trace2 note waits for the kernel's event of its process (`run --trace2`): the
/// listener and the backend are two threads, so a note can overtake the fork it belongs to.
const EARLY_NOTE_MAX: Duration = Duration::from_secs(2);

/// Most Trace2 notes held back for their process at once: a process sending notes about pids
/// that never come (or with times before its start) must not grow memory; past it, the oldest
/// goes to the model at once (where it is counted as unmatched if its process is still unknown).
const EARLY_NOTES_HELD: usize = 10_000;

/// A live tracing session: a backend feeding an engine.
pub struct Session {
    /// The engine (tracker and sinks).
    pub engine: Engine,
    /// The backend.
    pub backend: Backend,
    barrier: Option<(Marker, bool)>,
    markers: u32,
    capture: Option<CaptureSummary>,
    failure: Option<String>,
    flush_due: Option<Instant>,
    /// Trace2 notes queued by the listener and not yet processed (it stops reading when too
    /// many are: [`crate::capture::trace2::NOTES_QUEUED_MAX`]).
    notes_queued: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Trace2 notes whose process was not in the model yet, with when they arrived.
    early: std::collections::VecDeque<(Instant, Event)>,
    /// File uses (`--files`) whose process is not in the model (yet): most are of processes
    /// outside the trace (fanotify sees the whole filesystem), some overtook their fork.
    files_waiting: FilesWaiting,
}

/// File uses waiting for their process, by pid; dropped after [`EARLY_NOTE_MAX`].
#[derive(Default)]
struct FilesWaiting {
    /// Each pid's waiting uses, with when the first of them arrived.
    by_pid: std::collections::HashMap<Pid, (Instant, Vec<Event>)>,
    /// When each pid's first waiting use arrived, oldest first.
    since: std::collections::VecDeque<(Instant, Pid)>,
    held: usize,
}

impl FilesWaiting {
    /// Drops `pid`'s waiting uses if they are the ones that began waiting at `t`.
    fn forget(&mut self, t: Instant, pid: Pid) {
        if self.by_pid.get(&pid).is_some_and(|(since, _)| *since == t) {
            self.held -= self.by_pid.remove(&pid).map_or(0, |(_, v)| v.len());
        }
    }
}

/// Most file uses waiting for their process; more are dropped (oldest pid first).
const FILES_WAITING_MAX: usize = 200_000;

impl Session {
    /// Wires a running backend to a tracker and sinks.
    pub fn new(mut backend: Backend, tracker: Tracker, sinks: Fanout) -> Session {
        let details = backend.take_details();
        let mut engine = Engine::new(tracker, sinks, details);
        engine.live = true;
        Session {
            engine,
            backend,
            barrier: None,
            markers: 0,
            capture: None,
            failure: None,
            flush_due: None,
            early: std::collections::VecDeque::new(),
            files_waiting: FilesWaiting::default(),
            notes_queued: Default::default(),
        }
    }

    /// The model.
    pub fn tracker(&self) -> &Tracker {
        &self.engine.tracker
    }

    /// The count of Trace2 notes queued for this session and not yet processed: the listener
    /// adds what it sends, the session takes away what it processed, so the listener can wait
    /// for the model instead of queueing a flood.
    pub fn notes_queued(&self) -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
        self.notes_queued.clone()
    }

    /// Emits the header to the sinks.
    pub fn start(&mut self, h: &Header) {
        self.engine.start(h);
        self.flush_outputs();
    }

    /// Events made by the command logic itself (root, background marks) go in through here.
    pub fn feed(&mut self, ev: &Event) {
        self.engine.feed(ev);
        self.engine.after_batch();
        self.flush_outputs();
    }

    /// Handles one message from the backend, waiting up to `timeout` for it.
    pub fn pump(&mut self, timeout: Duration) -> Pumped {
        let wait = match self.flush_due {
            Some(due) => timeout.min(due.saturating_duration_since(Instant::now())),
            None => timeout,
        };
        let msg = match self.backend.rx().recv_timeout(wait) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                if self.flush_due.is_some_and(|d| Instant::now() >= d) {
                    self.flush_outputs();
                }
                return Pumped::Idle;
            }
            Err(RecvTimeoutError::Disconnected) => return Pumped::Ended,
        };
        match msg {
            CaptureMsg::Events(batch) => {
                // A batch of Trace2 notes is the listener's, not the backend's: handed to the
                // backend's pool it would stay there (the backend takes one back per batch of
                // its own), and a flood of notes would grow the pool without bound.
                if self.process(&batch) == 0 {
                    self.backend.recycle(batch);
                }
                Pumped::Events
            }
            CaptureMsg::Notice(Notice::CommandExited(status)) => Pumped::CommandExited(status),
            CaptureMsg::Notice(Notice::Interrupted(sig)) => Pumped::Interrupted(sig),
            CaptureMsg::Notice(Notice::Marker(n)) => {
                if let Some((Marker::Notice(want), seen)) = self.barrier.as_mut()
                    && *want == n
                {
                    *seen = true;
                }
                Pumped::Events
            }
            CaptureMsg::Done(mut c) => {
                c.receive_buffer = self.backend.receive_buffer();
                self.capture = Some(c);
                Pumped::Ended
            }
            CaptureMsg::Failed(e) => {
                self.failure = Some(e);
                Pumped::Ended
            }
        }
    }

    /// Takes one batch to the model; returns how many Trace2 notes it held.
    fn process(&mut self, batch: &[Event]) -> usize {
        let mut notes = 0;
        for ev in batch {
            if matches!(ev, Event::Region { .. } | Event::Data { .. }) {
                notes += 1;
            }
            if let (Some((Marker::Rename(r), seen)), Event::Comm { pid, comm, .. }) =
                (self.barrier.as_mut(), ev)
                && *pid == r.tid
                && *comm == r.name
            {
                *seen = true;
                continue;
            }
            if let Event::File { tgid, ts, .. } = *ev
                && self.engine.tracker.lookup_at(tgid, ts).is_none()
            {
                self.wait_for_process(tgid, ev);
                continue;
            }
            if self.is_early(ev) {
                if self.early.len() >= EARLY_NOTES_HELD
                    && let Some((_, oldest)) = self.early.pop_front()
                {
                    self.feed_note_or_event(&oldest);
                }
                self.early.push_back((Instant::now(), ev.clone()));
                continue;
            }
            self.feed_note_or_event(ev);
        }
        if !self.early.is_empty() {
            self.feed_early(false);
        }
        if self.files_waiting.held > 0 {
            self.feed_waiting_files(false);
        }
        if notes > 0 {
            let _ = self.notes_queued.fetch_update(
                std::sync::atomic::Ordering::Relaxed,
                std::sync::atomic::Ordering::Relaxed,
                |q| Some(q.saturating_sub(notes)),
            );
        }
        // Output is written in batches at most FLUSH_EVERY apart: one write per event storm
        // instead of one per wakeup. Lines stay whole either way.
        let now = Instant::now();
        match self.flush_due {
            Some(due) if now >= due => self.flush_outputs(),
            Some(_) => {}
            None => self.flush_due = Some(now + FLUSH_EVERY),
        }
        self.engine.after_batch();
        notes
    }

    /// Holds a file use until its process is in the model (or [`EARLY_NOTE_MAX`] passed).
    fn wait_for_process(&mut self, tgid: Pid, ev: &Event) {
        let w = &mut self.files_waiting;
        while w.held >= FILES_WAITING_MAX {
            let Some((t, old)) = w.since.pop_front() else {
                break;
            };
            w.forget(t, old);
        }
        let now = Instant::now();
        let list = w.by_pid.entry(tgid).or_insert_with(|| (now, Vec::new()));
        if list.1.is_empty() {
            list.0 = now;
            w.since.push_back((now, tgid));
        }
        list.1.push(ev.clone());
        w.held += 1;
    }

    /// Feeds the waiting file uses whose process is in the model now; drops those that waited
    /// [`EARLY_NOTE_MAX`] (or all that are left, at the end: `end`).
    fn feed_waiting_files(&mut self, end: bool) {
        let found: Vec<Pid> = self
            .files_waiting
            .by_pid
            .keys()
            .copied()
            .filter(|&p| self.engine.tracker.lookup_at(p, u64::MAX).is_some())
            .collect();
        for pid in found {
            if let Some((_, list)) = self.files_waiting.by_pid.remove(&pid) {
                self.files_waiting.held -= list.len();
                for ev in list {
                    self.engine.feed_owned(ev);
                }
            }
        }
        let w = &mut self.files_waiting;
        while let Some(&(t, pid)) = w.since.front() {
            if !end && t.elapsed() < EARLY_NOTE_MAX {
                break;
            }
            w.since.pop_front();
            w.forget(t, pid);
        }
    }

    /// A Trace2 note of a process the model has not seen start yet.
    fn is_early(&self, ev: &Event) -> bool {
        let (tgid, ts) = match ev {
            // By its end: a region can begin before its writer (below).
            Event::Region { tgid, region } => (*tgid, region.end),
            Event::Data { tgid, data } => (*tgid, data.ts),
            _ => return false,
        };
        self.engine.tracker.lookup_at(tgid, ts).is_none()
    }

    /// Feeds an event; a region that began before its process did is cut at the process's
    /// start. That is a fork which inherited its parent's Trace2 state and open regions (git's
    /// detached `maintenance`/`gc`): it leaves a region its parent entered, and within the
    /// child that region lasted from its fork to the leave.
    fn feed_note_or_event(&mut self, ev: &Event) {
        if let Event::Region { tgid, region } = ev {
            let start = self
                .engine
                .tracker
                .lookup_at(*tgid, region.end)
                .and_then(|id| self.engine.tracker.get(id))
                .and_then(|r| r.start_ns);
            if let Some(start) = start.filter(|&s| s > region.ts && s <= region.end) {
                let mut region = region.clone();
                region.ts = start;
                self.engine.feed(&Event::Region { tgid: *tgid, region });
                return;
            }
        }
        self.engine.feed(ev);
    }

    /// Feeds the held notes whose process has arrived since, those held too long, or (`all`)
    /// every one: what still has no process is then counted as unmatched by the tracker.
    fn feed_early(&mut self, all: bool) {
        let held = std::mem::take(&mut self.early);
        for (since, ev) in held {
            if all || since.elapsed() >= EARLY_NOTE_MAX || !self.is_early(&ev) {
                self.feed_note_or_event(&ev);
            } else {
                self.early.push_back((since, ev));
            }
        }
    }

    fn flush_outputs(&mut self) {
        self.flush_due = None;
        self.engine.flush();
    }

    /// Makes the backend mark this moment and processes events until the mark comes through:
    /// everything generated before the call has then been seen. False when it did not arrive in
    /// time.
    pub fn barrier(&mut self, timeout: Duration) -> bool {
        self.markers += 1;
        let marker = self.backend.request_marker(self.markers);
        self.barrier = Some((marker, false));
        let deadline = Instant::now() + timeout;
        let seen = loop {
            if self.barrier.as_ref().is_some_and(|b| b.1) {
                break true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.pump(left) == Pumped::Ended {
                break false;
            }
        };
        if let Some((Marker::Rename(r), _)) = self.barrier.take() {
            r.restore();
        }
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
            if done(&self.engine.tracker) {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            match self.pump(left.min(Duration::from_millis(200))) {
                Pumped::Events | Pumped::Idle => {}
                Pumped::Ended => return done(&self.engine.tracker),
                other => on_notice(other),
            }
        }
    }

    /// Stops the backend, processing everything it still had (including final loss accounting).
    pub fn stop(&mut self) {
        self.backend.request_stop();
        // At most 5 s for the backend's last events, less when a signal asked proctrace to hurry.
        let give_up = Instant::now() + Duration::from_secs(5);
        loop {
            let until = crate::supervise::hurry_deadline().map_or(give_up, |h| h.min(give_up));
            let Some(left) = until
                .checked_duration_since(Instant::now())
                .filter(|d| !d.is_zero())
            else {
                break;
            };
            if self.pump(left.min(Duration::from_millis(200))) == Pumped::Ended {
                break;
            }
        }
        if !self.early.is_empty() {
            self.feed_early(true);
            self.engine.after_batch();
        }
        if self.files_waiting.held > 0 {
            self.feed_waiting_files(true);
            self.engine.after_batch();
        }
        self.flush_outputs();
    }

    /// Why the backend failed, if it did.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// The summary for sinks (capture counters are complete after [`stop`](Self::stop)).
    pub fn summary(&self, status: Option<ExitStatus>, background: u64, root: Option<Pid>) -> Summary {
        Summary {
            ts: procfs::mono_now(),
            status,
            stats: self.engine.tracker.stats(),
            capture: self.capture.unwrap_or_default(),
            background,
            root,
            tracer_cpu_ns: Some(procfs::self_cpu_ns()),
            backend: Some(self.backend.name().to_string()),
            argv_reader: Some(self.backend.argv_reader().to_string()),
            filtered: self.engine.filtered(),
        }
    }

    /// A sender for other threads (the signal thread) to wake the model loop.
    pub fn notifier(&self) -> std::sync::mpsc::Sender<CaptureMsg> {
        self.backend.sender()
    }
}
