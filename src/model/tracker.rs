//! The process model: timestamped events in, per-process records and lifecycle facts out.
//!
//! Pure: no I/O, no clock, no knowledge of where events come from or where facts go. That is what
//! lets a recorded capture replay into it byte for byte. The rules it follows come from measuring
//! the connector (see `docs/facts/connector-facts.md`):
//!
//! - processes are keyed by tgid; a FORK with `child_pid != child_tgid` is a thread, never a child
//!   process of the `parent_*` it names;
//! - ancestry comes only from FORK (`parent_tgid → child_tgid`), never from EXIT's parent fields;
//! - a leader's EXIT is provisional while other known threads live: a non-leader exec shows up as
//!   `EXIT(leader)`, thread EXITs, then `EXEC`, and the last thread's EXIT carries the real status;
//! - an instance is `(tgid, fork timestamp)`: when a tgid forks again while an older instance is
//!   still open, the older one's exit was lost and it is closed as such (pid reuse).

// Re-exported: it is part of a record ([`BackgroundRecord`]) as much as of an event.
pub use crate::model::event::BackgroundState;
use crate::model::event::{Data, Event, ExecDetails, ExitStatus, Pid, Region, Usage};

pub mod files;
mod notes;
pub use notes::{NOTES_HELD_MAX, NOTES_PER_PROCESS_MAX, NotesKept};
mod record;
mod store;
#[cfg(test)]
mod tests;

pub use record::{BackgroundRecord, ExecRecord, ExitRecord, ProcessRecord};
use store::{PidMap, Slot, Slots};

/// Handle to a process record. Stale handles (the record was swept) resolve to `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcId {
    idx: u32,
    generation: u32,
}

#[cfg(test)]
impl ProcId {
    /// A handle for tests of code that only compares handles.
    pub(crate) fn test(idx: u32) -> ProcId {
        ProcId { idx, generation: 0 }
    }
}

/// Which processes the tracker follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every process on the system.
    All,
    /// Only declared roots ([`Tracker::expect_root`], [`Tracker::add_existing`]) and their descendants.
    Tree,
}

/// Tracker settings.
#[derive(Debug, Clone, Copy)]
pub struct TrackerOptions {
    /// What to follow.
    pub scope: Scope,
    /// Keep records of exited processes (needed for a final tree; off for long `watch` runs so
    /// memory stays bounded).
    pub retain_exited: bool,
    /// Hold each exec's fact until an [`Event::ExecDetails`] for it arrives.
    pub want_details: bool,
}

/// A lifecycle fact for sinks, in the order the tracker established it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fact {
    /// A process came into being (or a pre-existing one entered scope).
    Fork(ProcId),
    /// The process's exec number `index` (details included when asked for).
    Exec {
        /// The process.
        id: ProcId,
        /// Index into its `execs`.
        index: usize,
    },
    /// The process is gone; its record has the exit.
    Exit(ProcId),
    /// The process outlived the traced command.
    Background(ProcId),
    /// Events were lost.
    Lost {
        /// When detected.
        ts: Option<u64>,
        /// How many.
        count: u64,
    },
    /// uid changed.
    Uid {
        /// The process.
        id: ProcId,
        /// When.
        ts: u64,
        /// Real uid.
        ruid: u32,
        /// Effective uid.
        euid: u32,
    },
    /// gid changed.
    Gid {
        /// The process.
        id: ProcId,
        /// When.
        ts: u64,
        /// Real gid.
        rgid: u32,
        /// Effective gid.
        egid: u32,
    },
    /// setsid().
    Sid {
        /// The process.
        id: ProcId,
        /// When.
        ts: u64,
    },
    /// ptrace attach (tracer ≠ 0) or detach.
    Ptrace {
        /// The traced process.
        id: ProcId,
        /// When.
        ts: u64,
        /// Tracer process.
        tracer: Pid,
    },
    /// The process renamed itself.
    Comm {
        /// The process.
        id: ProcId,
        /// When.
        ts: u64,
    },
    /// The process reported a region (its `regions[index]`); may come after its exit.
    Region {
        /// The process.
        id: ProcId,
        /// Index into its `regions`.
        index: usize,
    },
    /// The process reported a value (its `data[index]`); may come after its exit.
    Data {
        /// The process.
        id: ProcId,
        /// Index into its `data`.
        index: usize,
    },
    /// The process used a file for the first time in this way (its `files.uses[index]`); may
    /// come after its exit.
    File {
        /// The process.
        id: ProcId,
        /// Index into its files' `uses`.
        index: usize,
    },
}

impl Fact {
    /// When it happened, as far as the records tell.
    pub fn ts(&self, t: &Tracker) -> Option<u64> {
        match *self {
            Fact::Fork(id) => t.get(id)?.start_ns,
            Fact::Exec { id, index } => Some(t.get(id)?.execs.get(index)?.ts),
            Fact::Exit(id) => Some(t.get(id)?.exit?.ts),
            Fact::Background(id) => Some(t.get(id)?.background?.ts),
            Fact::Lost { ts, .. } => ts,
            Fact::Region { id, index } => Some(t.get(id)?.regions.get(index)?.end),
            Fact::Data { id, index } => Some(t.get(id)?.data.get(index)?.ts),
            Fact::File { id, index } => Some(t.get(id)?.files.as_ref()?.uses.get(index)?.ts),
            Fact::Uid { ts, .. }
            | Fact::Gid { ts, .. }
            | Fact::Sid { ts, .. }
            | Fact::Ptrace { ts, .. }
            | Fact::Comm { ts, .. } => Some(ts),
        }
    }
}

