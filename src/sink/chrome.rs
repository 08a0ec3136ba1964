//! A timeline for Perfetto (ui.perfetto.dev) and chrome://tracing: the Chrome Trace Event Format,
//! written as it happens.
//!
//! # Format
//!
//! The *JSON Array Format*: `[`, then one event object per line, each followed by a comma, and at
//! the end a last event without one and `]`. Both viewers accept the array without its closing
//! `]` (and with the trailing comma), so a tracer that is killed still leaves a file that loads.
//! Times are microseconds from the session's start (the header's monotonic `ts`), written as
//! decimals that keep the kernel's nanoseconds (`1234.567`); Perfetto rounds them back to the
//! same nanoseconds.
//!
//! # Layout: lanes packed at exit, nested by parentage where it fits
//!
//! The whole session is one Chrome process (`pid` = the traced root's pid, else the first
//! process's, named after the command; counters and process-wide instants on its main thread,
//! `tid` = `pid`). Never proctrace's own pid: the file must be the same bytes for the same
//! trace whoever writes it (`run`, `replay` of its recording, `analyze` of either's JSON Lines),
//! so nothing in it may come from the writer; the `process_name` line waits for the first fact,
//! when the root is known. Each other thread
//! (`tid` = `pid` + N, named `lane N`) is a *lane*. A process becomes one `X`
//! (complete) slice when it exits — only then is its interval known — on a lane where every slice
//! already written that overlaps it lies inside it and is one of its own children's (so nothing
//! unrelated is drawn under it), and none starts at the same moment (both viewers nest equal
//! starts in file order, and a parent is written after its children). Chrome and Perfetto draw
//! the slices of one thread as a flame chart and require them to nest properly; this placement
//! guarantees that, and it makes a parent swallow the children written before it: `sh → cc →
//! cc1` stack on one lane like the call stack of a build job, while jobs that run at the same time
//! sit on parallel lanes (as ninjatracing draws a ninja log). The lane of the process's
//! earliest-starting child is preferred, then its siblings' (where the parent will go), then the
//! lane where a slice most recently ended that still leaves room for the parent (a `make -j` slot
//! being reused), then any that fits, else a new one. A lane is claimed by the parent of its last
//! slice while that parent runs: only its descendants may join it, so the parent can follow.
//!
//! Per lane the sink keeps only the *maximal* intervals written (a parent's interval replaces its
//! children's), sorted and disjoint, so a placement is two binary searches. Intervals that no
//! process still running started inside are merged (see `Lane::compact`); the merged region is a
//! superset of what it replaces, so the test stays exact for every process that can still exit,
//! and conservative (a fresh lane) for one whose start turns out to lie in the past. Memory is
//! O(live processes + lanes), never O(events) (with `--files`, 24 bytes more a process: see
//! `flows.rs`).
//!
//! # Events
//!
//! - `M` metadata: `process_name` (with the command, wall-clock start and backend in its args,
//!   which viewers ignore but keep), `thread_name` and `thread_sort_index` per lane.
//! - `X` per process: name = the program ([`crate::model::naming::program`]: base name of
//!   `argv[0]` of its last exec, else of its executable, else its `comm`; `[fork of …]` when it
//!   never exec'd), or for a process of several images ([`crate::model::images`]) their
//!   programs in order (`[fork of sh] → sleep`); `cat` = `process` plus `failed`, `signal`, `lost`,
//!   `background`, `running`; `cname` (`terrible` for failures, `grey` for still running,
//!   `yellow` for background, `bad` for a lost exit) — Perfetto ignores `cname`, hence also:
//! - `X` per image of a process of two or more: nested in its process's slice, placed as its
//!   children are (see [`ChromeTrace::image_slices`]); name = [`image_program`], `cat` = `image`
//!   (`image,fork` for the fork image), `args.cmd` = [`image_command_line`]. Whether the fork
//!   image stands ([`images::fork_image_stands_for`]) is decided when the first exec arrives (did it fork a
//!   child before, or run [`crate::model::images::FORK_IMAGE_MIN_NS`]), as `images` decides
//!   it from retained records, so the output is the same whether exited records are kept or not.
//! - `i` instants: a failure at its exit on its lane, a background process when the command
//!   exited (process scope), lost events (global scope, with the count).
//! - `C` counter `running`: processes alive at each moment (one value per timestamp), held back
//!   20 ms so that events from different CPUs that arrive slightly out of order still
//!   land at their moment.
//! - When processes were measured (`ProcessRecord::usage`): their slices' args carry the figures
//!   (`cpu`, `peak_rss` for people; `cpu_user_s`, `cpu_sys_s`, `max_rss_kib`, `read_chars`,
//!   `write_chars`, `read_bytes`, `write_bytes`, `cancelled_write_bytes`, `ctx_switches`,
//!   `cpu_delay_s`, `io_delay_s` as on the JSON Lines `exit` line), and a second `C` counter,
//!   [`MEMORY_COUNTER`] (value in KiB): at each moment, the sum of the peak RSS of the
//!   measured processes running then. The kernel reports only a process's peak, at its exit, so
//!   each contributes its peak from fork to exit: an upper bound of the memory in use, never
//!   an estimate of it. A value is final only once every process that could still add to it has
//!   exited, so the values wait for the oldest running process (in `run`: the command itself) —
//!   two map entries per measured process at most, written as soon as nothing can change them.
//!   A process measured but placed before values already written (seen late) stays out of it,
//!   and its slice says `"in_memory_counter":false`.
//!
//! The JSON is written by hand with the [`json`] helpers the JSON Lines sink uses,
//! not built with serde or a tracing crate: each event is one line appended to the
//! [`LineWriter`]'s buffer with no intermediate values, and the crates that write this format
//! (`tracing-chrome` and the like) record a program's own spans, not events handed to them.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::ops::Bound::Excluded;

use super::json;
use super::text::{Paint, exit_text, fmt_duration, fmt_kib, signal_name};
use super::{LineWriter, Sink};
use crate::model::bytes::shown;
use crate::model::event::{Data, DataValue, ExitStatus};
use crate::model::images::{self, Image, Images, comm_at, images_decided};
use crate::model::naming::{image_command_line, image_program, program, quote_argv, region_name};
use crate::model::session::{Header, Mode, Summary};
use crate::model::tracker::{Fact, ProcId, ProcessRecord, Tracker};

/// How long a counter change waits for earlier ones that arrive late, ns.
const REORDER_NS: u64 = 20_000_000;
/// Most ancestors a slice's placement looks at (a lane claimed by a farther one is not open to it).
const ANCESTORS_MAX: usize = 256;

