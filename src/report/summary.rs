//! The end-of-run summary: where the time went.
//!
//! [`summarize`] is a pure function of the session's [`Header`], the finished [`Tracker`] (exited
//! records retained) and the [`Summary`]; it yields a [`RunReport`] that renders three ways: text
//! for the terminal ([`render_text`]), Markdown for a CI job summary ([`render_markdown`]) and one
//! JSON object for dashboards (its `serde::Serialize`).
//!
//! # Definitions
//!
//! - **Origin and wall time.** When proctrace saw the command (the root) fork and exit — `run`,
//!   and `replay` of a `run` capture — wall time is the root's lifetime and every offset counts
//!   from its fork. Otherwise (`watch`) it is the observation window, from the header's start to
//!   the summary's end.
//! - **Program**: the base name of `argv[0]` of the process's last exec, else of its executable,
//!   else its `comm`; a process that never exec'd counts as `[fork of COMM]`
//!   ([`crate::model::naming::program`], the name every output gives it).
//! - **Slowest**: the longest processes with a known fork and exit, except the root (it always
//!   wins), background children (their time is not the command's), and processes that take at
//!   least 90% of their parent's time: those are folded into the parent, whose command line is
//!   the one a person wrote and names them (`sh -c CMD` → `CMD`, `cc -c f5.c` → `cc1`,
//!   `timeout 10 ./t` → `./t`), so one compile is not listed two or three times.
//! - **Critical path**: the chain of processes whose durations set the wall time. From the root,
//!   walk backward from its end: take the child that ended last (at or before the end), then the
//!   child that ended last at or before *that* child's fork, and so on back to the parent's fork;
//!   descend into each chosen child the same way. Only children with a known fork and a real
//!   exit count: background children (they outlived the command, so nothing waited for them) and
//!   processes whose exit was lost never do. The gaps between chosen children are the parent's
//!   own work. For `make -j2` this names the compiles that gated the link, then the link, not
//!   merely the link. `watch` without `-p` has no single root and so no critical path.
//! - **What it cost** (only when the trace has the figures, `ProcessRecord::usage`): CPU is the
//!   user and system time of each process itself (not its children: the kernel's per-process account);
//!   peak memory is its peak resident set (RSS). The whole tree's CPU is the sum over the
//!   processes measured, and *achieved parallelism* is that sum over the wall time: how many
//!   cores were busy on average. The **hungriest** process is the one that used the most CPU.
//!   Processes without figures count nowhere here (the JSON says how many were measured), so
//!   with some missing the sums are lower bounds. By program, CPU is summed and peak memory is
//!   the largest peak of one process (peaks of processes that never ran together do not add).
//!   In the lists, a process doing its parent's work (at least 90% of the parent's time, as
//!   the slowest list folds it, and more CPU than the parent) is named with the parent's
//!   command: `cc1, for: cc -c f4.c`.

use std::fmt::Write as _;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::model::event::{ExitStatus, Usage};
/// A region's name is the model's ([`crate::model::naming::region_name`]); here too for the
/// outputs that name regions as the summary does.
pub use crate::model::naming::region_name;
use crate::model::naming::{command_line, cut, program};
use crate::model::session::{Header, Mode, Summary};
use crate::model::tracker::{ProcId, ProcessRecord, Tracker};
use crate::redact::redact_arg;
use crate::sink::text::{Paint, exit_text, fmt_duration, fmt_kib, quote_argv, signal_name};

/// How many entries the slowest and by-program lists keep, and failures and background children
/// the text and Markdown show (JSON lists every failure and background child).
pub const TOP: usize = 10;

/// How many entries the lists by CPU and by peak memory keep.
pub const TOP_COST: usize = 5;

/// A process taking at least this share of its parent's time is folded into its parent in the
/// slowest list.
const FOLD_SHARE: f64 = 0.9;

/// The whole summary, ready to render or serialize.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The traced command (`run`), redacted as asked.
    pub command: Option<Vec<String>>,
    /// Its status.
    pub status: Option<StatusJson>,
    /// Wall time (see the module docs), seconds.
    #[serde(rename = "wall_s", serialize_with = "secs")]
    pub wall_ns: u64,
    /// Processes seen.
    pub processes: u64,
    /// Execs seen.
    pub execs: u64,
    /// Processes that exited non-zero or were killed, in order of fork.
    pub failures: Vec<Failure>,
    /// Processes whose exit was lost (closed when their pid was reused): neither ok nor failed.
    pub exit_unknown: u64,
    /// Processes that outlived the command (leaks), in order of fork.
    pub background: Vec<Background>,
    /// Events lost by the capture.
    pub lost: u64,
    /// The longest processes (see the module docs), longest first.
    pub slowest: Vec<Step>,
    /// The critical path in order from the root.
    pub critical_path: Vec<PathStep>,
    /// Count and total time by program, most total time first.
    pub by_program: ByProgram,
    /// The regions processes reported about themselves (Trace2: git's own), when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regions: Option<Regions>,
    /// What the processes cost, when the trace has the figures (see the module docs); its
    /// fields sit at the top level of the JSON.
    #[serde(flatten)]
    pub costs: Option<Costs>,
}

/// What the processes cost (CPU, peak memory), when any was measured.
#[derive(Debug, Clone, Serialize)]
pub struct Costs {
    /// Processes with figures.
    pub measured: u64,
    /// CPU of every process measured, user + system, seconds.
    #[serde(rename = "cpu_s", serialize_with = "secs")]
    pub cpu_ns: u64,
    /// Of it, user time.
    #[serde(rename = "cpu_user_s", serialize_with = "secs")]
    pub cpu_user_ns: u64,
    /// Of it, system time.
    #[serde(rename = "cpu_sys_s", serialize_with = "secs")]
    pub cpu_sys_ns: u64,
    /// `cpu_s / wall_s`: cores busy on average; `null` for no wall time.
    pub parallelism: Option<f64>,
    /// Most CPU first (at most [`TOP_COST`]); the first is the hungriest process.
    pub top_cpu: Vec<Cost>,
    /// Highest peak memory first (at most [`TOP_COST`]).
    pub top_rss: Vec<Cost>,
}

/// One process in the lists by CPU and by peak memory.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    /// Process id.
    pub pid: i32,
    /// Program (see the module docs).
    pub program: String,
    /// argv of the last exec, redacted as asked; `null` when never read.
    pub argv: Option<Vec<String>>,
    /// User + system CPU, seconds.
    #[serde(rename = "cpu_s", serialize_with = "secs")]
    pub cpu_ns: u64,
    /// User CPU, seconds.
    #[serde(rename = "cpu_user_s", serialize_with = "secs")]
    pub cpu_user_ns: u64,
    /// System CPU, seconds.
    #[serde(rename = "cpu_sys_s", serialize_with = "secs")]
    pub cpu_sys_ns: u64,
    /// Peak resident set, KiB.
    pub max_rss_kib: u64,
    /// Fork to exit, seconds (`null` when either is unknown).
    #[serde(rename = "duration_s", serialize_with = "opt_secs")]
    pub duration_ns: Option<u64>,
    #[serde(skip)]
    label: String,
}

/// What the processes reported about their own work (Trace2 regions).
#[derive(Debug, Clone, Serialize)]
pub struct Regions {
    /// How many regions were reported.
    pub count: u64,
    /// The longest regions, longest first (at most [`TOP`]).
    pub slowest: Vec<RegionStep>,
    /// Count and summed time by `category:label`, most total time first (nested regions count
    /// in their own name and in their enclosing region's: the time is not split).
    pub by_name: ByProgram,
}

/// One region in a list.
#[derive(Debug, Clone, Serialize)]
pub struct RegionStep {
    /// `category:label` (or the label alone when there is no category).
    pub name: String,
    /// Process that reported it.
    pub pid: i32,
    /// Its program (see the module docs).
    pub program: String,
    /// Reporting thread (`main`, `th01:…`).
    pub thread: String,
    /// Depth, 1 at the top of its thread.
    pub nesting: u32,
    /// The region's message, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msg: Option<String>,
    /// Entered, seconds from the origin.
    #[serde(rename = "start_s", serialize_with = "secs_signed")]
    pub start_ns: i64,
    /// Entered to left, seconds.
    #[serde(rename = "duration_s", serialize_with = "secs")]
    pub duration_ns: u64,
}

/// How a process ended, as JSON: `{"code": 3}` or `{"signal": 9, "signal_name": "SIGKILL",
/// "core": false}`.
#[derive(Debug, Clone, Serialize)]
pub struct StatusJson {
    /// Exit code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// Killing signal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal_name: Option<String>,
    /// A core dump was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core: Option<bool>,
    #[serde(skip)]
    raw: Option<ExitStatus>,
}

