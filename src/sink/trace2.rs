//! git Trace2 streams of the processes proctrace observes, in git's `event`, `normal` and `perf`
//! formats, to any destination git accepts (file, directory, `af_unix:` socket, fd).
//!
//! The mapping, chosen so that git's own trace2 tooling reads an observed tree the way it reads a
//! tree of git processes:
//!
//! - proctrace itself is one session (`version`, `start` with its own argv, …, `exit`, `atexit`);
//!   its SID nests under `GIT_TRACE2_PARENT_SID` when that is set.
//! - every observed process is a session nested under its parent's SID (roots under proctrace's),
//!   with the component built from its pid and fork time: `version`, `start` (argv at its first
//!   exec), `exec` for later execs, `exit` + `atexit` with its code — or `signal` when a signal
//!   killed it, as git writes for a process that never reached exit.
//! - the parent session carries `child_start` (when the child's argv is known: its first exec,
//!   or its exit for a fork that never exec'd), `child_exit` (`code` is 128+N for signal N, −1
//!   when the exit was lost) and `child_ready` for a child that outlived the traced command.
//! - uid/gid changes, setsid, ptrace, renames and lost events are `data` events, category
//!   `proctrace`.
//! - what a process cost, when measured, is a run of `data` events in category `proctrace` in
//!   its own session just before its `exit` (or `signal`), one per figure, named as on the JSON
//!   Lines `exit` line: `cpu_user_s`, `cpu_sys_s` (seconds, six decimals), `max_rss_kib`,
//!   `read_chars`, `write_chars`, `read_bytes`, `write_bytes`, `cancelled_write_bytes`,
//!   `ctx_switches_voluntary`, `ctx_switches_involuntary`, and `cpu_delay_s`/`io_delay_s` when
//!   known.
//! - what a process reported about itself (Trace2 regions, data, timers, counters: git's own,
//!   from `run --trace2` or a saved stream) goes into its session as git wrote it:
//!   `region_enter`/`region_leave` per thread, properly nested, with their `nesting`, `data`,
//!   `data_json`, `timer`, `counter` (`th_` ones per thread). They are written when the process
//!   exits (just before its `exit`), not as they come: regions arrive when they end, inner ones
//!   first, and a stream must enter the outer one first. So within one session they follow
//!   the `child_start`/`child_exit` events written while it ran, each with its own `time`
//!   (consumers pair regions per thread, as git's own readers do, and order by time). Notes
//!   that arrive after the exit are written at once, after `atexit`, as git's detached
//!   processes write theirs; for that the last 1024 sessions forgotten are remembered. Those
//!   of a process still running at the end are written at the end.
//!
//! Times are the kernel's: `time` is the event's wall time, `t_abs` seconds since that process
//! forked. Events carry no `file`/`line` (there is no source location to name).
//!
//! Everything else comes from the [`Header`]: proctrace's pid, argv, version, parent SID, the
//! host name hashed into SIDs and the time zone of the normal and perf time column. This sink
//! never reads the clock, the environment or the process itself, so a replayed capture gives
//! the same bytes as the live run.

use std::collections::HashMap;
use std::io;

use trace2::dst::{Destination, DestinationSpec, OpenOptions};
use trace2::{Event as T2, EventKind as K, FormatOptions, ReadyState, Sid, Str, TargetKind, Timestamp};

use super::Sink;
use crate::model::event::{Argv, DataValue, ExitStatus};
use crate::model::session::{Header, Mode, Summary};
use crate::model::tracker::{BackgroundState, Fact, ProcId, ProcessRecord, Tracker};

/// One requested target: a format and where it goes.
#[derive(Debug, Clone)]
pub struct Trace2Target {
    /// Format.
    pub kind: TargetKind,
    /// Destination value as git spells it (`/tmp/x.json`, a directory, `af_unix:…`, `2`).
    pub value: String,
}

struct Target {
    kind: TargetKind,
    spec: DestinationSpec,
    /// Open once for file, fd and socket destinations; per session for directories.
    shared: Option<Destination>,
}

struct Session {
    sid: String,
    /// Monotonic ns that `t_abs` counts from.
    t0: u64,
    next_child: i64,
    /// Per-target destinations of a directory target (one file per session).
    files: Vec<Option<Destination>>,
}

struct Observed {
    session: Session,
    /// This process's child id in its parent's session, and when it was announced.
    child_id: i64,
    child_start_ts: Option<u64>,
    parent: Option<ProcId>,
    started: bool,
    execs: i64,
    /// Children not yet reported ended or ready: an exited parent's session stays addressable
    /// until they are, so their `child_exit`/`child_ready` can still be written to it (after its
    /// `atexit`, as git's detached children do).
    open_children: u32,
    ended: bool,
}