/// The largest peak a process adds to the memory counter, KiB (1 PiB).
const MAX_PEAK_KIB: u64 = 1 << 40;

/// The memory counter's name (its one value is `KiB`): see the module docs.
pub const MEMORY_COUNTER: &str = "peak RSS of running processes, summed (upper bound)";

/// A maximal interval on a lane, ns, and whose children it holds: the parent of the process
/// whose slice it is (`None`: a parent no longer running, or a merge of several; nothing may
/// swallow it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    s: u64,
    e: u64,
    parent: Option<ProcId>,
}

/// One lane: the maximal slices written on it, sorted, each ending at or before the next starts.
#[derive(Debug, Default)]
struct Lane {
    ivs: Vec<Span>,
    /// Compact when `ivs` grows past this.
    compact_at: usize,
    /// The running process that means to go here when it exits (the parent of the last slice
    /// written here): other processes keep off unless they descend from it, so a `make -j` job
    /// keeps its lane from its compiler's exit to its own.
    claim: Option<ProcId>,
}

impl Lane {
    /// Can the slice `[s, e]` of process `me` go here: is every interval it overlaps inside it,
    /// and a child's (a descendant's, swallowed by that child)? Only its own children may end up
    /// drawn under a process.
    fn fits(&self, s: u64, e: u64, me: ProcId) -> bool {
        // Never two slices starting at the same moment on one lane: the later one in the file
        // is the parent (written at its exit, after its children), and both viewers nest slices
        // with equal starts in file order (Perfetto issue 878, catapult 1284).
        let k = self.ivs.partition_point(|iv| iv.s < s);
        if self.ivs.get(k).is_some_and(|iv| iv.s == s) {
            return false;
        }
        let i = self.ivs.partition_point(|iv| iv.e <= s);
        let j = self.ivs.partition_point(|iv| iv.s < e);
        // `i..j` overlap `[s, e]` (strictly); the list is sorted by start and by end, so the
        // first and last decide whether all of them are inside.
        i >= j
            || (self.ivs[i].s >= s
                && self.ivs[j - 1].e <= e
                && self.ivs[i..j].iter().all(|iv| iv.parent == Some(me)))
    }

    /// Adds `[s, e]` (which [`fits`](Self::fits)), replacing the intervals it contains.
    fn insert(&mut self, span: Span) {
        let a = self.ivs.partition_point(|iv| iv.s < span.s);
        let b = self.ivs.partition_point(|iv| iv.e <= span.e).max(a);
        self.ivs.splice(a..b, [span]);
    }

    /// Merges neighbouring intervals between which no live process started. A later slice
    /// starts at a live process's start (or now, after everything written), so it never begins
    /// inside a merged region, and a merged region covers everything it replaced, so a slice that
    /// fits it fits the originals. Intervals whose parent is gone can never be swallowed and merge
    /// freely; others merge with their siblings, and with anything when that is not enough
    /// (memory stays bounded; only the nesting under a long-lived parent may suffer).
    fn compact(&mut self, live_starts: &BTreeMap<u64, u32>, live: &HashMap<ProcId, Live>) {
        for iv in &mut self.ivs {
            if iv.parent.is_some_and(|p| !live.contains_key(&p)) {
                iv.parent = None;
            }
        }
        let merge = |ivs: &[Span], any: bool| -> Vec<Span> {
            let mut out: Vec<Span> = Vec::with_capacity(ivs.len());
            for &iv in ivs {
                match out.last_mut() {
                    Some(m)
                        if (any || m.parent == iv.parent)
                            && live_starts
                                .range((Excluded(m.s), Excluded(iv.e)))
                                .next()
                                .is_none() =>
                    {
                        m.e = m.e.max(iv.e);
                        if m.parent != iv.parent {
                            m.parent = None;
                        }
                    }
                    _ => out.push(iv),
                }
            }
            out
        };
        self.ivs = merge(&self.ivs, false);
        if self.ivs.len() * 2 > self.compact_at {
            self.ivs = merge(&self.ivs, true);
        }
        self.compact_at = (self.ivs.len() * 2).max(16);
    }
}

/// Among the lanes that `ok`, the one whose last slice before `at` ended latest (the lowest on a
/// tie): a slice goes where a job just finished, as a `make -j` slot is reused, rather than onto
/// a lane that only looks free because the job running on it has not been written yet.
fn best_fit(lanes: &[Lane], at: u64, ok: impl Fn(&Lane) -> bool) -> Option<usize> {
    let mut best: Option<(u64, usize)> = None;
    for (i, l) in lanes.iter().enumerate() {
        if !ok(l) {
            continue;
        }
        let k = l.ivs.partition_point(|iv| iv.e <= at);
        let end = if k == 0 { 0 } else { l.ivs[k - 1].e + 1 };
        if best.is_none_or(|b| end > b.0) {
            best = Some((end, i));
        }
    }
    best.map(|b| b.1)
}

/// What the sink keeps about a process until it exits.
#[derive(Debug)]
struct Live {
    /// Slice start, ns (clamped to the session start).
    start: u64,
    /// Earliest-starting child already written: `(start, lane)`.
    child: Option<(u64, usize)>,
    /// In the `running` counter (not when it was seen only after the counter had been written
    /// past its start).
    counted: bool,
    /// It forked a child before its first exec.
    forked_child: bool,
    /// Whether its fork image stands on its own ([`images::fork_image_stands_for`]), decided when its first
    /// exec arrives (its children's records may be gone by its exit).
    fork_image: Option<bool>,
    /// The kernel's name of the program it was forked from (what its fork image is named by),
    /// taken at its fork while its parent is surely known; dropped at the first exec unless the
    /// fork image stands.
    inherited: Option<String>,
}

/// The Chrome trace sink.
pub struct ChromeTrace {
    w: LineWriter,
    redact: bool,
    t0: u64,
    /// The Chrome process's pid: the traced root's (see [`ChromeTrace::begin`]).
    pid: u32,
    /// The session's header, until its `process_name` line is written (at the first fact,
    /// when the root is known).
    header: Option<Header>,
    live: HashMap<ProcId, Live>,
    /// Starts of live processes (a multiset), for [`Lane::compact`].
    starts: BTreeMap<u64, u32>,
    lanes: Vec<Lane>,
    /// Processes alive (as far as the counter's changes so far say).
    running: i64,
    /// The counter's changes not yet written, by moment.
    changes: BTreeMap<u64, i64>,
    /// The latest moment a change was made at.
    horizon: u64,
    /// The last moment written, and the value written there.
    written: Option<u64>,
    written_value: i64,
    /// Latest timestamp seen, for lost events without one.
    last_ts: u64,
    /// The memory counter's changes not yet written (KiB, by moment), the last moment written
    /// and its value.
    mem: BTreeMap<u64, i64>,
    mem_written: Option<u64>,
    mem_value: i64,
    peak_intervals: usize,
    /// Scratch: the ancestors of the process being placed.
    anc: Vec<ProcId>,
    /// Producer → consumer arrows (`--files`).
    flows: flows::Flows,
}