impl From<ExitStatus> for StatusJson {
    fn from(s: ExitStatus) -> Self {
        match s {
            ExitStatus::Code(c) => StatusJson {
                code: Some(c),
                signal: None,
                signal_name: None,
                core: None,
                raw: Some(s),
            },
            ExitStatus::Signal { signal, core } => StatusJson {
                code: None,
                signal: Some(signal),
                signal_name: Some(signal_name(signal)),
                core: Some(core),
                raw: Some(s),
            },
        }
    }
}

/// One process in a list.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Process id.
    pub pid: i32,
    /// Program (see the module docs).
    pub program: String,
    /// argv of the last exec, redacted as asked; `null` when never read.
    pub argv: Option<Vec<String>>,
    /// Fork, seconds from the origin (negative for a process older than the trace).
    #[serde(rename = "start_s", serialize_with = "secs_signed")]
    pub start_ns: i64,
    /// Fork to exit, seconds.
    #[serde(rename = "duration_s", serialize_with = "secs")]
    pub duration_ns: u64,
    #[serde(skip)]
    label: String,
}

/// One step of the critical path.
#[derive(Debug, Clone, Serialize)]
pub struct PathStep {
    /// The process.
    #[serde(flatten)]
    pub step: Step,
    /// 0 for the root, 1 for its children, …
    pub depth: usize,
}

/// A failed process.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// Process id.
    pub pid: i32,
    /// Program.
    pub program: String,
    /// argv, redacted as asked.
    pub argv: Option<Vec<String>>,
    /// Fork, seconds from the origin.
    #[serde(rename = "start_s", serialize_with = "opt_secs_signed")]
    pub start_ns: Option<i64>,
    /// How it ended.
    #[serde(flatten)]
    pub status: StatusJson,
    #[serde(skip)]
    label: String,
}

/// A process that outlived the command.
#[derive(Debug, Clone, Serialize)]
pub struct Background {
    /// Process id.
    pub pid: i32,
    /// Program.
    pub program: String,
    /// argv, redacted as asked.
    pub argv: Option<Vec<String>>,
    /// Fork, seconds from the origin.
    #[serde(rename = "start_s", serialize_with = "opt_secs_signed")]
    pub start_ns: Option<i64>,
    /// `ready` (left running), `timeout` (still running after `--wait-bg`), `error` (could not
    /// be probed).
    pub state: &'static str,
    /// How it ended, when it ended while proctrace still followed it (`--wait-bg`).
    pub exit: Option<StatusJson>,
    #[serde(skip)]
    label: String,
}

/// Count and total time of one program (and, when measured, what it cost).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ProgramStat {
    /// Processes running it.
    pub count: u64,
    /// Their summed fork-to-exit time (those with a known exit), seconds.
    #[serde(rename = "total_s", serialize_with = "secs")]
    pub total_ns: u64,
    /// Their summed CPU (user + system; those measured), seconds; absent when none was.
    #[serde(
        rename = "cpu_s",
        serialize_with = "opt_secs",
        skip_serializing_if = "Option::is_none"
    )]
    pub cpu_ns: Option<u64>,
    /// The largest peak memory of one of them, KiB; absent when none was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rss_kib: Option<u64>,
}

/// Programs, most total time first; serialized as a JSON object in that order.
#[derive(Debug, Clone, Default)]
pub struct ByProgram(pub Vec<(String, ProgramStat)>);