/// How many forgotten sessions are kept for notes that arrive after them.
const RECENT: usize = 1024;

/// One event of a process's own notes, by index into the slices [`Trace2Sink::notes`] writes.
#[derive(Clone, Copy)]
enum Note {
    Enter(usize),
    Leave(usize),
    /// A data point and its `t_rel`, ns.
    Data(usize, u64),
}

/// The trace2 sink.
pub struct Trace2Sink {
    targets: Vec<Target>,
    opts: FormatOptions,
    redact: bool,
    real_minus_mono: i64,
    me: Option<Session>,
    observed: HashMap<ProcId, Observed>,
    exe: String,
    /// The host name hashed into SIDs (from the header).
    host: Option<String>,
    /// The latest time seen: stands in for facts that carry none.
    now: u64,
    /// The last sessions forgotten, for notes that arrive after them: `(process, SID, t0)`.
    recent: std::collections::VecDeque<(ProcId, String, u64)>,
    buf: Vec<u8>,
    failed: Option<io::Error>,
}

/// Most components an observed process's SID has. git nests each SID under its parent's whole
/// SID, so a chain N deep has SIDs of N components: quadratic in size (and time) in N. Deeper
/// than this, the SID keeps its first `SID_COMPONENTS_MAX - 2` components (the outermost
/// ancestors), then its parent's own component and its own: still unique, its last component
/// still its own and the one before it still its parent's, but no longer its parent's whole SID
/// with one more component (see docs/outputs.md).
pub const SID_COMPONENTS_MAX: usize = 16;

/// The SID of a session nested under `parent` with its own `component`: git's
/// (`parent/component`) down to [`SID_COMPONENTS_MAX`] components, then capped.
fn nested_sid(parent: Option<&str>, component: &str) -> String {
    let Some(p) = parent.filter(|p| !p.is_empty()) else {
        return Sid::nested(None, component).as_str().to_string();
    };
    if trace2::sid::depth(p) + 1 < SID_COMPONENTS_MAX {
        return Sid::nested(Some(p), component).as_str().to_string();
    }
    // `p` has SID_COMPONENTS_MAX components or more: its outermost ones, its last, this one's.
    let outer = match p.match_indices('/').nth(SID_COMPONENTS_MAX - 3) {
        Some((i, _)) => &p[..i],
        None => p,
    };
    format!("{outer}/{}/{component}", trace2::sid::last_component(p))
}

/// Wall time of a monotonic timestamp.
fn wall(real_minus_mono: i64, ts: u64) -> Timestamp {
    Timestamp::from_micros((ts as i128 + real_minus_mono as i128) / 1000)
}

/// Seconds with six decimals (the kernel accounts CPU in µs), exact: `1.250000`.
fn secs6(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000)
}

/// A process's cost as `data` events: `(key, value)` in the order written.
pub(crate) fn usage_data(u: &crate::model::event::Usage) -> Vec<(&'static str, String)> {
    let mut v = vec![
        ("cpu_user_s", secs6(u.cpu_user_ns)),
        ("cpu_sys_s", secs6(u.cpu_sys_ns)),
        ("max_rss_kib", u.max_rss_kib.to_string()),
        ("read_chars", u.read_chars.to_string()),
        ("write_chars", u.write_chars.to_string()),
        ("read_bytes", u.read_bytes.to_string()),
        ("write_bytes", u.write_bytes.to_string()),
        ("cancelled_write_bytes", u.cancelled_write_bytes.to_string()),
        ("ctx_switches_voluntary", u.vol_ctx_switches.to_string()),
        ("ctx_switches_involuntary", u.invol_ctx_switches.to_string()),
    ];
    if let Some(d) = u.cpu_delay_ns {
        v.push(("cpu_delay_s", secs6(d)));
    }
    if let Some(d) = u.io_delay_ns {
        v.push(("io_delay_s", secs6(d)));
    }
    v
}

/// Exit code as git's `child_exit` reports it.
fn git_code(status: Option<ExitStatus>) -> i32 {
    status.map_or(-1, |s| s.shell_code())
}