impl ChromeTrace {
    /// Writes to `out`; `redact` hides URL credentials in argv.
    pub fn new(out: super::LineDest, redact: bool) -> Self {
        ChromeTrace {
            w: LineWriter::new(out),
            redact,
            t0: 0,
            pid: 0,
            header: None,
            live: HashMap::new(),
            starts: BTreeMap::new(),
            lanes: Vec::new(),
            running: 0,
            changes: BTreeMap::new(),
            horizon: 0,
            written: None,
            written_value: 0,
            last_ts: 0,
            mem: BTreeMap::new(),
            mem_written: None,
            mem_value: 0,
            peak_intervals: 0,
            anc: Vec::new(),
            flows: Default::default(),
        }
    }

    /// Most lane intervals held at once (the sink's memory besides live processes).
    pub fn peak_intervals(&self) -> usize {
        self.peak_intervals
    }

    /// Lanes used so far.
    pub fn lanes(&self) -> usize {
        self.lanes.len()
    }

    /// Starts an event line: `{"ph":"P","pid":N,"tid":T` — the session's own thread (`tid` =
    /// `pid`, as a main thread) for `None`, else that lane's thread (`pid` + 1 + lane: Perfetto
    /// keys threads by tid alone and keeps 0 for the idle task).
    fn head(&mut self, ph: &str, lane: Option<usize>) -> &mut Vec<u8> {
        let pid = self.pid;
        let tid = match lane {
            None => pid as usize,
            Some(l) => pid as usize + 1 + l,
        };
        let b = self.w.buf();
        b.extend_from_slice(b"{\"ph\":\"");
        b.extend_from_slice(ph.as_bytes());
        b.extend_from_slice(b"\",\"pid\":");
        json::int(b, pid as i64);
        b.extend_from_slice(b",\"tid\":");
        json::int(b, tid as i64);
        b
    }

    /// Ends an event line with a comma (more follow).
    fn next(&mut self) -> io::Result<()> {
        self.w.buf().extend_from_slice(b"},\n");
        self.w.line_done()
    }

    fn meta(&mut self, lane: usize, name: &str, key: &str, value: MetaValue<'_>) -> io::Result<()> {
        let b = self.head("M", Some(lane));
        b.extend_from_slice(b",\"name\":");
        json::string(b, name);
        b.extend_from_slice(b",\"args\":{");
        json::string(b, key);
        b.push(b':');
        match value {
            MetaValue::Str(s) => json::string(b, s),
            MetaValue::Int(i) => json::int(b, i),
        }
        b.push(b'}');
        self.next()
    }

    /// Moves the `running` counter by `delta` at `ts`. Changes wait in [`Self::changes`] until
    /// events are [`REORDER_NS`] past them (events from different CPUs arrive slightly out of
    /// order), then go out in time order, one value per moment.
    fn count(&mut self, ts: u64, delta: i64) -> io::Result<()> {
        let ts = match self.written {
            // Too late to place exactly: right after the last value written.
            Some(w) if ts <= w => w + 1,
            _ => ts,
        };
        self.running += delta;
        *self.changes.entry(ts).or_default() += delta;
        self.horizon = self.horizon.max(ts);
        self.write_counters(self.horizon.saturating_sub(REORDER_NS), false)
    }

    /// Writes the counter's values before `before`; with `last`, all of them, the very last
    /// one without its comma (it ends the array).
    fn write_counters(&mut self, before: u64, last: bool) -> io::Result<()> {
        while let Some((&at, _)) = self.changes.first_key_value() {
            if at >= before && !last {
                break;
            }
            let (_, d) = self.changes.pop_first().unwrap_or_default();
            self.written_value += d;
            self.written = Some(at);
            self.write_counter(at)?;
            if !(last && self.changes.is_empty()) {
                self.next()?;
            }
        }
        Ok(())
    }

    fn write_counter(&mut self, at: u64) -> io::Result<()> {
        let running = self.written_value;
        let t0 = self.t0;
        let b = self.head("C", None);
        b.extend_from_slice(b",\"ts\":");
        us(b, at.saturating_sub(t0));
        b.extend_from_slice(b",\"name\":\"running\",\"args\":{\"processes\":");
        json::int(b, running);
        b.push(b'}');
        Ok(())
    }

    /// Adds a measured process's peak RSS to the memory counter from `s` to `e`; false when
    /// values after `s` were written already (it then stays out).
    fn add_memory(&mut self, s: u64, e: u64, kib: u64) -> bool {
        if self.mem_written.is_some_and(|w| s <= w) {
            return false;
        }
        if e > s && kib > 0 {
            // A saved trace may say anything: a peak beyond 1 PiB is taken as 1 PiB, and the
            // sums saturate rather than overflow.
            let kib = kib.min(MAX_PEAK_KIB) as i64;
            let up = self.mem.entry(s).or_default();
            *up = up.saturating_add(kib);
            let down = self.mem.entry(e).or_default();
            *down = down.saturating_sub(kib);
        }
        true
    }

    /// Writes the memory counter's values before `before` (all with `before` = `u64::MAX`):
    /// only moments no process still running can change — before the earliest start of one,
    /// and [`REORDER_NS`] behind the latest event.
    fn write_memory(&mut self, before: u64) -> io::Result<()> {
        while let Some((&at, &d)) = self.mem.first_key_value() {
            if at >= before {
                break;
            }
            self.mem.pop_first();
            if d == 0 {
                continue;
            }
            self.mem_value = self.mem_value.saturating_add(d);
            self.mem_written = Some(at);
            let (v, t0) = (self.mem_value, self.t0);
            let b = self.head("C", None);
            b.extend_from_slice(b",\"ts\":");
            us(b, at.saturating_sub(t0));
            b.extend_from_slice(b",\"name\":");
            json::string(b, MEMORY_COUNTER);
            b.extend_from_slice(b",\"args\":{\"KiB\":");
            json::int(b, v);
            b.push(b'}');
            self.next()?;
        }
        Ok(())
    }