impl Serialize for ByProgram {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

fn secs<S: Serializer>(ns: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(*ns as f64 / 1e9)
}

fn secs_signed<S: Serializer>(ns: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(*ns as f64 / 1e9)
}

fn opt_secs<S: Serializer>(ns: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match ns {
        Some(ns) => s.serialize_f64(*ns as f64 / 1e9),
        None => s.serialize_none(),
    }
}

fn opt_secs_signed<S: Serializer>(ns: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
    match ns {
        Some(ns) => s.serialize_f64(*ns as f64 / 1e9),
        None => s.serialize_none(),
    }
}

/// Fork and exit of a process that counts on the critical path and among the slowest: both
/// known, a real exit status, not a background child.
fn span(r: &ProcessRecord) -> Option<(u64, u64)> {
    let x = r.exit?;
    x.status?;
    if r.background.is_some() {
        return None;
    }
    // A saved trace can put an exit before its fork (a hostile or reordered file): the span is
    // then empty, never negative.
    let s = r.start_ns?;
    Some((s, x.ts.max(s)))
}

/// Every record reachable from the roots, parents before children.
pub fn all_records(t: &Tracker) -> Vec<ProcId> {
    let mut out = Vec::new();
    let mut stack: Vec<ProcId> = t.roots().iter().rev().copied().collect();
    while let Some(id) = stack.pop() {
        let Some(r) = t.get(id) else { continue };
        out.push(id);
        stack.extend(r.children.iter().rev().copied());
    }
    out
}

/// The record the critical path starts from: the command (`run`), the `-p` process (`watch`),
/// or the only root there is.
fn designated_root(t: &Tracker, h: &Header, sum: &Summary) -> Option<ProcId> {
    let pid = sum.root.or(match h.mode {
        Mode::Watch { root } => root,
        _ => None,
    });
    match pid {
        Some(p) => t
            .roots()
            .iter()
            .copied()
            .find(|&id| t.get(id).is_some_and(|r| r.pid == p)),
        None if t.roots().len() == 1 => Some(t.roots()[0]),
        None => None,
    }
}

/// The first `n` of `items` in `cmp`'s order, ties in `items`' own order: what a stable sort and
/// `take(n)` give, without sorting them all (the full sorts of 600,000 records' figures were a
/// third of `analyze --json`'s time, `perf`).
fn first_n<T: Copy>(items: &[T], n: usize, cmp: impl Fn(&T, &T) -> std::cmp::Ordering) -> Vec<T> {
    let by = |a: &usize, b: &usize| cmp(&items[*a], &items[*b]).then(a.cmp(b));
    let mut idx: Vec<usize> = (0..items.len()).collect();
    if idx.len() > n {
        idx.select_nth_unstable_by(n, by);
        idx.truncate(n);
    }
    idx.sort_unstable_by(by);
    idx.into_iter().map(|i| items[i]).collect()
}

/// The children of `r` on its critical path, in time order (see the module docs).
fn chain(t: &Tracker, r: &ProcessRecord, end: u64) -> Vec<ProcId> {
    let mut kids: Vec<(ProcId, u64, u64)> = r
        .children
        .iter()
        .filter_map(|&c| {
            let (s, e) = span(t.get(c)?)?;
            (e <= end).then_some((c, s, e))
        })
        .collect();
    // Latest end first; on a tie the longer one (it set the time), then the lower pid.
    kids.sort_by(|a, b| b.2.cmp(&a.2).then(a.1.cmp(&b.1)).then(a.0.cmp(&b.0)));
    let mut cursor = end;
    let mut out = Vec::new();
    for (id, s, e) in kids {
        if e <= cursor {
            out.push(id);
            cursor = s;
        }
    }
    out.reverse();
    out
}

/// The run's time origin and wall time, ns: the root's fork to its exit when both are known
/// (the command's own time, as `time(1)` would say), else the session's. Every whole-run output
/// that prints a wall time uses this one.
pub fn wall(h: &Header, t: &Tracker, sum: &Summary) -> (u64, u64) {
    wall_of(designated_root(t, h, sum).and_then(|id| t.get(id)), h, sum)
}

fn wall_of(root_rec: Option<&ProcessRecord>, h: &Header, sum: &Summary) -> (u64, u64) {
    match root_rec.filter(|r| !r.pre_existing).and_then(|r| {
        let s = r.start_ns?;
        Some((s, r.exit?.ts.saturating_sub(s)))
    }) {
        Some(x) => x,
        None => (h.ts, sum.ts.saturating_sub(h.ts)),
    }
}

/// Computes the summary. `redact` hides URL credentials in argv.
pub fn summarize(h: &Header, t: &Tracker, sum: &Summary, redact: bool) -> RunReport {
    let root = designated_root(t, h, sum);
    let root_rec = root.and_then(|id| t.get(id));
    let (origin, wall_ns) = wall_of(root_rec, h, sum);
    // Signed offset from the origin; wrapping, so a timestamp from a hostile file cannot overflow.
    let off = |ts: u64| ts.wrapping_sub(origin) as i64;
    let argv_of = |r: &ProcessRecord| -> Option<Vec<String>> {
        r.argv().map(|a| {
            if redact {
                a.iter().map(|s| redact_arg(s).into_owned()).collect()
            } else {
                a.to_vec()
            }
        })
    };
    let label = |r: &ProcessRecord| command_line(r, redact);
    let step = |r: &ProcessRecord, start: u64, dur: u64| Step {
        pid: r.pid,
        program: program(r),
        argv: argv_of(r),
        start_ns: off(start),
        duration_ns: dur,
        label: label(r),
    };

    let ids = all_records(t);
    let mut failures = Vec::new();
    let mut background = Vec::new();
    let mut candidates: Vec<(u64, u64, i32, ProcId)> = Vec::new();
    let mut programs: Vec<(String, ProgramStat)> = Vec::new();
    let mut prog_index = std::collections::HashMap::new();
    let mut exit_unknown = 0;
    // Records with cost figures, in tree order.
    let mut measured: Vec<ProcId> = Vec::new();
    // Regions: (duration, start, pid, id, index) of each, and totals by name.
    let mut region_list: Vec<(u64, u64, i32, ProcId, usize)> = Vec::new();
    let mut region_names: Vec<(String, ProgramStat)> = Vec::new();
    let mut region_index = std::collections::HashMap::new();
    for &id in &ids {
        let Some(r) = t.get(id) else { continue };
        for (k, g) in r.regions.iter().enumerate() {
            let d = g.end.saturating_sub(g.ts);
            region_list.push((d, g.ts, r.pid, id, k));
            let name = region_name(&g.category, &g.label);
            let i = *region_index.entry(name.clone()).or_insert_with(|| {
                region_names.push((name, ProgramStat::default()));
                region_names.len() - 1
            });
            region_names[i].1.count += 1;
            region_names[i].1.total_ns = region_names[i].1.total_ns.saturating_add(d);
        }
        let p = program(r);
        let i = *prog_index.entry(p.clone()).or_insert_with(|| {
            programs.push((p.clone(), ProgramStat::default()));
            programs.len() - 1
        });
        programs[i].1.count += 1;
        programs[i].1.total_ns = programs[i]
            .1
            .total_ns
            .saturating_add(r.duration_ns().unwrap_or(0));
        if let Some(u) = r.usage.as_deref() {
            let st = &mut programs[i].1;
            st.cpu_ns = Some(st.cpu_ns.unwrap_or(0).saturating_add(cpu_of(u)));
            st.max_rss_kib = Some(st.max_rss_kib.unwrap_or(0).max(u.max_rss_kib));
            measured.push(id);
        }
        match r.exit.map(|x| x.status) {
            Some(None) => exit_unknown += 1,
            Some(Some(s)) if !s.success() => failures.push(Failure {
                pid: r.pid,
                program: p.clone(),
                argv: argv_of(r),
                start_ns: r.start_ns.map(off),
                status: s.into(),
                label: label(r),
            }),
            _ => {}
        }
        if let Some(bg) = r.background {
            background.push(Background {
                pid: r.pid,
                program: p.clone(),
                argv: argv_of(r),
                start_ns: r.start_ns.map(off),
                state: bg.state.as_str(),
                exit: r.exit.and_then(|x| x.status).map(StatusJson::from),
                label: label(r),
            });
        }
        if Some(id) == root {
            continue;
        }
        let Some((s, e)) = span(r) else { continue };
        let dur = e - s;
        let folded = r
            .parent
            .and_then(|p| t.get(p))
            .and_then(|p| p.duration_ns())
            .is_some_and(|pd| dur as f64 >= FOLD_SHARE * pd as f64);
        if !folded {
            candidates.push((dur, s, r.pid, id));
        }
    }
    // Longest first; the argv of only the few kept is copied.
    let slowest: Vec<Step> = first_n(&candidates, TOP, |a, b| {
        b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2))
    })
    .iter()
    .filter_map(|&(dur, s, _, id)| Some(step(t.get(id)?, s, dur)))
    .collect();
    programs.sort_by(|a, b| b.1.total_ns.cmp(&a.1.total_ns).then(a.0.cmp(&b.0)));
    let regions = (!region_list.is_empty()).then(|| {
        let count = region_list.len() as u64;
        let slowest = first_n(&region_list, TOP, |a, b| {
            b.0.cmp(&a.0)
                .then(a.1.cmp(&b.1))
                .then(a.2.cmp(&b.2))
                .then(a.4.cmp(&b.4))
        })
        .iter()
        .filter_map(|&(d, st, pid, id, k)| {
            let r = t.get(id)?;
            let g = r.regions.get(k)?;
            Some(RegionStep {
                name: region_name(&g.category, &g.label),
                pid,
                program: program(r),
                thread: g.thread.clone(),
                nesting: g.nesting,
                msg: g.msg.as_ref().map(|m| {
                    if redact {
                        redact_arg(m).into_owned()
                    } else {
                        m.clone()
                    }
                }),
                start_ns: off(st),
                duration_ns: d,
            })
        })
        .collect();
        region_names.sort_by(|a, b| b.1.total_ns.cmp(&a.1.total_ns).then(a.0.cmp(&b.0)));
        Regions {
            count,
            slowest,
            by_name: ByProgram(region_names),
        }
    });
    failures.sort_by_key(|f| (f.start_ns, f.pid));
    background.sort_by_key(|b| (b.start_ns, b.pid));
    let costs = (!measured.is_empty()).then(|| {
        let cost = |id: ProcId| -> Option<Cost> {
            let r = t.get(id)?;
            let u = r.usage.as_deref()?;
            // A process doing its parent's work — most of its time, as the slowest list folds
            // it, and more CPU than the parent: `cc1` of `cc -c f4.c` — is named with the
            // parent's command, which says what the work was.
            let parent = r.parent.and_then(|p| t.get(p)).filter(|p| {
                let (Some(d), Some(pd)) = (r.duration_ns(), p.duration_ns()) else {
                    return false;
                };
                let pcpu = p.usage.as_deref().map_or(0, cpu_of);
                d as f64 >= FOLD_SHARE * pd as f64 && pcpu < cpu_of(u)
            });
            let label = match parent {
                Some(p) => format!("{}, for: {}", program(r), label(p)),
                None => label(r),
            };
            Some(Cost {
                pid: r.pid,
                program: program(r),
                argv: argv_of(r),
                cpu_ns: cpu_of(u),
                cpu_user_ns: u.cpu_user_ns,
                cpu_sys_ns: u.cpu_sys_ns,
                max_rss_kib: u.max_rss_kib,
                duration_ns: span(r).map(|(s, e)| e - s),
                label,
            })
        };
        let usage = |id: ProcId| {
            t.get(id)
                .and_then(|r| r.usage.as_deref().copied())
                .unwrap_or_default()
        };
        let (mut user, mut sys) = (0u64, 0u64);
        for &id in &measured {
            let u = usage(id);
            user = user.saturating_add(u.cpu_user_ns);
            sys = sys.saturating_add(u.cpu_sys_ns);
        }
        // Largest first; ties keep tree order: parents before children.
        let top = |key: &dyn Fn(&Usage) -> u64| {
            let keyed: Vec<(u64, ProcId)> = measured.iter().map(|&id| (key(&usage(id)), id)).collect();
            first_n(&keyed, TOP_COST, |a, b| b.0.cmp(&a.0))
                .into_iter()
                .map(|(_, id)| id)
                .collect::<Vec<_>>()
        };
        let by_cpu = top(&cpu_of);
        let by_rss = top(&|u: &Usage| u.max_rss_kib);
        let cpu_ns = user.saturating_add(sys);
        Costs {
            measured: measured.len() as u64,
            cpu_ns,
            cpu_user_ns: user,
            cpu_sys_ns: sys,
            parallelism: (wall_ns > 0).then(|| cpu_ns as f64 / wall_ns as f64),
            top_cpu: by_cpu.into_iter().take(TOP_COST).filter_map(cost).collect(),
            top_rss: by_rss.into_iter().take(TOP_COST).filter_map(cost).collect(),
        }
    });

    let mut critical_path = Vec::new();
    if let Some(r) = root_rec {
        let start = r.start_ns.unwrap_or(h.ts);
        let end = r.exit.map_or(sum.ts, |x| x.ts).max(start);
        critical_path.push(PathStep {
            step: step(r, start, end - start),
            depth: 0,
        });
        let mut stack: Vec<(ProcId, usize)> = chain(t, r, end).into_iter().rev().map(|c| (c, 1)).collect();
        while let Some((id, depth)) = stack.pop() {
            let Some(c) = t.get(id) else { continue };
            let Some((s, e)) = span(c) else { continue };
            critical_path.push(PathStep {
                step: step(c, s, e - s),
                depth,
            });
            stack.extend(chain(t, c, e).into_iter().rev().map(|k| (k, depth + 1)));
        }
    }

    RunReport {
        command: match &h.mode {
            Mode::Run { argv } => Some(if redact {
                argv.iter().map(|s| redact_arg(s).into_owned()).collect()
            } else {
                argv.clone()
            }),
            _ => None,
        },
        status: sum.status.map(StatusJson::from),
        wall_ns,
        processes: sum.stats.processes,
        execs: sum.stats.execs,
        failures,
        exit_unknown,
        background,
        lost: sum.stats.lost,
        slowest,
        critical_path,
        by_program: ByProgram(programs),
        regions,
        costs,
    }
}

/// User + system CPU, ns.
fn cpu_of(u: &Usage) -> u64 {
    u.cpu_user_ns.saturating_add(u.cpu_sys_ns)
}

/// How to render the text.
#[derive(Debug, Clone, Copy)]
pub struct TextOptions {
    /// Colour.
    pub color: bool,
    /// Columns for a line; longer commands are cut with `…`.
    pub width: usize,
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "-".into();
    }
    format!("{:.0}%", part as f64 * 100.0 / whole as f64)
}

