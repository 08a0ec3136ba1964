//! Computing the summary: a pure function of the header, the finished tracker and the session
//! summary into a [`RunReport`] (the definitions are the parent module's docs).
//!
//! Never formats for people or writes anything: the renderers do, from the report alone.

use super::failures::Failures;
use super::{
    Background, ByProgram, Cause, Cost, Costs, DaemonWork, DirEntry, Directories, Failure, FileReaders,
    FilesReport, OutsideWork, PARALLEL_FULL, PROCESS_DIR_ENTRIES, ParallelSpan, PathStep, ProcessDirs,
    ProcessFiles, Produced, ProgramStat, RegionStep, Regions, RunReport, StatusJson, Step, TOP, TOP_COST,
    TOP_FILES, TopFile, dirs,
};
use crate::model::bytes::shown;
use crate::model::escape::text;
use crate::model::event::{Argv, Usage};
use crate::model::images::{Image, Images, images};
use crate::model::naming::{
    command_line, fit, image_command_line, image_program, program, region_name, short_command_line,
};
use crate::model::session::{Header, Mode, Summary};
use crate::model::tracker::{ProcId, ProcessRecord, Tracker};
use crate::redact::{redact_arg, redact_argv};
use std::collections::HashMap;

/// A process taking at least this share of its parent's time is folded into its parent in the
/// slowest list.
const FOLD_SHARE: f64 = 0.9;

/// Characters each failed parent keeps in a cause's chain line.
const CHAIN_STEP: usize = 40;

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
    super::failures::designated_root(t, &h.mode, sum)
}

/// The first `n` of `items` in `cmp`'s order, ties in `items`' own order: what a stable sort and
/// `take(n)` give, without sorting them all (the full sorts of 600,000 records' figures were a
/// third of `analyze --json`'s time, `perf`).
pub(super) fn first_n<T: Copy>(items: &[T], n: usize, cmp: impl Fn(&T, &T) -> std::cmp::Ordering) -> Vec<T> {
    let by = |a: &usize, b: &usize| cmp(&items[*a], &items[*b]).then(a.cmp(b));
    let mut idx: Vec<usize> = (0..items.len()).collect();
    if idx.len() > n {
        idx.select_nth_unstable_by(n, by);
        idx.truncate(n);
    }
    idx.sort_unstable_by(by);
    idx.into_iter().map(|i| items[i]).collect()
}

/// The children of image `i` of `r` (`ims`) on the critical path, in time order: those forked
/// while it ran, taken backward from `end` (see the module docs).
///
/// `served`: work a daemon did while `r`, its client, ran (`--include-daemons`), taken as
/// children of `r`: what it waited for.
fn chain(
    t: &Tracker,
    r: &ProcessRecord,
    ims: &Images<'_>,
    i: usize,
    end: u64,
    served: &[(ProcId, u64, u64)],
    adopted: &[(ProcId, u64, u64)],
) -> Vec<(ProcId, u64, u64)> {
    let mut kids: Vec<(ProcId, u64, u64)> = r
        .children
        .iter()
        .filter_map(|&c| {
            let (s, e) = span(t.get(c)?)?;
            (e <= end && ims.index_at(s) == i).then_some((c, s, e))
        })
        .chain(
            served
                .iter()
                .chain(adopted)
                .copied()
                .filter(|&(_, s, e)| e <= end && ims.index_at(s) == i),
        )
        .collect();
    // Latest end first; on a tie the longer one (it set the time), then the lower pid.
    kids.sort_by(|a, b| b.2.cmp(&a.2).then(a.1.cmp(&b.1)).then(a.0.cmp(&b.0)));
    let mut cursor = end;
    let mut out = Vec::new();
    for k in kids {
        if k.2 <= cursor {
            out.push(k);
            cursor = k.1;
        }
    }
    out.reverse();
    out
}

/// An image's span within its process's `(start, end)`: never outside it, never negative.
fn image_span(im: &Image<'_>, (s, e): (u64, u64)) -> (u64, u64) {
    let a = im.start_ns.unwrap_or(s).clamp(s, e);
    (a, im.end_ns.unwrap_or(e).clamp(a, e))
}