    /// The moment before which the memory counter is final (see [`Self::write_memory`]).
    fn memory_horizon(&self) -> u64 {
        let oldest = self.starts.first_key_value().map_or(u64::MAX, |(&s, _)| s);
        oldest.min(self.horizon.max(self.last_ts).saturating_sub(REORDER_NS))
    }

    /// A lane for the slice of `me` (whose ancestors, nearest first, are in `self.anc`): the
    /// first of `prefer` that is open to it, else the one where a slice most recently ended that
    /// still leaves room for the parent (`room`: its id and start) to follow, else any open one,
    /// else a new one. Open: the slice [`fits`](Lane::fits), and the lane is not claimed by a
    /// running process that is not one of its ancestors (unless it ends before that one began).
    /// `claim`: the lane becomes the claim of the span's parent (else its claim stays as it was).
    fn place(
        &mut self,
        me: ProcId,
        span: Span,
        prefer: [Option<usize>; 2],
        room: Option<(ProcId, u64)>,
        claim: bool,
    ) -> io::Result<usize> {
        let (s, e) = (span.s, span.e);
        let (lanes, live, anc) = (&self.lanes, &self.live, &self.anc);
        let open = |l: &Lane| {
            l.fits(s, e, me)
                && match l.claim {
                    None => true,
                    Some(o) if o == me || anc.contains(&o) => true,
                    Some(o) => live.get(&o).is_none_or(|ol| e <= ol.start),
                }
        };
        let found = prefer
            .into_iter()
            .flatten()
            .find(|&l| open(&lanes[l]))
            .or_else(|| {
                let (p, ps) = room?;
                let ps = ps.min(s);
                best_fit(lanes, s, |l| open(l) && l.fits(ps, e, p))
            })
            .or_else(|| best_fit(lanes, s, open));
        let lane = match found {
            Some(l) => l,
            None => {
                self.lanes.push(Lane {
                    ivs: Vec::new(),
                    compact_at: 16,
                    claim: None,
                });
                let n = self.lanes.len();
                self.meta(n - 1, "thread_name", "name", MetaValue::Str(&format!("lane {n}")))?;
                self.meta(n - 1, "thread_sort_index", "sort_index", MetaValue::Int(n as i64))?;
                n - 1
            }
        };
        let l = &mut self.lanes[lane];
        l.insert(span);
        // The parent means to follow its child here: the lane is its, and its descendants'.
        // (A late region, `me` long gone, leaves the lane's claim as it was.)
        if claim {
            l.claim = span.parent.filter(|p| self.live.contains_key(p));
        }
        if l.ivs.len() > l.compact_at {
            l.compact(&self.starts, &self.live);
        }
        let total: usize = self.lanes.iter().map(|l| l.ivs.len()).sum();
        self.peak_intervals = self.peak_intervals.max(total);
        Ok(lane)
    }

    /// Writes the session's `process_name` line, once, before any other event: the Chrome
    /// process is the traced root's pid (`root`), else the first process seen, so the file is
    /// the same bytes whoever writes it — `run`, a `replay` of its recording, an `analyze` of
    /// either's JSON Lines — and proctrace's own pid, which differs between them, is in none.
    fn begin(&mut self, root: Option<u32>) -> io::Result<()> {
        let Some(h) = self.header.take() else {
            return Ok(());
        };
        // pid 0 is the idle task's; an empty trace has no process to name it after.
        self.pid = root.filter(|&p| p > 0).unwrap_or(1);
        let h = &h;
        let label = match &h.mode {
            Mode::Run { argv } => quote_argv(argv, self.redact),
            Mode::Watch { root: Some(p) } => format!("watch -p {p}"),
            Mode::Watch { root: None } => "watch".to_string(),
            Mode::Replay { path } => format!("replay {path}"),
            Mode::Analyze { inputs } => format!("analyze {}", quote_argv(inputs, false)),
        };
        let redact = self.redact;
        let b = self.head("M", None);
        b.extend_from_slice(b",\"name\":\"process_name\",\"args\":{\"name\":");
        json::string(b, &label);
        if let Mode::Run { argv } = &h.mode {
            b.extend_from_slice(b",\"argv\":[");
            let mut r = crate::redact::Argv::new();
            for (i, a) in argv.iter().enumerate() {
                if i > 0 {
                    b.push(b',');
                }
                if redact {
                    json::string(b, &shown(&r.word(a)));
                } else {
                    json::string(b, &shown(a));
                }
            }
            b.push(b']');
        }
        let wall = (h.ts as i128 + h.real_minus_mono as i128) / 1000;
        b.extend_from_slice(b",\"wall_start\":\"");
        ::trace2::Timestamp::from_micros(wall).write_utc_extended(b);
        b.extend_from_slice(b"\",\"monotonic_start_ns\":");
        json::int(b, h.ts as i64);
        b.extend_from_slice(b",\"tool\":");
        json::string(b, &format!("proctrace {}", h.tool.version));
        if let Some(be) = &h.backend {
            b.extend_from_slice(b",\"backend\":");
            json::string(b, be);
        }
        b.push(b'}');
        self.next()
    }

    /// The Chrome pid for a trace whose first fact is `fact`: the root's, else that process's.
    fn root_pid(fact: &Fact, t: &Tracker) -> Option<u32> {
        let id = match *fact {
            Fact::Fork(id) | Fact::Exit(id) | Fact::Background(id) | Fact::Exec { id, .. } => Some(id),
            _ => None,
        };
        let r = t.first_root().or(id).and_then(|id| t.get(id))?;
        u32::try_from(r.pid).ok()
    }

    fn forget_start(&mut self, s: u64) {
        if let Some(n) = self.starts.get_mut(&s) {
            *n -= 1;
            if *n == 0 {
                self.starts.remove(&s);
            }
        }
    }

    /// Fills `self.anc` with the ancestors of `r`, nearest first, at most [`ANCESTORS_MAX`] (also
    /// the guard against a broken chain, a pid-reuse cycle). Constant time per slice, however
    /// deep the tree: a search of what is already there for the cycle made a 200,000-deep chain
    /// quadratic (256²/2 comparisons per slice).
    fn ancestors(&mut self, r: &ProcessRecord, t: &Tracker) {
        self.anc.clear();
        let mut up = r.parent;
        while let Some(p) = up {
            if self.anc.len() >= ANCESTORS_MAX {
                break;
            }
            self.anc.push(p);
            up = t.get(p).and_then(|pr| pr.parent);
        }
    }