fn offset(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", fmt_duration(ns.unsigned_abs()))
    } else {
        format!("+{}", fmt_duration(ns as u64))
    }
}

fn bg_text(b: &Background, p: Paint) -> String {
    match &b.exit {
        Some(s) => format!(
            "{}, then {}",
            p.background("outlived the command"),
            exit_text(s.raw, p)
        ),
        None => p.background(match b.state {
            "timeout" => "still running after --wait-bg",
            "error" => "could not be probed",
            _ => "still running",
        }),
    }
}

/// The headline numbers, one line.
fn headline(r: &RunReport, p: Paint) -> String {
    let mut parts = vec![
        format!("wall {}", p.emphasis(&fmt_duration(r.wall_ns))),
        plural(r.processes, "process", "processes"),
        plural(r.execs, "exec", "execs"),
    ];
    let f = r.failures.len() as u64;
    parts.push(if f > 0 {
        p.failure(&plural(f, "failure", "failures"))
    } else {
        "0 failures".into()
    });
    let b = r.background.len() as u64;
    parts.push(if b > 0 {
        p.background(&format!("{b} background"))
    } else {
        "0 background".into()
    });
    if r.exit_unknown > 0 {
        parts.push(p.loss(&format!("{} exits unknown", r.exit_unknown)));
    }
    parts.push(if r.lost > 0 {
        p.loss(&plural(r.lost, "event lost", "events lost"))
    } else {
        "0 events lost".into()
    });
    parts.join(", ")
}

/// Most critical-path lines the text and Markdown show (the JSON has the whole path).
const PATH_LINES: usize = 40;

/// A line of the critical path as shown.
enum PathRow<'a> {
    Step(&'a PathStep),
    /// Steps left out between the shown ones: how many, their summed duration.
    Gap(usize, u64),
}

/// The critical path cut to [`PATH_LINES`] for people: when longer, only the command's own
/// children (depth ≤ 1); when still longer, the first and last 20 of those around a count of
/// the rest. Returns the rows and how many deeper steps were hidden.
fn shown_path(r: &RunReport) -> (Vec<PathRow<'_>>, usize) {
    let all = &r.critical_path;
    if all.len() <= PATH_LINES {
        return (all.iter().map(PathRow::Step).collect(), 0);
    }
    let top: Vec<&PathStep> = all.iter().filter(|s| s.depth <= 1).collect();
    let deeper = all.len() - top.len();
    if top.len() <= PATH_LINES {
        return (top.into_iter().map(PathRow::Step).collect(), deeper);
    }
    let half = PATH_LINES / 2;
    let hidden = &top[half..top.len() - half];
    let mut rows: Vec<PathRow<'_>> = top[..half].iter().map(|s| PathRow::Step(s)).collect();
    rows.push(PathRow::Gap(
        hidden.len(),
        hidden.iter().map(|s| s.step.duration_ns).sum(),
    ));
    rows.extend(top[top.len() - half..].iter().map(|s| PathRow::Step(s)));
    (rows, deeper)
}

/// The summary for people, as printed on stderr after the tree: aligned columns, coloured like
/// the tree when `o.color`.
pub fn render_text(r: &RunReport, o: TextOptions) -> String {
    let p = Paint { on: o.color };
    let mut out = String::new();
    let _ = writeln!(out, "{} {}", p.emphasis("summary:"), headline(r, p));
    let pidw = |pids: &mut dyn Iterator<Item = i32>| pids.map(|x| x.to_string().len()).max().unwrap_or(1);
    if let Some(c) = &r.costs {
        let _ = writeln!(out, "{} {}", p.emphasis("cost:"), cost_line(r, c));
        if let Some(h) = c.top_cpu.first() {
            let what = format!("{}:", cost_text(h));
            let _ = writeln!(
                out,
                "{} {what} {} {}",
                p.emphasis("hungriest:"),
                p.emphasis(&h.pid.to_string()),
                cut(
                    &h.label,
                    o.width
                        .saturating_sub(what.chars().count() + h.pid.to_string().len() + 13)
                )
            );
        }
    }

    if !r.failures.is_empty() {
        let _ = writeln!(out, "{}", p.emphasis("failures:"));
        let w = pidw(&mut r.failures.iter().take(TOP).map(|f| f.pid));
        let rows: Vec<(String, &Failure)> = r
            .failures
            .iter()
            .take(TOP)
            .map(|f| (exit_text(f.status.raw, Paint { on: false }), f))
            .collect();
        let sw = rows.iter().map(|(s, _)| s.chars().count()).max().unwrap_or(0);
        for (plain, f) in rows {
            let pad = sw - plain.chars().count();
            let _ = writeln!(
                out,
                "  {:>w$}  {}{:pad$}  {}",
                f.pid,
                exit_text(f.status.raw, p),
                "",
                cut(&f.label, o.width.saturating_sub(w + sw + 6))
            );
        }
        if r.failures.len() > TOP {
            let _ = writeln!(
                out,
                "  {}",
                p.secondary(&format!("… {} more", r.failures.len() - TOP))
            );
        }
    }

    if !r.background.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            p.emphasis("background children (outlived the command):")
        );
        let w = pidw(&mut r.background.iter().take(TOP).map(|b| b.pid));
        for b in r.background.iter().take(TOP) {
            let _ = writeln!(
                out,
                "  {:>w$}  {}  {}",
                b.pid,
                cut(&b.label, o.width.saturating_sub(w + 40)),
                bg_text(b, p)
            );
        }
        if r.background.len() > TOP {
            let _ = writeln!(
                out,
                "  {}",
                p.secondary(&format!("… {} more", r.background.len() - TOP))
            );
        }
    }

    if !r.slowest.is_empty() {
        let _ = writeln!(out, "{}", p.emphasis("slowest:"));
        let dw = r
            .slowest
            .iter()
            .map(|s| fmt_duration(s.duration_ns).len())
            .max()
            .unwrap_or(0);
        let w = pidw(&mut r.slowest.iter().map(|s| s.pid));
        for s in &r.slowest {
            let _ = writeln!(
                out,
                "  {:>dw$}  {}  {}",
                fmt_duration(s.duration_ns),
                p.emphasis(&format!("{:>w$}", s.pid)),
                cut(&s.label, o.width.saturating_sub(dw + w + 6))
            );
        }
    }

    if let Some(c) = &r.costs {
        cost_table(
            &mut out,
            p,
            o.width,
            "most CPU: (user + system)",
            &c.top_cpu,
            false,
        );
        cost_table(&mut out, p, o.width, "most memory: (peak RSS)", &c.top_rss, true);
    }

    if !r.by_program.0.is_empty() {
        totals_table(
            &mut out,
            p,
            if r.costs.is_some() {
                "by program (total time, CPU, largest peak memory):"
            } else {
                "by program (total time):"
            },
            &r.by_program.0,
            32,
            "programs",
        );
    }

    if let Some(g) = &r.regions {
        let _ = writeln!(
            out,
            "{} {}",
            p.emphasis("regions:"),
            p.secondary(&format!(
                "({} reported by the processes themselves; slowest)",
                g.count
            ))
        );
        let dw = g
            .slowest
            .iter()
            .map(|s| fmt_duration(s.duration_ns).len())
            .max()
            .unwrap_or(0);
        let w = pidw(&mut g.slowest.iter().map(|s| s.pid));
        for s in &g.slowest {
            let thread = if s.thread == "main" {
                String::new()
            } else {
                format!(" [{}]", s.thread)
            };
            let _ = writeln!(
                out,
                "  {:>dw$}  {}  {}",
                fmt_duration(s.duration_ns),
                p.emphasis(&format!("{:>w$}", s.pid)),
                cut(
                    &format!("{} {}{thread}", s.program, s.name),
                    o.width.saturating_sub(dw + w + 6)
                )
            );
        }
        totals_table(
            &mut out,
            p,
            "regions by name (total time):",
            &g.by_name.0,
            48,
            "names",
        );
    }

    if !r.critical_path.is_empty() {
        let _ = writeln!(
            out,
            "{} {}",
            p.emphasis("critical path:"),
            p.secondary("(start, duration, share of wall time)")
        );
        let ow = r
            .critical_path
            .iter()
            .map(|s| offset(s.step.start_ns).len())
            .max()
            .unwrap_or(0);
        let dw = r
            .critical_path
            .iter()
            .map(|s| fmt_duration(s.step.duration_ns).len())
            .max()
            .unwrap_or(0);
        let (rows, deeper) = shown_path(r);
        for row in rows {
            let s = match row {
                PathRow::Step(s) => s,
                PathRow::Gap(n, ns) => {
                    let _ = writeln!(
                        out,
                        "  {}",
                        p.secondary(&format!("… {n} more steps, {} in all …", fmt_duration(ns)))
                    );
                    continue;
                }
            };
            let indent = "  ".repeat(s.depth);
            let used = ow + dw + 5 + 2 + indent.len() + s.step.pid.to_string().len() + 4;
            let _ = writeln!(
                out,
                "  {}  {:>dw$}  {:>4}  {indent}{} {}",
                p.secondary(&format!("{:>ow$}", offset(s.step.start_ns))),
                fmt_duration(s.step.duration_ns),
                share(s.step.duration_ns, r.wall_ns),
                p.emphasis(&s.step.pid.to_string()),
                cut(&s.step.label, o.width.saturating_sub(used))
            );
        }
        if deeper > 0 {
            let _ = writeln!(
                out,
                "  {}",
                p.secondary(&format!(
                    "({deeper} steps inside these not shown: the whole path is in --summary-json)"
                ))
            );
        }
    }
    out
}

