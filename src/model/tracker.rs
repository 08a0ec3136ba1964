//! The process model: timestamped events in, per-process records and lifecycle facts out.
//!
//! Pure: no I/O, no clock, no knowledge of where events come from or where facts go. That is what
//! lets a recorded capture replay into it byte for byte. The rules it follows come from measuring
//! the connector (see `shared/design/connector-facts.md`):
//!
//! - processes are keyed by tgid; a FORK with `child_pid != child_tgid` is a thread, never a child
//!   process of the `parent_*` it names;
//! - ancestry comes only from FORK (`parent_tgid → child_tgid`), never from EXIT's parent fields;
//! - a leader's EXIT is provisional while other known threads live: a non-leader exec shows up as
//!   `EXIT(leader)`, thread EXITs, then `EXEC`, and the last thread's EXIT carries the real status;
//! - an instance is `(tgid, fork timestamp)`: when a tgid forks again while an older instance is
//!   still open, the older one's exit was lost and it is closed as such (pid reuse).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

// Re-exported: it is part of a record ([`BackgroundRecord`]) as much as of an event.
pub use crate::model::event::BackgroundState;
use crate::model::event::{Argv, Data, Event, ExecDetails, ExitStatus, Pid, Region, Usage};

/// Cheap hasher for pids. The table's bucket is the hash's low bits and its tag the top seven:
/// a pid is its own low 32 bits, so the pids the kernel hands out one after another land in
/// neighbouring buckets (one cache line and page for many, where a well-mixed hash sent each to
/// a random place in a 16 MB table: a cache miss per insert, 7% of `analyze` on 600,000
/// processes in `perf`), and the top bits are a multiplicative mix, so tags still differ.
#[derive(Default, Clone, Copy)]
struct PidHasher(u64);

impl Hasher for PidHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_i32(&mut self, i: i32) {
        let p = i as u32 as u64;
        self.0 = p | (p.wrapping_mul(0x9E37_79B9_7F4A_7C15) & 0xFFFF_FFFF_0000_0000);
    }
}

type PidMap<V> = HashMap<Pid, V, BuildHasherDefault<PidHasher>>;

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

/// One exec of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRecord {
    /// When.
    pub ts: u64,
    /// What `/proc` said; `None` while pending or when no enrichment was asked for.
    pub details: Option<ExecDetails>,
}

/// How and when a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitRecord {
    /// When (the last task's exit).
    pub ts: u64,
    /// Status; `None` when the exit itself was lost and inferred from pid reuse.
    pub status: Option<ExitStatus>,
}

/// A process outliving the traced command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackgroundRecord {
    /// When it was released (or given up on).
    pub ts: u64,
    /// Ready, timeout or error.
    pub state: BackgroundState,
}

/// Everything known about one process instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessRecord {
    /// Process id (tgid).
    pub pid: Pid,
    /// Parent's process id at fork (0 when unknown).
    pub ppid: Pid,
    /// Parent's record, when tracked.
    pub parent: Option<ProcId>,
    /// Child processes, in fork order (kept only when exited records are retained).
    pub children: Vec<ProcId>,
    /// Fork timestamp; `None` for a process that existed before tracing began and whose start
    /// was not supplied.
    pub start_ns: Option<u64>,
    /// Existed before tracing began.
    pub pre_existing: bool,
    /// Execs in order; empty for a fork without exec.
    pub execs: Vec<ExecRecord>,
    /// The exit, once final.
    pub exit: Option<ExitRecord>,
    /// A COREDUMP event was seen (a core-dumping signal; the file may not have been written).
    pub coredump_signal: bool,
    /// Short name: from the latest exec's details, a rename, or inherited from the parent.
    pub comm: Option<String>,
    /// Latest real/effective uid reported by a UID event or read after exec.
    pub uid: Option<(u32, u32)>,
    /// Latest real/effective gid reported by a GID event.
    pub gid: Option<(u32, u32)>,
    /// Became a session leader.
    pub setsid: bool,
    /// Set when the process outlived the traced command.
    pub background: Option<BackgroundRecord>,
    /// Regions the process reported about itself (Trace2), in the order they ended.
    pub regions: Vec<Region>,
    /// Values the process reported about itself (Trace2 data, timers, counters), in order.
    pub data: Vec<Data>,
    /// What the process cost, when the backend measured it ([`Event::Usage`], before the exit).
    /// Boxed: most saved traces have none, and a record stays small.
    pub usage: Option<Box<Usage>>,
    /// Threads and the leader's provisional exit: boxed, as few processes have threads the
    /// tracker sees start (32 bytes less in every record; 600,000 records of the ingest file).
    mt: Option<Box<Threads>>,
    details_pending: bool,
}