    /// Writes the regions of `id` (slice `[s, e]`, not yet written) as slices nested in it.
    ///
    /// Each region is placed on a lane like a child process whose parent is `id`, innermost and
    /// earliest-ending first (as children exit before their parents), so a region swallows the
    /// child processes and inner regions that lie inside it and the process's own slice
    /// swallows them all: the flame chart shows `git fetch` → `fetch:remote_refs` → `git
    /// index-pack` when that is how they nest in time. A region that overlaps a child process
    /// only partly cannot nest with it, and goes to a lane of its own (as two threads'
    /// regions that overlap do); it still lies inside its process's interval.
    ///
    /// Times are clamped into the process's slice (Trace2 times are the process's own
    /// wall-clock microseconds, the slice is the kernel's fork and exit: they may disagree by a
    /// microsecond), and each start is moved `nesting` ns later: a region entered in the same
    /// microsecond as its process started or as the region around it then still starts after
    /// it, as the lanes require (an equal start would make both viewers nest in file order,
    /// where the outer one comes last). A nanosecond is far below what either clock resolves.
    fn region_slices(&mut self, id: ProcId, r: &ProcessRecord, s: u64, e: u64) -> io::Result<()> {
        let mut order: Vec<(u64, u64, u32, usize)> = r
            .regions
            .iter()
            .enumerate()
            .map(|(k, g)| {
                let (rs, re) = clamp_region(g.ts, g.end, g.nesting, s, e);
                (rs, re, g.nesting, k)
            })
            .collect();
        // Earliest end first; inside one end, the latest start (the inner one) first.
        order.sort_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)).then(b.2.cmp(&a.2)));
        for (rs, re, _, k) in order {
            let own = self.live.get(&id).and_then(|l| l.child.map(|c| c.1));
            let span = Span {
                s: rs,
                e: re,
                parent: Some(id),
            };
            let lane = self.place(id, span, [own, None], None, true)?;
            if let Some(l) = self.live.get_mut(&id)
                && l.child.is_none_or(|c| rs < c.0)
            {
                l.child = Some((rs, lane));
            }
            self.write_region(lane, r, k, rs, re, false)?;
        }
        Ok(())
    }

    /// A region that arrived after its process's slice was written (Trace2 notes travel on
    /// their own channel and may come after the kernel's exit): that lane is closed to it (the
    /// process's interval there already swallowed its children), so it goes on a lane of its
    /// own, inside its process's interval in time, marked `late`.
    fn late_region(&mut self, id: ProcId, index: usize, t: &Tracker) -> io::Result<()> {
        let Some(r) = t.get(id) else { return Ok(()) };
        let Some(g) = r.regions.get(index) else {
            return Ok(());
        };
        let s = r.start_ns.unwrap_or(self.t0).max(self.t0);
        let e = r.exit.map_or(g.end, |x| x.ts).max(s);
        let (rs, re) = clamp_region(g.ts, g.end, g.nesting, s, e);
        self.ancestors(r, t);
        let span = Span {
            s: rs,
            e: re,
            parent: None,
        };
        let lane = self.place(id, span, [None, None], None, false)?;
        self.last_ts = self.last_ts.max(re);
        self.write_region(lane, r, index, rs, re, true)
    }

    /// One region's `X` slice on `lane`.
    fn write_region(
        &mut self,
        lane: usize,
        r: &ProcessRecord,
        index: usize,
        rs: u64,
        re: u64,
        late: bool,
    ) -> io::Result<()> {
        let Some(g) = r.regions.get(index) else {
            return Ok(());
        };
        let t0 = self.t0;
        let b = self.head("X", Some(lane));
        b.extend_from_slice(b",\"ts\":");
        us(b, rs - t0);
        b.extend_from_slice(b",\"dur\":");
        us(b, re - rs);
        b.extend_from_slice(b",\"name\":");
        json::string(b, &region_name(&g.category, &g.label));
        b.extend_from_slice(b",\"cat\":\"region\",\"args\":{\"pid\":");
        json::int(b, r.pid as i64);
        b.extend_from_slice(b",\"thread\":");
        json::string(b, &shown(&g.thread));
        b.extend_from_slice(b",\"category\":");
        json::string(b, &shown(&g.category));
        b.extend_from_slice(b",\"label\":");
        json::string(b, &shown(&g.label));
        b.extend_from_slice(b",\"nesting\":");
        json::int(b, g.nesting as i64);
        if let Some(m) = &g.msg {
            b.extend_from_slice(b",\"msg\":");
            json::string(b, &shown(m));
        }
        b.extend_from_slice(b",\"duration\":");
        json::string(b, &fmt_duration(g.end.saturating_sub(g.ts)));
        if late {
            b.extend_from_slice(b",\"late\":true");
        }
        b.push(b'}');
        self.next()
    }

    /// A data point, timer or counter that arrived after its process's slice was written (the
    /// ones known at exit are in the slice's `args.trace2`): an instant on the session's own
    /// thread, naming the process.
    fn late_data(&mut self, id: ProcId, index: usize, t: &Tracker) -> io::Result<()> {
        let Some(r) = t.get(id) else { return Ok(()) };
        let Some(d) = r.data.get(index) else { return Ok(()) };
        let at = d.ts.max(self.t0) - self.t0;
        let b = self.head("i", None);
        b.extend_from_slice(b",\"ts\":");
        us(b, at);
        b.extend_from_slice(b",\"s\":\"p\",\"name\":");
        json::string(b, &format!("{}: {}", r.pid, data_key(d)));
        b.extend_from_slice(b",\"cat\":\"data\",\"args\":{\"pid\":");
        json::int(b, r.pid as i64);
        b.extend_from_slice(b",\"value\":");
        data_value(b, &d.value);
        b.push(b'}');
        self.next()
    }

    /// Writes the images of `id` (slice `[s, e]`, not yet written; two or more images) as
    /// slices nested in it, placed as its children are: each image swallows the child processes
    /// (and regions) that lie inside it, and the process's slice swallows its images, so
    /// `(a; b)` reads `sh` → `[fork of sh]` (→ `a`) then `b`, each at its own time. The first
    /// image starts with its process; it is moved 1 ns later so that the two never start
    /// together on one lane (see [`Lane::fits`]). An image that a child process outlives (a
    /// child left running across an exec) cannot nest with it and goes to a lane of its own,
    /// still inside its process's interval in time.
    fn image_slices(&mut self, id: ProcId, ims: Images<'_>, s: u64, e: u64) -> io::Result<()> {
        for im in ims {
            let is = im.start_ns.unwrap_or(s).clamp(s, e);
            let is = if is == s { (s + 1).min(e) } else { is };
            let ie = im.end_ns.unwrap_or(e).clamp(is, e);
            let own = self.live.get(&id).and_then(|l| l.child.map(|c| c.1));
            let span = Span {
                s: is,
                e: ie,
                parent: Some(id),
            };
            let lane = self.place(id, span, [own, None], None, true)?;
            if let Some(l) = self.live.get_mut(&id)
                && l.child.is_none_or(|c| is < c.0)
            {
                l.child = Some((is, lane));
            }
            self.write_image(lane, &im, is, ie)?;
        }
        Ok(())
    }

    /// One image's `X` slice on `lane`, `[is, ie]`: named by its program, its command line, exec
    /// and own duration in its args.
    fn write_image(&mut self, lane: usize, im: &Image<'_>, is: u64, ie: u64) -> io::Result<()> {
        let (t0, redact) = (self.t0, self.redact);
        let b = self.head("X", Some(lane));
        b.extend_from_slice(b",\"ts\":");
        us(b, is - t0);
        b.extend_from_slice(b",\"dur\":");
        us(b, ie - is);
        b.extend_from_slice(b",\"name\":");
        json::string(b, &image_program(im));
        b.extend_from_slice(if im.is_fork() {
            b",\"cat\":\"image,fork\",\"args\":{\"pid\":"
        } else {
            b",\"cat\":\"image\",\"args\":{\"pid\":"
        });
        json::int(b, im.record.pid as i64);
        b.extend_from_slice(b",\"image\":");
        json::int(b, im.index as i64 + 1);
        b.extend_from_slice(b",\"of\":");
        json::int(b, im.count as i64);
        b.extend_from_slice(b",\"cmd\":");
        json::string(b, &image_command_line(im, redact));
        if let Some(exe) = im.exec.and_then(|x| x.details.as_ref()?.exe.as_deref()) {
            b.extend_from_slice(b",\"exe\":");
            json::string(b, &shown(exe));
        }
        if let Some(d) = im.duration_ns() {
            b.extend_from_slice(b",\"duration\":");
            json::string(b, &fmt_duration(d));
        }
        b.push(b'}');
        self.next()
    }

    /// Writes the slice of `r` ending at `end` (`running`: still alive at the session's end).
    fn slice(
        &mut self,
        id: ProcId,
        r: &ProcessRecord,
        t: &Tracker,
        end: u64,
        running: bool,
    ) -> io::Result<()> {
        self.ancestors(r, t);
        let s = match self.live.get(&id) {
            Some(l) => l.start,
            None => r.start_ns.unwrap_or(self.t0).max(self.t0),
        };
        if !r.regions.is_empty() {
            // While it is still live: its regions claim lanes as its children do.
            self.region_slices(id, r, s, end.max(s))?;
        }
        // Its images, decided as its first exec arrived (else from the records still held).
        let inherited = self.live.get_mut(&id).and_then(|l| l.inherited.take());
        let ims = match self.live.get(&id).and_then(|l| l.fork_image) {
            Some(fork) => images_decided(r, fork, inherited.as_deref()),
            None if self.live.contains_key(&id) => images_decided(r, false, None),
            None => images::images(t, r),
        };
        let n_images = ims.len();
        if n_images > 1 {
            self.image_slices(id, ims.clone(), s, end.max(s))?;
        }
        let live = self.live.remove(&id);
        let (s, own, counted) = match &live {
            Some(l) => (l.start, l.child.map(|c| c.1), l.counted),
            None => (r.start_ns.unwrap_or(self.t0).max(self.t0), None, false),
        };
        // Its children's lane, else its siblings' (where the parent will likely go).
        let parent = r.parent.and_then(|p| Some((p, self.live.get(&p)?)));
        let sibling = parent.and_then(|(_, p)| p.child.map(|c| c.1));
        // Where the parent could follow: no slice but its children's since it started.
        let room = parent.map(|(id, p)| (id, p.start));
        if live.is_some() {
            self.forget_start(s);
        }
        let e = end.max(s);
        let span = Span {
            s,
            e,
            parent: r.parent,
        };
        let lane = self.place(id, span, [own, sibling], room, true)?;
        self.placed(id, lane, s, e);
        if let Some(p) = r.parent.and_then(|p| self.live.get_mut(&p))
            && p.child.is_none_or(|c| s < c.0)
        {
            p.child = Some((s, lane));
        }

        let status = r.exit.and_then(|x| x.status);
        let failed = !running && status.is_some_and(|st| !st.success());
        let lost = !running && r.exit.is_some_and(|x| x.status.is_none());
        let name = if n_images > 1 { chain_name(ims) } else { program(r) };
        let redact = self.redact;
        let t0 = self.t0;
        // In the memory counter (a measured process that exited), unless seen too late for it.
        let in_memory = match r.usage.as_deref() {
            Some(u) if !running => Some(self.add_memory(s, e, u.max_rss_kib)),
            _ => None,
        };
        let b = self.head("X", Some(lane));
        b.extend_from_slice(b",\"ts\":");
        us(b, s - t0);
        b.extend_from_slice(b",\"dur\":");
        us(b, e - s);
        b.extend_from_slice(b",\"name\":");
        json::string(b, &name);
        b.extend_from_slice(b",\"cat\":\"process");
        match status {
            _ if running => b.extend_from_slice(b",running"),
            Some(ExitStatus::Signal { .. }) => b.extend_from_slice(b",signal"),
            Some(ExitStatus::Code(c)) if c != 0 => b.extend_from_slice(b",failed"),
            None => b.extend_from_slice(b",lost"),
            _ => {}
        }
        if r.background.is_some() {
            b.extend_from_slice(b",background");
        }
        b.push(b'"');
        let cname = if running {
            Some("grey")
        } else if failed {
            Some("terrible")
        } else if lost {
            Some("bad")
        } else if r.background.is_some() {
            Some("yellow")
        } else {
            None
        };
        if let Some(c) = cname {
            b.extend_from_slice(b",\"cname\":\"");
            b.extend_from_slice(c.as_bytes());
            b.push(b'"');
        }
        b.extend_from_slice(b",\"args\":{\"pid\":");
        json::int(b, r.pid as i64);
        b.extend_from_slice(b",\"ppid\":");
        json::int(b, r.ppid as i64);
        if let Some(argv) = r.argv() {
            b.extend_from_slice(b",\"cmd\":");
            json::string(b, &quote_argv(argv, redact));
        }
        b.extend_from_slice(b",\"status\":");
        if running {
            json::string(b, "running");
        } else {
            json::string(b, &exit_text(status, Paint { on: false }));
            match status {
                Some(ExitStatus::Code(c)) => {
                    b.extend_from_slice(b",\"code\":");
                    json::int(b, c as i64);
                }
                Some(ExitStatus::Signal { signal, core }) => {
                    b.extend_from_slice(b",\"signal\":");
                    json::string(b, &signal_name(signal));
                    if core {
                        b.extend_from_slice(b",\"core\":true");
                    }
                }
                None => {}
            }
        }
        b.extend_from_slice(b",\"duration\":");
        json::string(b, &fmt_duration(e - s));
        if let Some(u) = r.usage.as_deref() {
            usage_args(b, u);
        }
        if in_memory == Some(false) {
            b.extend_from_slice(b",\"in_memory_counter\":false");
        }
        if let Some(d) = r.execs.last().and_then(|x| x.details.as_ref()) {
            if let Some(cwd) = &d.cwd {
                b.extend_from_slice(b",\"cwd\":");
                json::string(b, &shown(cwd));
            }
            if let Some(exe) = &d.exe {
                b.extend_from_slice(b",\"exe\":");
                json::string(b, &shown(exe));
            }
        }
        b.extend_from_slice(b",\"execs\":");
        json::int(b, r.execs.len() as i64);
        if n_images > 1 {
            b.extend_from_slice(b",\"images\":");
            json::int(b, n_images as i64);
        }
        if let Some(bg) = r.background {
            b.extend_from_slice(b",\"background\":");
            json::string(b, bg.state.as_str());
        }
        if r.start_ns.is_none_or(|st| st < t0) {
            b.extend_from_slice(b",\"started_before_trace\":true");
        }
        if !counted {
            b.extend_from_slice(b",\"counted\":false");
        }
        if !r.regions.is_empty() {
            b.extend_from_slice(b",\"regions\":");
            json::int(b, r.regions.len() as i64);
        }
        if !r.data.is_empty() {
            // What it reported about itself, in order: `{"category/key": value}` pairs in a
            // list (a key may be reported more than once).
            b.extend_from_slice(b",\"trace2\":[");
            for (i, d) in r.data.iter().enumerate() {
                if i > 0 {
                    b.push(b',');
                }
                b.push(b'{');
                json::string(b, &shown(&data_key(d)));
                b.push(b':');
                data_value(b, &d.value);
                b.push(b'}');
            }
            b.push(b']');
        }
        b.push(b'}');
        self.next()?;

        if failed {
            let b = self.head("i", Some(lane));
            b.extend_from_slice(b",\"ts\":");
            us(b, e - t0);
            b.extend_from_slice(b",\"s\":\"t\",\"name\":");
            json::string(
                b,
                &format!("{name} failed: {}", exit_text(status, Paint { on: false })),
            );
            b.extend_from_slice(b",\"cat\":\"failure\",\"args\":{\"pid\":");
            json::int(b, r.pid as i64);
            b.push(b'}');
            self.next()?;
        }
        if counted && !running {
            self.count(e, -1)?;
        }
        if in_memory.is_some() {
            let before = self.memory_horizon();
            self.write_memory(before)?;
        }
        Ok(())
    }
}