/// How image `i` of `r` ran its children forked while it ran: the most at once (its job slots),
/// and how long that many ran within `[from, to)`. `None` when it never ran two at once, or
/// ran too few children to have refilled its slots (a pipeline).
fn slots_full(
    t: &Tracker,
    r: &ProcessRecord,
    ims: &Images<'_>,
    i: usize,
    from: u64,
    to: u64,
) -> Option<(u64, u64)> {
    let mut edges: Vec<(u64, i8)> = Vec::new();
    for &c in &r.children {
        let Some((s, e)) = t.get(c).and_then(span) else {
            continue;
        };
        if ims.index_at(s) == i && e > s {
            edges.push((s, 1));
            edges.push((e, -1));
        }
    }
    // Ends before starts at one instant: a slot freed and taken again is not two at once.
    edges.sort_unstable();
    let (mut n, mut most) = (0i64, 0i64);
    for &(_, d) in &edges {
        n += i64::from(d);
        most = most.max(n);
    }
    // A pipeline (`git clone`'s upload-pack and pack-objects) runs its few children at once by
    // design; job slots are refilled: at least two more children than slots ran.
    let children = edges.len() as i64 / 2;
    if most < 2 || children < 2 * most + 1 {
        return None;
    }
    let (mut n, mut full, mut since) = (0i64, 0u64, 0u64);
    for &(ts, d) in &edges {
        if n == most {
            full += ts.clamp(from, to).saturating_sub(since.clamp(from, to));
        }
        n += i64::from(d);
        since = ts;
    }
    Some((most as u64, full))
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
pub fn summarize(
    h: &Header,
    t: &Tracker,
    sum: &Summary,
    redact: bool,
    files_dirs: Option<usize>,
) -> RunReport {
    let root = designated_root(t, h, sum);
    let root_rec = root.and_then(|id| t.get(id));
    let (origin, wall_ns) = wall_of(root_rec, h, sum);
    // Signed offset from the origin; wrapping, so a timestamp from a hostile file cannot overflow.
    let off = |ts: u64| ts.wrapping_sub(origin) as i64;
    // The summary JSON shows bytes that are not UTF-8 as `\xNN` (JSON Lines has them exactly).
    let words = |a: &Argv| -> Vec<String> {
        if redact {
            redact_argv(a)
                .into_iter()
                .map(|s| shown(&s).into_owned())
                .collect()
        } else {
            a.iter().map(|s| shown(s).into_owned()).collect()
        }
    };
    let argv_of = |r: &ProcessRecord| -> Option<Vec<String>> { r.argv().map(words) };
    let label = |r: &ProcessRecord| command_line(r, redact);
    let step = |im: &Image<'_>, start: u64, dur: u64| Step {
        pid: im.record.pid,
        image: (im.count > 1).then_some(im.index),
        program: image_program(im),
        argv: im.argv().map(words),
        start_ns: off(start),
        duration_ns: dur,
        label: image_command_line(im, redact),
    };

    let ids = all_records(t);
    let verdict = Failures::of(t, &h.mode, sum);
    let mut nonzero_exits = Vec::new();
    let mut causes = Vec::new();
    let mut background = Vec::new();
    let mut candidates: Vec<(u64, u64, i32, ProcId, usize)> = Vec::new();
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
        // A program's time is the time its images ran; what a process cost counts under its
        // last image's program (the kernel's account is the whole process's).
        let ims = images(t, r);
        let mut i = 0;
        // A daemon's node is not a program the run ran (`--include-daemons`).
        let counted = if r.daemon_node().is_some() { 0 } else { ims.total() };
        for im in ims.clone().take(counted) {
            let name = if im.is_last() {
                p.clone()
            } else {
                image_program(&im)
            };
            i = *prog_index.entry(name.clone()).or_insert_with(|| {
                programs.push((name, ProgramStat::default()));
                programs.len() - 1
            });
            let d = if r.exit.is_some() {
                im.duration_ns().unwrap_or(0)
            } else {
                0
            };
            programs[i].1.count += 1;
            programs[i].1.total_ns = programs[i].1.total_ns.saturating_add(d);
            programs[i].1.max_ns = programs[i].1.max_ns.max(d);
        }
        if let Some(u) = r.usage.as_deref().filter(|_| counted > 0) {
            let st = &mut programs[i].1;
            st.cpu_ns = Some(st.cpu_ns.unwrap_or(0).saturating_add(cpu_of(u)));
            st.max_rss_kib = Some(st.max_rss_kib.unwrap_or(0).max(u.max_rss_kib));
            measured.push(id);
        }
        match r.exit.map(|x| x.status) {
            Some(None) => exit_unknown += 1,
            Some(Some(s)) if !s.success() => {
                let f = Failure {
                    pid: r.pid,
                    program: p.clone(),
                    argv: argv_of(r),
                    start_ns: r.start_ns.map(off),
                    status: s.into(),
                    handled: !verdict.contains(id),
                    label: label(r),
                };
                if verdict.is_cause(t, id) {
                    let chain = verdict.chain(t, id);
                    causes.push(Cause {
                        failure: f.clone(),
                        duration_ns: r.duration_ns(),
                        chain: chain.iter().filter_map(|&c| t.get(c)).map(|c| c.pid).collect(),
                        chain_label: chain
                            .iter()
                            .filter_map(|&c| t.get(c))
                            .map(|c| fit(&short_command_line(c, redact), CHAIN_STEP))
                            .collect::<Vec<_>>()
                            .join(" → "),
                    });
                }
                nonzero_exits.push(f);
            }
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
        let Some(life) = span(r) else { continue };
        // The image of the parent this process was forked from: an image at least 90% of its
        // time is folded into it, except into a fork image (`[fork of sh]` names nothing).
        let container = r.parent.and_then(|p| t.get(p)).and_then(|p| {
            let pims = images(t, p);
            let pim = pims.get(pims.index_at(life.0))?;
            Some((pim.duration_ns(), pim.is_fork()))
        });
        for im in ims {
            let (s, e) = image_span(&im, life);
            let dur = e - s;
            let folded = match container {
                Some((Some(pd), false)) => dur as f64 >= FOLD_SHARE * pd as f64,
                _ => false,
            };
            // A fork image that only waited for one child is that child's time: the child is
            // listed (by the rule above), not it.
            let waited = im.is_fork() && im.count > 1 && {
                r.children
                    .iter()
                    .filter_map(|&c| t.get(c).and_then(span))
                    .any(|(cs, ce)| {
                        im.holds(cs) && (ce.min(e).saturating_sub(cs)) as f64 >= FOLD_SHARE * dur as f64
                    })
            };
            if !folded && !waited {
                candidates.push((dur, s, r.pid, id, im.index));
            }
        }
    }
    // Longest first; the argv of only the few kept is copied.
    let slowest: Vec<Step> = first_n(&candidates, TOP, slowest_order)
        .iter()
        .filter_map(|&(dur, s, _, id, k)| Some(step(&images(t, t.get(id)?).get(k)?, s, dur)))
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
    nonzero_exits.sort_by_key(|f| (f.start_ns, f.pid));
    causes.sort_by_key(|c| (c.failure.start_ns, c.failure.pid));
    let failures: Vec<Failure> = nonzero_exits.iter().filter(|f| !f.handled).cloned().collect();
    background.sort_by_key(|b| (b.start_ns, b.pid));
    let costs = (!measured.is_empty()).then(|| {
        let cost = |id: ProcId| -> Option<Cost> {
            let r = t.get(id)?;
            let u = r.usage.as_deref()?;
            let label = cost_label(t, r, redact);
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

    let daemons = daemon_work(t, &ids);
    let (critical_path, parallel) = match root.zip(root_rec) {
        Some((id, r)) => {
            let start = r.start_ns.unwrap_or(h.ts);
            let end = r.exit.map_or(sum.ts, |x| x.ts).max(start);
            critical_path_of(t, id, (start, end), redact, &step, &daemons, &ids)
        }
        None => (Vec::new(), Vec::new()),
    };
    let daemons_report = h
        .daemons
        .iter()
        .map(|f| {
            let node = daemons
                .iter()
                .find(|d| t.get(d.node).is_some_and(|r| r.pid == f.pid));
            let (processes, cpu_ns) = node.map_or((0, None), |d| (d.processes, d.cpu_ns));
            DaemonWork {
                daemon: f.daemon.name(),
                server: f.daemon.client().server,
                pid: f.pid,
                processes,
                cpu_ns,
            }
        })
        .collect();

    // ptrace cannot follow a daemon: the fix says so, and names the backends that can.
    let tree_only = h
        .backend
        .as_deref()
        .filter(|b| crate::capture::sees_only_the_tree(b));
    let outside = crate::model::elsewhere::outside(t, &ids, &h.daemons)
        .into_iter()
        .map(|o| OutsideWork {
            client: o.client.name,
            runs: o.runs,
            pid: t.get(o.first).map_or(0, |r| r.pid),
            work: o.client.work,
            ran_in: o.client.ran_in,
            fix: crate::model::elsewhere::fix_words(o.client, tree_only),
        })
        .collect();
    let files = files_report(t, &ids, &dir_rule(t, root, files_dirs));
    RunReport {
        command: match &h.mode {
            Mode::Run { argv } => Some(if redact {
                redact_argv(argv)
                    .into_iter()
                    .map(|s| shown(&s).into_owned())
                    .collect()
            } else {
                argv.iter().map(|s| shown(s).into_owned()).collect()
            }),
            _ => None,
        },
        status: sum.status.map(StatusJson::from),
        wall_ns,
        processes: sum.stats.processes,
        execs: sum.stats.execs,
        failures,
        causes,
        nonzero_exits,
        exit_unknown,
        background,
        lost: sum.stats.lost,
        untraced: sum.capture.untraced,
        outside,
        daemons: daemons_report,
        slowest,
        critical_path,
        parallel,
        by_program: ByProgram(programs),
        regions,
        files,
        costs,
        slowest_all: candidates,
    }
}

/// The slowest list's order of its candidates ([`RunReport::slowest_all`]): longest first, then
/// the earliest, the lowest pid, the first image.
pub fn slowest_order(
    a: &(u64, u64, i32, ProcId, usize),
    b: &(u64, u64, i32, ProcId, usize),
) -> std::cmp::Ordering {
    b.0.cmp(&a.0)
        .then(a.1.cmp(&b.1))
        .then(a.2.cmp(&b.2))
        .then(a.4.cmp(&b.4))
}

/// How the lists by CPU and by peak memory name a measured process: a process doing its
/// parent's work — most of its time, as the slowest list folds it, and more CPU than the
/// parent: `cc1` of `cc -c f4.c` — is named with the parent's command, which says what the
/// work was; not for a wrapper script's: its child's own command says what the work was (`pip
/// wheel …`, not `python3, for: psutil.sh`). A process of several images names each, its cost
/// being all of theirs (`[fork of sh] → /bin/sleep 0.4`).
pub fn cost_label(t: &Tracker, r: &ProcessRecord, redact: bool) -> String {
    let label = |r: &ProcessRecord| command_line(r, redact);
    let cpu = r.usage.as_deref().map_or(0, cpu_of);
    let parent = r.parent.and_then(|p| t.get(p)).filter(|p| {
        if crate::model::naming::script(p).is_some() {
            return false;
        }
        let (Some(d), Some(pd)) = (r.duration_ns(), p.duration_ns()) else {
            return false;
        };
        let pcpu = p.usage.as_deref().map_or(0, cpu_of);
        d as f64 >= FOLD_SHARE * pd as f64 && pcpu < cpu
    });
    let ims = images(t, r);
    if ims.total() > 1 {
        let mut s = String::new();
        for im in ims.clone() {
            if im.is_last() {
                s.push_str(&label(r));
            } else {
                s.push_str(&image_program(&im));
                s.push_str(" → ");
            }
        }
        s
    } else {
        match parent {
            Some(p) => format!("{}, for: {}", program(r), label(p)),
            None => label(r),
        }
    }
}

/// One path's uses over the trace (`--files`): who wrote it and who read it (first time, record,
/// pid, in tree order), and what was done to it.
#[derive(Default)]
pub struct PathUses {
    /// Its writers: (first write, record, pid).
    pub writers: Vec<(u64, ProcId, i32)>,
    /// Its readers: (first read, record, pid).
    pub readers: Vec<(u64, ProcId, i32)>,
    /// Created by a process of the trace.
    pub created: bool,
    /// Deleted by a process of the trace.
    pub deleted: bool,
}

impl PathUses {
    /// Its consumers, when it was written and then read by another process: the readers that
    /// read it at or after its first write, but its writers (by pid, as the summary's JSON names
    /// them). `None` when it was never written, or no other process read it afterwards.
    pub fn consumers(&self) -> Option<Vec<(u64, ProcId, i32)>> {
        let first = self.writers.iter().map(|w| w.0).min()?;
        let consumers: Vec<_> = self
            .readers
            .iter()
            .filter(|&&(ts, _, pid)| ts >= first && !self.writers.iter().any(|w| w.2 == pid))
            .copied()
            .collect();
        (!consumers.is_empty()).then_some(consumers)
    }
}

/// An entry of the whole run's list of files summarised by directory ([`FileIndex::by_dir`]):
/// the entry, the processes that used its files, a directory's most used files with how many
/// processes used each.
pub type RunDirEntry<'a> = (dirs::Entry<'a>, u64, Vec<(&'a str, u64)>);

/// Every path the processes used (`--files`), in the order first seen (the records in tree
/// order, each record's uses in its order), with its uses; and the renames. What the summary's
/// files report and the HTML report's file tables are made of, so both say the same.
#[derive(Default)]
pub struct FileIndex<'a> {
    /// Each path, in the order first seen.
    pub order: Vec<&'a str>,
    /// Each path's uses.
    pub paths: std::collections::HashMap<&'a str, PathUses>,
    /// Renames.
    pub renamed: u64,
    /// Processes that used a file.
    pub processes: u64,
}

impl<'a> FileIndex<'a> {
    /// The index of the records `ids` (tree order).
    pub fn of(t: &'a Tracker, ids: &[ProcId]) -> FileIndex<'a> {
        use crate::model::event::FileAccess as A;
        let mut x = FileIndex::default();
        for &id in ids {
            let Some(r) = t.get(id) else { continue };
            let Some(set) = r.files.as_deref() else { continue };
            if set.uses.is_empty() {
                continue;
            }
            x.processes += 1;
            for u in &set.uses {
                let p = x.paths.entry(&u.path).or_insert_with(|| {
                    x.order.push(&u.path);
                    PathUses::default()
                });
                match u.access {
                    A::Read => p.readers.push((u.ts, id, r.pid)),
                    A::Write => p.writers.push((u.ts, id, r.pid)),
                    A::Create => p.created = true,
                    A::Delete => p.deleted = true,
                    A::Rename => x.renamed += 1,
                }
            }
        }
        x
    }

    /// Every path read, with how many processes read it: most readers first, ties in the order
    /// first seen (the summary's `most_read` is the first [`TOP_FILES`]).
    pub fn most_read(&self) -> Vec<(&'a str, u64)> {
        let mut v: Vec<(&str, u64)> = self
            .order
            .iter()
            .map(|&k| (k, self.paths.get(k).map_or(0, |p| p.readers.len() as u64)))
            .filter(|&(_, n)| n > 0)
            .collect();
        // A stable sort keeps first-seen order among equals.
        v.sort_by_key(|m| std::cmp::Reverse(m.1));
        v
    }

    /// Each file written and then read by another process, in the order first seen: the path,
    /// its uses and its consumers.
    pub fn produced(&self) -> impl Iterator<Item = (&'a str, &PathUses, Vec<(u64, ProcId, i32)>)> + '_ {
        self.order.iter().filter_map(|&k| {
            let p = self.paths.get(k)?;
            Some((k, p, p.consumers()?))
        })
    }

    /// The whole run's paths read (`written` false) or written, summarised by directory
    /// ([`dirs`], the project's files summarised too), most files first: each entry, the
    /// processes that used its files that way, and a directory's most used files with how many
    /// processes used each. What the summary's `directories` and the HTML report's table list.
    pub fn by_dir(&self, rule: &dirs::DirRule, written: bool) -> Vec<RunDirEntry<'a>> {
        let of = |p: &'_ PathUses| -> usize { if written { p.writers.len() } else { p.readers.len() } };
        let paths: Vec<&'a str> = self
            .order
            .iter()
            .copied()
            .filter(|k| self.paths.get(k).is_some_and(|p| of(p) > 0))
            .collect();
        let uses = |k: &str| self.paths.get(k).map_or(0, |p| of(p) as u64);
        let mut v = dirs::collapse(&paths, rule, false);
        dirs::sort_entries(&mut v, rule, false);
        v.into_iter()
            .map(|e| {
                // A file's processes are its uses (one each); a directory's, those of its files
                // without the processes counted twice.
                let list = |i: usize| {
                    paths
                        .get(i)
                        .and_then(|k| self.paths.get(k))
                        .map_or(&[][..], |p| if written { &p.writers[..] } else { &p.readers[..] })
                };
                let who = match e.members[..] {
                    [i] => list(i).len(),
                    _ => {
                        let mut who = foldhash::HashSet::default();
                        for &i in &e.members {
                            who.extend(list(i).iter().map(|u| u.1));
                        }
                        who.len()
                    }
                };
                let top = if e.dir {
                    dirs::top(&e, |i| paths.get(i).map_or(0, |k| uses(k)))
                        .into_iter()
                        .filter_map(|i| paths.get(i).map(|&k| (k, uses(k))))
                        .collect()
                } else {
                    Vec::new()
                };
                (e, who as u64, top)
            })
            .collect()
    }

    /// How many distinct paths `f` holds for.
    pub fn count(&self, f: impl Fn(&PathUses) -> bool) -> u64 {
        self.paths.values().filter(|p| f(p)).count() as u64
    }
}

/// The working directory of `root`'s first exec that has one: the command's, whose files are
/// the project's ([`dirs`]).
pub fn root_cwd(t: &Tracker, root: Option<ProcId>) -> Option<&str> {
    t.get(root?)?
        .execs
        .iter()
        .find_map(|e| e.details.as_ref()?.cwd.as_deref())
}

/// The command's working directory (the root's, [`root_cwd`]).
pub fn command_cwd<'a>(h: &Header, t: &'a Tracker, sum: &Summary) -> Option<&'a str> {
    root_cwd(t, designated_root(t, h, sum))
}

/// The rule the files report's lists are summarised by: the threshold asked for, the project
/// under the command's working directory.
pub fn dir_rule(t: &Tracker, root: Option<ProcId>, more_than: Option<usize>) -> dirs::DirRule {
    dirs::DirRule::new(more_than, root_cwd(t, root))
}

/// The directories summarised of one process's files `paths` by `rule` (the project's files
/// aside), most files first, at most [`PROCESS_DIR_ENTRIES`]. Without their most used files:
/// the whole run's lists name them (a big build has a list for each of its compiles).
fn dir_entries(paths: &[&str], rule: &dirs::DirRule) -> Vec<DirEntry> {
    let mut v = dirs::collapse(paths, rule, true);
    v.retain(|e| e.dir);
    dirs::sort_entries(&mut v, rule, true);
    v.iter()
        .take(PROCESS_DIR_ENTRIES)
        .map(|e| DirEntry {
            path: shown(e.path).into_owned(),
            people: people_of(e.path),
            dir: e.dir,
            files: e.members.len() as u64,
            processes: None,
            top: Vec::new(),
        })
        .collect()
}

/// A path as people read it on a terminal, when that is not its JSON text (`None` for most:
/// no allocation).
fn people_of(p: &str) -> Option<String> {
    use std::borrow::Cow;
    match (shown(p), text(p)) {
        (Cow::Borrowed(_), Cow::Borrowed(_)) => None,
        (_, t) => Some(t.into_owned()),
    }
}

/// The files report (`--files`), when any process used a file.
fn files_report(t: &Tracker, ids: &[ProcId], rule: &dirs::DirRule) -> Option<FilesReport> {
    use crate::model::event::FileAccess as A;
    let x = FileIndex::of(t, ids);
    if x.processes == 0 {
        return None;
    }
    let by_process = ids
        .iter()
        .filter_map(|&id| {
            let r = t.get(id)?;
            let set = r.files.as_deref().filter(|s| !s.uses.is_empty())?;
            let read: Vec<&str> = set.of(A::Read).map(|u| &*u.path).collect();
            let wrote: Vec<&str> = set.of(A::Write).map(|u| &*u.path).collect();
            let directories = ProcessDirs {
                read: dir_entries(&read, rule),
                written: dir_entries(&wrote, rule),
            };
            Some(ProcessFiles {
                pid: r.pid,
                program: program(r),
                read: read.len() as u64,
                wrote: wrote
                    .iter()
                    .take(TOP_FILES * 10)
                    .map(|p| shown(p).into_owned())
                    .collect(),
                directories,
            })
        })
        .collect();
    let mut most_read = x.most_read();
    most_read.truncate(TOP_FILES);
    let produced = x
        .produced()
        .map(|(k, p, consumers)| Produced {
            path: shown(k).into_owned(),
            producers: p.writers.iter().map(|w| w.2).collect(),
            consumers: consumers.iter().map(|c| c.2).collect(),
        })
        .collect();
    // The whole run's lists, each entry with the processes that used its files.
    let run_list = |written: bool| -> Vec<DirEntry> {
        x.by_dir(rule, written)
            .into_iter()
            .map(|(e, processes, top)| DirEntry {
                path: shown(e.path).into_owned(),
                people: people_of(e.path),
                dir: e.dir,
                files: e.members.len() as u64,
                processes: Some(processes),
                top: top
                    .into_iter()
                    .map(|(k, n)| TopFile {
                        path: shown(k).into_owned(),
                        people: people_of(k),
                        processes: n,
                    })
                    .collect(),
            })
            .collect()
    };
    let directories = Directories {
        more_than: rule.more_than,
        project: rule.project.as_deref().map(|p| shown(p).into_owned()),
        read: run_list(false),
        written: run_list(true),
    };
    Some(FilesReport {
        processes: x.processes,
        read: x.count(|p| !p.readers.is_empty()),
        written: x.count(|p| !p.writers.is_empty()),
        created: x.count(|p| p.created),
        deleted: x.count(|p| p.deleted),
        renamed: x.renamed,
        most_read: most_read
            .into_iter()
            .map(|(k, n)| FileReaders {
                path: shown(k).into_owned(),
                readers: n,
                people: text(k).into_owned(),
            })
            .collect(),
        produced,
        by_process,
        directories,
    })
}

/// The longest child of image `i` of `r` running in `[from, to)`: its span, and the process
/// doing most of its time (down the children holding at least half of their parent's).
fn longest_job<'a>(
    t: &'a Tracker,
    r: &ProcessRecord,
    ims: &Images<'_>,
    i: usize,
    from: u64,
    to: u64,
) -> Option<((u64, u64), &'a ProcessRecord)> {
    let (job, mut who) = r
        .children
        .iter()
        .filter_map(|&c| {
            let cr = t.get(c)?;
            let (s, e) = span(cr)?;
            (ims.index_at(s) == i && s < to && e > from).then_some(((s, e), cr))
        })
        .max_by(|a, b| (a.0.1 - a.0.0).cmp(&(b.0.1 - b.0.0)).then(b.0.0.cmp(&a.0.0)))?;
    // Bounded by the tree's depth; a hostile file's cycle ends at the step limit.
    for _ in 0..4096 {
        let d = who.duration_ns().unwrap_or(0);
        let next = who
            .children
            .iter()
            .filter_map(|&c| t.get(c))
            .filter(|c| {
                c.duration_ns()
                    .is_some_and(|cd| cd.saturating_mul(2) >= d && d > 0)
            })
            .max_by_key(|c| c.duration_ns());
        match next {
            Some(c) => who = c,
            None => break,
        }
    }
    Some((job, who))
}

/// A daemon's node (`run --include-daemons`) and what ran in it.
struct Daemon {
    node: ProcId,
    /// Its kind.
    kind: crate::model::elsewhere::DaemonKind,
    /// Its work: each process it, or a process of it that existed before the run, started
    /// during the run, with a known span (fork, exit).
    work: Vec<(ProcId, u64, u64)>,
    /// Processes started under it during the run.
    processes: u64,
    /// Their CPU, when any was measured.
    cpu_ns: Option<u64>,
    /// Its clients in the trace (processes whose exec asked a server of its kind), with their
    /// span and the files their argv names ([`named_files`]).
    clients: Vec<(ProcId, (u64, u64), Vec<String>)>,
}

/// The files an argv names, by base name: its words after the program that are not options
/// and hold a `.` (`sccache cc -c src/f1.c -o f1.o` names `f1.c` and `f1.o`; the server's
/// `/usr/bin/cc -x c -c src/f1.c -o f1.o` the same). That is how a daemon's work is told to be
/// a client's when several ask at once.
fn named_files(a: &crate::model::event::Argv) -> Vec<String> {
    let mut v: Vec<String> = a
        .iter()
        .skip(1)
        .filter(|w| !w.starts_with('-') && w.contains('.'))
        .map(|w| w.rsplit('/').next().unwrap_or(w))
        .filter(|b| !b.is_empty() && *b != "." && *b != "..")
        .map(str::to_string)
        .collect();
    v.sort();
    v.dedup();
    v
}

/// How far up [`adopter`] looks for a process still running: engines hand an orphan to a
/// subreaper one or two levels up (conmon's detached fork to podman, a container's first
/// process to containerd-shim); a bound keeps a hostile trace of 600,000 orphans, each deeper
/// than the last, linear.
const ADOPTER_DEPTH: usize = 64;

/// The process that waited for `r` when its parent did not: `r` outlived its parent, and the
/// nearest of its ancestors still running when it ended (or never seen to end), and not left
/// running after the command, took it in, as
/// the kernel reparents an orphan to its subreaper (containerd-shim and conmon are the
/// subreapers of their container's processes; `run` is of the command's tree). `None` when
/// its parent outlived it, no ancestor within [`ADOPTER_DEPTH`] did, or the one that did is
/// no engine (see [`crate::model::elsewhere::takes_in_orphans`]).
fn adopter(t: &Tracker, r: &ProcessRecord) -> Option<ProcId> {
    let end = r.exit.filter(|x| x.status.is_some())?.ts;
    let ended_before = |a: &ProcessRecord| a.exit.is_some_and(|x| x.ts < end);
    let mut up = r.parent?;
    if !ended_before(t.get(up)?) {
        return None;
    }
    for _ in 0..ADOPTER_DEPTH {
        let a = t.get(up)?;
        // One left running after the command is on no path (conmon's detached fork, still
        // cleaning up when podman has exited): the one above it that waited is.
        if !ended_before(a) && a.background.is_none() {
            // Only where something waits for orphans: in a daemon's work, or under a client
            // or server of a daemon or container engine. A `sleep &` left by a shell under
            // `make` gated nothing: make never waited for it.
            let waits = r.ran_in.is_some() || a.ran_in.is_some() || runs_an_engine(t, a);
            return waits.then_some(up);
        }
        up = a.parent?;
    }
    None
}

/// Whether `a` runs a client or server of a daemon or container engine
/// ([`crate::model::elsewhere::takes_in_orphans`]): its own exec's program, or for a fork that
/// did not exec (conmon's detached fork) the program it inherited.
fn runs_an_engine(t: &Tracker, a: &ProcessRecord) -> bool {
    let mut p = a;
    for _ in 0..ADOPTER_DEPTH {
        if let Some(e) = p.execs.last() {
            let Some(d) = e.details.as_ref() else { return false };
            let exe = d.exe.as_deref();
            return d
                .argv
                .as_ref()
                .is_some_and(|v| crate::model::elsewhere::takes_in_orphans(v, exe));
        }
        let Some(up) = p.parent.and_then(|id| t.get(id)) else {
            return false;
        };
        p = up;
    }
    false
}

/// The daemons' nodes in the trace, their work and their clients among `ids`.
fn daemon_work(t: &Tracker, ids: &[ProcId]) -> Vec<Daemon> {
    let mut out = Vec::new();
    for &root in t.roots() {
        let Some(kind) = t.get(root).and_then(|r| r.daemon_node()) else {
            continue;
        };
        let mut d = Daemon {
            node: root,
            kind,
            work: Vec::new(),
            processes: 0,
            cpu_ns: None,
            clients: Vec::new(),
        };
        let serves = |c| {
            t.get(root)
                .and_then(|n| n.argv())
                .is_some_and(|a| crate::model::elsewhere::serves(a, c))
        };
        for &id in ids {
            let Some(r) = t.get(id) else { continue };
            if r.ran_in.is_some() {
                continue;
            }
            let exe = r.execs.last().and_then(|e| e.details.as_ref()?.exe.as_deref());
            let Some(a) = r.argv() else { continue };
            if let (Some(c), Some(sp)) = (crate::model::elsewhere::client_of(a, exe), span(r))
                && serves(c)
            {
                d.clients.push((id, sp, named_files(a)));
            }
        }
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            let Some(r) = t.get(id) else { continue };
            stack.extend(r.children.iter().copied());
            if r.pre_existing {
                continue;
            }
            d.processes += 1;
            if let Some(u) = r.usage.as_deref() {
                d.cpu_ns = Some(d.cpu_ns.unwrap_or(0).saturating_add(cpu_of(u)));
            }
            // Work of its own: what a process of the daemon from before the run started, or
            // took in when its parent ended first (containerd-shim's `start` forks the shim and
            // exits). A process taken in by one of the run's is on that one's path (a
            // container's first process outlives `runc create`: the shim waits for it), and is
            // work of its own as well, for when the path cannot take that one (the shim ends
            // just after containerd's `shim delete` began): the path takes one or the other.
            let Some((s, e)) = span(r) else { continue };
            let parent_pre = r.parent.and_then(|p| t.get(p)).is_some_and(|p| p.pre_existing);
            if parent_pre || adopter(t, r).is_some() {
                d.work.push((id, s, e));
            }
        }
        out.push(d);
    }
    out
}