/// Markdown code span for `s`, safe inside a table cell.
fn code(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ").replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

fn md_status(s: &StatusJson) -> String {
    exit_text(s.raw, Paint { on: false })
}

/// Commands in Markdown are cut to this many characters (the JSON has them whole).
const MD_WIDTH: usize = 120;

/// The same summary as Markdown (a heading, the headline, tables), for a CI job summary such as
/// GitHub Actions' `$GITHUB_STEP_SUMMARY`. Ends with a blank line so appended summaries stay
/// apart.
pub fn render_markdown(r: &RunReport) -> String {
    let mut out = String::new();
    let title = match &r.command {
        Some(argv) => format!("proctrace: {}", code(&cut(&quote_argv(argv, false), MD_WIDTH))),
        None => "proctrace".to_string(),
    };
    let _ = writeln!(out, "### {title}\n");
    let status = match &r.status {
        Some(s) => format!("**{}** · ", md_status(s)),
        None => String::new(),
    };
    let _ = writeln!(out, "{status}{}\n", headline(r, Paint { on: false }));
    if let Some(c) = &r.costs {
        let _ = writeln!(out, "#### What it cost\n");
        let _ = writeln!(out, "{}\n", cost_line(r, c));
        if let Some(h) = c.top_cpu.first() {
            let _ = writeln!(
                out,
                "Hungriest: {} (pid {}, {})\n",
                code(&cut(&h.label, MD_WIDTH)),
                h.pid,
                cost_text(h)
            );
        }
        for (title, list) in [
            ("Most CPU (user + system)", &c.top_cpu),
            ("Most memory (peak RSS)", &c.top_rss),
        ] {
            let _ = writeln!(out, "| {title} | cpu | peak | pid |");
            let _ = writeln!(out, "|---|---:|---:|---:|");
            for x in list.iter() {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    code(&cut(&x.label, MD_WIDTH)),
                    fmt_duration(x.cpu_ns),
                    fmt_kib(x.max_rss_kib),
                    x.pid
                );
            }
            out.push('\n');
        }
    }

    if !r.critical_path.is_empty() {
        let _ = writeln!(out, "#### Critical path\n");
        let _ = writeln!(out, "| start | duration | share | pid | command |");
        let _ = writeln!(out, "|---:|---:|---:|---:|---|");
        let (rows, deeper) = shown_path(r);
        for row in rows {
            let s = match row {
                PathRow::Step(s) => s,
                PathRow::Gap(n, ns) => {
                    let _ = writeln!(out, "| … | {} | | | {n} more steps |", fmt_duration(ns));
                    continue;
                }
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {}{} |",
                offset(s.step.start_ns),
                fmt_duration(s.step.duration_ns),
                share(s.step.duration_ns, r.wall_ns),
                s.step.pid,
                "&emsp;".repeat(s.depth),
                code(&cut(&s.step.label, MD_WIDTH))
            );
        }
        if deeper > 0 {
            let _ = writeln!(
                out,
                "\n{deeper} steps inside these are not shown: the whole path is in `--summary-json`."
            );
        }
        out.push('\n');
    }
    if !r.slowest.is_empty() {
        let _ = writeln!(out, "#### Slowest\n");
        let _ = writeln!(out, "| duration | start | pid | command |");
        let _ = writeln!(out, "|---:|---:|---:|---|");
        for s in &r.slowest {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                fmt_duration(s.duration_ns),
                offset(s.start_ns),
                s.pid,
                code(&cut(&s.label, MD_WIDTH))
            );
        }
        out.push('\n');
    }
    if !r.by_program.0.is_empty() {
        let _ = writeln!(out, "#### By program\n");
        if r.costs.is_some() {
            let _ = writeln!(out, "| program | count | total | cpu | largest peak |");
            let _ = writeln!(out, "|---|---:|---:|---:|---:|");
        } else {
            let _ = writeln!(out, "| program | count | total |");
            let _ = writeln!(out, "|---|---:|---:|");
        }
        for (name, s) in r.by_program.0.iter().take(TOP) {
            let mut row = format!("| {} | {} | {} |", code(name), s.count, fmt_duration(s.total_ns));
            if r.costs.is_some() {
                let _ = write!(
                    row,
                    " {} | {} |",
                    s.cpu_ns.map(fmt_duration).unwrap_or_default(),
                    s.max_rss_kib.map(fmt_kib).unwrap_or_default()
                );
            }
            let _ = writeln!(out, "{row}");
        }
        if r.by_program.0.len() > TOP {
            let _ = writeln!(out, "\n… {} more programs", r.by_program.0.len() - TOP);
        }
        out.push('\n');
    }
    if let Some(g) = &r.regions {
        let _ = writeln!(out, "#### Regions ({} reported by the processes)\n", g.count);
        let _ = writeln!(out, "| duration | start | pid | program | region | thread |");
        let _ = writeln!(out, "|---:|---:|---:|---|---|---|");
        for s in &g.slowest {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                fmt_duration(s.duration_ns),
                offset(s.start_ns),
                s.pid,
                code(&s.program),
                code(&cut(&s.name, MD_WIDTH)),
                code(&s.thread)
            );
        }
        let _ = writeln!(out, "\n| region | count | total |");
        let _ = writeln!(out, "|---|---:|---:|");
        for (name, s) in g.by_name.0.iter().take(TOP) {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                code(&cut(name, MD_WIDTH)),
                s.count,
                fmt_duration(s.total_ns)
            );
        }
        if g.by_name.0.len() > TOP {
            let _ = writeln!(out, "\n… {} more names", g.by_name.0.len() - TOP);
        }
        out.push('\n');
    }
    if !r.failures.is_empty() {
        let _ = writeln!(out, "#### Failures\n");
        let _ = writeln!(out, "| pid | status | command |");
        let _ = writeln!(out, "|---:|---|---|");
        for f in r.failures.iter().take(TOP) {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                f.pid,
                md_status(&f.status),
                code(&cut(&f.label, MD_WIDTH))
            );
        }
        if r.failures.len() > TOP {
            let _ = writeln!(out, "\n… {} more", r.failures.len() - TOP);
        }
        out.push('\n');
    }
    if !r.background.is_empty() {
        let _ = writeln!(out, "#### Background children (leaks)\n");
        let _ = writeln!(out, "| pid | state | command |");
        let _ = writeln!(out, "|---:|---|---|");
        for b in r.background.iter().take(TOP) {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                b.pid,
                bg_text(b, Paint { on: false }),
                code(&cut(&b.label, MD_WIDTH))
            );
        }
        if r.background.len() > TOP {
            let _ = writeln!(out, "\n… {} more", r.background.len() - TOP);
        }
        out.push('\n');
    }
    out
}

/// A "name  count×  total" table of the first [`TOP`] entries (names cut at `max_name`), and how
/// many more there are.
fn totals_table(
    out: &mut String,
    p: Paint,
    title: &str,
    items: &[(String, ProgramStat)],
    max_name: usize,
    more: &str,
) {
    let _ = writeln!(out, "{}", p.emphasis(title));
    let top = &items[..items.len().min(TOP)];
    let nw = top
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0)
        .min(max_name);
    let cw = top
        .iter()
        .map(|(_, s)| s.count.to_string().len())
        .max()
        .unwrap_or(1);
    let tw = top
        .iter()
        .map(|(_, s)| fmt_duration(s.total_ns).len())
        .max()
        .unwrap_or(0);
    let costs: Vec<(String, String)> = top
        .iter()
        .map(|(_, s)| {
            (
                s.cpu_ns.map(fmt_duration).unwrap_or_default(),
                s.max_rss_kib.map(fmt_kib).unwrap_or_default(),
            )
        })
        .collect();
    let uw = costs.iter().map(|c| c.0.chars().count()).max().unwrap_or(0);
    let mw = costs.iter().map(|c| c.1.chars().count()).max().unwrap_or(0);
    for ((name, s), (cpu, mem)) in top.iter().zip(costs.iter()) {
        let name = cut(name, nw);
        let pad = nw - name.chars().count();
        let mut line = format!(
            "  {name}{:pad$}  {:>cw$}×  {:>tw$}",
            "",
            s.count,
            fmt_duration(s.total_ns)
        );
        if uw + mw > 0 {
            let _ = write!(line, "  {cpu:>uw$}  {mem:>mw$}");
            line.truncate(line.trim_end().len());
        }
        let _ = writeln!(out, "{line}");
    }
    if items.len() > TOP {
        let _ = writeln!(
            out,
            "  {}",
            p.secondary(&format!("… {} more {more}", items.len() - TOP))
        );
    }
}