impl Trace2Sink {
    /// Checks every target value now, so a bad one is reported before anything runs.
    pub fn new(targets: &[Trace2Target], brief: bool, redact: bool) -> io::Result<Trace2Sink> {
        let mut out = Vec::new();
        for t in targets {
            let spec = DestinationSpec::parse(&t.value);
            let shared = match &spec {
                DestinationSpec::Off => continue,
                DestinationSpec::Invalid(v) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "'{v}' is not a trace2 destination (an absolute path, a directory, af_unix:PATH or 1-9)"
                        ),
                    ));
                }
                DestinationSpec::Directory(_) => None,
                other => Some(
                    Destination::open(other, &OpenOptions::default())
                        .map_err(|e| io::Error::other(format!("trace2 destination '{}': {e}", t.value)))?,
                ),
            };
            out.push(Target {
                kind: t.kind,
                spec,
                shared,
            });
        }
        Ok(Trace2Sink {
            targets: out,
            opts: FormatOptions {
                brief,
                // The regions written here were already filtered by the program that reported
                // them (git applies its own `trace2.eventNesting`): every one it sent is kept.
                // proctrace's own events are all at depth 1.
                event_nesting: u32::MAX,
                ..FormatOptions::default()
            },
            redact,
            real_minus_mono: 0,
            me: None,
            observed: HashMap::new(),
            exe: String::new(),
            host: None,
            now: 0,
            recent: std::collections::VecDeque::new(),
            buf: Vec::with_capacity(512),
            failed: None,
        })
    }

    fn wall(&self, ts: u64) -> Timestamp {
        wall(self.real_minus_mono, ts)
    }

    fn host(&self) -> Option<&[u8]> {
        self.host.as_deref().map(str::as_bytes)
    }

    fn argv<'a, S: AsRef<str> + ?Sized + 'a>(&self, argv: impl IntoIterator<Item = &'a S>) -> Vec<Str<'a>> {
        let mut r = crate::redact::Argv::new();
        argv.into_iter()
            .map(|a| {
                let a = a.as_ref();
                if self.redact { r.word(a) } else { Str::Borrowed(a) }
            })
            .collect()
    }

    /// Emits on the session of `id` (or proctrace's own when `None`): formats the event (no copy
    /// of the SID) for every target, opening the session's own file first for a directory target.
    fn on(&mut self, id: Option<ProcId>, ts: u64, kind: K<'_>) -> io::Result<()> {
        self.on_thread(id, ts, "main", 1, kind)
    }

    /// [`on`](Self::on) for an event of another thread, at a region depth (a process's own
    /// regions and data).
    fn on_thread(
        &mut self,
        id: Option<ProcId>,
        ts: u64,
        thread: &str,
        nesting: u32,
        kind: K<'_>,
    ) -> io::Result<()> {
        let session = match id {
            Some(id) => self.observed.get_mut(&id).map(|o| &mut o.session),
            None => self.me.as_mut(),
        };
        let Some(Session { sid, t0, files, .. }) = session else {
            return Ok(());
        };
        let mut ev = T2::new(sid.as_str(), thread, kind);
        ev.nesting = nesting;
        ev.time = Some(wall(self.real_minus_mono, ts));
        ev.t_abs = Some(ts.saturating_sub(*t0) as f64 / 1e9);
        if files.len() < self.targets.len() {
            files.resize_with(self.targets.len(), || None);
        }
        for (i, t) in self.targets.iter().enumerate() {
            self.buf.clear();
            if !trace2::format_event(t.kind, &ev, &self.opts, &mut self.buf) {
                continue;
            }
            // git writes the bytes of argv and paths as they are, UTF-8 or not.
            crate::model::bytes::decode_in_place(&mut self.buf);
            let dst = match &t.shared {
                Some(d) => d,
                None => {
                    if files[i].is_none() {
                        let o = OpenOptions {
                            file_name: trace2::sid::last_component(sid).to_string(),
                            ..OpenOptions::default()
                        };
                        files[i] = Some(
                            Destination::open(&t.spec, &o).map_err(|e| io::Error::other(e.to_string()))?,
                        );
                    }
                    match &files[i] {
                        Some(d) => d,
                        None => continue,
                    }
                }
            };
            dst.write_line_buf(&mut self.buf)?;
        }
        Ok(())
    }

    /// The parent's session (a tracked parent, else proctrace's own).
    fn parent_key(&self, r: &ProcessRecord) -> Option<ProcId> {
        r.parent.filter(|p| self.observed.contains_key(p))
    }

    fn parent_session_mut(&mut self, parent: Option<ProcId>) -> Option<&mut Session> {
        match parent {
            Some(p) => self.observed.get_mut(&p).map(|o| &mut o.session),
            None => self.me.as_mut(),
        }
    }

    /// `start` in the child's session and `child_start` in the parent's, once.
    ///
    /// A fork that never exec'd runs its parent's program, so it shows its parent's argv (as its
    /// `/proc/PID/cmdline` would); failing that, the kernel's name in brackets.
    fn announce(&mut self, id: ProcId, r: &ProcessRecord, t: &Tracker, ts: u64) -> io::Result<()> {
        let Some(o) = self.observed.get(&id) else {
            return Ok(());
        };
        if o.started {
            return Ok(());
        }
        let parent = o.parent;
        let child_id = o.child_id;
        let fallback = Argv::from_iter([format!("[{}]", r.comm.as_deref().unwrap_or("?"))]);
        let inherited = if r.execs.is_empty() {
            r.parent.and_then(|p| t.get(p)).and_then(|p| p.argv())
        } else {
            None
        };
        let argv: &Argv = r.argv().or(inherited).unwrap_or(&fallback);
        let argv = self.argv(argv);
        self.on(Some(id), ts, K::Start { argv: argv.clone() })?;
        let kind = K::ChildStart {
            child_id,
            child_class: Str::Borrowed("?"),
            hook_name: None,
            cd: None,
            use_shell: false,
            git_cmd: false,
            argv,
        };
        self.on(parent, ts, kind)?;
        if let Some(o) = self.observed.get_mut(&id) {
            o.started = true;
            o.child_start_ts = Some(ts);
        }
        Ok(())
    }

    /// Forgets an ended session once nothing more can be written to it but late notes (those
    /// only the [`RECENT`] last ones keep).
    fn release(&mut self, id: ProcId) {
        if self
            .observed
            .get(&id)
            .is_some_and(|o| o.ended && o.open_children == 0)
            && let Some(o) = self.observed.remove(&id)
        {
            if self.recent.len() >= RECENT {
                self.recent.pop_front();
            }
            self.recent.push_back((id, o.session.sid, o.session.t0));
        }
    }

    /// Regions and data the process reported that arrived after its exit (Trace2 notes travel
    /// on their own channel): written in its session at once, after its `atexit`, as git's own
    /// detached processes write after theirs. A session already forgotten is brought back from
    /// [`Self::recent`] for it; one older than that is not written to.
    fn late_notes(
        &mut self,
        id: ProcId,
        r: &ProcessRecord,
        regions: std::ops::Range<usize>,
        data: std::ops::Range<usize>,
    ) -> io::Result<()> {
        if self.observed.contains_key(&id) {
            return self.notes(id, r, regions, data);
        }
        let Some(i) = self.recent.iter().position(|x| x.0 == id) else {
            return Ok(());
        };
        let sid = self.recent[i].1.clone();
        let t0 = self.recent[i].2;
        self.observed.insert(
            id,
            Observed {
                session: Session {
                    sid,
                    t0,
                    next_child: 0,
                    files: Vec::new(),
                },
                child_id: 0,
                child_start_ts: None,
                parent: None,
                started: true,
                execs: 0,
                open_children: 0,
                ended: true,
            },
        );
        let r = self.notes(id, r, regions, data);
        self.observed.remove(&id);
        r
    }

    fn child_done(&mut self, parent: Option<ProcId>) {
        if let Some(p) = parent {
            if let Some(o) = self.observed.get_mut(&p) {
                o.open_children = o.open_children.saturating_sub(1);
            }
            self.release(p);
        }
    }

    /// Writes the regions `regions` and data points `data` of `r` (indexes into its lists) in
    /// its session `id`, as git would have written them: per thread, each region's
    /// `region_enter` at its start and `region_leave` at its end, properly nested (inner ones
    /// inside outer ones, in the order a stack gives), data points in time order among them;
    /// threads merged by time.
    fn notes(
        &mut self,
        id: ProcId,
        r: &ProcessRecord,
        regions: std::ops::Range<usize>,
        data: std::ops::Range<usize>,
    ) -> io::Result<()> {
        let regions = r.regions.get(regions).unwrap_or_default();
        let data = r.data.get(data).unwrap_or_default();
        if regions.is_empty() && data.is_empty() {
            return Ok(());
        }
        let t0 = self.observed.get(&id).map_or(0, |o| o.session.t0);
        let mut threads: Vec<&str> = regions
            .iter()
            .map(|g| g.thread.as_str())
            .chain(data.iter().map(|d| d.thread.as_str()))
            .collect();
        threads.sort_unstable();
        threads.dedup();
        let mut items: Vec<(u64, usize, usize, Note)> = Vec::with_capacity(2 * regions.len() + data.len());
        for (ti, th) in threads.iter().enumerate() {
            let mut rs: Vec<usize> = (0..regions.len()).filter(|&k| regions[k].thread == *th).collect();
            // Outer before inner: by start, then the shallower, then the longer.
            rs.sort_by(|&a, &b| {
                let (a, b) = (&regions[a], &regions[b]);
                a.ts.cmp(&b.ts)
                    .then(a.nesting.cmp(&b.nesting))
                    .then(b.end.cmp(&a.end))
            });
            let mut ds: Vec<usize> = (0..data.len()).filter(|&k| data[k].thread == *th).collect();
            ds.sort_by_key(|&k| data[k].ts);
            let mut seq = 0;
            let mut stack: Vec<usize> = Vec::new();
            // Times within a thread never go back (they could only for regions that overlap
            // without nesting, which no Trace2 writer produces), so a sort by time keeps order.
            let mut last = 0;
            let mut push = |items: &mut Vec<_>, at: u64, n: Note| {
                last = at.max(last);
                items.push((last, ti, seq, n));
                seq += 1;
            };
            let mut di = 0;
            // Data points up to `upto`, timed from the innermost open region (else the start).
            let mut flush_data = |items: &mut Vec<_>,
                                  push: &mut dyn FnMut(&mut Vec<_>, u64, Note),
                                  stack: &[usize],
                                  upto: u64,
                                  all: bool| {
                while di < ds.len() && (all || data[ds[di]].ts < upto) {
                    let d = ds[di];
                    let from = stack.last().map_or(t0, |&k| regions[k].ts);
                    push(items, data[d].ts, Note::Data(d, data[d].ts.saturating_sub(from)));
                    di += 1;
                }
            };
            for k in rs {
                let g = &regions[k];
                // A thread's regions nest as a stack: `g` is inside the open region one level
                // up (Trace2's `nesting`); the others end first.
                while let Some(&top) = stack.last() {
                    if regions[top].nesting < g.nesting && regions[top].end >= g.ts {
                        break;
                    }
                    flush_data(&mut items, &mut push, &stack, regions[top].end + 1, false);
                    push(&mut items, regions[top].end, Note::Leave(top));
                    stack.pop();
                }
                flush_data(&mut items, &mut push, &stack, g.ts, false);
                push(&mut items, g.ts, Note::Enter(k));
                stack.push(k);
            }
            while let Some(&top) = stack.last() {
                flush_data(&mut items, &mut push, &stack, regions[top].end + 1, false);
                push(&mut items, regions[top].end, Note::Leave(top));
                stack.pop();
            }
            flush_data(&mut items, &mut push, &[], u64::MAX, true);
        }
        // Each thread's sequence is in time order already: a stable merge by time.
        items.sort_by_key(|i| (i.0, i.1, i.2));
        for (at, ti, _, n) in items {
            let th = threads[ti];
            match n {
                Note::Enter(k) => {
                    let g = &regions[k];
                    let kind = K::RegionEnter {
                        category: Some(Str::Borrowed(g.category.as_str())),
                        label: Some(Str::Borrowed(g.label.as_str())),
                        msg: g.msg.as_deref().map(Str::Borrowed),
                    };
                    self.on_thread(Some(id), at, th, g.nesting, kind)?;
                }
                Note::Leave(k) => {
                    let g = &regions[k];
                    let kind = K::RegionLeave {
                        t_rel: g.end.saturating_sub(g.ts) as f64 / 1e9,
                        category: Some(Str::Borrowed(g.category.as_str())),
                        label: Some(Str::Borrowed(g.label.as_str())),
                        msg: g.msg.as_deref().map(Str::Borrowed),
                    };
                    self.on_thread(Some(id), at, th, g.nesting, kind)?;
                }
                Note::Data(k, rel) => {
                    let d = &data[k];
                    let (category, key) = (Str::Borrowed(d.category.as_str()), Str::Borrowed(d.key.as_str()));
                    let t_rel = rel as f64 / 1e9;
                    let secs = |ns: u64| ns as f64 / 1e9;
                    let kind = match &d.value {
                        DataValue::Text(v) => K::Data {
                            t_rel,
                            category,
                            key,
                            value: Str::Borrowed(v.as_str()),
                        },
                        // Embedded verbatim by the formatter: only when it is JSON (it may come
                        // from another machine's file), else as a string.
                        DataValue::Json(v) if serde_json::from_str::<serde::de::IgnoredAny>(v).is_ok() => {
                            K::DataJson {
                                t_rel,
                                category,
                                key,
                                value: Str::Borrowed(v.as_str()),
                            }
                        }
                        DataValue::Json(v) => K::Data {
                            t_rel,
                            category,
                            key,
                            value: Str::Borrowed(v.as_str()),
                        },
                        DataValue::Timer {
                            intervals,
                            total_ns,
                            min_ns,
                            max_ns,
                            per_thread,
                        } => K::Timer {
                            per_thread: *per_thread,
                            category,
                            name: key,
                            intervals: *intervals,
                            t_total: secs(*total_ns),
                            t_min: secs(*min_ns),
                            t_max: secs(*max_ns),
                        },
                        DataValue::Counter { count, per_thread } => K::Counter {
                            per_thread: *per_thread,
                            category,
                            name: key,
                            count: *count,
                        },
                    };
                    self.on_thread(Some(id), at, th, d.nesting.max(1), kind)?;
                }
            }
        }
        Ok(())
    }

    fn data(&mut self, id: Option<ProcId>, ts: u64, key: &str, value: String) -> io::Result<()> {
        let kind = K::Data {
            t_rel: 0.0,
            category: Str::Borrowed("proctrace"),
            key: Str::Borrowed(key),
            value: Str::Owned(value),
        };
        self.on(id, ts, kind)
    }

    fn fact_inner(&mut self, fact: &Fact, t: &Tracker) -> io::Result<()> {
        match *fact {
            Fact::Fork(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let parent = self.parent_key(r);
                let start = r.start_ns.unwrap_or(self.now);
                let parent_sid = match parent {
                    Some(p) => self.observed.get(&p).map(|o| o.session.sid.clone()),
                    None => self.me.as_ref().map(|s| s.sid.clone()),
                };
                let comp = Sid::component_with_host(r.pid as u32, self.wall(start), self.host());
                let sid = nested_sid(parent_sid.as_deref(), &comp);
                let child_id = match self.parent_session_mut(parent) {
                    Some(s) => {
                        s.next_child += 1;
                        s.next_child - 1
                    }
                    None => 0,
                };
                let session = Session {
                    sid,
                    t0: start,
                    next_child: 0,
                    files: Vec::new(),
                };
                self.observed.insert(
                    id,
                    Observed {
                        session,
                        child_id,
                        child_start_ts: None,
                        parent,
                        started: false,
                        execs: 0,
                        open_children: 0,
                        ended: false,
                    },
                );
                if let Some(p) = parent.and_then(|p| self.observed.get_mut(&p)) {
                    p.open_children += 1;
                }
                let exe = self.exe.clone();
                self.on(
                    Some(id),
                    start,
                    K::Version {
                        evt: Str::Borrowed(trace2::EVENT_FORMAT_VERSION),
                        exe: Str::Owned(exe),
                    },
                )?;
                // A pre-existing process whose argv is already known starts at once.
                if r.pre_existing && r.argv().is_some() {
                    self.announce(id, r, t, start)?;
                }
            }
            Fact::Exec { id, index } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(e) = r.execs.get(index) else {
                    return Ok(());
                };
                let started = self.observed.get(&id).is_some_and(|o| o.started);
                if !started {
                    return self.announce(id, r, t, e.ts);
                }
                let exec_id = match self.observed.get_mut(&id) {
                    Some(o) => {
                        o.execs += 1;
                        o.execs - 1
                    }
                    None => return Ok(()),
                };
                let d = e.details.as_ref();
                let fallback = Argv::from_iter([format!("[{}]", r.comm.as_deref().unwrap_or("?"))]);
                let argv = self.argv(d.and_then(|d| d.argv.as_ref()).unwrap_or(&fallback));
                let exe = d.and_then(|d| d.exe.as_deref()).map(Str::Borrowed);
                self.on(Some(id), e.ts, K::Exec { exec_id, exe, argv })?;
            }
            Fact::Exit(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(x) = r.exit else { return Ok(()) };
                self.announce(id, r, t, x.ts)?;
                // What it reported about itself so far, before its end.
                self.notes(id, r, 0..r.regions.len(), 0..r.data.len())?;
                if let Some(u) = r.usage.as_deref() {
                    for (key, value) in usage_data(u) {
                        self.data(Some(id), x.ts, key, value)?;
                    }
                }
                match x.status {
                    Some(ExitStatus::Signal { signal, .. }) => {
                        self.on(Some(id), x.ts, K::Signal { signo: signal })?
                    }
                    status => {
                        let code = git_code(status);
                        self.on(Some(id), x.ts, K::Exit { code: code & 0xff })?;
                        self.on(Some(id), x.ts, K::Atexit { code: code & 0xff })?;
                    }
                }
                let Some(o) = self.observed.get_mut(&id) else {
                    return Ok(());
                };
                o.ended = true;
                let (parent, child_id, t_rel) = (
                    o.parent,
                    o.child_id,
                    x.ts.saturating_sub(o.child_start_ts.unwrap_or(x.ts)) as f64 / 1e9,
                );
                let kind = K::ChildExit {
                    child_id,
                    pid: r.pid as i64,
                    code: git_code(x.status),
                    t_rel,
                };
                self.on(parent, x.ts, kind)?;
                self.release(id);
                self.child_done(parent);
            }
            Fact::Background(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(bg) = r.background else { return Ok(()) };
                self.announce(id, r, t, bg.ts)?;
                let Some(o) = self.observed.get(&id) else {
                    return Ok(());
                };
                let ready = match bg.state {
                    BackgroundState::Ready => ReadyState::Ready,
                    BackgroundState::Timeout => ReadyState::Timeout,
                    BackgroundState::Error => ReadyState::Error,
                };
                let t_rel = bg.ts.saturating_sub(o.child_start_ts.unwrap_or(bg.ts)) as f64 / 1e9;
                let kind = K::ChildReady {
                    child_id: o.child_id,
                    pid: r.pid as i64,
                    ready,
                    t_rel,
                };
                let parent = o.parent;
                self.on(parent, bg.ts, kind)?;
                // Released: the parent never reports on it again.
                self.child_done(parent);
            }
            // A running process's notes wait for its exit (they arrive as regions end, so
            // not in the order of their `region_enter`); later ones are written at once.
            Fact::Region { id, index } => {
                if self.observed.get(&id).is_none_or(|o| o.ended)
                    && let Some(r) = t.get(id)
                {
                    self.late_notes(id, r, index..index + 1, 0..0)?;
                }
            }
            Fact::Data { id, index } => {
                if self.observed.get(&id).is_none_or(|o| o.ended)
                    && let Some(r) = t.get(id)
                {
                    self.late_notes(id, r, 0..0, index..index + 1)?;
                }
            }
            // Trace2 has no event for a file a process used.
            Fact::File { .. } => {}
            Fact::Lost { ts, count } => {
                let ts = ts.unwrap_or(self.now);
                self.data(None, ts, "lost_events", count.to_string())?;
            }
            Fact::Uid { id, ts, ruid, euid } => {
                self.data(Some(id), ts, "uid", format!("ruid={ruid} euid={euid}"))?
            }
            Fact::Gid { id, ts, rgid, egid } => {
                self.data(Some(id), ts, "gid", format!("rgid={rgid} egid={egid}"))?
            }
            Fact::Sid { id, ts } => self.data(Some(id), ts, "setsid", "1".into())?,
            Fact::Ptrace { id, ts, tracer } => self.data(Some(id), ts, "ptrace", tracer.to_string())?,
            Fact::Comm { id, ts } => {
                let comm = t.get(id).and_then(|r| r.comm.clone()).unwrap_or_default();
                self.data(Some(id), ts, "comm", comm)?;
            }
        }
        Ok(())
    }
}