/// The threads of a multi-threaded process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Threads {
    /// Threads other than the leader known to be alive.
    ids: Vec<Pid>,
    /// The leader's exit (time, status) while other threads live on.
    leader_exit: Option<(u64, u32)>,
}

impl ProcessRecord {
    fn new(pid: Pid, ppid: Pid, parent: Option<ProcId>, start_ns: Option<u64>, pre_existing: bool) -> Self {
        ProcessRecord {
            pid,
            ppid,
            parent,
            children: Vec::new(),
            start_ns,
            pre_existing,
            execs: Vec::new(),
            exit: None,
            coredump_signal: false,
            comm: None,
            uid: None,
            gid: None,
            setsid: false,
            background: None,
            regions: Vec::new(),
            data: Vec::new(),
            usage: None,
            mt: None,
            details_pending: false,
        }
    }

    /// Argv of the latest exec, if it was read.
    pub fn argv(&self) -> Option<&Argv> {
        self.execs.last()?.details.as_ref()?.argv.as_ref()
    }

    /// Time from fork to exit, when both are known.
    pub fn duration_ns(&self) -> Option<u64> {
        Some(self.exit?.ts.saturating_sub(self.start_ns?))
    }

    /// Still running (as far as the events say).
    pub fn is_alive(&self) -> bool {
        self.exit.is_none()
    }

    /// Threads other than the leader known to be alive.
    pub fn live_threads(&self) -> usize {
        self.mt.as_ref().map_or(0, |m| m.ids.len())
    }
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
    /// Processes whose cost ([`Event::Usage`]) was joined with their record.
    #[serde(default)]
    pub usage: u64,
    /// Cost figures that arrived for a process not in the model (not followed, or already
    /// ended): left out, and counted here.
    #[serde(default)]
    pub usage_unmatched: u64,
}

struct Slot {
    generation: u32,
    rec: Option<ProcessRecord>,
}

/// Slots in chunks of fixed size that never move: a single vector of records, doubling as it
/// grew, copied every record again at each doubling (600,000 records: the copies and the pages
/// of the abandoned vectors were an eighth of `analyze`'s time in `perf`, 307 MB file).
#[derive(Default)]
struct Slots {
    chunks: Vec<Vec<Slot>>,
    len: usize,
}

/// Slots per chunk (a chunk is about a megabyte).
const CHUNK: usize = 4096;

