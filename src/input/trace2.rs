//! git Trace2 event streams as the model's events: any number of files (many processes' lines
//! interleaved) and target directories (one file per session, the `git-trace2-discard`
//! sentinel included), from git or any other producer.
//!
//! Reading is one pass over every line that keeps, per session (SID), only what makes the
//! process tree: its command line, exits, execs, children (`child_start`/`child_exit`/
//! `child_ready`) and the regions and data it reported (paired by [`NoteBuilder`]).
//!
//! It streams: memory follows the sessions alive at once, not the size of the input.
//! - Sessions are grouped in **families** by their SID's first component (a root and every
//!   session under it: one process tree). A family lives from its first line until all its
//!   processes ended (`atexit`/`signal` of every session) and no line of it came for
//!   [`WINDOW_NS`] (2 s of stream time: the time of the latest line; or [`WINDOW_LINES`] lines
//!   were read since, for streams whose times jump back); then it is built into events (below)
//!   and dropped. Families with a session that never ends (killed) live to the end.
//!   A line for a family already built (a detached fork writing more than the window after
//!   its parent's `atexit`) starts a new family: its session becomes a root of its own.
//! - Built events wait in a heap and are fed in time order once nothing can come before them:
//!   earlier than every live family's first time and than the window behind stream time.
//!   Writers append in near time order, so lines up to the window out of order come out in
//!   order. A line older than events already fed (beyond the window) is still read and its
//!   events fed, out of order, and counted (`late_lines`); never dropped. At most
//!   [`MAX_HELD`] events wait (beyond, the oldest go).
//! - Nothing is fed before it is known whether the trace has one root (a `Root` event comes
//!   first then): at a second root, or at the end.
//! - pids are claimed as families are built: a pid alive in an earlier-built process over the
//!   same time gets a stand-in; what was fed and ended is forgotten.
//! - Files: one file is read straight through; several (a target directory, or many paths)
//!   are ordered by the time of their first event (only the first line is read at open) and
//!   merged by time, a file opened when the merge reaches its first event and closed at its
//!   end: open files are the sessions overlapping in time, at most half the descriptor soft
//!   limit (a file waits for one to close beyond that; its lines may then come late).
//!
//! Then sessions become processes:
//! - A session whose parent SID (`parent/child`, parts opaque) is absent is a root.
//! - A child session that follows its parent's `exec` (and has the same `-P<pid>` suffix, when
//!   both have one) is the same process exec'ing: an [`Event::Exec`] on it.
//! - Every `child_start` is a process (fork and exec at `child_start`, exit from `child_exit`,
//!   background from `child_ready`), with or without a session of its own (hooks via sh, ssh,
//!   editors). A child session is matched to its parent's `child_start` by pid (the parent's
//!   `child_exit` pid = the SID's `-P` suffix), else by time (the `child_start`'s span contains
//!   the session's start) and argv. A session inside a `child_start`'s span whose pid differs
//!   (the child was a shell, a hook script) is that child's child. A session no `child_start`
//!   accounts for is a child of its parent's process.
//! - A session that writes another `exit` after its `atexit` (a detached fork: `git
//!   maintenance run --detach`, `gc --auto`) has a forked child reported as background; what
//!   the session writes after the first `atexit` is that child's.
//! - A `signal` event is an exit by that signal; a session with neither `exit` nor `atexit`
//!   (killed mid-write) has its parent's `child_exit` status (128+N when it wrote no exit: signal
//!   N) or stays running: no guessed status.
//!
//! pids: the parent's `child_exit`/`child_ready` pid, else the SID's `-P<hex>` suffix, else a
//! stand-in above `PID_MAX_LIMIT` (4194304) so it never collides with a real one; the same pid
//! alive twice at once (streams from many hosts) gets a stand-in for the later one. Failed
//! spawns (`child_exit` pid -1) are not processes.
//!
//! Within a family, matching (child sessions to `child_start`s, execs) sees the whole family, as
//! it always did: the look-ahead is the family's life plus the window.
//!
//! Times: the model's clock is UTC ns (`real_minus_mono = 0`); an event without `time` (brief
//! streams) is placed at `version.time + t_abs`, else at the last time its session showed.

use std::collections::{BTreeSet, BinaryHeap};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use foldhash::HashMap;
use trace2::reader::{EventReader, ReadError, ReadOptions};
use trace2::{EventKind, ReadyState, Timestamp};

use super::notes::{Clock, NoteBuilder};
use super::{Input, InputError, InputOptions, InputStats};
use crate::model::event::{Argv, DataValue, Event, ExecDetails, ExitStatus, Pid, Usage};
use crate::model::session::{Header, Summary};
use crate::model::tracker::BackgroundState;

/// The highest pid Linux hands out (`PID_MAX_LIMIT`); stand-ins are above it.
pub const PID_MAX_LIMIT: Pid = 4_194_304;

/// A `child_start` and what its parent later said about it.
#[derive(Debug, Clone)]
struct Child {
    id: i64,
    /// Which process of the session started it (0; k for the k-th detached fork).
    phase: usize,
    argv: Vec<String>,
    use_shell: bool,
    start: u64,
    /// `child_exit` / `child_ready` time.
    end: Option<u64>,
    pid: Option<Pid>,
    code: Option<i32>,
    ready: Option<BackgroundState>,
    failed_spawn: bool,
    /// git said "`<cmd> died of signal N`" for it (its `code` is then 128+N by a signal).
    signal: Option<i32>,
}

/// How one process of a session ended (phase 0: the session's own process; k ≥ 1: its k-th
/// detached fork).
#[derive(Debug, Clone, Copy, Default)]
struct Phase {
    exit: Option<(u64, i32)>,
    atexit: Option<(u64, i32)>,
    signal: Option<(u64, i32)>,
    /// Time of the last event of this phase.
    last: Option<u64>,
}

/// What one SID said, kept while reading.
#[derive(Debug, Default)]
struct Session {
    sid: String,
    /// First time seen (the `version` time, or the earliest event time).
    first: Option<u64>,
    /// `version.time`, for brief streams' `t_abs`.
    base: Option<Timestamp>,
    argv: Option<Vec<String>>,
    /// Successful `exec`s: (exec_id, time, argv).
    execs: Vec<(i64, u64, Vec<String>)>,
    children: Vec<Child>,
    phases: Vec<Phase>,
    /// The current phase is over (its `atexit` or `signal` was seen).
    phase_closed: bool,
    last: Option<u64>,
    too_many_files: bool,
    /// The last "died of signal N" error not yet given to a child_exit.
    died_of: Option<i32>,
}

impl Session {
    fn phase(&mut self) -> &mut Phase {
        if self.phases.is_empty() {
            self.phases.push(Phase::default());
        }
        let n = self.phases.len() - 1;
        &mut self.phases[n]
    }
    fn phase_index(&self) -> usize {
        self.phases.len().saturating_sub(1)
    }
}

/// How far (stream time) a line may lag behind the latest time seen and still be put in order,
/// and how long a family whose processes all ended waits for more lines before it is built.
pub const WINDOW_NS: u64 = 2_000_000_000;

/// Built events held for ordering at most; beyond it the oldest go out (and lines older than
/// them are counted late).
pub const MAX_HELD: usize = 1 << 18;

/// A family whose processes all ended is built at the latest this many lines later, whatever
/// the times say (streams whose times jump back, like files concatenated, never reach a
/// deadline in stream time).
pub const WINDOW_LINES: u64 = 100_000;

/// Git Trace2 event streams, read: an [`Input`].
pub struct Trace2Input {
    header: Header,
    stats: InputStats,
    source: Source,
    /// A bad line (strict mode): reported after what came before it was fed.
    error: Option<InputError>,
}

/// Where the events come from: files, read as they are fed, or events already made (a stream
/// from memory).
enum Source {
    Files { files: Vec<FileStart>, lenient: bool },
    Made(Vec<Event>),
    Done,
}

/// The sessions that share a root SID (its first component): one process tree, built as a
/// whole once all of its processes ended (and no line came for [`WINDOW_NS`]) or at the end.
struct Family {
    /// Unique among every family ever made (slab slots are reused).
    id: u64,
    key: String,
    sessions: Vec<Session>,
    by_sid: HashMap<String, usize>,
    /// The session of the previous line.
    last_session: Option<usize>,
    notes: NoteBuilder,
    /// Note slot (passed to [`NoteBuilder`] as the tgid) → (session, phase).
    slots: Vec<(usize, usize)>,
    slot_of: HashMap<(usize, usize), Pid>,
    /// The last (session, phase, slot) [`Family::slot`] gave.
    last_slot: Option<(usize, usize, Pid)>,
    /// Notes with their slot as tgid.
    note_events: Vec<Event>,
    first: Option<u64>,
    last: Option<u64>,
    /// Sessions whose current process has not ended (no `atexit`/`signal` yet).
    open: usize,
    /// The line at which `open` last came to 0.
    closed_line: u64,
}

impl Family {
    fn slot(&mut self, session: usize, phase: usize) -> Pid {
        // Region and data lines come in runs of one session: the last answer first (the map
        // lookup hashed on ~70% of a git stream's lines).
        if let Some((se, ph, s)) = self.last_slot {
            if (se, ph) == (session, phase) {
                return s;
            }
        }
        let s = match self.slot_of.get(&(session, phase)) {
            Some(&s) => s,
            None => {
                let s = self.slots.len() as Pid;
                self.slots.push((session, phase));
                self.slot_of.insert((session, phase), s);
                s
            }
        };
        self.last_slot = Some((session, phase, s));
        s
    }
}

/// One built event waiting for its turn, fed by (time, fork < exec < notes < background <
/// exit, creation).
struct Item {
    ts: u64,
    prio: u8,
    seq: u64,
    ev: Event,
}

/// Built events in time order: one sorted run per family, merged by a heap of the runs'
/// first keys (events move once into their run and once out, never through heap sifts).
#[derive(Default)]
struct Held {
    /// The run being built.
    building: Vec<Item>,
    runs: Vec<std::collections::VecDeque<Item>>,
    free: Vec<usize>,
    /// (time, priority, creation, run) of each run's first event.
    heads: BinaryHeap<std::cmp::Reverse<(u64, u8, u64, usize)>>,
    len: usize,
}

impl Held {
    fn push(&mut self, it: Item) {
        self.building.push(it);
    }

    /// The run built since the last call joins the merge.
    fn end_run(&mut self) {
        if self.building.is_empty() {
            return;
        }
        let mut run = std::mem::take(&mut self.building);
        run.sort_unstable_by_key(|i| (i.ts, i.prio, i.seq));
        self.len += run.len();
        let r = self.free.pop().unwrap_or_else(|| {
            self.runs.push(Default::default());
            self.runs.len() - 1
        });
        self.runs[r] = run.into();
        self.head(r);
    }