impl Sink for Trace2Sink {
    /// A process's notes are written in its session at its exit (or at the end while running).
    fn notes_kept(&self) -> crate::model::tracker::NotesKept {
        crate::model::tracker::NotesKept::UntilExit
    }

    fn start(&mut self, h: &Header) -> io::Result<()> {
        self.real_minus_mono = h.real_minus_mono;
        self.now = h.ts;
        self.host = h.tool.host.clone();
        self.opts.utc_offset = Some(h.tool.utc_offset.unwrap_or(0));
        // The same SID `run --trace2` gives the command as GIT_TRACE2_PARENT_SID.
        let sid = h.trace2_sid();
        self.me = Some(Session {
            sid,
            t0: h.ts,
            next_child: 0,
            files: Vec::new(),
        });
        self.exe = format!("proctrace-{}", h.tool.version);
        let exe = self.exe.clone();
        self.on(
            None,
            h.ts,
            K::Version {
                evt: Str::Borrowed(trace2::EVENT_FORMAT_VERSION),
                exe: Str::Owned(exe),
            },
        )?;
        // proctrace's own command line: always redacted, whatever `--no-redact` says (a header
        // from an older capture may not be).
        let argv = crate::redact::own_argv(&h.tool.argv)
            .into_iter()
            .map(Str::Owned)
            .collect();
        self.on(None, h.ts, K::Start { argv })?;
        let name = match h.mode {
            Mode::Run { .. } => "run",
            Mode::Watch { .. } => "watch",
            Mode::Replay { .. } => "replay",
            Mode::Analyze { .. } => "analyze",
        };
        self.on(
            None,
            h.ts,
            K::CmdName {
                name: Str::Borrowed(name),
                hierarchy: Some(Str::Borrowed(name)),
            },
        )
    }