/// A process of several images, named by their programs in order: `[fork of sh] → sleep`;
/// past three, the first, `…`, the last and how many (an `exec` loop stays one short name).
fn chain_name(ims: Images<'_>) -> String {
    let n = ims.len();
    let names: Vec<String> = if n <= 3 {
        ims.map(|im| image_program(&im)).collect()
    } else {
        let first = ims.get(0).map(|im| image_program(&im)).unwrap_or_default();
        let last = ims.last().map(|im| image_program(&im)).unwrap_or_default();
        vec![first, "…".to_string(), format!("{last} ({n} images)")]
    };
    names.join(" → ")
}

/// A process's cost as slice args: for people (`cpu`, `peak_rss`), then the figures as the JSON
/// Lines `exit` line has them.
fn usage_args(b: &mut Vec<u8>, u: &crate::model::event::Usage) {
    b.extend_from_slice(b",\"cpu\":");
    json::string(b, &fmt_duration(u.cpu_user_ns.saturating_add(u.cpu_sys_ns)));
    b.extend_from_slice(b",\"peak_rss\":");
    json::string(b, &fmt_kib(u.max_rss_kib));
    json::usage_fields(b, u);
}

enum MetaValue<'a> {
    Str(&'a str),
    Int(i64),
}

/// Appends nanoseconds as microseconds with three decimals, exactly.
fn us(b: &mut Vec<u8>, ns: u64) {
    use std::io::Write;
    let _ = write!(b, "{}.{:03}", ns / 1000, ns % 1000);
}