    fn head(&mut self, r: usize) {
        if let Some(i) = self.runs[r].front() {
            self.heads.push(std::cmp::Reverse((i.ts, i.prio, i.seq, r)));
        } else {
            self.runs[r] = Default::default();
            self.free.push(r);
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn peek_ts(&self) -> Option<u64> {
        self.heads.peek().map(|h| h.0.0)
    }

    fn pop(&mut self) -> Option<Item> {
        let std::cmp::Reverse((_, _, _, r)) = self.heads.pop()?;
        let it = self.runs[r].pop_front();
        self.head(r);
        self.len -= usize::from(it.is_some());
        it
    }
}

/// The output side: built events in time order, and the pids handed out.
struct Out {
    held: Held,
    seq: u64,
    /// The latest time fed.
    watermark: u64,
    /// pid → (fork, exit) of processes given it whose exit may not have been fed yet.
    pids: HashMap<Pid, Vec<(u64, u64)>>,
    intervals: usize,
    prune_at: usize,
    next_standin: Pid,
    /// Processes without a parent built so far, and the last one's pid.
    roots: usize,
    root_pid: Option<Pid>,
    /// Whether a `Root` comes first is settled (and it was fed if so): nothing is fed before.
    decided: bool,
}

impl Out {
    fn new() -> Out {
        Out {
            held: Held::default(),
            seq: 0,
            watermark: 0,
            pids: HashMap::default(),
            intervals: 0,
            prune_at: 4096,
            next_standin: PID_MAX_LIMIT + 1,
            roots: 0,
            root_pid: None,
            decided: false,
        }
    }

    fn push(&mut self, ts: u64, prio: u8, ev: Event) {
        self.seq += 1;
        self.held.push(Item {
            ts,
            prio,
            seq: self.seq,
            ev,
        });
    }

    /// `pid` for a process alive over `[fork, end]`, unless another process holds it then: a
    /// stand-in.
    fn claim(&mut self, pid: Option<Pid>, fork: u64, end: u64) -> Pid {
        if let Some(pid) = pid {
            let v = self.pids.entry(pid).or_default();
            if v.iter().all(|&(f, e)| e < fork || end < f) {
                v.push((fork, end));
                self.intervals += 1;
                return pid;
            }
        }
        let s = self.next_standin;
        self.next_standin = self.next_standin.saturating_add(1);
        s
    }

    /// Forgets the processes whose exit was fed (every held event is later than it).
    fn prune(&mut self) {
        if self.intervals < self.prune_at {
            return;
        }
        let min = self.held.peek_ts().unwrap_or(u64::MAX);
        let mut n = 0;
        self.pids.retain(|_, v| {
            v.retain(|&(_, e)| e >= min);
            n += v.len();
            !v.is_empty()
        });
        self.intervals = n;
        self.prune_at = (2 * n).max(4096);
    }

    /// Feeds the held events earlier than `low` (nothing can come before them any more), and
    /// the oldest beyond [`MAX_HELD`].
    fn emit(&mut self, low: u64, feed: &mut dyn FnMut(Event)) {
        if !self.decided {
            if self.roots < 2 && self.held.len() <= MAX_HELD {
                return;
            }
            self.decided = true;
        }
        let forcing = self.held.len() > MAX_HELD;
        while let Some(top) = self.held.peek_ts() {
            if top >= low && !(forcing && self.held.len() > MAX_HELD / 2) {
                break;
            }
            if let Some(it) = self.held.pop() {
                self.watermark = self.watermark.max(it.ts);
                feed(it.ev);
            }
        }
        self.prune();
    }

    /// The end: a `Root` first when there was exactly one root, then everything held.
    fn finish(&mut self, feed: &mut dyn FnMut(Event)) {
        if !self.decided {
            self.decided = true;
            if let (1, Some(tgid)) = (self.roots, self.root_pid) {
                feed(Event::Root { tgid });
            }
        }
        while let Some(it) = self.held.pop() {
            self.watermark = self.watermark.max(it.ts);
            feed(it.ev);
        }
    }
}

/// The streaming reader: lines in, families of sessions built as they end, events out in time
/// order.
struct Stream {
    lenient: bool,
    /// Live families (a slab: built ones leave a hole for the next).
    fams: Vec<Option<Family>>,
    free: Vec<usize>,
    fam_of: HashMap<String, usize>,
    next_id: u64,
    /// The family of the previous line.
    last_fam: Option<usize>,
    /// Live families by first time: the earliest bounds what may be fed.
    starts: BTreeSet<(u64, u64)>,
    /// Families whose processes all ended: (time they may be built, slot, id).
    closing: BinaryHeap<std::cmp::Reverse<(u64, usize, u64)>>,
    /// The same families in the order they closed: (line, slot, id).
    closed_fifo: std::collections::VecDeque<(u64, usize, u64)>,
    /// Lines taken.
    lines: u64,
    /// The time of the latest line that had one: stream time. (Not the newest time seen: when
    /// a stream's times jump back — streams concatenated — the window follows the lines.)
    now: u64,
    /// Earliest time seen.
    min_time: Option<u64>,
    /// Root sessions seen (a parent SID not among the family's sessions).
    root_sessions: u64,
    out: Out,
    stats: InputStats,
    error: Option<InputError>,
}

fn ns(t: Timestamp) -> u64 {
    Clock { offset_ns: 0 }.ns(t)
}

fn secs_ns(s: f64) -> u64 {
    if s.is_finite() && s > 0.0 {
        (s * 1e9).round().min(u64::MAX as f64 / 2.0) as u64
    } else {
        0
    }
}

fn strings(v: &[std::borrow::Cow<'_, str>]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn status_of(code: i32) -> ExitStatus {
    ExitStatus::Code(code & 0xff)
}

fn wait_status(s: ExitStatus) -> u32 {
    match s {
        ExitStatus::Code(c) => ((c & 0xff) as u32) << 8,
        ExitStatus::Signal { signal, core } => (signal & 0x7f) as u32 | if core { 0x80 } else { 0 },
    }
}

impl Stream {
    fn new(lenient: bool) -> Stream {
        Stream {
            lenient,
            fams: Vec::new(),
            free: Vec::new(),
            fam_of: HashMap::default(),
            next_id: 0,
            last_fam: None,
            starts: BTreeSet::new(),
            closing: BinaryHeap::new(),
            closed_fifo: Default::default(),
            lines: 0,
            now: 0,
            min_time: None,
            root_sessions: 0,
            out: Out::new(),
            stats: InputStats {
                sessions: Some(0),
                ..Default::default()
            },
            error: None,
        }
    }

    /// Reads one stream; `name` names it in errors. Returns false when reading must stop (a
    /// bad line in strict mode).
    fn read<R: BufRead>(&mut self, input: R, name: &Path, feed: &mut dyn FnMut(Event)) -> bool {
        self.stats.files += 1;
        let mut r = EventReader::new(
            input,
            name.display().to_string(),
            ReadOptions {
                lenient: self.lenient,
            },
        );
        let res = r.for_each_event(|ev, _| {
            self.take(&ev, feed);
            true
        });
        self.count(r.stats());
        match res {
            Ok(()) => true,
            Err(e) => {
                self.error = Some(input_error(e, name));
                false
            }
        }
    }

    fn count(&mut self, st: trace2::reader::ReadStats) {
        self.stats.lines += st.lines as u64;
        self.stats.skipped_lines += st.bad_lines as u64;
        if st.truncated_last_line {
            self.stats.truncated += 1;
        }
    }

    /// The family of `sid` (made when new).
    fn family(&mut self, sid: &str) -> usize {
        // Lines mostly come in runs of one family: its key, then nothing or a '/', without
        // looking for the '/' first.
        if let Some(i) = self.last_fam.filter(|&i| {
            self.fams[i].as_ref().is_some_and(|f| {
                sid.strip_prefix(f.key.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
        }) {
            return i;
        }
        let key = sid.split('/').next().unwrap_or(sid);
        let i = match self.fam_of.get(key) {
            Some(&i) => i,
            None => {
                let f = Family {
                    id: self.next_id,
                    key: key.to_string(),
                    sessions: Vec::new(),
                    by_sid: HashMap::default(),
                    last_session: None,
                    notes: NoteBuilder::new(),
                    slots: Vec::new(),
                    slot_of: HashMap::default(),
                    last_slot: None,
                    note_events: Vec::new(),
                    first: None,
                    last: None,
                    open: 0,
                    closed_line: 0,
                };
                self.next_id += 1;
                let i = match self.free.pop() {
                    Some(i) => {
                        self.fams[i] = Some(f);
                        i
                    }
                    None => {
                        self.fams.push(Some(f));
                        self.fams.len() - 1
                    }
                };
                self.fam_of.insert(key.to_string(), i);
                i
            }
        };
        self.last_fam = Some(i);
        i
    }

    /// Takes one event.
    fn take(&mut self, ev: &trace2::Event<'_>, feed: &mut dyn FnMut(Event)) {
        let sid = ev.sid.as_ref();
        self.lines += 1;
        let fi = self.family(sid);
        let Some(fam) = self.fams[fi].as_mut() else {
            return;
        };
        // Lines mostly come in runs of one session: compare before hashing.
        let idx = match fam.last_session.filter(|&i| fam.sessions[i].sid == sid) {
            Some(i) => i,
            None => match fam.by_sid.get(sid) {
                Some(&i) => i,
                None => {
                    let i = fam.sessions.len();
                    let root = sid
                        .rsplit_once('/')
                        .is_none_or(|(p, _)| !fam.by_sid.contains_key(p));
                    self.root_sessions += u64::from(root);
                    if root && self.root_sessions >= 2 {
                        // Several roots: no `Root` event; what is held may go.
                        self.out.decided = true;
                    }
                    fam.sessions.push(Session {
                        sid: sid.to_string(),
                        ..Default::default()
                    });
                    fam.by_sid.insert(sid.to_string(), i);
                    fam.open += 1;
                    let n = self.stats.sessions.unwrap_or(0) + 1;
                    self.stats.sessions = Some(n);
                    i
                }
            },
        };
        fam.last_session = Some(idx);
        let s = &mut fam.sessions[idx];
        if let (EventKind::Version { .. }, Some(t)) = (&ev.kind, ev.time) {
            s.base.get_or_insert(t);
        }
        // When it happened: its time, version.time + t_abs (brief), or the session's last time.
        let ts = ev
            .time
            .map(ns)
            .or_else(|| Some(ns(s.base?.add_seconds(ev.t_abs?))))
            .or(s.last);
        if let Some(t) = ts {
            s.first = Some(s.first.map_or(t, |f| f.min(t)));
            s.last = Some(s.last.map_or(t, |l| l.max(t)));
            if fam.first.is_none_or(|f| t < f) {
                if let Some(f) = fam.first {
                    self.starts.remove(&(f, fam.id));
                }
                self.starts.insert((t, fam.id));
                fam.first = Some(t);
            }
            fam.last = Some(fam.last.map_or(t, |l| l.max(t)));
            self.now = t;
            self.min_time = Some(self.min_time.map_or(t, |m| m.min(t)));
            if t < self.out.watermark {
                // Later events were fed already: this line's events come out of order.
                self.stats.late_lines += 1;
            }
        }
        // Lines after an atexit (or a second exit) are a detached fork's.
        let second_exit =
            matches!(ev.kind, EventKind::Exit { .. }) && s.phases.last().is_some_and(|p| p.exit.is_some());
        if s.phase_closed || second_exit {
            if s.phase_closed {
                fam.open += 1;
            }
            s.phases.push(Phase::default());
            s.phase_closed = false;
        }
        s.phase();
        let phase_idx = s.phase_index();
        if let Some(t) = ts {
            let ph = s.phase();
            ph.last = Some(ph.last.map_or(t, |l| l.max(t)));
        }
        let t = ts.unwrap_or(0);
        let mut closed = false;
        match &ev.kind {
            EventKind::Start { argv } => {
                s.argv.get_or_insert_with(|| strings(argv));
            }
            EventKind::TooManyFiles => {
                s.too_many_files = true;
                self.stats.too_many_files += 1;
            }
            EventKind::Exit { code } => {
                s.phase().exit.get_or_insert((t, *code));
            }
            EventKind::Atexit { code } => {
                s.phase().atexit.get_or_insert((t, *code));
                s.phase_closed = true;
                closed = true;
            }
            EventKind::Signal { signo } => {
                s.phase().signal.get_or_insert((t, *signo));
                s.phase_closed = true;
                closed = true;
            }
            EventKind::ChildStart {
                child_id,
                argv,
                use_shell,
                ..
            } => s.children.push(Child {
                id: *child_id,
                phase: phase_idx,
                argv: strings(argv),
                use_shell: *use_shell,
                start: t,
                end: None,
                pid: None,
                code: None,
                ready: None,
                failed_spawn: false,
                signal: None,
            }),
            EventKind::ChildExit {
                child_id,
                pid,
                code,
                t_rel,
            } => {
                if let Some(c) = s.children.iter_mut().rev().find(|c| c.id == *child_id) {
                    c.end = Some(ev.time.map_or(c.start.saturating_add(secs_ns(*t_rel)), ns));
                    c.code = Some(*code);
                    c.pid = Pid::try_from(*pid).ok().filter(|&p| p > 0);
                    c.failed_spawn = *pid <= 0;
                    // wait_or_whine() said the child died of a signal just before.
                    c.signal = s.died_of.take().filter(|n| code - 128 == *n);
                }
            }
            EventKind::ChildReady {
                child_id,
                pid,
                ready,
                t_rel,
            } => {
                if let Some(c) = s.children.iter_mut().rev().find(|c| c.id == *child_id) {
                    c.end = Some(ev.time.map_or(c.start.saturating_add(secs_ns(*t_rel)), ns));
                    c.pid = Pid::try_from(*pid).ok().filter(|&p| p > 0);
                    c.ready = Some(match ready {
                        ReadyState::Ready => BackgroundState::Ready,
                        ReadyState::Timeout => BackgroundState::Timeout,
                        ReadyState::Error => BackgroundState::Error,
                    });
                }
            }
            EventKind::Error { msg, fmt } => {
                s.died_of = died_of_signal(msg.as_deref(), fmt.as_deref());
            }
            EventKind::Exec { exec_id, argv, .. } if phase_idx == 0 => {
                s.execs.push((*exec_id, t, strings(argv)));
            }
            EventKind::ExecResult { exec_id, .. } => {
                // The exec failed: the process goes on as it was.
                if let Some(i) = s.execs.iter().rposition(|e| e.0 == *exec_id) {
                    s.execs.remove(i);
                }
            }
            EventKind::RegionEnter { .. }
            | EventKind::RegionLeave { .. }
            | EventKind::Data { .. }
            | EventKind::DataJson { .. }
            | EventKind::Timer { .. }
            | EventKind::Counter { .. } => {
                let slot = fam.slot(idx, phase_idx);
                if let Some(e) = fam.notes.on_event(slot, t, ev) {
                    fam.note_events.push(e);
                }
            }
            _ => {}
        }
        if closed {
            fam.open = fam.open.saturating_sub(1);
            if fam.open == 0 {
                let at = fam.last.unwrap_or(0).saturating_add(WINDOW_NS);
                self.closing.push(std::cmp::Reverse((at, fi, fam.id)));
                fam.closed_line = self.lines;
                self.closed_fifo.push_back((self.lines, fi, fam.id));
            }
        }
        self.poll(feed);
    }

    /// Builds the families whose time came, and feeds what can go.
    fn poll(&mut self, feed: &mut dyn FnMut(Event)) {
        let mut built = false;
        while let Some(&std::cmp::Reverse((at, fi, id))) = self.closing.peek() {
            if at > self.now {
                break;
            }
            self.closing.pop();
            let Some(fam) = self.fams[fi].as_ref().filter(|f| f.id == id) else {
                continue;
            };
            if fam.open > 0 {
                continue;
            }
            let ready = fam.last.unwrap_or(0).saturating_add(WINDOW_NS);
            if ready > self.now {
                self.closing.push(std::cmp::Reverse((ready, fi, id)));
                continue;
            }
            self.build_family(fi);
            built = true;
        }
        // Entries of families built by the line rule stay in `closing` when stream time never
        // reaches them: dropped once they outnumber the live families.
        if self.closing.len() > 2 * (self.fam_of.len() + 512) {
            let fams = &self.fams;
            self.closing
                .retain(|e| fams[e.0.1].as_ref().is_some_and(|f| f.id == e.0.2 && f.open == 0));
        }
        while let Some(&(line, fi, id)) = self.closed_fifo.front() {
            if line + WINDOW_LINES > self.lines {
                break;
            }
            self.closed_fifo.pop_front();
            let ready = self.fams[fi]
                .as_ref()
                .is_some_and(|f| f.id == id && f.open == 0 && f.closed_line == line);
            if ready {
                self.build_family(fi);
                built = true;
            }
        }
        if built || self.out.held.len() > MAX_HELD {
            self.emit(feed);
        }
    }

    /// Feeds what nothing can come before any more: earlier than every live family's start
    /// and than the window behind the latest time.
    fn emit(&mut self, feed: &mut dyn FnMut(Event)) {
        let live = self.starts.first().map_or(u64::MAX, |&(t, _)| t);
        let low = live.min(self.now.saturating_sub(WINDOW_NS));
        self.out.emit(low, feed);
    }

    fn build_family(&mut self, fi: usize) {
        let Some(fam) = self.fams[fi].take() else {
            return;
        };
        self.free.push(fi);
        self.fam_of.remove(&fam.key);
        if let Some(f) = fam.first {
            self.starts.remove(&(f, fam.id));
        }
        if self.last_fam == Some(fi) {
            self.last_fam = None;
        }
        // A family that showed no time at all is placed where the output is (in order).
        let fallback = fam
            .first
            .unwrap_or_else(|| self.out.watermark.max(self.min_time.unwrap_or(0)));
        build(fam, fallback, &mut self.out);
    }

    /// End of input: every family left is built (in start order), everything is fed.
    fn finish(&mut self, feed: &mut dyn FnMut(Event)) {
        let mut left: Vec<(u64, u64, usize)> = self
            .fams
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.as_ref().map(|f| (f.first.unwrap_or(0), f.id, i)))
            .collect();
        left.sort_unstable();
        for (_, _, fi) in left {
            self.build_family(fi);
        }
        self.closing.clear();
        self.closed_fifo.clear();
        self.out.finish(feed);
    }
}

fn input_error(e: ReadError, name: &Path) -> InputError {
    match e {
        ReadError::Malformed { line, reason, .. } => InputError::Line {
            path: name.to_path_buf(),
            line: line as u64,
            msg: format!("not a Trace2 event: {reason}"),
        },
        ReadError::Io { source, .. } => InputError::Io {
            path: name.to_path_buf(),
            source,
        },
    }
}

/// N of git's `"%s died of signal %d"` error (run-command.c `wait_or_whine`).
fn died_of_signal(msg: Option<&str>, fmt: Option<&str>) -> Option<i32> {
    if fmt.is_some_and(|f| f != "%s died of signal %d") {
        return None;
    }
    let n = msg?.rsplit_once(" died of signal ")?.1.parse::<i32>().ok()?;
    (1..65).contains(&n).then_some(n)
}

/// A process being built from sessions.
#[derive(Debug, Default)]
struct Proc {
    parent: Option<usize>,
    /// Known real pid (from the parent's `child_exit`/`child_ready` or the SID).
    pid: Option<Pid>,
    fork: u64,
    /// Execs: time and argv (the first at fork for processes started by `child_start`).
    execs: Vec<(u64, Vec<String>)>,
    exit: Option<(u64, ExitStatus)>,
    /// Status the parent reported (`child_exit`), used when the process wrote no exit.
    reported: Option<(u64, i32)>,
    background: Option<(u64, BackgroundState)>,
    /// Wrote a session of its own (a parent's 128+N then means signal N).
    has_session: bool,
    /// The parent said it died of this signal.
    died_of: Option<i32>,
}

/// The `-P<hex>` suffix of a SID's last component (git's pid), if it has one.
fn sid_pid(sid: &str) -> Option<Pid> {
    let last = sid.rsplit('/').next()?;
    let at = last.rfind("-P")?;
    let rest = &last[at + 2..];
    // Google's repo tool may add `-<n>`.
    let hex = rest.split('-').next()?;
    if hex.is_empty() || hex.len() > 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let v = u32::from_str_radix(hex, 16).ok()?;
    Pid::try_from(v).ok().filter(|&p| p > 0 && p <= PID_MAX_LIMIT)
}

/// argv as comparable command words: `git-upload-pack x` and `/usr/bin/git upload-pack x` are
/// both `git upload-pack x`.
fn words(argv: &[String]) -> Vec<&str> {
    let mut out = Vec::with_capacity(argv.len() + 1);
    if let Some(a0) = argv.first() {
        let base = a0.rsplit('/').next().unwrap_or(a0);
        if let Some(sub) = base.strip_prefix("git-") {
            out.push("git");
            out.push(sub);
        } else {
            out.push(base);
        }
    }
    out.extend(argv.iter().skip(1).map(|s| s.as_str()));
    out
}

fn argv_matches(a: &[String], b: &[String]) -> bool {
    words(a) == words(b)
}

/// What a `child_start` ran: git runs a `use_shell` command with shell syntax in it as
/// `/bin/sh -c 'CMD "$@"' CMD ARGS...` (`prepare_shell_cmd` in run-command.c), else directly.
fn spawned_argv(argv: &[String], use_shell: bool) -> Vec<String> {
    const META: &[char] = &[
        '|', '&', ';', '<', '>', '(', ')', '$', '`', '\\', '"', '\'', ' ', '\t', '\n', '*', '?', '[', '#',
        '~', '=', '%',
    ];
    match argv.split_first() {
        Some((cmd, rest)) if use_shell && cmd.contains(META) => {
            let mut v = vec!["/bin/sh".to_string(), "-c".to_string()];
            if rest.is_empty() {
                v.push(cmd.clone());
            } else {
                v.push(format!("{cmd} \"$@\""));
                v.push(cmd.clone());
                v.extend(rest.iter().cloned());
            }
            v
        }
        _ => argv.to_vec(),
    }
}

fn comm_of(argv: &[String]) -> Option<String> {
    let a0 = argv.first()?;
    let base = a0.rsplit('/').next().unwrap_or(a0);
    let mut end = base.len().min(15);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    Some(base[..end].to_string())
}

/// Builds the processes and the event stream from what was read.
/// Builds one family's processes and hands their events to `out` (pids claimed there).
/// `earliest`: the time of a session that showed none.
fn build(mut r: Family, earliest: u64, out: &mut Out) {
    // Regions still open: closed at the end of their session (the last time it showed).
    let by_sid = &r.by_sid;
    let sessions = &r.sessions;
    let closed = r
        .notes
        .close_all_at(|sid| by_sid.get(sid).and_then(|&i| sessions[i].last).unwrap_or(0));
    r.note_events.extend(closed);
    let sessions = &r.sessions;

    // Child sessions per session, in start order; roots.
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); sessions.len()];
    let mut roots = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        let parent = s.sid.rsplit_once('/').and_then(|(p, _)| r.by_sid.get(p).copied());
        match parent {
            Some(p) if p != i => kids[p].push(i),
            _ => roots.push(i),
        }
    }
    let start_of = |i: usize| sessions[i].first.unwrap_or(earliest);
    for k in kids.iter_mut() {
        k.sort_by_key(|&i| (start_of(i), i));
    }
    roots.sort_by_key(|&i| (start_of(i), i));

    let mut procs: Vec<Proc> = Vec::new();
    // (session, phase) → process.
    let mut proc_of: HashMap<(usize, usize), usize> = HashMap::default();
    // Work list: (session, the process it runs in, exec'd into it at this time (continuation)).
    let mut work: Vec<(usize, usize, Option<u64>)> = Vec::new();
    for &ri in roots.iter().rev() {
        let s = &sessions[ri];
        let p = procs.len();
        procs.push(Proc {
            pid: sid_pid(&s.sid),
            fork: start_of(ri),
            execs: vec![(start_of(ri), s.argv.clone().unwrap_or_default())],
            has_session: true,
            ..Default::default()
        });
        work.push((ri, p, None));
    }
    while let Some((si, p, exec_at)) = work.pop() {
        let s = &sessions[si];
        procs[p].has_session = true;
        if let Some(t) = exec_at {
            let argv = s.argv.clone().unwrap_or_default();
            procs[p].execs.push((t, argv));
        }
        proc_of.insert((si, 0), p);
        // The session's own end.
        let ph0 = s.phases.first().copied().unwrap_or_default();
        if let Some((t, sig)) = ph0.signal {
            procs[p].exit = Some((
                t,
                ExitStatus::Signal {
                    signal: sig,
                    core: false,
                },
            ));
        } else if let Some((t, code)) = ph0.atexit.or(ph0.exit) {
            procs[p].exit = Some((t, status_of(code)));
        }
        // Detached forks.
        for (k, ph) in s.phases.iter().enumerate().skip(1) {
            let at = s.phases[k - 1]
                .exit
                .or(s.phases[k - 1].atexit)
                .map(|e| e.0)
                .or(s.phases[k - 1].last)
                .unwrap_or(procs[p].fork);
            let parent = proc_of.get(&(si, k - 1)).copied().unwrap_or(p);
            let q = procs.len();
            let exit = if let Some((t, sig)) = ph.signal {
                Some((
                    t,
                    ExitStatus::Signal {
                        signal: sig,
                        core: false,
                    },
                ))
            } else {
                ph.atexit.or(ph.exit).map(|(t, c)| (t, status_of(c)))
            };
            procs.push(Proc {
                parent: Some(parent),
                fork: at,
                exit,
                background: Some((at, BackgroundState::Ready)),
                has_session: true,
                ..Default::default()
            });
            proc_of.insert((si, k), q);
        }
        // Children started with child_start.
        let mut child_proc = Vec::with_capacity(s.children.len());
        for c in &s.children {
            if c.failed_spawn {
                child_proc.push(None);
                continue;
            }
            let parent = proc_of.get(&(si, c.phase)).copied().unwrap_or(p);
            let q = procs.len();
            procs.push(Proc {
                parent: Some(parent),
                pid: c.pid,
                fork: c.start,
                execs: vec![(c.start, spawned_argv(&c.argv, c.use_shell))],
                reported: c.code.map(|code| (c.end.unwrap_or(c.start), code)),
                background: c.ready.map(|st| (c.end.unwrap_or(c.start), st)),
                died_of: c.signal,
                ..Default::default()
            });
            child_proc.push(Some(q));
        }
        let mut direct_taken = vec![false; s.children.len()];
        let starts_sorted = s.children.windows(2).all(|w| w[0].start <= w[1].start);
        // Children by reported pid (a pid can come round again within one parent).
        let mut children_by_pid: HashMap<Pid, Vec<usize>> = HashMap::default();
        for (k, c) in s.children.iter().enumerate() {
            if let Some(pid) = c.pid {
                children_by_pid.entry(pid).or_default().push(k);
            }
        }
        let mut execs_used = vec![false; s.execs.len()];
        let own_pid = sid_pid(&s.sid);
        for &ci in &kids[si] {
            let c = &sessions[ci];
            let cstart = start_of(ci);
            let cpid = sid_pid(&c.sid);
            // An exec of this session's process.
            let exec = s.execs.iter().enumerate().rev().find(|(i, e)| {
                !execs_used[*i]
                    && e.1 <= cstart
                    && match (own_pid, cpid) {
                        (Some(a), Some(b)) => a == b,
                        _ => true,
                    }
            });
            if let Some((i, e)) = exec {
                execs_used[i] = true;
                work.push((ci, p, Some(e.1)));
                continue;
            }
            // The child_start it came from: by pid, else by time and argv.
            let by_pid = cpid.and_then(|cp| {
                let ks = children_by_pid.get_mut(&cp)?;
                let at = ks
                    .iter()
                    .position(|&k| !direct_taken[k] && child_proc[k].is_some())?;
                Some(ks.remove(at))
            });
            if let Some(k) = by_pid {
                direct_taken[k] = true;
                let q = child_proc[k].unwrap_or(p);
                let shell = s.children[k].use_shell
                    || !argv_matches(&s.children[k].argv, c.argv.as_deref().unwrap_or(&[]));
                if shell {
                    // A shell (or hook script) that exec'd the command.
                    work.push((ci, q, Some(cstart.max(s.children[k].start))));
                } else {
                    if let Some(a) = &c.argv {
                        procs[q].execs[0].1 = a.clone();
                    }
                    work.push((ci, q, None));
                }
                continue;
            }
            let covers = |k: usize| {
                let ch = &s.children[k];
                child_proc[k].is_some() && ch.start <= cstart && ch.end.is_none_or(|e| cstart <= e)
            };
            let cargv = c.argv.as_deref().unwrap_or(&[]);
            // Only children started by then can contain it (children are in start order,
            // almost always: then a binary search keeps this linear overall).
            let hi = if starts_sorted {
                s.children.partition_point(|ch| ch.start <= cstart)
            } else {
                s.children.len()
            };
            let direct = (0..hi).rev().find(|&k| {
                covers(k)
                    && !direct_taken[k]
                    && argv_matches(&s.children[k].argv, cargv)
                    && match (s.children[k].pid, cpid) {
                        (Some(a), Some(b)) => a == b,
                        _ => true,
                    }
            });
            if let Some(k) = direct {
                direct_taken[k] = true;
                let q = child_proc[k].unwrap_or(p);
                if let Some(a) = &c.argv {
                    procs[q].execs[0].1 = a.clone();
                }
                // No child_exit (the parent died first): the SID knows the pid.
                procs[q].pid = procs[q].pid.or(cpid);
                work.push((ci, q, None));
                continue;
            }
            // Inside a child's span but another process: that child's child (via a shell, a
            // hook script). Otherwise a child of this process no child_start reported.
            let parent = (0..hi)
                .rev()
                .find(|&k| covers(k))
                .and_then(|k| child_proc[k])
                .unwrap_or(p);
            let q = procs.len();
            procs.push(Proc {
                parent: Some(parent),
                pid: cpid,
                fork: cstart,
                execs: vec![(cstart, c.argv.clone().unwrap_or_default())],
                has_session: true,
                ..Default::default()
            });
            work.push((ci, q, None));
        }
        // Execs with no session after them: the process runs something else now.
        for (i, e) in s.execs.iter().enumerate() {
            if !execs_used[i] {
                procs[p].execs.push((e.1, e.2.clone()));
            }
        }
    }

    // Ends the sessions did not write: what the parent reported.
    for pr in procs.iter_mut() {
        if pr.exit.is_none() {
            if let Some((t, code)) = pr.reported {
                let st = if let Some(signal) = pr.died_of {
                    ExitStatus::Signal { signal, core: false }
                } else if pr.has_session && code > 128 && code < 128 + 65 {
                    ExitStatus::Signal {
                        signal: code - 128,
                        core: false,
                    }
                } else {
                    status_of(code)
                };
                pr.exit = Some((t, st));
            }
        }
    }
    // Times consistent: a child forks after its parent, execs and exits after its fork.
    for i in 0..procs.len() {
        if let Some(par) = procs[i].parent {
            if par < i {
                procs[i].fork = procs[i].fork.max(procs[par].fork);
            }
        }
        let f = procs[i].fork;
        let mut last = f;
        for e in procs[i].execs.iter_mut() {
            e.0 = e.0.max(last);
            last = e.0;
        }
        if let Some(x) = procs[i].exit.as_mut() {
            x.0 = x.0.max(last);
        }
        let exit = procs[i].exit.map(|x| x.0);
        if let Some(b) = procs[i].background.as_mut() {
            // Released before it ended (a stream saying otherwise contradicts itself).
            b.0 = b.0.max(f).min(exit.unwrap_or(u64::MAX));
        }
    }
    // pids: known ones unless the same pid is alive twice at once (in this family or one
    // built before whose exit is not fed yet); stand-ins otherwise.
    let mut order: Vec<usize> = (0..procs.len()).collect();
    order.sort_by_key(|&i| (procs[i].pid, procs[i].fork, i));
    let mut pid_of = vec![0; procs.len()];
    for &i in &order {
        let end = procs[i].exit.map_or(u64::MAX, |x| x.0);
        pid_of[i] = out.claim(procs[i].pid, procs[i].fork, end);
    }

    // The events, in time order: fork < exec < notes < background < exit at equal times,
    // parents before children (creation order).
    let mut push = |ts: u64, prio: u8, e: Event| out.push(ts, prio, e);
    // Parents are created before their children (a parent's index is smaller), so one pass
    // gives every depth; feeding by depth puts a parent's fork before its children's at equal
    // times.
    let mut depth = vec![0usize; procs.len()];
    for i in 0..procs.len() {
        if let Some(p) = procs[i].parent.filter(|&p| p < i) {
            depth[i] = depth[p] + 1;
        }
    }
    let mut by_depth: Vec<usize> = (0..procs.len()).collect();
    by_depth.sort_by_key(|&i| (depth[i], i));
    for &i in &by_depth {
        // Moved, not copied: nothing reads a process's execs after this.
        let execs = std::mem::take(&mut procs[i].execs);
        let pr = &procs[i];
        let pid = pid_of[i];
        let ppid = pr.parent.map_or(0, |p| pid_of[p]);
        push(
            pr.fork,
            0,
            Event::Fork {
                ts: pr.fork,
                parent_tgid: ppid,
                child_pid: pid,
                child_tgid: pid,
            },
        );
        for (t, argv) in execs {
            push(t, 1, Event::Exec { ts: t, tgid: pid });
            push(
                t,
                1,
                Event::ExecDetails {
                    tgid: pid,
                    details: ExecDetails {
                        comm: comm_of(&argv),
                        argv: Some(Argv::from(argv)),
                        ..Default::default()
                    },
                },
            );
        }
        if let Some((t, state)) = pr.background {
            push(
                t,
                3,
                Event::Background {
                    ts: t,
                    tgid: pid,
                    state,
                    report: true,
                },
            );
        }
        if let Some((t, st)) = pr.exit {
            push(
                t,
                4,
                Event::Exit {
                    ts: t,
                    pid,
                    tgid: pid,
                    status: wait_status(st),
                    parent_tgid: ppid,
                },
            );
        }
    }
    // What each process cost, when the stream carries it (proctrace's own Trace2 output writes
    // the figures as `data` in category `proctrace`): back into `Event::Usage`, by process.
    let mut costs: Vec<Option<Box<Usage>>> = Vec::new();
    // Notes come in runs of one slot: its process is looked up once per run.
    let mut last: Option<(Pid, usize)> = None;
    for mut e in std::mem::take(&mut r.note_events) {
        let slot = match &e {
            Event::Region { tgid, .. } | Event::Data { tgid, .. } => *tgid,
            _ => continue,
        };
        let p = match last {
            Some((s, p)) if s == slot => p,
            _ => {
                let Some(&(si, ph)) = usize::try_from(slot).ok().and_then(|s| r.slots.get(s)) else {
                    continue;
                };
                let Some(&p) = proc_of.get(&(si, ph)).or_else(|| proc_of.get(&(si, 0))) else {
                    continue;
                };
                last = Some((slot, p));
                p
            }
        };
        let fork = procs[p].fork;
        let pid = pid_of[p];
        let ts = match &mut e {
            Event::Region { tgid, region } => {
                *tgid = pid;
                region.ts = region.ts.max(fork);
                region.end = region.end.max(region.ts);
                region.end
            }
            Event::Data { tgid, data } => {
                if data.category == "proctrace" {
                    if let DataValue::Text(v) = &data.value {
                        if let Some((set, x)) = cost_figure(&data.key, v) {
                            if costs.is_empty() {
                                costs.resize(procs.len(), None);
                            }
                            set(costs[p].get_or_insert_with(Box::default), x);
                            continue;
                        }
                    }
                }
                *tgid = pid;
                data.ts = data.ts.max(fork);
                data.ts
            }
            _ => continue,
        };
        push(ts, 2, e);
    }
    for (p, u) in costs.into_iter().enumerate() {
        // Before the exit at the same time (prio 3 < 4); figures of a process that never ended
        // in the stream are left out, as a backend would.
        if let (Some(usage), Some((t, _))) = (u, procs[p].exit) {
            push(
                t,
                3,
                Event::Usage {
                    tgid: pid_of[p],
                    usage,
                },
            );
        }
    }
    let roots: Vec<usize> = (0..procs.len()).filter(|&i| procs[i].parent.is_none()).collect();
    out.roots += roots.len();
    if let Some(&last) = roots.last() {
        out.root_pid = Some(pid_of[last]);
    }
    if out.roots >= 2 {
        out.decided = true;
    }
    out.held.end_run();
}

/// Puts one figure into a [`Usage`].
type SetFigure = fn(&mut Usage, u64);

/// One cost figure as proctrace's Trace2 sink writes it (`data`, category `proctrace`, key
/// named as on the JSON Lines `exit` line, seconds with decimals or a count): where it goes in
/// a [`Usage`] and its value (ns for seconds). `None` for any other key, or a value that is not
/// a non-negative number (then it stays an ordinary `data` event).
fn cost_figure(key: &str, value: &str) -> Option<(SetFigure, u64)> {
    let secs = || {
        value
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0 && *x < 1e9)
            .map(|x| (x * 1e9).round() as u64)
    };
    let count = || value.trim().parse::<u64>().ok();
    let set: SetFigure = match key {
        "cpu_user_s" => |u, x| u.cpu_user_ns = x,
        "cpu_sys_s" => |u, x| u.cpu_sys_ns = x,
        "cpu_delay_s" => |u, x| u.cpu_delay_ns = Some(x),
        "io_delay_s" => |u, x| u.io_delay_ns = Some(x),
        "max_rss_kib" => |u, x| u.max_rss_kib = x,
        "read_chars" => |u, x| u.read_chars = x,
        "write_chars" => |u, x| u.write_chars = x,
        "read_bytes" => |u, x| u.read_bytes = x,
        "write_bytes" => |u, x| u.write_bytes = x,
        "cancelled_write_bytes" => |u, x| u.cancelled_write_bytes = x,
        "ctx_switches_voluntary" => |u, x| u.vol_ctx_switches = x,
        "ctx_switches_involuntary" => |u, x| u.invol_ctx_switches = x,
        _ => return None,
    };
    let x = match key.ends_with("_s") {
        true => secs()?,
        false => count()?,
    };
    Some((set, x))
}

/// A file to read and the time of its first event (where the merge opens it).
struct FileStart {
    path: PathBuf,
    first: u64,
}

/// The time of a file's first event (0 when its first line has none: opened first).
fn first_time(path: &Path) -> Result<u64, InputError> {
    let file = std::fs::File::open(path).map_err(|source| InputError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut r = EventReader::new(
        std::io::BufReader::with_capacity(8 << 10, file),
        String::new(),
        ReadOptions { lenient: true },
    );
    let mut first = 0;
    let _ = r.for_each_event(|ev, _| {
        first = ev.time.map_or(0, ns);
        false
    });
    Ok(first)
}

/// How many files the merge keeps open at once: half the soft limit on descriptors (the rest
/// is the outputs' and the process's), at least 4, at most 4096.
fn max_open_files() -> usize {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given, nothing else.
    let soft = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } {
        0 => r.rlim_cur,
        _ => 1024,
    };
    usize::try_from(soft / 2).unwrap_or(4096).clamp(4, 4096)
}

/// One file of the merge, open, with its next event.
struct OpenFile {
    path: PathBuf,
    reader: EventReader<std::io::BufReader<std::fs::File>>,
    /// The time of the last event that had one (for lines without `time`).
    last: u64,
}

impl OpenFile {
    /// The next event and the time it is merged at, or None at the end (the error, if any,
    /// goes to `err`).
    fn next(&mut self, err: &mut Option<InputError>) -> Option<(u64, trace2::Event<'static>)> {
        match self.reader.next()? {
            Ok(rec) => {
                if let Some(t) = rec.event.time {
                    self.last = self.last.max(ns(t));
                }
                Some((self.last, rec.event))
            }
            Err(e) => {
                *err = Some(input_error(e, &self.path));
                None
            }
        }
    }
}

/// Reads `files` (sorted by first time) through `st`: one file straight through; several as a
/// k-way merge by time that opens a file when the merge reaches its first event and closes it
/// at its end, so open files are the sessions overlapping in time (waiting, at the descriptor
/// limit, for one to close: its lines then come late, counted).
fn read_files(files: &[FileStart], lenient: bool, st: &mut Stream, feed: &mut dyn FnMut(Event)) {
    if let [one] = files {
        st.stats.bytes += std::fs::metadata(&one.path).map(|m| m.len()).unwrap_or(0);
        match std::fs::File::open(&one.path) {
            Ok(f) => {
                st.read(std::io::BufReader::with_capacity(256 << 10, f), &one.path, feed);
            }
            Err(source) => {
                st.error = Some(InputError::Io {
                    path: one.path.clone(),
                    source,
                })
            }
        }
        return;
    }
    let cap = max_open_files();
    let mut open: Vec<Option<(OpenFile, trace2::Event<'static>)>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut heap: BinaryHeap<std::cmp::Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut next = 0;
    let mut n_open = 0;
    let mut err = None;
    let close = |st: &mut Stream, f: OpenFile| st.count(f.reader.stats());
    'merge: loop {
        // Open the files that start before the earliest pending event.
        while let Some(fs) = files.get(next) {
            let head = heap.peek().map(|r| r.0.0);
            if head.is_some_and(|h| fs.first > h || n_open >= cap) {
                break;
            }
            next += 1;
            st.stats.files += 1;
            let file = match std::fs::File::open(&fs.path) {
                Ok(f) => f,
                Err(source) => {
                    err = Some(InputError::Io {
                        path: fs.path.clone(),
                        source,
                    });
                    break 'merge;
                }
            };
            st.stats.bytes += file.metadata().map(|m| m.len()).unwrap_or(0);
            let mut of = OpenFile {
                path: fs.path.clone(),
                reader: EventReader::new(
                    std::io::BufReader::with_capacity(64 << 10, file),
                    fs.path.display().to_string(),
                    ReadOptions { lenient },
                ),
                last: fs.first,
            };
            match of.next(&mut err) {
                Some((t, ev)) => {
                    let slot = free.pop().unwrap_or_else(|| {
                        open.push(None);
                        open.len() - 1
                    });
                    open[slot] = Some((of, ev));
                    heap.push(std::cmp::Reverse((t, slot)));
                    n_open += 1;
                }
                None => {
                    close(st, of);
                    if err.is_some() {
                        break 'merge;
                    }
                }
            }
        }
        let Some(std::cmp::Reverse((_, slot))) = heap.pop() else {
            break;
        };
        let Some((mut of, ev)) = open[slot].take() else {
            continue;
        };
        st.take(&ev, feed);
        match of.next(&mut err) {
            Some((t, ev)) => {
                open[slot] = Some((of, ev));
                heap.push(std::cmp::Reverse((t, slot)));
            }
            None => {
                close(st, of);
                free.push(slot);
                n_open -= 1;
                if err.is_some() {
                    break;
                }
            }
        }
    }
    for (of, _) in open.into_iter().flatten() {
        close(st, of);
    }
    if err.is_some() {
        st.error = err;
    }
}

impl Trace2Input {
    /// Opens Trace2 event files and target directories (every regular file in them). Only the
    /// first line of each file is read here (to order the files by time); the rest is read
    /// while [`feed_all`](Input::feed_all) runs. A path that cannot be read is an error; a bad
    /// line is one too (strict mode), reported by `feed_all` after what came before it.
    pub fn open(paths: &[PathBuf], opts: &InputOptions) -> Result<Trace2Input, InputError> {
        let mut seen = std::collections::HashSet::new();
        let mut files = Vec::new();
        for path in paths {
            let io = |source| InputError::Io {
                path: path.clone(),
                source,
            };
            let meta = std::fs::metadata(path).map_err(io)?;
            let names = if meta.is_dir() {
                let mut names: Vec<PathBuf> = std::fs::read_dir(path)
                    .map_err(io)?
                    .filter_map(|e| e.ok())
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                    .map(|e| e.path())
                    .collect();
                names.sort();
                names
            } else {
                vec![path.clone()]
            };
            for f in names {
                // A file named twice (a directory and a file in it) is read once: its lines
                // twice would look like a second run of every session in it.
                if !seen.insert(std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone())) {
                    continue;
                }
                let first = first_time(&f)?;
                files.push(FileStart { path: f, first });
            }
        }
        // Stable: files starting together stay in name order.
        files.sort_by_key(|f| f.first);
        let earliest = files
            .iter()
            .map(|f| f.first)
            .filter(|&t| t > 0)
            .min()
            .unwrap_or(0);
        Ok(Trace2Input {
            header: opts.analyze_header(paths, earliest, 0),
            stats: InputStats {
                sessions: Some(0),
                ..Default::default()
            },
            source: Source::Files {
                files,
                lenient: opts.lenient,
            },
            error: None,
        })
    }