impl Slots {
    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, i: usize) -> Option<&Slot> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    fn get_mut(&mut self, i: usize) -> Option<&mut Slot> {
        self.chunks.get_mut(i / CHUNK)?.get_mut(i % CHUNK)
    }

    fn push(&mut self, s: Slot) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push(s),
            _ => {
                let mut c = Vec::with_capacity(CHUNK);
                c.push(s);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }
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
    /// The first root ever taken: its record is never swept (a run's command is read at the
    /// end: its status in the verdict, its span sent last by OTLP), retained or not.
    first_root: Option<ProcId>,
    stats: TrackerStats,
    to_sweep: Vec<ProcId>,
    last_asked: Option<Pid>,
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
            first_root: None,
            stats: TrackerStats::default(),
            to_sweep: Vec::new(),
            last_asked: None,
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
    pub fn add_existing(
        &mut self,
        pid: Pid,
        ppid: Pid,
        start_ns: Option<u64>,
        details: Option<ExecDetails>,
        facts: &mut Vec<Fact>,
    ) -> ProcId {
        let parent = self.live.get(&ppid).copied();
        let mut rec = ProcessRecord::new(pid, ppid, parent, start_ns, true);
        if let Some(d) = details {
            rec.comm = d.comm.clone();
            rec.uid = d.uid.map(|u| (u, u));
            rec.execs.push(ExecRecord {
                ts: start_ns.unwrap_or(0),
                details: Some(d),
            });
        }
        let id = self.insert_linked(rec, parent);
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
        if let Some(&id) = self.live.get(&pid) {
            if self.get(id).is_some_and(|r| r.start_ns.is_none_or(|s| s <= ts)) {
                return Some(id);
            }
        }
        let id = *self.exited.get(&pid)?;
        self.get(id).map(|_| id)
    }

    /// Attaches a Trace2 note (region or data point) to the instance of `tgid` running at `ts`;
    /// `add` stores it and returns the fact naming it.
    fn note(
        &mut self,
        tgid: Pid,
        ts: u64,
        facts: &mut Vec<Fact>,
        add: impl FnOnce(ProcId, &mut ProcessRecord) -> Fact,
    ) {
        match self.lookup_at(tgid, ts) {
            Some(id) => {
                if let Some(f) = self.with(id, |r| add(id, r)) {
                    self.stats.notes += 1;
                    facts.push(f);
                }
            }
            None => self.stats.notes_unmatched += 1,
        }
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
        self.roots.push(id);
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
        for id in std::mem::take(&mut self.to_sweep) {
            if let Some(slot) = self.slots.get_mut(id.idx as usize) {
                if slot.generation == id.generation && slot.rec.take().is_some() {
                    slot.generation = slot.generation.wrapping_add(1);
                    self.free.push(id.idx);
                    self.stats.held -= 1;
                }
            }
        }
        self.roots.retain(|&id| {
            self.slots
                .get(id.idx as usize)
                .is_some_and(|s| s.generation == id.generation && s.rec.is_some())
        });
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
        if self.opts.retain_exited {
            self.exited.insert(pid, id);
        }
        if status.is_some() {
            self.stats.exits += 1;
        } else {
            self.stats.exits_inferred += 1;
        }
        facts.push(Fact::Exit(id));
        // Retained records are never swept: no list of them to grow.
        if !self.opts.retain_exited && self.first_root != Some(id) {
            self.to_sweep.push(id);
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

    /// A region of `tgid`, kept in its record (both [`apply`](Self::apply) and
    /// [`apply_owned`](Self::apply_owned)).
    fn apply_region(&mut self, tgid: Pid, mut region: Region, facts: &mut Vec<Fact>) {
        // A saved trace can end a region before it starts: every output may count on
        // `ts <= end` (found by fuzzing twice: the picture overflowed; the second time because
        // the by-value path had its own copy of this without the fix).
        region.end = region.end.max(region.ts);
        self.note(tgid, region.ts, facts, |id, r| {
            r.regions.push(region);
            Fact::Region {
                id,
                index: r.regions.len() - 1,
            }
        });
    }

    /// A datum of `tgid`, kept in its record (both paths).
    fn apply_data(&mut self, tgid: Pid, data: Data, facts: &mut Vec<Fact>) {
        self.note(tgid, data.ts, facts, |id, r| {
            r.data.push(data);
            Fact::Data {
                id,
                index: r.data.len() - 1,
            }
        });
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
            } => {
                self.add_existing(tgid, ppid, start_ns, details, facts);
                Followup::None
            }
            ev => self.apply(&ev, facts),
        }
    }

    /// Applies one event, appending the facts it establishes.
    pub fn apply(&mut self, ev: &Event, facts: &mut Vec<Fact>) -> Followup {
        match *ev {
            Event::Fork {
                ts,
                parent_tgid,
                child_pid,
                child_tgid,
            } => {
                if child_pid != child_tgid {
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
                    return Followup::None;
                }
                let parent = match self.live.get(&parent_tgid) {
                    Some(&p) => Some(p),
                    None if self.expected_roots.contains(&parent_tgid) => {
                        self.adopt_unknown(parent_tgid, 0, facts)
                    }
                    None => None,
                };
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
                let inherited = parent.and_then(|p| self.get(p)).and_then(|r| r.comm.clone());
                let parent = if is_root { None } else { parent };
                let mut rec = ProcessRecord::new(child_tgid, parent_tgid, parent, Some(ts), false);
                rec.comm = inherited;
                let id = self.insert_linked(rec, parent);
                facts.push(Fact::Fork(id));
                Followup::None
            }
            Event::Exec { ts, tgid } => {
                let id = match self.live.get(&tgid).copied() {
                    Some(id) => id,
                    None if !self.expected_roots.contains(&tgid) && self.should_resolve(tgid) => {
                        return Followup::ResolveAncestry(tgid);
                    }
                    None => match self.adopt_unknown(tgid, 0, facts) {
                        Some(id) => id,
                        None => return Followup::None,
                    },
                };
                let want = self.opts.want_details;
                let Some((index, threads)) = self.with(id, |r| {
                    // Most processes exec once: room for one (a first push makes room for 4,
                    // 336 bytes unused in nearly every record).
                    if r.execs.is_empty() {
                        r.execs.reserve_exact(1);
                    }
                    r.execs.push(ExecRecord { ts, details: None });
                    // Exec leaves a single-threaded process; a provisional leader exit was the
                    // non-leader exec's doing.
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
            Event::ExecDetails { tgid, ref details } => {
                self.apply_exec_details(tgid, details.clone(), facts);
                Followup::None
            }
            Event::Exit {
                ts,
                pid,
                tgid,
                status,
                parent_tgid,
            } => {
                if pid != tgid {
                    self.threads.remove(&pid);
                    let Some(&id) = self.live.get(&tgid) else {
                        return Followup::None;
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
                    return Followup::None;
                }
                let id = match self.live.get(&tgid).copied() {
                    Some(id) => id,
                    None if !self.expected_roots.contains(&tgid) && self.should_resolve(tgid) => {
                        return Followup::ResolveAncestry(tgid);
                    }
                    None => match self.adopt_unknown(tgid, parent_tgid, facts) {
                        Some(id) => id,
                        None => return Followup::None,
                    },
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
            Event::Ancestry { tgid, ppid, start_ns } => {
                if self.live.contains_key(&tgid) {
                    return Followup::None;
                }
                if let Some(&parent) = self.live.get(&ppid) {
                    let mut rec = ProcessRecord::new(tgid, ppid, Some(parent), start_ns, false);
                    rec.comm = self.get(parent).and_then(|r| r.comm.clone());
                    let id = self.insert(rec);
                    self.link_child(parent, id);
                    self.stats.recovered += 1;
                    facts.push(Fact::Fork(id));
                }
                Followup::None
            }
            Event::Coredump { tgid, .. } => {
                if let Some(&id) = self.live.get(&tgid) {
                    self.with(id, |r| r.coredump_signal = true);
                }
                Followup::None
            }
            Event::Uid { ts, tgid, ruid, euid } => {
                if let Some(&id) = self.live.get(&tgid) {
                    // One UID event per thread: report a change once.
                    if self.with(id, |r| r.uid.replace((ruid, euid)) != Some((ruid, euid))) == Some(true) {
                        facts.push(Fact::Uid { id, ts, ruid, euid });
                    }
                }
                Followup::None
            }
            Event::Gid { ts, tgid, rgid, egid } => {
                if let Some(&id) = self.live.get(&tgid) {
                    if self.with(id, |r| r.gid.replace((rgid, egid)) != Some((rgid, egid))) == Some(true) {
                        facts.push(Fact::Gid { id, ts, rgid, egid });
                    }
                }
                Followup::None
            }
            Event::Sid { ts, tgid } => {
                if let Some(&id) = self.live.get(&tgid) {
                    self.with(id, |r| r.setsid = true);
                    facts.push(Fact::Sid { id, ts });
                }
                Followup::None
            }
            Event::Ptrace { ts, tgid, tracer } => {
                if let Some(&id) = self.live.get(&tgid) {
                    facts.push(Fact::Ptrace { id, ts, tracer });
                }
                Followup::None
            }
            Event::Comm {
                ts,
                pid,
                tgid,
                ref comm,
            } => {
                if pid == tgid {
                    if let Some(&id) = self.live.get(&tgid) {
                        self.with(id, |r| r.comm = Some(comm.clone()));
                        facts.push(Fact::Comm { id, ts });
                    }
                }
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
            } => {
                self.add_existing(tgid, ppid, start_ns, details.clone(), facts);
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
            Event::Gone { ts, tgid } => {
                if let Some(id) = self.lookup(tgid) {
                    self.close_gone(id, ts, facts);
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
            Event::Usage { tgid, ref usage } => {
                match self.live.get(&tgid).copied() {
                    Some(id) if self.with(id, |r| r.usage = Some(usage.clone())).is_some() => {
                        self.stats.usage += 1;
                    }
                    _ => self.stats.usage_unmatched += 1,
                }
                Followup::None
            }
            Event::Lost { ts, count } => {
                self.stats.lost += count;
                facts.push(Fact::Lost { ts, count });
                Followup::None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Recorded captures (tests/fixtures/captures, made with `proctrace run --record`) replayed
    //! into the tracker, plus hand-made sequences for what the kernel rarely does on demand.
    use super::*;
    use crate::cmd::replay::parse_capture;
    use crate::model::event::{Event, ExitStatus};
    use crate::testkit::{exit, fork, tracker};

    fn capture(name: &str) -> Vec<Event> {
        let path = format!(
            "{}/tests/fixtures/captures/{name}.jsonl",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        parse_capture(text.as_bytes(), &path).unwrap().events
    }

    /// Replays with the first forked child of the recorder as root, as `run` did.
    fn replay_run(events: &[Event]) -> (Tracker, Vec<Fact>) {
        let root = crate::cmd::replay::Capture {
            events: events.to_vec(),
            ..Default::default()
        }
        .command_pid()
        .unwrap();
        let mut t = tracker(Scope::Tree, true, true);
        t.expect_root(root);
        let mut facts = Vec::new();
        for e in events {
            t.apply(e, &mut facts);
        }
        (t, facts)
    }

    fn root_record(t: &Tracker) -> &ProcessRecord {
        assert_eq!(t.roots().len(), 1);
        t.get(t.roots()[0]).unwrap()
    }

    #[test]
    fn pid_reuse_gives_two_instances() {
        let (t, facts) = replay_run(&capture("reuse-pid"));
        let root = root_record(&t);
        assert_eq!(root.exit.unwrap().status, Some(ExitStatus::Code(0)));
        assert_eq!(root.children.len(), 2);
        let a = t.get(root.children[0]).unwrap();
        let b = t.get(root.children[1]).unwrap();
        assert_eq!(a.pid, b.pid, "same pid, recreated with clone3(set_tid)");
        assert_ne!(a.start_ns, b.start_ns);
        assert_eq!(a.exit.unwrap().status, Some(ExitStatus::Code(1)));
        assert_eq!(b.exit.unwrap().status, Some(ExitStatus::Code(2)));
        assert_eq!(facts.iter().filter(|f| matches!(f, Fact::Exit(_))).count(), 3);
        assert_eq!(t.stats().processes, 3);
    }

    #[test]
    fn non_leader_exec_is_one_process_with_two_execs() {
        let (t, facts) = replay_run(&capture("thread-exec"));
        let r = root_record(&t);
        assert_eq!(r.execs.len(), 2);
        assert_eq!(r.argv().unwrap(), ["/bin/true"]);
        assert_eq!(r.exit.unwrap().status, Some(ExitStatus::Code(0)));
        // The leader's EXIT before the EXEC was provisional: exactly one exit fact, last.
        let exits: Vec<_> = facts.iter().filter(|f| matches!(f, Fact::Exit(_))).collect();
        assert_eq!(exits.len(), 1);
        assert!(matches!(facts.last(), Some(Fact::Exit(_))));
        assert!(r.children.is_empty(), "threads are not child processes");
        assert_eq!(t.stats().threads, 2);
    }

    #[test]
    fn threads_exiting_before_the_leader() {
        let (t, _) = replay_run(&capture("threads-then-leader"));
        let r = root_record(&t);
        assert_eq!(r.exit.unwrap().status, Some(ExitStatus::Code(4)));
        assert!(r.children.is_empty());
        assert_eq!(t.stats().threads, 3);
        assert_eq!(t.stats().processes, 1);
    }

    #[test]
    fn leader_exiting_first_takes_status_from_the_last_thread() {
        let events = capture("leader-exits-first");
        let (t, facts) = replay_run(&events);
        let r = root_record(&t);
        let x = r.exit.unwrap();
        assert_eq!(x.status, Some(ExitStatus::Code(3)));
        let last_ts = events.iter().rev().find_map(|e| e.ts()).unwrap();
        assert_eq!(
            x.ts, last_ts,
            "the process ended with its last thread, not its leader"
        );
        assert_eq!(facts.iter().filter(|f| matches!(f, Fact::Exit(_))).count(), 1);
        // /proc had nothing to give (the leader was gone): argv unavailable, comm kept.
        assert!(r.argv().is_none());
        assert_eq!(r.comm.as_deref(), Some("shapes"));
    }

    #[test]
    fn exec_twice_keeps_every_exec() {
        let (t, _) = replay_run(&capture("exec-twice"));
        let r = root_record(&t);
        assert_eq!(r.execs.len(), 3);
        assert_eq!(r.argv().unwrap(), ["/bin/echo", "hi"]);
        assert!(r.execs.windows(2).all(|w| w[0].ts < w[1].ts));
    }

    #[test]
    fn lost_exit_then_reuse_closes_the_old_instance_as_unknown() {
        let mut t = tracker(Scope::Tree, true, false);
        t.expect_root(10);
        let mut f = Vec::new();
        for e in [
            fork(1, 1, 10),
            fork(2, 10, 11),
            Event::Lost {
                ts: Some(3),
                count: 1,
            }, // 11's exit
            fork(4, 10, 11),
            exit(5, 11, 0),
            exit(6, 10, 0),
        ] {
            t.apply(&e, &mut f);
        }
        let root = t.get(t.roots()[0]).unwrap();
        let old = t.get(root.children[0]).unwrap();
        assert_eq!(old.exit.unwrap().status, None);
        assert_eq!(old.exit.unwrap().ts, 4);
        assert_eq!(
            t.get(root.children[1]).unwrap().exit.unwrap().status,
            Some(ExitStatus::Code(0))
        );
        assert_eq!(t.stats().exits_inferred, 1);
        assert_eq!(t.stats().lost, 1);
    }

    #[test]
    fn a_lost_root_fork_still_gives_a_tree() {
        let mut t = tracker(Scope::Tree, true, false);
        t.expect_root(10);
        let mut f = Vec::new();
        for e in [
            Event::Lost { ts: None, count: 3 }, // includes 10's FORK
            fork(2, 10, 11),
            exit(3, 11, 0),
            Event::Exec { ts: 4, tgid: 10 },
            exit(5, 10, 2),
        ] {
            t.apply(&e, &mut f);
        }
        let root = t.get(t.roots()[0]).unwrap();
        assert_eq!(root.pid, 10);
        assert_eq!(root.start_ns, None);
        assert_eq!(root.children.len(), 1);
        assert_eq!(root.execs.len(), 1);
        assert_eq!(root.exit.unwrap().status, Some(ExitStatus::Code(2)));
        assert_eq!(root.duration_ns(), None);
    }

    #[test]
    fn after_a_loss_unknown_descendants_are_resolved_from_ancestry() {
        let mut t = tracker(Scope::Tree, true, false);
        t.expect_root(10);
        let mut f = Vec::new();
        t.apply(&fork(1, 1, 10), &mut f);
        // Before any loss, strangers are just ignored.
        assert_eq!(t.apply(&fork(2, 99, 100), &mut f), Followup::None);
        t.apply(&Event::Lost { ts: None, count: 1 }, &mut f); // 20's FORK from 10
        let child_of_20 = fork(4, 20, 21);
        assert_eq!(t.apply(&child_of_20, &mut f), Followup::ResolveAncestry(20));
        assert_eq!(t.stats().processes, 1, "nothing changed by the asking call");
        t.apply(
            &Event::Ancestry {
                tgid: 20,
                ppid: 10,
                start_ns: Some(3),
            },
            &mut f,
        );
        assert_eq!(t.apply(&child_of_20, &mut f), Followup::None);
        let root = t.get(t.roots()[0]).unwrap();
        let twenty = t.get(root.children[0]).unwrap();
        assert_eq!(twenty.pid, 20);
        assert_eq!(t.get(twenty.children[0]).unwrap().pid, 21);
        assert_eq!(t.stats().recovered, 1);
        // An unrelated process is asked about once, then ignored.
        assert_eq!(t.apply(&exit(5, 500, 0), &mut f), Followup::ResolveAncestry(500));
        assert_eq!(t.apply(&exit(5, 500, 0), &mut f), Followup::None);
    }

    /// Records span many slot chunks and pids come round again: every record, every pid's
    /// latest instance and every parent link stay right (the chunked slots, the pid hash).
    #[test]
    fn many_records_across_chunks_and_reused_pids() {
        let mut t = tracker(Scope::All, true, false);
        let mut f = Vec::new();
        let n = 3 * CHUNK as u64 + 17;
        // Pids cycle through a small range (each comes round again) and every third is above
        // 2^30, so neighbouring and far-apart pids share the table.
        let pid_of = |i: u64| 1000 + (i % 5000) as i32 + if i % 3 == 0 { 1 << 30 } else { 0 };
        for i in 0..n {
            t.apply(&fork(i * 10, 1, pid_of(i)), &mut f);
            t.apply(&exit(i * 10 + 5, pid_of(i), (i % 7) as u32), &mut f);
        }
        assert_eq!(t.stats().processes, n);
        let mut seen = 0u64;
        let mut ids: Vec<ProcId> = f
            .iter()
            .filter_map(|x| match x {
                Fact::Fork(id) => Some(*id),
                _ => None,
            })
            .collect();
        ids.dedup();
        for (i, id) in ids.iter().enumerate() {
            let r = t.get(*id).unwrap();
            let i = i as u64;
            assert_eq!((r.pid, r.start_ns), (pid_of(i), Some(i * 10)));
            assert_eq!(r.exit.unwrap().status, Some(ExitStatus::Code((i % 7) as i32)));
            seen += 1;
        }
        assert_eq!(seen, n);
        // The latest instance of a pid is the one a late note finds.
        let last = n - 1;
        let id = t.lookup_at(pid_of(last), last * 10 + 6).unwrap();
        assert_eq!(t.get(id).unwrap().start_ns, Some(last * 10));
        assert_eq!(t.live_count(), 0);
    }

    #[test]
    fn tree_scope_ignores_strangers_and_all_scope_adopts_them() {
        let events = [
            fork(1, 1, 10),
            fork(2, 500, 501),
            exit(3, 501, 0),
            exit(4, 77, 1),
            exit(5, 10, 0),
        ];
        let mut t = tracker(Scope::Tree, true, false);
        t.expect_root(10);
        let mut f = Vec::new();
        for e in &events {
            t.apply(e, &mut f);
        }
        assert_eq!(t.stats().processes, 1);
        let mut t = tracker(Scope::All, true, false);
        for e in &events {
            t.apply(e, &mut f);
        }
        assert_eq!(t.stats().processes, 3);
        assert_eq!(t.stats().exits, 3);
    }

    #[test]
    fn watch_mode_memory_stays_flat() {
        let mut t = tracker(Scope::All, false, false);
        let mut f = Vec::new();
        for i in 0..100_000u64 {
            let pid = 1000 + (i % 30_000) as i32;
            t.apply(&fork(i * 10, 1, pid), &mut f);
            t.apply(
                &Event::Exec {
                    ts: i * 10 + 1,
                    tgid: pid,
                },
                &mut f,
            );
            t.apply(&exit(i * 10 + 2, pid, 0), &mut f);
            f.clear();
            t.sweep();
        }
        assert_eq!(t.stats().processes, 100_000);
        // Only the first root's record stays (read at the end: a run's command).
        assert_eq!(t.stats().held, 1);
        let first = t.first_root().unwrap();
        assert_eq!(t.get(first).map(|r| r.pid), Some(1000));
        assert!(t.stats().peak_held <= 3, "{:?}", t.stats());
        assert!(t.slots.len() <= 3);
    }

    #[test]
    fn a_long_lived_parent_does_not_grow_in_watch_mode() {
        let mut t = tracker(Scope::All, false, false);
        let mut f = Vec::new();
        t.apply(&fork(1, 1, 50), &mut f);
        let parent = t.lookup(50).unwrap();
        for i in 0..50_000u64 {
            let pid = 100 + (i % 20_000) as i32;
            t.apply(&fork(i * 10 + 2, 50, pid), &mut f);
            t.apply(&exit(i * 10 + 3, pid, 0), &mut f);
            f.clear();
            t.sweep();
        }
        assert!(t.get(parent).unwrap().children.is_empty());
        assert!(t.stats().peak_held <= 3, "{:?}", t.stats());
        assert_eq!(t.roots().len(), 1);
    }

    /// Found by fuzzing (`cargo fuzz run capture`): a region ending before it starts.
    #[test]
    fn a_region_never_ends_before_it_starts() {
        let mut t = tracker(Scope::All, true, false);
        let mut f = Vec::new();
        t.apply(&fork(1, 1, 10), &mut f);
        let region = crate::model::event::Region {
            ts: 50,
            end: 20,
            thread: "main".into(),
            category: "c".into(),
            label: "l".into(),
            msg: None,
            nesting: 1,
        };
        t.apply(
            &Event::Region {
                tgid: 10,
                region: region.clone(),
            },
            &mut f,
        );
        // By value too (`analyze` feeds owned events; the capture fuzz target found this path
        // without the fix).
        t.apply_owned(Event::Region { tgid: 10, region }, &mut f);
        let r = t.get(t.lookup(10).unwrap()).unwrap();
        assert_eq!((r.regions[0].ts, r.regions[0].end), (50, 50));
        assert_eq!((r.regions[1].ts, r.regions[1].end), (50, 50));
    }

    #[test]
    fn uid_changes_reported_once_per_process_not_per_thread() {
        let mut t = tracker(Scope::All, true, false);
        let mut f = Vec::new();
        t.apply(&fork(1, 1, 10), &mut f);
        f.clear();
        for _ in 0..3 {
            t.apply(
                &Event::Uid {
                    ts: 2,
                    tgid: 10,
                    ruid: 65534,
                    euid: 65534,
                },
                &mut f,
            );
        }
        assert_eq!(f.len(), 1);
    }
}