    fn fact(&mut self, fact: &Fact, t: &Tracker) -> io::Result<()> {
        if self.failed.is_some() {
            return Ok(());
        }
        if let Some(ts) = fact.ts(t) {
            self.now = self.now.max(ts);
        }
        self.fact_inner(fact, t)
    }

    fn finish(&mut self, s: &Summary, t: &Tracker) -> io::Result<()> {
        // Processes still open (left running, or whose exit was never seen) keep their sessions
        // open, as a daemon's would be; what they reported about themselves is written now (a
        // region still open was closed by whoever read it); proctrace's own session ends here.
        let mut open: Vec<ProcId> = self
            .observed
            .iter()
            .filter(|(_, o)| !o.ended)
            .map(|(id, _)| *id)
            .collect();
        open.sort_unstable();
        for id in open {
            if let Some(r) = t.get(id) {
                self.notes(id, r, 0..r.regions.len(), 0..r.data.len())?;
            }
        }
        // A trace known to be incomplete says so in proctrace's own session.
        if s.capture.untraced > 0 {
            self.data(None, s.ts, "untraced", s.capture.untraced.to_string())?;
        }
        if s.stats.notes_dropped > 0 {
            self.data(None, s.ts, "notes_dropped", s.stats.notes_dropped.to_string())?;
        }
        let code = s.status.map_or(0, |st| st.shell_code()) & 0xff;
        self.on(None, s.ts, K::Exit { code })?;
        self.on(None, s.ts, K::Atexit { code })?;
        self.report_stalls();
        Ok(())
    }
}