/// What the caller should do after [`Tracker::apply`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Followup {
    /// Nothing.
    None,
    /// Read `/proc/<tgid>` now and apply an [`Event::ExecDetails`] before any other event.
    ReadExecDetails(Pid),
    /// Events were lost and this event names an unknown process: read its ancestry from `/proc`,
    /// apply [`Event::Ancestry`] events (oldest ancestor first), then apply the same event again.
    /// Nothing was changed by the call that asked.
    ResolveAncestry(Pid),
    /// A process under a daemon `run --include-daemons` follows (the daemon itself, or one of
    /// its processes that existed before the run) started a process during the run: read it
    /// and its ancestors up to the daemon from `/proc`, apply [`Event::Existing`] events for
    /// them (oldest first; the daemon's with its kind, starting at [`Tracker::daemons_since`]),
    /// then apply the same event again. Nothing was changed by the call that asked.
    TakeIn(Pid),
}

/// Counters over the whole run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TrackerStats {
    /// Process records created.
    pub processes: u64,
    /// Threads seen starting.
    pub threads: u64,
    /// Execs recorded.
    pub execs: u64,
    /// Execs whose argv was read.
    pub execs_with_argv: u64,
    /// Processes that exited.
    pub exits: u64,
    /// Events lost.
    pub lost: u64,
    /// Instances closed because their pid was reused before their exit was seen.
    pub exits_inferred: u64,
    /// Processes taken in from `/proc` after their FORK was lost.
    pub recovered: u64,
    /// Records currently held.
    pub held: u64,
    /// Most records held at once.
    pub peak_held: u64,
    /// Regions and data points a process reported (Trace2) that were attached to its record.
    #[serde(default)]
    pub notes: u64,
    /// Regions and data points whose process was not in the model (not followed, or already
    /// forgotten): left out of every output, and counted here.
    #[serde(default)]
    pub notes_unmatched: u64,
    /// Regions and data points not kept because their process's record (or all records) held
    /// as many as it may ([`NOTES_PER_PROCESS_MAX`], [`NOTES_HELD_MAX`]): a flood. The streaming
    /// outputs that write a note at its fact (JSON Lines) still have them; the ones that read
    /// them later (the reports, the Trace2 and Chrome outputs at a process's exit) do not.
    #[serde(default)]
    pub notes_dropped: u64,
    /// Processes whose cost ([`Event::Usage`]) was joined with their record.
    #[serde(default)]
    pub usage: u64,
    /// File uses kept (`--files`: the first of each path and access of a process).
    #[serde(default)]
    pub files: u64,
    /// File uses not kept: their process was not in the model, or its record (or all records)
    /// held as many as it may ([`files::FILES_PER_PROCESS_MAX`], [`files::FILES_HELD_MAX`]).
    #[serde(default)]
    pub files_dropped: u64,
    /// Cost figures that arrived for a process not in the model (not followed, or already
    /// ended): left out, and counted here.
    #[serde(default)]
    pub usage_unmatched: u64,
}

/// The model. See the module docs.
pub struct Tracker {
    opts: TrackerOptions,
    slots: Slots,
    free: Vec<u32>,
    live: PidMap<ProcId>,
    /// The latest exited instance of each pid, while exited records are retained: Trace2 notes
    /// arrive on their own channel and may come after the kernel's exit.
    exited: PidMap<ProcId>,
    threads: PidMap<Pid>,
    expected_roots: Vec<Pid>,
    roots: Vec<ProcId>,
    /// How many of `roots`, at their end, are daemons' nodes (`run --include-daemons`): the
    /// command's tree comes first in every output.
    daemon_roots: usize,
    /// The daemons `run --include-daemons` follows (their kind) and the processes under them
    /// that existed before the run (`None`), not yet in the model: taken in when one of them
    /// starts a process during the run ([`Followup::TakeIn`]).
    daemons: PidMap<Option<crate::model::elsewhere::DaemonKind>>,
    /// When the run began following daemons.
    daemons_since: Option<u64>,
    /// The first root ever taken: its record is never swept (a run's command is read at the
    /// end: its status in the verdict, its span sent last by OTLP), retained or not.
    first_root: Option<ProcId>,
    stats: TrackerStats,
    to_sweep: Vec<ProcId>,
    /// Once file uses are in the trace (`--files`): records not retained wait here, with their
    /// exit time, [`files::LATE_USES_NS`] before they are swept, so that the uses read after
    /// the exit still find their process.
    late: std::collections::VecDeque<(u64, ProcId)>,
    /// Whether file uses were seen, and the latest time of a file use or exit.
    files_seen: bool,
    late_clock: u64,
    last_asked: Option<Pid>,
    /// How long notes are kept.
    notes_kept: NotesKept,
    /// Notes held in all records.
    notes_held: u64,
    /// Records whose notes go at the next [`release_notes`](Self::release_notes).
    to_release: Vec<ProcId>,
    /// Notes over the caps, taken back out of their record (its last region, else its last
    /// datum) at the next [`release_notes`](Self::release_notes).
    to_pop: Vec<(ProcId, bool)>,
    /// Processes taken in from `/proc` ([`Event::Existing`]) with when they were read: their
    /// fork and exec stamped before that are already in the record and are not applied again.
    /// Only `watch -p`'s seeding fills it (a handful of processes); an entry goes at the exit.
    seeded: PidMap<u64>,
}