    /// Reads one stream from memory or any reader (`name` names it in errors and the header),
    /// whole, here. Never fails here and never panics: a bad line is reported by
    /// [`feed_all`](Input::feed_all).
    pub fn from_reader<R: BufRead>(input: R, name: &Path, opts: &InputOptions) -> Trace2Input {
        let mut st = Stream::new(opts.lenient);
        let mut counted = CountingReader { inner: input, n: 0 };
        let mut events = Vec::new();
        let feed = &mut |e| events.push(e);
        st.read(&mut counted, name, feed);
        st.finish(feed);
        st.stats.bytes += counted.n;
        Trace2Input {
            header: opts.analyze_header(&[name.to_path_buf()], st.min_time.unwrap_or(0), 0),
            stats: st.stats,
            source: Source::Made(events),
            error: st.error,
        }
    }
}

struct CountingReader<R> {
    inner: R,
    n: u64,
}

impl<R: BufRead> std::io::Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for CountingReader<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.n += amt as u64;
        self.inner.consume(amt)
    }
}

impl Input for Trace2Input {
    fn header(&self) -> &Header {
        &self.header
    }

    fn feed_all(&mut self, feed: &mut dyn FnMut(Event)) -> Result<(), InputError> {
        match std::mem::replace(&mut self.source, Source::Done) {
            Source::Files { files, lenient } => {
                let mut st = Stream::new(lenient);
                read_files(&files, lenient, &mut st, feed);
                st.finish(feed);
                self.stats = st.stats;
                if let Some(e) = st.error {
                    self.error = Some(e);
                }
            }
            Source::Made(events) => events.into_iter().for_each(feed),
            Source::Done => {}
        }
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn recorded_summary(&self) -> Option<&Summary> {
        None
    }

    fn stats(&self) -> InputStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tracker::{Scope, Tracker, TrackerOptions};

    /// proctrace's own cost figures (`data`, category `proctrace`) are read back; other keys and
    /// values that are not non-negative numbers are not figures (they stay data).
    #[test]
    fn cost_figures_are_read_back_and_other_data_is_not() {
        let mut u = Usage::default();
        for (k, v) in [
            ("cpu_user_s", "1.250000"),
            ("cpu_sys_s", "0.003001"),
            ("max_rss_kib", "2048"),
            ("ctx_switches_voluntary", "5"),
            ("ctx_switches_involuntary", "7"),
            ("write_chars", "4096"),
            ("cpu_delay_s", "0.001000"),
        ] {
            let (set, x) = cost_figure(k, v).unwrap_or_else(|| panic!("{k}={v}"));
            set(&mut u, x);
        }
        assert_eq!((u.cpu_user_ns, u.cpu_sys_ns), (1_250_000_000, 3_001_000));
        assert_eq!((u.max_rss_kib, u.write_chars), (2048, 4096));
        assert_eq!((u.vol_ctx_switches, u.invol_ctx_switches), (5, 7));
        assert_eq!((u.cpu_delay_ns, u.io_delay_ns), (Some(1_000_000), None));
        for (k, v) in [
            ("cpu_user_s", "-1"),
            ("cpu_user_s", "NaN"),
            ("cpu_user_s", "inf"),
            ("cpu_user_s", "1e300"),
            ("max_rss_kib", "1.5"),
            ("max_rss_kib", "-3"),
            ("uid", "0"),
            ("", ""),
        ] {
            assert!(cost_figure(k, v).is_none(), "{k}={v}");
        }
    }

    /// One event line: `{"event":E,"sid":S,"thread":"main","time":T,...rest}`.
    fn line(ev: &str, sid: &str, time: Option<&str>, rest: &str) -> String {
        let time = time
            .map(|t| format!(",\"time\":\"2026-11-30T10:00:{t}Z\""))
            .unwrap_or_default();
        let rest = if rest.is_empty() {
            String::new()
        } else {
            format!(",{rest}")
        };
        format!("{{\"event\":\"{ev}\",\"sid\":\"{sid}\",\"thread\":\"main\"{time}{rest}}}\n")
    }

    fn read(text: &[u8], lenient: bool) -> (Trace2Input, Vec<Event>, Result<(), InputError>) {
        let opts = InputOptions { lenient, tool: None };
        let mut input = Trace2Input::from_reader(text, Path::new("mem"), &opts);
        let mut events = Vec::new();
        let r = input.feed_all(&mut |e| events.push(e));
        (input, events, r)
    }

    /// pid, ppid, argv of the last exec, exit status, background.
    type Row = (Pid, Pid, Vec<String>, Option<ExitStatus>, bool);

    /// The events through the tracker, one row per process by pid.
    fn model(events: &[Event]) -> Vec<Row> {
        let mut t = Tracker::new(TrackerOptions {
            scope: Scope::All,
            retain_exited: true,
            want_details: true,
        });
        let mut facts = Vec::new();
        for e in events {
            t.apply(e, &mut facts);
        }
        let mut out = Vec::new();
        let mut stack: Vec<_> = t.roots().to_vec();
        while let Some(id) = stack.pop() {
            let r = t.get(id).unwrap();
            out.push((
                r.pid,
                r.ppid,
                r.argv().map(|a| a.to_vec()).unwrap_or_default(),
                r.exit.and_then(|x| x.status),
                r.background.is_some(),
            ));
            stack.extend(r.children.iter().copied());
        }
        out.sort_by_key(|p| p.0);
        out
    }

    const A: &str = "20261130T100000.000000Z-H0a7c9cdf-P00000064"; // pid 100
    const B: &str = "20261130T100000.100000Z-H0a7c9cdf-P000000c8"; // pid 200

    #[test]
    fn parent_child_by_pid_and_interleaved_lines() {
        let b = format!("{A}/{B}");
        let mut s = String::new();
        s += &line("version", A, Some("00.000000"), r#""evt":"4","exe":"2.47.3""#);
        s += &line(
            "start",
            A,
            Some("00.000010"),
            r#""t_abs":0.00001,"argv":["git","fetch"]"#,
        );
        s += &line(
            "child_start",
            A,
            Some("00.050000"),
            r#""child_id":0,"child_class":"?","use_shell":false,"argv":["git","index-pack"]"#,
        );
        s += &line("version", &b, Some("00.100000"), r#""evt":"4","exe":"2.47.3""#);
        s += &line(
            "start",
            &b,
            Some("00.100010"),
            r#""t_abs":0.00001,"argv":["/usr/lib/git-core/git","index-pack"]"#,
        );
        s += &line(
            "region_enter",
            &b,
            Some("00.110000"),
            r#""nesting":1,"category":"pack","label":"write""#,
        );
        s += &line(
            "region_leave",
            &b,
            Some("00.120000"),
            r#""t_rel":0.01,"nesting":1,"category":"pack","label":"write""#,
        );
        s += &line("exit", &b, Some("00.130000"), r#""t_abs":0.03,"code":0"#);
        s += &line("atexit", &b, Some("00.130001"), r#""t_abs":0.03,"code":0"#);
        s += &line(
            "child_exit",
            A,
            Some("00.140000"),
            r#""child_id":0,"pid":200,"code":0,"t_rel":0.09"#,
        );
        // A hook via sh: no session of its own.
        s += &line(
            "child_start",
            A,
            Some("00.150000"),
            r#""child_id":1,"child_class":"hook","hook_name":"post-x","use_shell":false,"argv":[".git/hooks/post-x"]"#,
        );
        s += &line(
            "child_exit",
            A,
            Some("00.160000"),
            r#""child_id":1,"pid":300,"code":3,"t_rel":0.01"#,
        );
        s += &line("exit", A, Some("00.200000"), r#""t_abs":0.2,"code":1"#);
        s += &line("atexit", A, Some("00.200001"), r#""t_abs":0.2,"code":1"#);
        let (input, events, r) = read(s.as_bytes(), false);
        r.unwrap();
        assert_eq!(input.stats().sessions, Some(2));
        assert_eq!(events[0], Event::Root { tgid: 100 });
        let m = model(&events);
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!((m[0].0, m[0].1, m[0].3), (100, 0, Some(ExitStatus::Code(1))));
        assert_eq!((m[1].0, m[1].1, m[1].3), (200, 100, Some(ExitStatus::Code(0))));
        assert_eq!(m[1].2, vec!["/usr/lib/git-core/git", "index-pack"]);
        assert_eq!((m[2].0, m[2].1, m[2].3), (300, 100, Some(ExitStatus::Code(3))));
        // The region is on index-pack's process, at its times.
        let region = events
            .iter()
            .find_map(|e| match e {
                Event::Region { tgid, region } => Some((*tgid, region.end - region.ts)),
                _ => None,
            })
            .unwrap();
        assert_eq!(region, (200, 10_000_000));
        // Fed in time order.
        let ts: Vec<u64> = events.iter().filter_map(|e| e.ts()).collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
    }

    #[test]
    fn second_exit_after_atexit_is_a_detached_fork() {
        let mut s = String::new();
        s += &line("version", A, Some("00.000000"), r#""evt":"4","exe":"x""#);
        s += &line(
            "start",
            A,
            Some("00.000010"),
            r#""t_abs":0.0,"argv":["git","maintenance","run","--detach"]"#,
        );
        s += &line(
            "region_enter",
            A,
            Some("00.010000"),
            r#""nesting":1,"category":"maintenance","label":"detach""#,
        );
        s += &line("exit", A, Some("00.020000"), r#""t_abs":0.02,"code":0"#);
        s += &line("atexit", A, Some("00.020001"), r#""t_abs":0.02,"code":0"#);
        s += &line(
            "region_leave",
            A,
            Some("00.500000"),
            r#""t_rel":0.49,"nesting":1,"category":"maintenance","label":"detach""#,
        );
        s += &line("exit", A, Some("00.600000"), r#""t_abs":0.6,"code":0"#);
        s += &line("atexit", A, Some("00.600001"), r#""t_abs":0.6,"code":0"#);
        let (_, events, r) = read(s.as_bytes(), false);
        r.unwrap();
        let m = model(&events);
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!((m[0].0, m[0].4), (100, false));
        let fork = &m[1];
        assert!(fork.0 > PID_MAX_LIMIT, "a stand-in pid: {fork:?}");
        assert_eq!((fork.1, fork.3, fork.4), (100, Some(ExitStatus::Code(0)), true));
        // The region left by the daemon is the daemon's.
        let tgid = events.iter().find_map(|e| match e {
            Event::Region { tgid, .. } => Some(*tgid),
            _ => None,
        });
        assert_eq!(tgid, Some(fork.0));
    }

    #[test]
    fn child_ready_is_a_background_child() {
        let mut s = String::new();
        s += &line("version", A, Some("00.000000"), r#""evt":"4","exe":"x""#);
        s += &line(
            "start",
            A,
            Some("00.000010"),
            r#""t_abs":0.0,"argv":["git","fsmonitor--daemon","start"]"#,
        );
        s += &line(
            "child_start",
            A,
            Some("00.010000"),
            r#""child_id":0,"child_class":"background","use_shell":false,"argv":["git","fsmonitor--daemon","run"]"#,
        );
        s += &line(
            "child_ready",
            A,
            Some("00.120000"),
            r#""child_id":0,"pid":300,"ready":"timeout","t_rel":0.11"#,
        );
        s += &line("exit", A, Some("00.130000"), r#""t_abs":0.13,"code":0"#);
        s += &line("atexit", A, Some("00.130001"), r#""t_abs":0.13,"code":0"#);
        let (_, events, r) = read(s.as_bytes(), false);
        r.unwrap();
        assert!(
            events.contains(&Event::Background {
                ts: 1_796_032_800_120_000_000,
                tgid: 300,
                state: BackgroundState::Timeout,
                report: true
            }),
            "{events:#?}"
        );
        let m = model(&events);
        assert_eq!(m.len(), 2);
        // Still running: git never learns how it ends.
        assert_eq!((m[1].0, m[1].1, m[1].3, m[1].4), (300, 100, None, true));
    }

    #[test]
    fn exec_then_nested_session_is_one_process() {
        let a2 = format!("{A}/20261130T100000.300000Z-H0a7c9cdf-P00000064");
        let mut s = String::new();
        s += &line("version", A, Some("00.000000"), r#""evt":"4","exe":"x""#);
        s += &line(
            "start",
            A,
            Some("00.000010"),
            r#""t_abs":0.0,"argv":["test-tool","trace2","005exec","version"]"#,
        );
        s += &line(
            "exec",
            A,
            Some("00.200000"),
            r#""exec_id":0,"exe":"git","argv":["git","version"]"#,
        );
        s += &line("version", &a2, Some("00.300000"), r#""evt":"4","exe":"x""#);
        s += &line(
            "start",
            &a2,
            Some("00.300010"),
            r#""t_abs":0.0,"argv":["git","version"]"#,
        );
        s += &line("exit", &a2, Some("00.400000"), r#""t_abs":0.1,"code":0"#);
        s += &line("atexit", &a2, Some("00.400001"), r#""t_abs":0.1,"code":0"#);
        let (input, events, r) = read(s.as_bytes(), false);
        r.unwrap();
        assert_eq!(input.stats().sessions, Some(2));
        let m = model(&events);
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(
            (m[0].0, m[0].2.clone(), m[0].3),
            (
                100,
                vec!["git".to_string(), "version".into()],
                Some(ExitStatus::Code(0))
            )
        );
        let execs = events.iter().filter(|e| matches!(e, Event::Exec { .. })).count();
        assert_eq!(execs, 2);
    }

    #[test]
    fn truncated_session_stays_running_and_missing_parent_is_a_root() {
        // The parent's file is missing: B's parent SID is not in the input.
        let b = format!("{A}/{B}");
        let mut s = String::new();
        s += &line("version", &b, Some("00.100000"), r#""evt":"4","exe":"x""#);
        s += &line(
            "start",
            &b,
            Some("00.100010"),
            r#""t_abs":0.0,"argv":["git","gc"]"#,
        );
        s += &line(
            "region_enter",
            &b,
            Some("00.110000"),
            r#""nesting":1,"category":"gc","label":"repack""#,
        );
        s += r#"{"event":"region_leave","sid":"x","thr"#;
        let (input, events, r) = read(s.as_bytes(), false);
        r.unwrap();
        assert_eq!(input.stats().truncated, 1);
        let m = model(&events);
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].0, m[0].1, m[0].3), (200, 0, None));
        // The open region is closed at the last time seen.
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Region { tgid: 200, .. }))
        );
    }

    #[test]
    fn brief_mode_times_from_version_and_t_abs() {
        let b = format!("{A}/{B}");
        let mut s = String::new();
        s += &line("version", A, Some("00.000000"), r#""evt":"4","exe":"x""#);
        s += &line("start", A, None, r#""t_abs":0.000010,"argv":["git","x"]"#);
        s += &line(
            "child_start",
            A,
            None,
            r#""child_id":0,"child_class":"?","use_shell":false,"argv":["git","y"]"#,
        );
        s += &line("version", &b, Some("00.100000"), r#""evt":"4","exe":"x""#);
        s += &line("start", &b, None, r#""t_abs":0.00001,"argv":["git","y"]"#);
        s += &line("exit", &b, None, r#""t_abs":0.05,"code":2"#);
        s += &line("atexit", &b, Some("00.150001"), r#""t_abs":0.05,"code":2"#);
        s += &line(
            "child_exit",
            A,
            None,
            r#""child_id":0,"pid":200,"code":2,"t_rel":0.2"#,
        );
        s += &line("exit", A, None, r#""t_abs":0.5,"code":2"#);
        s += &line("atexit", A, Some("00.500001"), r#""t_abs":0.5,"code":2"#);
        let (input, events, r) = read(s.as_bytes(), false);
        r.unwrap();
        let t0 = input.header().ts;
        let m = model(&events);
        assert_eq!(m.len(), 2);
        assert_eq!((m[1].0, m[1].1, m[1].3), (200, 100, Some(ExitStatus::Code(2))));
        let exit_of = |pid| {
            events.iter().find_map(|e| match e {
                Event::Exit { ts, tgid, .. } if *tgid == pid => Some(ts - t0),
                _ => None,
            })
        };
        assert_eq!(exit_of(100), Some(500_001_000));
        assert_eq!(exit_of(200), Some(150_001_000));
    }

    #[test]
    fn non_utf8_bad_lines_strict_and_lenient() {
        let mut s = Vec::new();
        s.extend(line("version", A, Some("00.000000"), r#""evt":"4","exe":"x""#).bytes());
        s.extend(b"{\"event\":\"start\",\"sid\":\"".iter());
        s.extend(A.bytes());
        s.extend(b"\",\"thread\":\"main\",\"t_abs\":0.1,\"argv\":[\"git\",\"caf\xe9\xff\"]}\n");
        s.extend(b"not json\n");
        s.extend(line("exit", A, Some("00.100000"), r#""t_abs":0.1,"code":0"#).bytes());
        let (_, events, r) = read(&s, false);
        match r {
            Err(InputError::Line { path, line, .. }) => assert_eq!((path, line), (PathBuf::from("mem"), 3)),
            other => panic!("{other:?}"),
        }
        // What came before the bad line was fed: the process, running.
        let m = model(&events);
        assert_eq!((m.len(), m[0].3), (1, None));
        assert!(m[0].2[1].starts_with("caf"));
        let (input, events, r) = read(&s, true);
        r.unwrap();
        assert_eq!(input.stats().skipped_lines, 1);
        assert_eq!(model(&events)[0].3, Some(ExitStatus::Code(0)));
    }

    /// A whole session (version, start, a region, exit, atexit) of `sid` from `t0` to `t1`
    /// seconds (< 60), pid from the SID.
    fn session(sid: &str, t0: f64, t1: f64, argv: &str) -> Vec<String> {
        let t = |s: f64| format!("{s:09.6}");
        vec![
            line("version", sid, Some(&t(t0)), r#""evt":"4","exe":"x""#),
            line(
                "start",
                sid,
                Some(&t(t0)),
                &format!(r#""t_abs":0.0,"argv":["git","{argv}"]"#),
            ),
            line(
                "region_enter",
                sid,
                Some(&t(t0 + 0.001)),
                r#""nesting":1,"category":"c","label":"l""#,
            ),
            line(
                "region_leave",
                sid,
                Some(&t(t1 - 0.001)),
                r#""t_rel":0.0,"nesting":1,"category":"c","label":"l""#,
            ),
            line("exit", sid, Some(&t(t1)), r#""t_abs":0.0,"code":0"#),
            line("atexit", sid, Some(&t(t1)), r#""t_abs":0.0,"code":0"#),
        ]
    }

    #[test]
    fn lines_out_of_order_within_the_window_are_fed_in_order() {
        // Session A ends (at 1.5 s) before session B's first line (at 0.5 s) is written: 1 s
        // late, within the window. Then C, 1.9 s after B: A and B are built and fed first.
        let a = "a-P00000064";
        let b = "b-P000000c8";
        let c = "c-P0000012c";
        let mut s = session(a, 1.0, 1.5, "a").concat();
        s += &session(b, 0.5, 1.2, "b").concat();
        s += &session(c, 3.1, 3.2, "c").concat();
        let (input, events, r) = read(s.as_bytes(), false);
        r.unwrap();
        assert_eq!(input.stats().late_lines, 0);
        let ts: Vec<u64> = events.iter().filter_map(|e| e.ts()).collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{events:#?}");
        let forks: Vec<Pid> = events
            .iter()
            .filter_map(|e| match e {
                Event::Fork { child_tgid, .. } => Some(*child_tgid),
                _ => None,
            })
            .collect();
        assert_eq!(forks, vec![200, 100, 300]);
        let m = model(&events);
        assert_eq!(m.len(), 3);
        assert!(m.iter().all(|p| p.3 == Some(ExitStatus::Code(0))));
    }

    #[test]
    fn a_line_older_than_the_window_is_counted_and_still_read() {
        // A ends at 5 s and C starts at 9 s: A is fed. Then B, from 1 s to 2 s: older than what
        // was fed, beyond the window. Its 6 lines are counted late, and B is still a process
        // with its region.
        let mut s = session("a-P00000064", 4.0, 5.0, "a").concat();
        s += &line(
            "version",
            "c-P0000012c",
            Some("09.000000"),
            r#""evt":"4","exe":"x""#,
        );
        s += &session("b-P000000c8", 1.0, 2.0, "b").concat();
        let (input, events, r) = read(s.as_bytes(), false);
        r.unwrap();
        assert_eq!(input.stats().late_lines, 6);
        let m = model(&events);
        assert_eq!(m.iter().map(|p| p.0).collect::<Vec<_>>(), vec![100, 200, 300]);
        assert_eq!(m[1].3, Some(ExitStatus::Code(0)));
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Region { tgid: 200, .. }))
        );
        // Within each process, still in order: B's fork before its region and its exit.
        let pos = |f: &dyn Fn(&Event) -> bool| events.iter().position(f).unwrap();
        let fork = pos(&|e| matches!(e, Event::Fork { child_tgid: 200, .. }));
        let region = pos(&|e| matches!(e, Event::Region { tgid: 200, .. }));
        let exit = pos(&|e| matches!(e, Event::Exit { tgid: 200, .. }));
        assert!(fork < region && region < exit);
    }

    #[test]
    fn sessions_that_ended_are_dropped_while_reading() {
        // 200 sessions one after another, 1 s apart: at most the window's worth are live.
        let mut st = Stream::new(false);
        let mut fed = 0usize;
        let mut most = 0usize;
        for i in 0..200u32 {
            let sid = format!("s{i}-P{:08x}", 1000 + i);
            let t0 = f64::from(i) * 1.0;
            let text = session(&sid, t0 % 60.0, t0 % 60.0 + 0.5, "x").concat();
            // Minutes roll over: shift the whole line's minute.
            let text = text.replace("10:00:", &format!("10:{:02}:", i / 60));
            st.read(text.as_bytes(), Path::new("mem"), &mut |_| fed += 1);
            most = most.max(st.fams.iter().flatten().count());
        }
        st.finish(&mut |_| fed += 1);
        assert!(most <= 4, "{most} families live at once");
        assert_eq!(st.stats.sessions, Some(200));
        // fork, exec, exec details, region, exit per session.
        assert_eq!(fed, 200 * 5);
    }

    #[test]
    fn same_pid_alive_twice_gets_a_stand_in_and_sid_parts_are_opaque() {
        let mut s = String::new();
        for (sid, t) in [
            ("hostA-P00000064", "00.0"),
            ("hostB-P00000064", "00.1"),
            ("{opaque guid}", "00.2"),
        ] {
            s += &line("version", sid, Some(t), r#""evt":"4","exe":"x""#);
            s += &line("start", sid, Some(t), r#""t_abs":0.0,"argv":["git","x"]"#);
        }
        let (_, events, r) = read(s.as_bytes(), false);
        r.unwrap();
        let m = model(&events);
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(m[0].0, 100);
        assert!(m[1].0 > PID_MAX_LIMIT && m[2].0 > PID_MAX_LIMIT && m[1].0 != m[2].0);
        assert!(!events.iter().any(|e| matches!(e, Event::Root { .. })));
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let seed = {
            let mut s = String::new();
            s += &line("version", A, Some("00.000000"), r#""evt":"4","exe":"x""#);
            s += &line("child_start", A, None, r#""child_id":0,"argv":["git","y"]"#);
            s += &line("exit", &format!("{A}/{A}"), None, r#""code":1"#);
            s += &line(
                "child_exit",
                A,
                None,
                r#""child_id":0,"pid":-1,"code":-1,"t_rel":1e300"#,
            );
            s.into_bytes()
        };
        for _ in 0..2000 {
            let mut b = seed.clone();
            for _ in 0..8 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x as usize) % b.len();
                b[i] = (x >> 32) as u8;
            }
            let _ = read(&b, true);
            let _ = read(&b, false);
        }
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        const SIDS: [&str; 6] = [
            "a-P00000064",
            "a-P00000064/b-P000000c8",
            "a-P00000064/c-P000000c9",
            "a-P00000064/b-P000000c8/d-P0000012c",
            "a-P00000064/b-P000000c8/e-P000000c8",
            "x/y",
        ];

        /// One arbitrary event line of a small world of sessions.
        fn event_line() -> impl Strategy<Value = String> {
            (0..SIDS.len(), 0..14u8, 0..3i64, 0..400u32, 0..5u8, any::<bool>(), 0..=1u8).prop_map(
                |(s, kind, id, t, pid, brief, thread)| {
                    let sid = SIDS[s];
                    let time = if brief { None } else { Some(format!("{:02}.{:06}", t / 100, (t % 100) * 10_000)) };
                    let pid = [100, 200, 201, 300, -1][pid as usize];
                    let thread = ["main", "th01:x"][thread as usize];
                    let t_abs = f64::from(t) / 100.0;
                    let (ev, rest) = match kind {
                        0 => ("version", r#""evt":"4","exe":"x""#.to_string()),
                        1 => ("start", format!(r#""t_abs":{t_abs},"argv":["git","c{id}"]"#)),
                        2 => ("exit", format!(r#""t_abs":{t_abs},"code":{id}"#)),
                        3 => ("atexit", format!(r#""t_abs":{t_abs},"code":{id}"#)),
                        4 => ("signal", format!(r#""t_abs":{t_abs},"signo":{}"#, 13 + id)),
                        5 => ("child_start", format!(r#""child_id":{id},"child_class":"?","use_shell":{brief},"argv":["git","c{id}"]"#)),
                        6 => ("child_exit", format!(r#""child_id":{id},"pid":{pid},"code":{},"t_rel":0.01"#, 128 + 15 * id)),
                        7 => ("child_ready", format!(r#""child_id":{id},"pid":{pid},"ready":"ready","t_rel":0.01"#)),
                        8 => ("exec", format!(r#""exec_id":{id},"argv":["git","e{id}"]"#)),
                        9 => ("exec_result", format!(r#""exec_id":{id},"code":2"#)),
                        10 => ("region_enter", format!(r#""nesting":{},"category":"c","label":"l{id}""#, id + 1)),
                        11 => ("region_leave", format!(r#""t_rel":0.001,"nesting":{},"category":"c","label":"l{id}""#, id + 1)),
                        12 => ("data", format!(r#""t_abs":{t_abs},"t_rel":0.0,"nesting":1,"category":"c","key":"k","value":"{id}""#)),
                        _ => ("too_many_files", String::new()),
                    };
                    let time = time.map(|t| format!(",\"time\":\"2026-11-30T10:00:{t}Z\"")).unwrap_or_default();
                    let rest = if rest.is_empty() { rest } else { format!(",{rest}") };
                    format!("{{\"event\":\"{ev}\",\"sid\":\"{sid}\",\"thread\":\"{thread}\"{time}{rest}}}\n")
                },
            )
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(3000))]

            /// Whatever the streams say, the events make sense to the model: fed in time
            /// order, a process forks before anything else about it, never forks while alive,
            /// and every note lands on a process.
            #[test]
            fn streams_become_consistent_events(lines in proptest::collection::vec(event_line(), 0..40), cut in 0..8usize) {
                let mut text = lines.concat().into_bytes();
                text.truncate(text.len().saturating_sub(cut));
                let (input, events, r) = read(&text, false);
                prop_assert!(r.is_ok());
                // Lines further apart than the window come out of order, and are counted.
                let in_order = input.stats().late_lines == 0;
                let mut last = 0;
                let mut alive = std::collections::HashSet::new();
                let mut seen = std::collections::HashSet::new();
                for e in &events {
                    if let Some(ts) = e.ts() {
                        if in_order && !matches!(e, Event::Region { .. }) {
                            prop_assert!(ts >= last, "{e:?} before {last}");
                            last = ts;
                        }
                    }
                    match e {
                        Event::Fork { child_tgid, .. } => {
                            prop_assert!(alive.insert(*child_tgid), "{child_tgid} forked while alive");
                            seen.insert(*child_tgid);
                        }
                        Event::Exit { tgid, .. } => prop_assert!(alive.remove(tgid)),
                        Event::Exec { tgid, .. } | Event::ExecDetails { tgid, .. } | Event::Background { tgid, .. } => {
                            prop_assert!(alive.contains(tgid))
                        }
                        Event::Region { tgid, .. } | Event::Data { tgid, .. } => prop_assert!(seen.contains(tgid)),
                        _ => {}
                    }
                }
                let m = model(&events);
                prop_assert_eq!(model_stats(&events).notes_unmatched, 0);
                prop_assert!(m.iter().all(|p| p.0 > 0));
            }

            #[test]
            fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
                let _ = read(&bytes, true);
                let _ = read(&bytes, false);
            }
        }

        fn model_stats(events: &[Event]) -> crate::model::tracker::TrackerStats {
            let mut t = Tracker::new(TrackerOptions {
                scope: Scope::All,
                retain_exited: true,
                want_details: true,
            });
            let mut facts = Vec::new();
            for e in events {
                t.apply(e, &mut facts);
            }
            t.stats()
        }
    }
}