/// A region's slice, ns: `[ts, end]` moved `nesting` ns later at the start and clamped into
/// the process's `[s, e]` (see [`ChromeTrace::region_slices`]).
fn clamp_region(ts: u64, end: u64, nesting: u32, s: u64, e: u64) -> (u64, u64) {
    let lo = (s + 1).min(e);
    let rs = ts.saturating_add(nesting.max(1) as u64).clamp(lo, e);
    (rs, end.clamp(rs, e))
}

/// `category/key` of a data point (the key alone without a category).
fn data_key(d: &Data) -> String {
    if d.category.is_empty() {
        d.key.clone()
    } else {
        format!("{}/{}", d.category, d.key)
    }
}

/// A data point's value as JSON: text as a string, `data_json` as the string it was (it came
/// from another machine: not trusted to be JSON), timers and counters as objects.
fn data_value(b: &mut Vec<u8>, v: &DataValue) {
    match v {
        DataValue::Text(t) | DataValue::Json(t) => json::string(b, &shown(t)),
        DataValue::Timer {
            intervals,
            total_ns,
            min_ns,
            max_ns,
            per_thread,
        } => {
            b.extend_from_slice(b"{\"timer_intervals\":");
            json::int(b, *intervals as i64);
            b.extend_from_slice(b",\"total_us\":");
            us(b, *total_ns);
            b.extend_from_slice(b",\"min_us\":");
            us(b, *min_ns);
            b.extend_from_slice(b",\"max_us\":");
            us(b, *max_ns);
            if *per_thread {
                b.extend_from_slice(b",\"per_thread\":true");
            }
            b.push(b'}');
        }
        DataValue::Counter { count, per_thread } => {
            b.extend_from_slice(b"{\"counter\":");
            json::int(b, *count as i64);
            if *per_thread {
                b.extend_from_slice(b",\"per_thread\":true");
            }
            b.push(b'}');
        }
    }
}