impl Tracker {
    /// An empty model.
    pub fn new(opts: TrackerOptions) -> Self {
        Tracker {
            opts,
            slots: Slots::default(),
            free: Vec::new(),
            live: PidMap::default(),
            exited: PidMap::default(),
            threads: PidMap::default(),
            expected_roots: Vec::new(),
            roots: Vec::new(),
            daemon_roots: 0,
            daemons: PidMap::default(),
            daemons_since: None,
            first_root: None,
            stats: TrackerStats::default(),
            to_sweep: Vec::new(),
            late: Default::default(),
            files_seen: false,
            late_clock: 0,
            last_asked: None,
            notes_kept: NotesKept::ToEnd,
            notes_held: 0,
            to_release: Vec::new(),
            to_pop: Vec::new(),
            seeded: PidMap::default(),
        }
    }

    /// Empties the model without freeing its records one by one: for a process about to exit,
    /// which gives all its memory back at once (`analyze` of 600,000 processes spent 3% of its
    /// time freeing them).
    pub fn leak_records(&mut self) {
        std::mem::forget(std::mem::take(&mut self.slots));
        self.free.clear();
        self.roots.clear();
        std::mem::forget(std::mem::take(&mut self.live));
        std::mem::forget(std::mem::take(&mut self.exited));
    }

    /// Narrows (or widens) what is followed from now on: a saved trace may name its root only
    /// once reading has begun.
    pub fn set_scope(&mut self, scope: Scope) {
        self.opts.scope = scope;
    }

    /// Declares that the FORK of process `pid` will arrive and starts a tree there (`run`).
    pub fn expect_root(&mut self, pid: Pid) {
        self.expected_roots.push(pid);
    }

    /// Adds a process that exists already (`-p PID` and its descendants, found in `/proc`).
    /// Its parent must be added first for the link to be made.
    /// `daemon`: a daemon's node (`run --include-daemons`), a root of its own whatever its
    /// parent. `seen_ns`: when `/proc` was read for it ([`Event::Existing`]).
    // The fields of [`Event::Existing`], one by one: its two callers destructure the event.
    #[allow(clippy::too_many_arguments)]
    pub fn add_existing(
        &mut self,
        pid: Pid,
        ppid: Pid,
        start_ns: Option<u64>,
        details: Option<ExecDetails>,
        seen_ns: Option<u64>,
        daemon: Option<crate::model::elsewhere::DaemonKind>,
        facts: &mut Vec<Fact>,
    ) -> ProcId {
        if let Some(seen) = seen_ns {
            self.seeded.insert(pid, seen);
        }
        if !self.daemons.is_empty() {
            self.daemons.remove(&pid);
        }
        if daemon.is_some()
            && let Some(old) = self.live.get(&pid).copied()
        {
            // Already in the trace (started by the command): nothing to take in.
            return old;
        }
        let parent = match daemon {
            Some(_) => None,
            None => self.live.get(&ppid).copied(),
        };
        let mut rec = ProcessRecord::new(pid, ppid, parent, start_ns, true);
        rec.ran_in = daemon.or_else(|| parent.and_then(|p| self.get(p)).and_then(|p| p.ran_in));
        if let Some(d) = details {
            rec.comm = d.comm.clone();
            rec.uid = d.uid.map(|u| (u, u));
            rec.execs.push(ExecRecord {
                ts: start_ns.unwrap_or(0),
                details: Some(d),
            });
        }
        let id = if daemon.is_some() {
            let id = self.insert(rec);
            self.roots.push(id);
            self.daemon_roots += 1;
            id
        } else {
            self.insert_linked(rec, parent)
        };
        facts.push(Fact::Fork(id));
        if self.get(id).is_some_and(|r| !r.execs.is_empty()) {
            facts.push(Fact::Exec { id, index: 0 });
        }
        id
    }

    /// A record, unless it was swept.
    pub fn get(&self, id: ProcId) -> Option<&ProcessRecord> {
        let s = self.slots.get(id.idx as usize)?;
        if s.generation != id.generation {
            return None;
        }
        s.rec.as_ref()
    }

    /// The live instance of process `pid`, if tracked.
    pub fn lookup(&self, pid: Pid) -> Option<ProcId> {
        self.live.get(&pid).copied()
    }

    /// The instance of `pid` that was running at `ts`: the live one if it had started by then,
    /// else the latest exited one (kept only when exited records are retained).
    pub fn lookup_at(&self, pid: Pid, ts: u64) -> Option<ProcId> {
        if let Some(&id) = self.live.get(&pid)
            && self.get(id).is_some_and(|r| r.start_ns.is_none_or(|s| s <= ts))
        {
            return Some(id);
        }
        let id = *self.exited.get(&pid)?;
        self.get(id).map(|_| id)
    }

    /// Records with no tracked parent, in order of appearance.
    pub fn roots(&self) -> &[ProcId] {
        &self.roots
    }

    /// The first root taken (a run's command), kept even when exited records are not.
    pub fn first_root(&self) -> Option<ProcId> {
        self.first_root
    }

    fn push_root(&mut self, id: ProcId) {
        self.first_root.get_or_insert(id);
        let at = self.roots.len() - self.daemon_roots;
        self.roots.insert(at, id);
    }