/// "CPU 12.3s over 4.1s wall: 3.0 cores on average", and how many were measured when not all.
fn cost_line(r: &RunReport, c: &Costs) -> String {
    let mut s = format!(
        "CPU {} over {} wall",
        fmt_duration(c.cpu_ns),
        fmt_duration(r.wall_ns)
    );
    if let Some(x) = c.parallelism {
        let _ = write!(s, ": {x:.1} cores on average");
    }
    if c.measured < r.processes {
        let _ = write!(s, " ({} of {} processes measured)", c.measured, r.processes);
    }
    s
}

/// "2.38s CPU, 64.4 MiB peak".
fn cost_text(c: &Cost) -> String {
    format!("{} CPU, {} peak", fmt_duration(c.cpu_ns), fmt_kib(c.max_rss_kib))
}

/// A list of processes by CPU (or, `by_rss`, by peak memory): the figure it is sorted by first.
fn cost_table(out: &mut String, p: Paint, width: usize, title: &str, items: &[Cost], by_rss: bool) {
    if items.is_empty() {
        return;
    }
    let _ = writeln!(out, "{}", p.emphasis(title));
    let cols: Vec<(String, String)> = items
        .iter()
        .map(|c| {
            let (cpu, mem) = (fmt_duration(c.cpu_ns), fmt_kib(c.max_rss_kib));
            if by_rss { (mem, cpu) } else { (cpu, mem) }
        })
        .collect();
    let aw = cols.iter().map(|c| c.0.chars().count()).max().unwrap_or(0);
    let bw = cols.iter().map(|c| c.1.chars().count()).max().unwrap_or(0);
    let w = items.iter().map(|c| c.pid.to_string().len()).max().unwrap_or(1);
    for (c, (a, b)) in items.iter().zip(cols) {
        let _ = writeln!(
            out,
            "  {a:>aw$}  {}  {}  {}",
            p.secondary(&format!("{b:>bw$}")),
            p.emphasis(&format!("{:>w$}", c.pid)),
            cut(&c.label, width.saturating_sub(aw + bw + w + 8))
        );
    }
}

/// The summary as one JSON object (pretty-printed, ending in a newline).
pub fn render_json(r: &RunReport) -> String {
    json_string(|out| write_json(r, out))
}