/// The work of the daemons serving client `r` done while it ran: what it may have waited for
/// (`--include-daemons`), with the server's name.
fn served(
    t: &Tracker,
    r: &ProcessRecord,
    daemons: &[Daemon],
) -> (Vec<(ProcId, u64, u64)>, Option<&'static str>) {
    if daemons.is_empty() || r.ran_in.is_some() {
        return (Vec::new(), None);
    }
    let exe = r.execs.last().and_then(|e| e.details.as_ref()?.exe.as_deref());
    let Some(client) = r.argv().and_then(|a| crate::model::elsewhere::client_of(a, exe)) else {
        return (Vec::new(), None);
    };
    let Some((s, e)) = span(r) else {
        return (Vec::new(), None);
    };
    let mut work = Vec::new();
    let mut server = None;
    let mine = r.argv().map(named_files).unwrap_or_default();
    for d in daemons {
        let serves = t
            .get(d.node)
            .and_then(|n| n.argv())
            .is_some_and(|a| crate::model::elsewhere::serves(a, client));
        if !serves {
            continue;
        }
        server.get_or_insert(d.kind.client().server);
        // Work done while it ran, less what names only another client's files while that
        // client ran too (two compiles asked at once: each its own).
        let for_another = |w: ProcId, (ws, we): (u64, u64)| {
            let names = t
                .get(w)
                .and_then(|x| x.argv())
                .map(named_files)
                .unwrap_or_default();
            let meets = |files: &[String]| names.iter().any(|n| files.binary_search(n).is_ok());
            !names.is_empty()
                && !meets(&mine)
                && d.clients.iter().any(|(c, (cs, ce), files)| {
                    !t.get(*c).is_some_and(|x| std::ptr::eq(x, r)) && *cs <= we && ws <= *ce && meets(files)
                })
        };
        work.extend(
            d.work
                .iter()
                .copied()
                .filter(|&(w, ws, we)| ws >= s && we <= e && !for_another(w, (ws, we))),
        );
    }
    (work, server)
}