    /// Follows daemons (`run --include-daemons`) from `since` on: `servers` (each with its
    /// kind) and `under` (the processes under them running now) are taken in when one of them
    /// starts a process, until the command exits ([`Followup::TakeIn`]).
    pub fn follow_daemons(
        &mut self,
        servers: &[(Pid, crate::model::elsewhere::DaemonKind)],
        under: &[Pid],
        since: u64,
    ) {
        self.daemons_since = Some(since);
        for &(pid, kind) in servers {
            self.daemons.insert(pid, Some(kind));
        }
        for &pid in under {
            self.daemons.entry(pid).or_insert(None);
        }
    }

    /// When the run began following daemons (`run --include-daemons`).
    pub fn daemons_since(&self) -> Option<u64> {
        self.daemons_since
    }

    /// A process `run --include-daemons` follows and has not taken in yet: `Some(Some(kind))`
    /// for a daemon, `Some(None)` for a process under one.
    pub fn followed(&self, pid: Pid) -> Option<Option<crate::model::elsewhere::DaemonKind>> {
        self.daemons.get(&pid).copied()
    }

    /// Stops following `pid` (it could not be taken in: gone).
    pub fn unfollow(&mut self, pid: Pid) {
        self.daemons.remove(&pid);
    }

    /// Whether a daemon started a process at `ts` within the run: after following began, up
    /// to the command's exit. What it starts after is not the run's work.
    fn daemon_window(&self, ts: u64) -> bool {
        let until = self
            .first_root
            .and_then(|id| self.get(id))
            .and_then(|r| r.exit)
            .map_or(u64::MAX, |x| x.ts);
        self.daemons_since.is_none_or(|s| ts >= s) && ts <= until
    }

    /// Processes believed alive.
    pub fn live(&self) -> Vec<ProcId> {
        let mut v: Vec<ProcId> = self.live.values().copied().collect();
        v.sort_by_key(|id| self.get(*id).and_then(|r| r.start_ns).unwrap_or(0));
        v
    }