/// What `write` writes, as a string (an object that could not be written: `{"error": …}`).
pub(crate) fn json_string(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    if let Err(e) = write(&mut out) {
        return format!("{{\"error\": \"{e}\"}}\n");
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// [`render_json`] written to `w` as it is made (no copy of a big build's object is held).
pub fn write_json(r: &RunReport, w: &mut impl std::io::Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, r)?;
    w.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    //! Hand-made trees, built through the real [`Tracker`] from synthetic events, where the
    //! answer is known.
    use super::*;
    use crate::model::event::BackgroundState;
    use crate::model::event::Event;
    use crate::model::tracker::Scope;
    use crate::testkit;

    const MS: u64 = 1_000_000;

    // The shared builders, timed in milliseconds.
    fn fork(ms: u64, parent: i32, child: i32) -> Event {
        testkit::fork(ms * MS, parent, child)
    }
    fn exit(ms: u64, pid: i32, code: u32) -> Event {
        testkit::exit(ms * MS, pid, code)
    }
    fn exec(ms: u64, pid: i32, argv: &[&str]) -> [Event; 2] {
        testkit::exec(ms * MS, pid, argv, None)
    }

    /// Feeds `events` to a tracker following root 1 (as `run` does) and summarizes.
    fn report(events: &[Event]) -> RunReport {
        let mut t = testkit::tracker(Scope::Tree, true, true);
        t.expect_root(1);
        let mut facts = Vec::new();
        for e in events {
            t.apply(e, &mut facts);
        }
        let mut h = testkit::header(0, &["root"]);
        h.tool.pid = 0;
        h.tool.argv = vec![];
        let end = events.iter().filter_map(|e| e.ts()).max().unwrap_or(0);
        let sum = testkit::summary(end, &t, Some(1));
        summarize(&h, &t, &sum, true)
    }

    fn path(r: &RunReport) -> Vec<(i32, usize)> {
        r.critical_path.iter().map(|s| (s.step.pid, s.depth)).collect()
    }

    /// `first_n` is a stable sort and `take(n)`: the same items in the same order, ties (many
    /// here) in their own order, for every `n` up to past the end.
    #[test]
    fn first_n_is_a_stable_sort_then_take() {
        let items: Vec<(u64, u32)> = (0..500u32).map(|i| (u64::from(i * 7919 % 13), i)).collect();
        let cmp = |a: &(u64, u32), b: &(u64, u32)| b.0.cmp(&a.0);
        let mut sorted = items.clone();
        sorted.sort_by(cmp);
        for n in [0, 1, 5, 20, 499, 500, 600] {
            let want: Vec<_> = sorted.iter().copied().take(n).collect();
            assert_eq!(first_n(&items, n, cmp), want, "n = {n}");
        }
    }

    /// Fuzzing found these: a saved trace can hold an exit stamped before its fork, and
    /// timestamps far from the origin (`cargo fuzz run capture`).
    #[test]
    fn an_exit_before_its_fork_and_far_timestamps_do_not_overflow() {
        let r = report(&[fork(0, 100, 1), fork(50, 1, 2), exit(30, 2, 1), exit(100, 1, 0)]);
        assert_eq!(r.failures.len(), 1);
        let far = report(&[
            fork(0, 100, 1),
            testkit::fork(u64::MAX - 5, 1, 2),
            testkit::exit(u64::MAX - 1, 2, 3),
            exit(100, 1, 0),
        ]);
        assert_eq!(far.failures.len(), 1);
        assert_eq!(far.failures[0].start_ns, Some(-(5 + 1) as i64));
        // Two processes of one program, each lasting more than half of u64's nanoseconds: their
        // total saturates (fuzzing, 2026-12-01: the sum overflowed).
        let long = report(&[
            fork(0, 100, 1),
            testkit::fork(1, 1, 2),
            testkit::exit(u64::MAX / 2 + 10, 2, 0),
            testkit::fork(2, 1, 3),
            testkit::exit(u64::MAX / 2 + 20, 3, 0),
            exit(100, 1, 0),
        ]);
        assert!(
            long.by_program.0.iter().any(|(_, p)| p.total_ns == u64::MAX),
            "{:?}",
            long.by_program.0
        );
    }

    fn region(ms: (u64, u64), pid: i32, category: &str, label: &str, nesting: u32) -> Event {
        Event::Region {
            tgid: pid,
            region: crate::model::event::Region {
                ts: ms.0 * MS,
                end: ms.1 * MS,
                thread: "main".into(),
                category: category.into(),
                label: label.into(),
                msg: None,
                nesting,
            },
        }
    }

    /// Regions: the slowest listed longest first with their process, totals by name; a run
    /// without regions has no section at all (and no `regions` key in the JSON).
    #[test]
    fn regions_are_summarized_only_when_reported() {
        let mut evs = vec![fork(0, 100, 1)];
        evs.extend(exec(1, 1, &["git", "fetch"]));
        evs.extend([
            fork(10, 1, 2),
            region((2, 40), 1, "fetch", "remote_refs", 1),
            region((5, 9), 1, "index", "do_read_index", 2),
            region((50, 60), 1, "index", "do_read_index", 1),
            exit(70, 2, 0),
            region((12, 68), 2, "pack", "write", 1),
            exit(100, 1, 0),
        ]);
        let r = report(&evs);
        let g = r.regions.as_ref().unwrap();
        assert_eq!(g.count, 4);
        let slow: Vec<(&str, i32, u64)> = g
            .slowest
            .iter()
            .map(|s| (s.name.as_str(), s.pid, s.duration_ns / MS))
            .collect();
        assert_eq!(
            slow,
            [
                ("pack:write", 2, 56),
                ("fetch:remote_refs", 1, 38),
                ("index:do_read_index", 1, 10),
                ("index:do_read_index", 1, 4)
            ]
        );
        assert_eq!(g.slowest[1].start_ns, 2 * MS as i64);
        let names: Vec<(&str, u64, u64)> = g
            .by_name
            .0
            .iter()
            .map(|(n, s)| (n.as_str(), s.count, s.total_ns / MS))
            .collect();
        assert_eq!(
            names,
            [
                ("pack:write", 1, 56),
                ("fetch:remote_refs", 1, 38),
                ("index:do_read_index", 2, 14)
            ]
        );
        let text = render_text(
            &r,
            TextOptions {
                color: false,
                width: 100,
            },
        );
        assert!(text.contains("regions: (4 reported"), "{text}");
        assert!(text.contains(" pack:write\n"), "{text}");
        assert!(render_markdown(&r).contains("#### Regions (4 reported"));
        let json: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
        assert_eq!(json["regions"]["slowest"][0]["name"], "pack:write");
        assert_eq!(json["regions"]["by_name"]["index:do_read_index"]["count"], 2);

        let plain = report(&[fork(0, 100, 1), exit(10, 1, 0)]);
        assert!(plain.regions.is_none());
        assert!(
            !render_text(
                &plain,
                TextOptions {
                    color: false,
                    width: 100
                }
            )
            .contains("regions")
        );
        assert!(!render_json(&plain).contains("regions"));
    }

    #[test]
    fn a_chain_is_all_on_the_path() {
        let r = report(&[
            fork(0, 100, 1),
            fork(10, 1, 2),
            fork(20, 2, 3),
            exit(80, 3, 0),
            exit(90, 2, 0),
            exit(100, 1, 0),
        ]);
        assert_eq!(path(&r), [(1, 0), (2, 1), (3, 2)]);
        assert_eq!(r.wall_ns, 100 * MS);
        let starts: Vec<i64> = r.critical_path.iter().map(|s| s.step.start_ns).collect();
        assert_eq!(starts, [0, 10 * MS as i64, 20 * MS as i64]);
        let durs: Vec<u64> = r.critical_path.iter().map(|s| s.step.duration_ns).collect();
        assert_eq!(durs, [100 * MS, 80 * MS, 60 * MS]);
    }

    #[test]
    fn a_fan_out_puts_the_longest_child_on_the_path() {
        let r = report(&[
            fork(0, 100, 1),
            fork(10, 1, 2),
            fork(10, 1, 3),
            fork(10, 1, 4),
            exit(50, 2, 0),
            exit(90, 3, 0),
            exit(70, 4, 0),
            exit(100, 1, 0),
        ]);
        assert_eq!(path(&r), [(1, 0), (3, 1)]);
        let slowest: Vec<i32> = r.slowest.iter().map(|s| s.pid).collect();
        assert_eq!(slowest, [3, 4, 2], "longest first, root excluded");
    }

    #[test]
    fn a_fan_in_takes_the_later_of_the_parallel_pair_then_the_join() {
        let r = report(&[
            fork(0, 100, 1),
            fork(10, 1, 2), // A
            fork(10, 1, 3), // B
            exit(40, 3, 0),
            exit(60, 2, 0),
            fork(61, 1, 4), // C, after both
            exit(90, 4, 0),
            exit(100, 1, 0),
        ]);
        assert_eq!(path(&r), [(1, 0), (2, 1), (4, 1)]);
    }

    #[test]
    fn a_background_child_never_counts() {
        let r = report(&[
            fork(0, 100, 1),
            fork(10, 1, 2),
            fork(20, 1, 3), // left running, then ends long after the command
            exit(50, 2, 0),
            exit(100, 1, 0),
            Event::Background {
                ts: 101 * MS,
                tgid: 3,
                state: BackgroundState::Ready,
                report: false,
            },
            exit(500, 3, 0),
        ]);
        assert_eq!(path(&r), [(1, 0), (2, 1)]);
        assert_eq!(r.wall_ns, 100 * MS, "wall time is the command's, not the leak's");
        assert_eq!(r.background.len(), 1);
        assert_eq!(r.background[0].pid, 3);
        assert!(r.slowest.iter().all(|s| s.pid != 3), "{:?}", r.slowest);
    }

    #[test]
    fn sequential_children_are_all_on_the_path() {
        let r = report(&[
            fork(0, 100, 1),
            fork(10, 1, 2),
            exit(30, 2, 0),
            fork(30, 1, 3),
            exit(50, 3, 0),
            fork(55, 1, 4),
            exit(90, 4, 1),
            exit(100, 1, 1),
        ]);
        assert_eq!(path(&r), [(1, 0), (2, 1), (3, 1), (4, 1)]);
        let f: Vec<(i32, Option<i32>)> = r.failures.iter().map(|f| (f.pid, f.status.code)).collect();
        assert_eq!(f, [(1, Some(1)), (4, Some(1))]);
    }

    #[test]
    fn a_process_with_unknown_exit_never_counts() {
        let r = report(&[
            fork(0, 100, 1),
            fork(10, 1, 2),
            Event::Lost {
                ts: Some(20 * MS),
                count: 1,
            }, // 2's exit
            fork(60, 1, 2), // the pid again: the first instance is closed with its exit unknown
            exit(70, 2, 0),
            exit(100, 1, 0),
        ]);
        assert_eq!(path(&r), [(1, 0), (2, 1)]);
        assert_eq!(
            r.critical_path[1].step.start_ns,
            60 * MS as i64,
            "the second instance"
        );
        assert_eq!(r.exit_unknown, 1);
        assert_eq!(r.lost, 1);
        assert_eq!(r.slowest.len(), 1);
        assert!(r.failures.is_empty(), "an unknown exit is not a failure");
    }

    #[test]
    fn gaps_are_the_parents_own_work_and_overlaps_pick_the_gating_child() {
        // make -j2 in miniature: 2 and 3 start together; 4 starts when 2 ends; the link (5)
        // starts when the later of 3 and 4 ends. Path: 2 → 4 → 5 (3 finished earlier).
        let r = report(&[
            fork(0, 100, 1),
            fork(5, 1, 2),
            fork(5, 1, 3),
            exit(40, 2, 0),
            fork(41, 1, 4),
            exit(60, 3, 0),
            exit(80, 4, 0),
            fork(85, 1, 5),
            exit(95, 5, 0),
            exit(100, 1, 0),
        ]);
        assert_eq!(path(&r), [(1, 0), (2, 1), (4, 1), (5, 1)]);
    }

    #[test]
    fn programs_and_folding_of_wrappers() {
        let mut ev = vec![fork(0, 100, 1)];
        ev.extend(exec(1, 1, &["make", "-j2"]));
        ev.push(fork(10, 1, 2));
        ev.extend(exec(11, 2, &["/usr/bin/cc", "-c", "f.c"]));
        ev.push(fork(12, 2, 3));
        ev.extend(exec(13, 3, &["/usr/lib/gcc/cc1", "f.c"]));
        ev.extend([exit(60, 3, 0), exit(62, 2, 0)]);
        ev.push(fork(63, 1, 4)); // a fork of make that never execs
        ev.extend([exit(64, 4, 0), exit(100, 1, 0)]);
        let r = report(&ev);
        let progs: Vec<(&str, u64, u64)> = r
            .by_program
            .0
            .iter()
            .map(|(n, s)| (n.as_str(), s.count, s.total_ns))
            .collect();
        assert_eq!(
            progs,
            [
                ("make", 1, 100 * MS),
                ("cc", 1, 52 * MS),
                ("cc1", 1, 48 * MS),
                ("[fork of make]", 1, MS)
            ]
        );
        // cc1 takes 48 of cc's 52 ms: folded into `cc -c f.c`, which names the compile.
        let slowest: Vec<i32> = r.slowest.iter().map(|s| s.pid).collect();
        assert_eq!(slowest, [2, 4]);
        assert_eq!(path(&r), [(1, 0), (2, 1), (3, 2), (4, 1)]);
        let j: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
        assert_eq!(j["critical_path"][2]["argv"][0], "/usr/lib/gcc/cc1");
        assert_eq!(j["critical_path"][2]["start_s"], 0.012);
        assert_eq!(j["critical_path"][2]["duration_s"], 0.048);
        assert_eq!(j["by_program"]["cc1"]["count"], 1);
        assert_eq!(j["wall_s"], 0.1);
    }

    #[test]
    fn a_long_path_is_cut_for_people_but_whole_in_json() {
        // 100 sequential jobs, each with one grandchild: a path of 201 steps.
        let mut ev = vec![fork(0, 100, 1)];
        for j in 0..100u64 {
            let (c, g) = (2 + 2 * j as i32, 3 + 2 * j as i32);
            ev.extend([
                fork(10 * j + 1, 1, c),
                fork(10 * j + 2, c, g),
                exit(10 * j + 8, g, 0),
                exit(10 * j + 9, c, 0),
            ]);
        }
        ev.push(exit(1000, 1, 0));
        let r = report(&ev);
        assert_eq!(r.critical_path.len(), 201);
        let text = render_text(
            &r,
            TextOptions {
                color: false,
                width: 100,
            },
        );
        let path_lines: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("critical path:"))
            .skip(1)
            .collect();
        assert_eq!(path_lines.len(), PATH_LINES + 2, "{text}");
        assert!(
            path_lines[20].contains("… 61 more steps, 488.0ms in all …"),
            "{text}"
        );
        assert!(
            path_lines[41].contains("(100 steps inside these not shown"),
            "{text}"
        );
        assert!(path_lines[40].contains(" 200 [fork of ?]"), "{text}");
        let md = render_markdown(&r);
        assert!(md.contains("| … | 488.0ms | | | 61 more steps |"), "{md}");
    }

    #[test]
    fn colour_only_when_asked() {
        let r = report(&[fork(0, 100, 1), fork(10, 1, 2), exit(50, 2, 1), exit(100, 1, 0)]);
        let on = render_text(
            &r,
            TextOptions {
                color: true,
                width: 100,
            },
        );
        assert!(on.contains("\x1b[31mexit 1\x1b[0m"), "{on:?}");
        assert!(on.contains("\x1b[31m1 failure\x1b[0m"), "{on:?}");
        let off = render_text(
            &r,
            TextOptions {
                color: false,
                width: 100,
            },
        );
        assert!(!off.contains('\x1b'), "{off:?}");
        assert!(!render_markdown(&r).contains('\x1b'));
    }

    #[test]
    fn markdown_survives_pipes_and_backticks() {
        assert_eq!(code("a|b"), r"`a\|b`");
        assert_eq!(code("x `y` z"), "``x `y` z``");
        assert_eq!(code("`q"), "`` `q ``");
    }

    /// A build with figures: `make` (1) runs `cc` (2, whose `cc1` 4 does its work) and a
    /// `link` (3) side by side, and `sh` (5) that was not measured.
    fn costly() -> Vec<Event> {
        let u = testkit::usage;
        let mut ev = vec![fork(0, 0, 1)];
        ev.extend(exec(0, 1, &["make", "-j2"]));
        ev.push(fork(10, 1, 2));
        ev.extend(exec(11, 2, &["cc", "-c", "big.c"]));
        ev.push(fork(12, 2, 4));
        ev.extend(exec(13, 4, &["/usr/lib/gcc/cc1", "big.c"]));
        ev.push(fork(20, 1, 3));
        ev.extend(exec(21, 3, &["link", "-o", "app"]));
        ev.push(fork(30, 1, 5));
        ev.extend(exec(31, 5, &["sh", "-c", "true"]));
        ev.extend([u(5, 0, 0, 1), exit(40, 5, 0)]);
        ev.extend([u(4, 700, 50, 300_000), exit(990, 4, 0)]);
        ev.extend([u(2, 2, 1, 2_000), exit(995, 2, 0)]);
        ev.extend([u(3, 200, 40, 900_000), exit(800, 3, 0)]);
        ev.extend([u(1, 5, 2, 3_000), exit(1000, 1, 0)]);
        ev
    }

    #[test]
    fn costs_name_the_hungriest_and_the_parallelism() {
        let r = report(&costly());
        let c = r.costs.as_ref().expect("figures were given");
        assert_eq!(c.measured, 5, "sh's zero figures are figures too");
        assert_eq!(c.cpu_user_ns, (700 + 2 + 200 + 5) * MS);
        assert_eq!(c.cpu_sys_ns, (50 + 1 + 40 + 2) * MS);
        let par = c.parallelism.unwrap();
        assert!((par - 1000.0 / 1000.0).abs() < 1e-9, "{par}");
        let pids = |l: &[Cost]| l.iter().map(|x| x.pid).collect::<Vec<_>>();
        assert_eq!(pids(&c.top_cpu), [4, 3, 1, 2, 5]);
        assert_eq!(pids(&c.top_rss), [3, 4, 1, 2, 5]);
        // cc1 did cc's work: named with cc's command.
        assert_eq!(c.top_cpu[0].label, "cc1, for: cc -c big.c");
        assert_eq!(c.top_cpu[1].label, "link -o app");
        // cc took most of make's time, but less CPU than make: its own command.
        assert_eq!(c.top_cpu[3].label, "cc -c big.c");
        let cc1 = r.by_program.0.iter().find(|p| p.0 == "cc1").unwrap().1;
        assert_eq!((cc1.cpu_ns, cc1.max_rss_kib), (Some(750 * MS), Some(300_000)));

        let text = render_text(
            &r,
            TextOptions {
                color: false,
                width: 100,
            },
        );
        assert!(
            text.contains("cost: CPU 1.00s over 1.00s wall: 1.0 cores on average\n"),
            "{text}"
        );
        assert!(
            text.contains("hungriest: 750.0ms CPU, 293 MiB peak: 4 cc1, for: cc -c big.c\n"),
            "{text}"
        );
        assert!(
            text.contains("most memory: (peak RSS)\n   879 MiB  240.0ms  3  link -o app\n"),
            "{text}"
        );
        let md = render_markdown(&r);
        assert!(
            md.contains("Hungriest: `cc1, for: cc -c big.c` (pid 4, 750.0ms CPU, 293 MiB peak)"),
            "{md}"
        );
        assert!(
            md.contains("| program | count | total | cpu | largest peak |"),
            "{md}"
        );
        let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
        assert_eq!(v["cpu_s"], 1.0);
        assert_eq!(v["parallelism"], 1.0);
        assert_eq!(v["measured"], 5);
        assert_eq!(v["top_cpu"][0]["pid"], 4);
        assert_eq!(v["top_cpu"][0]["cpu_user_s"], 0.7);
        assert_eq!(v["top_rss"][0]["max_rss_kib"], 900_000);
        assert_eq!(v["by_program"]["link"]["cpu_s"], 0.24);
        assert_eq!(v["by_program"]["link"]["max_rss_kib"], 900_000);
    }

    #[test]
    fn a_partly_measured_run_says_so_and_an_unmeasured_one_shows_nothing() {
        // The same run without sh's figures: the sums are over the 4 measured.
        let ev: Vec<Event> = costly()
            .into_iter()
            .filter(|e| !matches!(e, Event::Usage { tgid: 5, .. }))
            .collect();
        let r = report(&ev);
        assert_eq!(r.costs.as_ref().unwrap().measured, 4);
        let text = render_text(
            &r,
            TextOptions {
                color: false,
                width: 100,
            },
        );
        assert!(text.contains("(4 of 5 processes measured)"), "{text}");
        let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
        assert!(v["by_program"]["sh"].get("cpu_s").is_none(), "{v}");

        // No figures at all: not a word of cost, no key in the JSON.
        let ev: Vec<Event> = costly()
            .into_iter()
            .filter(|e| !matches!(e, Event::Usage { .. }))
            .collect();
        let r = report(&ev);
        assert!(r.costs.is_none());
        let text = render_text(
            &r,
            TextOptions {
                color: false,
                width: 100,
            },
        );
        assert!(
            !text.contains("cost") && !text.contains("hungriest") && !text.contains("CPU"),
            "{text}"
        );
        let md = render_markdown(&r);
        assert!(!md.contains("cost") && !md.contains("cpu"), "{md}");
        let json = render_json(&r);
        for k in [
            "cpu_s",
            "parallelism",
            "top_cpu",
            "top_rss",
            "measured",
            "max_rss_kib",
        ] {
            assert!(!json.contains(k), "{k} in {json}");
        }
    }
}