impl Trace2Sink {
    /// Says, per destination whose reader stopped reading, how many lines it did not get.
    fn report_stalls(&self) {
        for t in &self.targets {
            let Some(d) = &t.shared else { continue };
            let Some(why) = d.stall() else { continue };
            let why = match why {
                trace2::dst::Stall::ReaderStalled => format!(
                    "its reader took nothing for {} s",
                    trace2::dst::STALL_LIMIT.as_secs()
                ),
                trace2::dst::Stall::GaveUp => "proctrace was interrupted while it waited".to_string(),
            };
            crate::say!(
                "proctrace: trace2 {} to '{}': {} lines not delivered ({why}){}",
                kind_name(t.kind),
                d.description(),
                d.undelivered(),
                if d.cut() {
                    "; the first of them was cut after a part was written"
                } else {
                    ""
                }
            );
        }
    }
}

/// The Trace2 format's name, for messages.
fn kind_name(k: TargetKind) -> &'static str {
    match k {
        TargetKind::Event => "event",
        TargetKind::Normal => "normal",
        TargetKind::Perf => "perf",
    }
}

/// A Trace2 output of one kind (`--trace2-event`, `--trace2-perf`, `--trace2-normal`).
const fn trace2_output(
    flag: &'static str,
    help: &'static str,
    what: &'static str,
    golden: &'static str,
    make: fn(crate::output::To, &crate::output::Settings) -> io::Result<Box<dyn Sink>>,
) -> crate::output::OutputSpec {
    crate::output::OutputSpec {
        flag,
        short: None,
        value_name: "DEST",
        help,
        what,
        golden: Some(golden),
        dest: crate::output::DestKind::Trace2,
        live_only: false,
        make: crate::output::Make::Stream(make),
    }
}