impl Sink for ChromeTrace {
    /// A process's regions are drawn in its slice, at its exit.
    fn notes_kept(&self) -> crate::model::tracker::NotesKept {
        crate::model::tracker::NotesKept::UntilExit
    }

    fn start(&mut self, h: &Header) -> io::Result<()> {
        self.t0 = h.ts;
        self.last_ts = h.ts;
        self.flows.on = h.files;
        self.header = Some(h.clone());
        self.w.buf().extend_from_slice(b"[\n");
        self.w.line_done()
    }

    fn fact(&mut self, fact: &Fact, t: &Tracker) -> io::Result<()> {
        if self.header.is_some() {
            self.begin(Self::root_pid(fact, t))?;
        }
        match *fact {
            Fact::Fork(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let start = r.start_ns.unwrap_or(self.t0).max(self.t0);
                // A child forked before its parent's first exec: the parent's fork image
                // stands on its own (see `crate::model::images`).
                let parent = r.parent.and_then(|p| t.get(p));
                if let Some(p) = r.parent.filter(|_| parent.is_some_and(|p| p.execs.is_empty()))
                    && let Some(pl) = self.live.get_mut(&p)
                {
                    pl.forked_child = true;
                }
                let inherited = match (parent, r.start_ns) {
                    (Some(p), Some(at)) if !r.pre_existing => comm_at(t, p, at).map(str::to_owned),
                    _ => None,
                };
                self.last_ts = self.last_ts.max(start);
                // Seen only after the counter was written past its start (a process already
                // running when `watch` began, found at its exit; one recovered after a loss):
                // the counter cannot go back for it, so it stays out of it.
                let counted = self.written.is_none_or(|w| start > w);
                self.live.insert(
                    id,
                    Live {
                        start,
                        child: None,
                        counted,
                        forked_child: false,
                        fork_image: None,
                        inherited,
                    },
                );
                *self.starts.entry(start).or_default() += 1;
                if counted { self.count(start, 1) } else { Ok(()) }
            }
            Fact::Exec { id, index: 0 } => {
                let (Some(r), Some(l)) = (t.get(id), self.live.get_mut(&id)) else {
                    return Ok(());
                };
                if l.fork_image.is_none() {
                    let stands = images::fork_image_stands_for(r, l.forked_child);
                    l.fork_image = Some(stands);
                    if !stands {
                        l.inherited = None;
                    }
                }
                Ok(())
            }
            Fact::Exit(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(x) = r.exit else { return Ok(()) };
                self.last_ts = self.last_ts.max(x.ts);
                self.slice(id, r, t, x.ts, false)
            }
            Fact::Background(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(bg) = r.background else { return Ok(()) };
                let name = program(r);
                let t0 = self.t0;
                let b = self.head("i", None);
                b.extend_from_slice(b",\"ts\":");
                us(b, bg.ts.saturating_sub(t0));
                b.extend_from_slice(b",\"s\":\"p\",\"name\":");
                json::string(b, &format!("background: {name}"));
                b.extend_from_slice(b",\"cat\":\"background\",\"args\":{\"pid\":");
                json::int(b, r.pid as i64);
                b.extend_from_slice(b",\"state\":");
                json::string(b, bg.state.as_str());
                b.push(b'}');
                self.next()
            }
            Fact::Lost { ts, count } => {
                let at = ts.unwrap_or(self.last_ts).saturating_sub(self.t0);
                let b = self.head("i", None);
                b.extend_from_slice(b",\"ts\":");
                us(b, at);
                b.extend_from_slice(b",\"s\":\"g\",\"name\":");
                json::string(b, &format!("lost {count} events"));
                b.extend_from_slice(b",\"cat\":\"lost\",\"args\":{\"count\":");
                json::int(b, count as i64);
                b.push(b'}');
                self.next()
            }
            // Notes of a process still running are drawn with its slice, at its exit.
            Fact::Region { id, index } if !self.live.contains_key(&id) => self.late_region(id, index, t),
            Fact::Data { id, index } if !self.live.contains_key(&id) => self.late_data(id, index, t),
            Fact::File { id, index } => {
                self.file_use(id, index, t);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// A process is on the timeline when its fork or its exit passes a `watch` filter: the exit
    /// of one whose fork passed closes its slice even when the filter keeps the exit itself out
    /// (else it would run to the end, and the counter with it).
    fn filtered(&mut self, fact: &Fact, t: &Tracker) -> io::Result<()> {
        match *fact {
            Fact::Exit(id) if self.live.contains_key(&id) => self.fact(fact, t),
            _ => Ok(()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    fn finish(&mut self, sum: &Summary, t: &Tracker) -> io::Result<()> {
        if self.header.is_some() {
            let root = t.first_root().and_then(|id| t.get(id));
            self.begin(root.and_then(|r| u32::try_from(r.pid).ok()))?;
        }
        let end = sum.ts.max(self.last_ts);
        // Latest start first: children before the parents that contain them.
        let mut left: Vec<(u64, ProcId)> = self.live.iter().map(|(id, l)| (l.start, *id)).collect();
        left.sort_by(|a, b| b.cmp(a));
        for (_, id) in left {
            match t.get(id) {
                Some(r) => self.slice(id, r, t, end, true)?,
                None => {
                    if let Some(l) = self.live.remove(&id) {
                        self.forget_start(l.start);
                    }
                }
            }
        }
        self.write_arrows()?;
        // The memory counter's last values (it ends at zero: every peak added is taken off).
        self.write_memory(u64::MAX)?;
        // Everything ends: the counter drops to zero, and that is the last event.
        let n = self.running;
        self.count(end, -n)?;
        self.write_counters(u64::MAX, true)?;
        self.w.buf().extend_from_slice(b"}\n]\n");
        self.w.flush()
    }
}

/// `--chrome FILE`: the timeline for Perfetto and chrome://tracing.
pub const OUTPUT: crate::output::OutputSpec = crate::output::OutputSpec {
    flag: "chrome",
    short: None,
    value_name: "FILE",
    help: "Write a timeline in the Chrome Trace Event Format to FILE (`-` for stdout): open it in \
           ui.perfetto.dev or chrome://tracing. One slice per process on lanes (with one nested in it per program it ran, when it ran more than one), a `running` counter",
    what: "Chrome trace",
    golden: Some("chrome"),
    dest: crate::output::DestKind::File,
    live_only: false,
    make: crate::output::Make::Stream(|to, s| Ok(Box::new(ChromeTrace::new(to.lines()?, s.redact)))),
};

mod flows;
#[cfg(test)]
mod tests;