#[cfg(test)]
mod make_j2 {
    //! The recorded `make -j2` of a 7-file C project: the summary names the slowest compile and
    //! the jobs that gated the link.
    use super::*;
    use crate::cmd::replay::{parse_capture, replay};
    use crate::sink::Fanout;

    #[test]
    fn names_the_slowest_compile_and_the_jobs_that_gated_the_link() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/captures/make-j2.jsonl"
        );
        let cap = parse_capture(std::fs::read(path).unwrap().as_slice(), path).unwrap();
        let h = cap.header.clone().unwrap();
        let (engine, sum) = replay(&cap, None, Fanout::new(), h.clone());
        let r = summarize(&h, &engine.tracker, &sum, true);
        let argv = |s: &Step| s.argv.clone().unwrap_or_default().join(" ");
        assert_eq!(argv(&r.slowest[0]), "cc -O1 -c -o f5.o f5.c");
        let top: Vec<(String, usize)> = r
            .critical_path
            .iter()
            .filter(|s| s.depth <= 1)
            .map(|s| (argv(&s.step), s.depth))
            .collect();
        let want = [
            "make -j2",
            "cc -O1 -c -o main.o main.c",
            "cc -O1 -c -o f2.o f2.c",
            "cc -O1 -c -o f4.o f4.c",
            "cc -O1 -c -o f6.o f6.c",
            "cc -o app main.o f1.o f2.o f3.o f4.o f5.o f6.o",
        ];
        assert_eq!(top.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(), want);
        // Each job starts when the one before it ended (a -j2 slot freed), in time order.
        for w in r
            .critical_path
            .windows(2)
            .filter(|w| w[0].depth == 1 && w[1].depth == 1)
        {
            assert!(w[0].step.start_ns + w[0].step.duration_ns as i64 <= w[1].step.start_ns);
        }
        let last = r.critical_path.last().unwrap();
        assert_eq!((last.step.program.as_str(), last.depth), ("ld", 3));
        assert_eq!(r.by_program.0[1].0, "cc1");
        assert_eq!(r.by_program.0[1].1.count, 7);
    }
}