/// Each process that took in others ([`adopter`]) and those, with their spans: they are on its
/// path as its children are. A pre-existing process takes in nothing here (a daemon's: what it
/// took in is its work, [`daemon_work`]).
fn adoptions(t: &Tracker, ids: &[ProcId]) -> HashMap<ProcId, Vec<(ProcId, u64, u64)>> {
    let mut out: HashMap<ProcId, Vec<(ProcId, u64, u64)>> = HashMap::new();
    for &id in ids {
        let Some(r) = t.get(id) else { continue };
        let Some((s, e)) = span(r) else { continue };
        if let Some(a) = adopter(t, r).filter(|&a| t.get(a).is_some_and(|a| !a.pre_existing)) {
            out.entry(a).or_default().push((id, s, e));
        }
    }
    out
}

/// The critical path from `root` over `life` (see the module docs), and the stretches of it
/// bounded by parallelism. Walks with a stack: a chain 200,000 deep does not recurse. From a
/// client of a daemon followed (`--include-daemons`), the path goes on into the daemon's work
/// done while the client ran ([`served`]).
fn critical_path_of(
    t: &Tracker,
    root_id: ProcId,
    life: (u64, u64),
    redact: bool,
    step: &dyn Fn(&Image<'_>, u64, u64) -> Step,
    daemons: &[Daemon],
    ids: &[ProcId],
) -> (Vec<PathStep>, Vec<ParallelSpan>) {
    enum Item<'a> {
        /// A process on the path, its life, its depth, the daemon it ran in when the path
        /// went into it from a client.
        Process(ProcId, &'a ProcessRecord, (u64, u64), usize, Option<&'static str>),
        /// An image on the path: it, its span, its own time on the path, its depth, its
        /// children's stretch of the path, the daemon.
        Image(
            Image<'a>,
            (u64, u64),
            u64,
            usize,
            Option<(u64, u64)>,
            Option<&'static str>,
        ),
    }
    let mut path = Vec::new();
    let mut parallel = Vec::new();
    let Some(root) = t.get(root_id) else {
        return (Vec::new(), Vec::new());
    };
    let adopted = adoptions(t, ids);
    let mut stack = vec![Item::Process(root_id, root, life, 0, None)];
    while let Some(item) = stack.pop() {
        match item {
            Item::Process(id, r, life, depth, ran_in) => {
                let ims = images(t, r);
                let (served, server) = served(t, r, daemons);
                let adopted = adopted.get(&id).map_or(&[][..], Vec::as_slice);
                for im in (0..ims.total()).rev().filter_map(|i| ims.get(i)) {
                    let (s, e) = image_span(&im, life);
                    let kids = chain(t, r, &ims, im.index, e, &served, adopted);
                    let covered: u64 = kids.iter().map(|k| k.2 - k.1).sum();
                    let stretch = kids.first().zip(kids.last()).map(|(a, b)| (a.1, b.2));
                    for &(c, cs, ce) in kids.iter().rev() {
                        if let Some(cr) = t.get(c) {
                            let into = if served.iter().any(|w| w.0 == c) {
                                server
                            } else {
                                None
                            };
                            stack.push(Item::Process(c, cr, (cs, ce), depth + 1, into));
                        }
                    }
                    stack.push(Item::Image(
                        im,
                        (s, e),
                        (e - s).saturating_sub(covered),
                        depth,
                        stretch,
                        ran_in,
                    ));
                }
            }
            Item::Image(im, (s, e), own, depth, stretch, ran_in) => {
                if let Some((from, to)) = stretch {
                    let ims = images(t, im.record);
                    if let Some((slots, full)) = slots_full(t, im.record, &ims, im.index, from, to) {
                        let window = to - from;
                        if full as f64 >= PARALLEL_FULL * window as f64 {
                            let longest_job =
                                longest_job(t, im.record, &ims, im.index, from, to).map(|(job, who)| {
                                    let w = images(t, who);
                                    let (js, je) = job;
                                    match w.last_image() {
                                        Some(last) => step(&last, js, je - js),
                                        None => step(&im, js, je - js),
                                    }
                                });
                            parallel.push(ParallelSpan {
                                longest_job,
                                pid: im.record.pid,
                                program: image_program(&im),
                                slots,
                                step: path.len(),
                                window_ns: window,
                                full_ns: full,
                                label: fit(&image_command_line(&im, redact), CHAIN_STEP),
                            });
                        }
                    }
                }
                path.push(PathStep {
                    step: step(&im, s, e - s),
                    own_ns: own,
                    depth,
                    ran_in,
                });
            }
        }
    }
    (path, parallel)
}

/// User + system CPU, ns.
fn cpu_of(u: &Usage) -> u64 {
    u.cpu_user_ns.saturating_add(u.cpu_sys_ns)
}