    /// Processes believed alive, in no particular order (no allocation, unlike
    /// [`live`](Self::live)).
    pub fn live_ids(&self) -> impl Iterator<Item = ProcId> + '_ {
        self.live.values().copied()
    }

    /// How many processes are believed alive (no allocation, unlike [`live`](Self::live)).
    pub fn live_count(&self) -> usize {
        self.live.len()
    }

    /// Counters.
    pub fn stats(&self) -> TrackerStats {
        self.stats
    }

    /// Marks a live process as having outlived the traced command.
    pub fn mark_background(&mut self, id: ProcId, ts: u64, state: BackgroundState, facts: &mut Vec<Fact>) {
        if self.get(id).is_none() {
            return;
        }
        self.with(id, |r| r.background = Some(BackgroundRecord { ts, state }));
        facts.push(Fact::Background(id));
    }

    /// Closes a process found gone by other means (a probe after the command ended) whose exit
    /// event never arrived: the leader's provisional status if there was one, else unknown.
    pub fn close_gone(&mut self, id: ProcId, ts: u64, facts: &mut Vec<Fact>) {
        let Some(leader) = self
            .get(id)
            .filter(|r| r.exit.is_none())
            .map(|r| r.mt.as_ref().and_then(|m| m.leader_exit))
        else {
            return;
        };
        match leader {
            Some((lts, status)) => self.finalize(id, lts, Some(status), facts),
            None => self.finalize(id, ts, None, facts),
        }
    }

    /// Frees exited records when not retaining them. Call after sinks have seen the facts.
    pub fn sweep(&mut self) {
        if self.opts.retain_exited {
            self.to_sweep.clear();
            return;
        }
        while let Some(&(ts, id)) = self.late.front() {
            if ts.saturating_add(files::LATE_USES_NS) > self.late_clock {
                break;
            }
            self.late.pop_front();
            if let Some(pid) = self.get(id).map(|r| r.pid)
                && self.exited.get(&pid) == Some(&id)
            {
                self.exited.remove(&pid);
            }
            self.to_sweep.push(id);
        }
        for id in std::mem::take(&mut self.to_sweep) {
            if let Some(slot) = self.slots.get_mut(id.idx as usize) {
                if slot.generation != id.generation {
                    continue;
                }
                if let Some(r) = slot.rec.take() {
                    self.notes_held = self
                        .notes_held
                        .saturating_sub((r.regions.len() + r.data.len()) as u64);
                    slot.generation = slot.generation.wrapping_add(1);
                    self.free.push(id.idx);
                    self.stats.held -= 1;
                }
            }
        }
        let before = self.roots.len();
        let tail = before - self.daemon_roots;
        let mut i = 0;
        let mut gone_daemons = 0;
        self.roots.retain(|&id| {
            let keep = self
                .slots
                .get(id.idx as usize)
                .is_some_and(|s| s.generation == id.generation && s.rec.is_some());
            if !keep && i >= tail {
                gone_daemons += 1;
            }
            i += 1;
            keep
        });
        self.daemon_roots -= gone_daemons;
    }

    fn insert(&mut self, rec: ProcessRecord) -> ProcId {
        let pid = rec.pid;
        // A freed slot is always in range (it was pushed before it was freed).
        let free = self
            .free
            .pop()
            .and_then(|idx| Some((idx, self.slots.get_mut(idx as usize)?)));
        let id = match free {
            Some((idx, slot)) => {
                slot.rec = Some(rec);
                ProcId {
                    idx,
                    generation: slot.generation,
                }
            }
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    rec: Some(rec),
                });
                ProcId {
                    idx: (self.slots.len() - 1) as u32,
                    generation: 0,
                }
            }
        };
        self.live.insert(pid, id);
        self.stats.processes += 1;
        self.stats.held += 1;
        self.stats.peak_held = self.stats.peak_held.max(self.stats.held);
        id
    }

    fn with<R>(&mut self, id: ProcId, f: impl FnOnce(&mut ProcessRecord) -> R) -> Option<R> {
        let s = self.slots.get_mut(id.idx as usize)?;
        if s.generation != id.generation {
            return None;
        }
        s.rec.as_mut().map(f)
    }

    /// Inserts a record under its tracked parent, or as a new root.
    fn insert_linked(&mut self, rec: ProcessRecord, parent: Option<ProcId>) -> ProcId {
        let id = self.insert(rec);
        match parent {
            Some(p) => self.link_child(p, id),
            None => self.push_root(id),
        }
        id
    }

    /// Records `child` under `parent`. Only when exited records are kept: a long-lived parent in
    /// `watch` (systemd, a CI agent) would otherwise grow its list by one entry per child forever.
    fn link_child(&mut self, parent: ProcId, child: ProcId) {
        if self.opts.retain_exited {
            self.with(parent, |r| r.children.push(child));
        }
    }

    /// A process the tracker has not seen fork: tracked only with [`Scope::All`].
    ///
    /// An expected root whose FORK was lost (the socket overflowed) is created here too, on its
    /// first surviving event, so a loss at the very start does not empty the whole tree.
    fn adopt_unknown(&mut self, pid: Pid, ppid: Pid, facts: &mut Vec<Fact>) -> Option<ProcId> {
        if let Some(i) = self.expected_roots.iter().position(|&p| p == pid) {
            self.expected_roots.swap_remove(i);
            let id = self.insert(ProcessRecord::new(pid, ppid, None, None, false));
            self.push_root(id);
            facts.push(Fact::Fork(id));
            return Some(id);
        }
        if self.opts.scope != Scope::All {
            return None;
        }
        let parent = self.live.get(&ppid).copied();
        let id = self.insert_linked(ProcessRecord::new(pid, ppid, parent, None, true), parent);
        facts.push(Fact::Fork(id));
        Some(id)
    }

    /// After a loss, an unknown process in a followed tree may be a descendant whose FORK was
    /// dropped: ask the caller to look, once per process in a row.
    fn should_resolve(&mut self, pid: Pid) -> bool {
        if self.opts.scope != Scope::Tree || self.stats.lost == 0 || pid <= 0 || self.last_asked == Some(pid)
        {
            return false;
        }
        self.last_asked = Some(pid);
        true
    }

    fn finalize(&mut self, id: ProcId, ts: u64, status: Option<u32>, facts: &mut Vec<Fact>) {
        let Some((pid, threads)) = self.with(id, |r| {
            r.exit = Some(ExitRecord {
                ts,
                status: status.map(ExitStatus::from_wait),
            });
            (r.pid, r.mt.take().map(|m| m.ids).unwrap_or_default())
        }) else {
            return;
        };
        for t in threads {
            self.threads.remove(&t);
        }
        if self.live.get(&pid) == Some(&id) {
            self.live.remove(&pid);
        }
        if self.opts.retain_exited || self.files_seen {
            self.exited.insert(pid, id);
        }
        if status.is_some() {
            self.stats.exits += 1;
        } else {
            self.stats.exits_inferred += 1;
        }
        facts.push(Fact::Exit(id));
        if self.notes_kept == NotesKept::UntilExit
            && self
                .get(id)
                .is_some_and(|r| !r.regions.is_empty() || !r.data.is_empty())
        {
            self.to_release.push(id);
        }
        // Retained records are never swept: no list of them to grow.
        if !self.opts.retain_exited && self.first_root != Some(id) {
            if self.files_seen {
                self.late_clock = self.late_clock.max(ts);
                self.late.push_back((ts, id));
            } else {
                self.to_sweep.push(id);
            }
        }
    }

    /// [`Event::ExecDetails`] taking the details by value, so the live path (which has just read
    /// them) does not copy argv once more.
    pub fn apply_exec_details(&mut self, tgid: Pid, details: ExecDetails, facts: &mut Vec<Fact>) {
        let Some(&id) = self.live.get(&tgid) else { return };
        let has_argv = details.argv.is_some();
        let done = self.with(id, move |r| {
            if !r.details_pending {
                return None;
            }
            r.details_pending = false;
            if let Some(c) = &details.comm {
                match &mut r.comm {
                    // The name inherited at fork gives its buffer: an allocation and a free
                    // less for nearly every exec.
                    Some(rc) => {
                        rc.clear();
                        rc.push_str(c);
                    }
                    None => r.comm = Some(c.clone()),
                }
            }
            if let Some(euid) = details.uid {
                r.uid = Some((r.uid.map_or(euid, |x| x.0), euid));
            }
            let index = r.execs.len().checked_sub(1)?;
            r.execs[index].details = Some(details);
            Some(index)
        });
        if let Some(Some(index)) = done {
            if has_argv {
                self.stats.execs_with_argv += 1;
            }
            facts.push(Fact::Exec { id, index });
        }
    }

    /// [`apply`](Self::apply) taking the event by value: an exec's details, a region and a datum
    /// are moved into the record rather than copied (a saved trace's events are owned; copying
    /// every exec's argv/exe/cwd was a sixth of `analyze`'s time). Same facts, same followups.
    pub fn apply_owned(&mut self, ev: Event, facts: &mut Vec<Fact>) -> Followup {
        match ev {
            Event::ExecDetails { tgid, details } => {
                self.apply_exec_details(tgid, details, facts);
                Followup::None
            }
            Event::Region { tgid, region } => {
                self.apply_region(tgid, region, facts);
                Followup::None
            }
            Event::Data { tgid, data } => {
                self.apply_data(tgid, data, facts);
                Followup::None
            }
            Event::Existing {
                tgid,
                ppid,
                start_ns,
                details,
                seen_ns,
                daemon,
            } => {
                self.add_existing(tgid, ppid, start_ns, details, seen_ns, daemon, facts);
                Followup::None
            }
            ev => self.apply(&ev, facts),
        }
    }

    /// Applies one event, appending the facts it establishes. One method per family of events:
    /// the lifecycle (`fork`, `thread_start`, `exec`, `exit`, `thread_exit`), the recovery of
    /// what was missed (`ancestry`, [`Event::Existing`], [`Event::Gone`]), what a live process
    /// changed about itself (`changed`), and what was said about it afterwards (background,
    /// regions, data, cost, losses).
    pub fn apply(&mut self, ev: &Event, facts: &mut Vec<Fact>) -> Followup {
        match *ev {
            Event::Fork {
                parent_tgid,
                child_pid,
                child_tgid,
                ..
            } if child_pid != child_tgid => self.thread_start(parent_tgid, child_pid, child_tgid, facts),
            Event::Fork {
                ts,
                parent_tgid,
                child_tgid,
                ..
            } => self.fork(ts, parent_tgid, child_tgid, facts),
            Event::Exec { ts, tgid } => self.exec(ts, tgid, facts),
            Event::ExecDetails { tgid, ref details } => {
                self.apply_exec_details(tgid, details.clone(), facts);
                Followup::None
            }
            Event::Exit {
                ts,
                pid,
                tgid,
                status,
                ..
            } if pid != tgid => {
                self.thread_exit(ts, pid, tgid, status, facts);
                Followup::None
            }
            Event::Exit {
                ts,
                tgid,
                status,
                parent_tgid,
                ..
            } => self.exit(ts, tgid, status, parent_tgid, facts),
            Event::Ancestry { tgid, ppid, start_ns } => {
                self.ancestry(tgid, ppid, start_ns, facts);
                Followup::None
            }
            Event::Root { tgid } => {
                self.expect_root(tgid);
                Followup::None
            }
            Event::Existing {
                tgid,
                ppid,
                start_ns,
                ref details,
                seen_ns,
                daemon,
            } => {
                self.add_existing(tgid, ppid, start_ns, details.clone(), seen_ns, daemon, facts);
                Followup::None
            }
            Event::Gone { ts, tgid } => {
                if let Some(id) = self.lookup(tgid) {
                    self.close_gone(id, ts, facts);
                }
                Followup::None
            }
            Event::Coredump { .. }
            | Event::Uid { .. }
            | Event::Gid { .. }
            | Event::Sid { .. }
            | Event::Ptrace { .. }
            | Event::Comm { .. } => {
                self.changed(ev, facts);
                Followup::None
            }
            Event::Background {
                ts,
                tgid,
                state,
                report,
            } => {
                if let Some(id) = self.lookup(tgid) {
                    let mut quiet = Vec::new();
                    self.mark_background(id, ts, state, if report { facts } else { &mut quiet });
                }
                Followup::None
            }
            Event::Region { tgid, ref region } => {
                self.apply_region(tgid, region.clone(), facts);
                Followup::None
            }
            Event::Data { tgid, ref data } => {
                self.apply_data(tgid, data.clone(), facts);
                Followup::None
            }
            Event::File {
                ts,
                tgid,
                access,
                ref path,
                ref to,
            } => {
                self.apply_file(ts, tgid, access, path, to.as_deref(), facts);
                Followup::None
            }
            Event::Usage { tgid, ref usage } => {
                self.usage(tgid, usage);
                Followup::None
            }
            Event::ExitName { tgid, comm } => {
                self.exit_name(tgid, comm.as_bytes());
                Followup::None
            }
            Event::Lost { ts, count } => {
                self.stats.lost += count;
                facts.push(Fact::Lost { ts, count });
                Followup::None
            }
        }
    }

    /// A FORK of a process (`child_pid == child_tgid`): a new record under its tracked parent,
    /// or a root; an open instance of the same pid is closed first (its exit was lost: pid
    /// reuse). Outside the followed trees, after a loss, the parent may be a descendant whose
    /// FORK was dropped: ask for its ancestry.
    fn fork(&mut self, ts: u64, parent_tgid: Pid, child_tgid: Pid, facts: &mut Vec<Fact>) -> Followup {
        if self.read_before(child_tgid, ts) {
            return Followup::None;
        }
        let parent = match self.live.get(&parent_tgid) {
            Some(&p) => Some(p),
            None if self.expected_roots.contains(&parent_tgid) => self.adopt_unknown(parent_tgid, 0, facts),
            None if !self.daemons.is_empty() && self.daemons.contains_key(&parent_tgid) => {
                if self.daemon_window(ts) {
                    return Followup::TakeIn(parent_tgid);
                }
                None
            }
            None => None,
        };
        // A daemon's new work counts within the run only: what it (or a process of it that
        // existed before the run) starts once the command has exited is not the run's. (A
        // saved trace has the daemons' nodes too: the same rule replays the same.)
        if self.daemon_roots > 0
            && let Some(p) = parent.and_then(|p| self.get(p))
            && p.ran_in.is_some()
            && (p.parent.is_none() || p.pre_existing)
            && !self.daemon_window(ts)
        {
            return Followup::None;
        }
        let is_root = if let Some(i) = self.expected_roots.iter().position(|&p| p == child_tgid) {
            self.expected_roots.swap_remove(i);
            true
        } else {
            false
        };
        if !(is_root || parent.is_some() || self.opts.scope == Scope::All) {
            if self.should_resolve(parent_tgid) {
                if is_root {
                    self.expected_roots.push(child_tgid);
                }
                return Followup::ResolveAncestry(parent_tgid);
            }
            return Followup::None;
        }
        if let Some(old) = self.live.get(&child_tgid).copied() {
            // The pid came round again before the old instance's exit was seen.
            self.finalize(old, ts, None, facts);
        }
        let (inherited, ran_in) = parent
            .and_then(|p| self.get(p))
            .map_or((None, None), |r| (r.comm.clone(), r.ran_in));
        let parent = if is_root { None } else { parent };
        let mut rec = ProcessRecord::new(child_tgid, parent_tgid, parent, Some(ts), false);
        rec.comm = inherited;
        rec.ran_in = if is_root { None } else { ran_in };
        let id = self.insert_linked(rec, parent);
        facts.push(Fact::Fork(id));
        Followup::None
    }

    /// A FORK of a thread (`child_pid != child_tgid`): counted in its process, never a child.
    fn thread_start(
        &mut self,
        parent_tgid: Pid,
        child_pid: Pid,
        child_tgid: Pid,
        facts: &mut Vec<Fact>,
    ) -> Followup {
        let id = match self.live.get(&child_tgid).copied() {
            Some(id) => Some(id),
            None if self.should_resolve(child_tgid) => {
                return Followup::ResolveAncestry(child_tgid);
            }
            None => self.adopt_unknown(child_tgid, parent_tgid, facts),
        };
        if let Some(id) = id {
            self.with(id, |r| {
                r.mt.get_or_insert_with(Default::default).ids.push(child_pid)
            });
            self.threads.insert(child_pid, child_tgid);
            self.stats.threads += 1;
        }
        Followup::None
    }

    /// The live record of `tgid` for an event about it, adopting an unknown process where the
    /// scope allows, or the followup that asks for its ancestry first (after a loss).
    fn subject(&mut self, tgid: Pid, ppid: Pid, facts: &mut Vec<Fact>) -> Result<ProcId, Followup> {
        match self.live.get(&tgid).copied() {
            Some(id) => Ok(id),
            None if !self.expected_roots.contains(&tgid) && self.should_resolve(tgid) => {
                Err(Followup::ResolveAncestry(tgid))
            }
            None => self.adopt_unknown(tgid, ppid, facts).ok_or(Followup::None),
        }
    }

    /// An EXEC: a new exec record; the process is single-threaded again (a provisional leader
    /// exit was a non-leader exec's doing). Its fact waits for the details when they are wanted.
    fn exec(&mut self, ts: u64, tgid: Pid, facts: &mut Vec<Fact>) -> Followup {
        if self.read_before(tgid, ts) {
            return Followup::None;
        }
        let id = match self.subject(tgid, 0, facts) {
            Ok(id) => id,
            Err(f) => return f,
        };
        let want = self.opts.want_details;
        let Some((index, threads)) = self.with(id, |r| {
            // Most processes exec once: room for one (a first push makes room for 4,
            // 336 bytes unused in nearly every record).
            if r.execs.is_empty() {
                r.execs.reserve_exact(1);
            }
            r.execs.push(ExecRecord { ts, details: None });
            r.details_pending = want;
            (r.execs.len() - 1, r.mt.take().map(|m| m.ids).unwrap_or_default())
        }) else {
            return Followup::None;
        };
        for t in threads {
            self.threads.remove(&t);
        }
        self.stats.execs += 1;
        if want {
            Followup::ReadExecDetails(tgid)
        } else {
            facts.push(Fact::Exec { id, index });
            Followup::None
        }
    }

    /// A thread's EXIT: it leaves its process; when the leader left before it and it was the
    /// last, its status is the process's real one.
    fn thread_exit(&mut self, ts: u64, pid: Pid, tgid: Pid, status: u32, facts: &mut Vec<Fact>) {
        self.threads.remove(&pid);
        let Some(&id) = self.live.get(&tgid) else {
            return;
        };
        let last = self.with(id, |r| {
            let Some(m) = &mut r.mt else { return false };
            m.ids.retain(|&t| t != pid);
            m.ids.is_empty() && m.leader_exit.is_some()
        });
        if last == Some(true) {
            // The leader left earlier; the last thread carries the real status.
            self.finalize(id, ts, Some(status), facts);
        }
    }

    /// The leader's EXIT: final, unless other known threads live on (then provisional, see the
    /// module docs).
    /// Whether process `pid` was read from `/proc` after `ts` ([`Event::Existing`]): an event
    /// about its fork or exec stamped then is already in its record (the backend subscribed
    /// before the read, so such events arrive after it).
    fn read_before(&self, pid: Pid, ts: u64) -> bool {
        !self.seeded.is_empty() && self.seeded.get(&pid).is_some_and(|&seen| ts < seen)
    }

    fn exit(&mut self, ts: u64, tgid: Pid, status: u32, parent_tgid: Pid, facts: &mut Vec<Fact>) -> Followup {
        if !self.seeded.is_empty() {
            self.seeded.remove(&tgid);
        }
        if !self.daemons.is_empty() && !self.live.contains_key(&tgid) && self.daemons.remove(&tgid).is_some()
        {
            // A process of a followed daemon that started nothing during the run: its pid may
            // be another's from now on.
            return Followup::None;
        }
        let id = match self.subject(tgid, parent_tgid, facts) {
            Ok(id) => id,
            Err(f) => return f,
        };
        let provisional = self.with(id, |r| match &mut r.mt {
            Some(m) if !m.ids.is_empty() => {
                m.leader_exit = Some((ts, status));
                true
            }
            _ => false,
        });
        if provisional == Some(false) {
            self.finalize(id, ts, Some(status), facts);
        }
        Followup::None
    }

    /// A process read from `/proc` after a loss ([`Followup::ResolveAncestry`]): taken in under
    /// its live parent, unless it is known already.
    fn ancestry(&mut self, tgid: Pid, ppid: Pid, start_ns: Option<u64>, facts: &mut Vec<Fact>) {
        if self.live.contains_key(&tgid) {
            return;
        }
        if let Some(&parent) = self.live.get(&ppid) {
            let mut rec = ProcessRecord::new(tgid, ppid, Some(parent), start_ns, false);
            rec.comm = self.get(parent).and_then(|r| r.comm.clone());
            rec.ran_in = self.get(parent).and_then(|r| r.ran_in);
            let id = self.insert(rec);
            self.link_child(parent, id);
            self.stats.recovered += 1;
            facts.push(Fact::Fork(id));
        }
    }

    /// What a live process changed about itself (a core dump, uid, gid, setsid, a tracer, its
    /// name); events about processes not followed are ignored.
    fn changed(&mut self, ev: &Event, facts: &mut Vec<Fact>) {
        match *ev {
            Event::Coredump { tgid, .. } => {
                if let Some(&id) = self.live.get(&tgid) {
                    self.with(id, |r| r.coredump_signal = true);
                }
            }
            Event::Uid { ts, tgid, ruid, euid } => {
                if let Some(&id) = self.live.get(&tgid) {
                    // One UID event per thread: report a change once.
                    if self.with(id, |r| r.uid.replace((ruid, euid)) != Some((ruid, euid))) == Some(true) {
                        facts.push(Fact::Uid { id, ts, ruid, euid });
                    }
                }
            }
            Event::Gid { ts, tgid, rgid, egid } => {
                if let Some(&id) = self.live.get(&tgid)
                    && self.with(id, |r| r.gid.replace((rgid, egid)) != Some((rgid, egid))) == Some(true)
                {
                    facts.push(Fact::Gid { id, ts, rgid, egid });
                }
            }
            Event::Sid { ts, tgid } => {
                if let Some(&id) = self.live.get(&tgid) {
                    self.with(id, |r| r.setsid = true);
                    facts.push(Fact::Sid { id, ts });
                }
            }
            Event::Ptrace { ts, tgid, tracer } => {
                if let Some(&id) = self.live.get(&tgid) {
                    facts.push(Fact::Ptrace { id, ts, tracer });
                }
            }
            // A thread's rename is not the process's name.
            Event::Comm {
                ts,
                pid,
                tgid,
                ref comm,
            } if pid == tgid => {
                if let Some(&id) = self.live.get(&tgid) {
                    self.with(id, |r| r.comm = Some(comm.clone()));
                    facts.push(Fact::Comm { id, ts });
                }
            }
            _ => {}
        }
    }

    /// The kernel's name at exit: the process's name from now on. It differs from the one
    /// known when an exec's name was not read (`--no-enrich`, a process gone before `/proc`
    /// was read: the name inherited at fork), a script was run by its `#!` line (the kernel
    /// names the script), or a rename was missed; the record says so
    /// ([`ProcessRecord::comm_at_exit`]), for the JSON Lines `exit` line.
    fn exit_name(&mut self, tgid: Pid, comm: &[u8]) {
        let Some(&id) = self.live.get(&tgid) else { return };
        self.with(id, |r| {
            let held = crate::model::bytes::encode(comm);
            if r.comm.as_deref() == Some(held.as_ref()) {
                return;
            }
            match &mut r.comm {
                // The buffer of the name it had: no allocation for nearly every process.
                Some(rc) => {
                    rc.clear();
                    rc.push_str(&held);
                }
                None => r.comm = Some(held.into_owned()),
            }
            r.comm_at_exit = true;
        });
    }

    /// What a process cost, joined with its live record (or counted as unmatched).
    fn usage(&mut self, tgid: Pid, usage: &Usage) {
        match self.live.get(&tgid).copied() {
            Some(id) if self.with(id, |r| r.usage = Some(Box::new(*usage))).is_some() => {
                self.stats.usage += 1;
            }
            _ => self.stats.usage_unmatched += 1,
        }
    }
}