/// Opens a Trace2 sink writing `kind` to the destination `to` names.
fn open_trace2(
    kind: TargetKind,
    to: crate::output::To,
    s: &crate::output::Settings,
) -> io::Result<Box<dyn Sink>> {
    let crate::output::To::Value(value) = to else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a trace2 destination is a value",
        ));
    };
    Ok(Box::new(Trace2Sink::new(
        &[Trace2Target { kind, value }],
        s.trace2_brief,
        s.redact,
    )?))
}

/// `--trace2-event DEST`.
pub const EVENT_OUTPUT: crate::output::OutputSpec = trace2_output(
    "trace2-event",
    "Also write git Trace2 `event` JSON lines to DEST (a file, a directory for one file per \
     process, af_unix:PATH, or a descriptor 1-9), one trace2 session per observed process",
    "trace2 events",
    "trace2-event",
    |to, s| open_trace2(TargetKind::Event, to, s),
);

/// `--trace2-perf DEST`.
pub const PERF_OUTPUT: crate::output::OutputSpec = trace2_output(
    "trace2-perf",
    "Also write git Trace2 `perf` lines to DEST",
    "trace2 perf lines",
    "trace2-perf",
    |to, s| open_trace2(TargetKind::Perf, to, s),
);

/// `--trace2-normal DEST`.
pub const NORMAL_OUTPUT: crate::output::OutputSpec = trace2_output(
    "trace2-normal",
    "Also write git Trace2 `normal` lines to DEST",
    "trace2 normal lines",
    "trace2-normal",
    |to, s| open_trace2(TargetKind::Normal, to, s),
);

#[cfg(test)]
mod tests;
