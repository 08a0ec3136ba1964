//! The summary for people on a terminal: aligned columns, cut to the width, coloured like the
//! tree when asked; and the phrases the Markdown shares with it (the headline, offsets, shares,
//! the critical path as shown, what it cost).
//!
//! Reads only the [`RunReport`]; never looks at a terminal or the environment (the width and
//! colour come in [`TextOptions`]).

use std::fmt::Write as _;

use super::{Background, Cause, Cost, Costs, Failure, ParallelSpan, PathStep, ProgramStat, RunReport, TOP};
use crate::model::escape;
use crate::model::naming::{cut, fit, width};
use crate::sink::text::{Paint, exit_text, fmt_duration, fmt_kib};

/// How to render the text.
#[derive(Debug, Clone, Copy)]
pub struct TextOptions {
    /// Colour.
    pub color: bool,
    /// Columns for a line; longer commands are cut with `…`.
    pub width: usize,
}

pub(super) fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub(super) fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "-".into();
    }
    format!("{:.0}%", part as f64 * 100.0 / whole as f64)
}

pub(super) fn offset(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", fmt_duration(ns.unsigned_abs()))
    } else {
        format!("+{}", fmt_duration(ns as u64))
    }
}

pub(super) fn bg_text(b: &Background, p: Paint) -> String {
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
pub(super) fn headline(r: &RunReport, p: Paint) -> String {
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
    let handled = (r.nonzero_exits.len() - r.failures.len()) as u64;
    if handled > 0 {
        parts.push(p.handled(&plural(
            handled,
            "handled non-zero exit",
            "handled non-zero exits",
        )));
    }
    let b = r.background.len() as u64;
    parts.push(if b > 0 {
        p.background(&format!("{b} background"))
    } else {
        "0 background".into()
    });
    if r.exit_unknown > 0 {
        parts.push(p.loss(&format!("{} exits unknown", r.exit_unknown)));
    }
    if r.lost > 0 {
        parts.push(p.loss(&plural(r.lost, "event lost", "events lost")));
    }
    if r.untraced > 0 {
        parts.push(p.loss(&plural(r.untraced, "process untraced", "processes untraced")));
    }
    // Never "0 events lost" for a trace known to be incomplete.
    if r.lost == 0 && r.untraced == 0 {
        parts.push("0 events lost".into());
    }
    parts.join(", ")
}

/// Most critical-path lines the text and Markdown show (the JSON has the whole path).
pub(super) const PATH_LINES: usize = 40;

/// Most rows of the critical path's steps that carry its time ([`PathView::Carrying`]).
pub(super) const CARRY_ROWS: usize = 12;

/// A step of the critical path holding at least this share of the wall time is *big*
/// ([`PathView::Carrying`]).
const BIG_SHARE: f64 = 0.04;

/// Columns each parent keeps in a row's `in …` line ([`Carry::via`]).
const VIA_STEP: usize = 28;

/// A parent in a row's `in …` line: its label fitted to [`VIA_STEP`] when that keeps its words
/// whole (`make all-am`, `bash -c …`), else its program (`libtool`, not `libtool … …/closures.c`).
fn via_name(s: &super::Step) -> String {
    let f = fit(&s.label, VIA_STEP);
    let cut_word = |w: &str| {
        w != "…" && (w.starts_with('…') || w.ends_with('…') || w.contains("'…") || w.contains("…'"))
    };
    if f.split(' ').any(cut_word) {
        s.program.clone()
    } else {
        f
    }
}

/// Columns the label of a stretch's longest job keeps ([`Carry::detail`]).
const LONGEST_JOB: usize = 72;

/// The critical path as people read it: the whole of it as a tree when it is short (at most
/// [`PATH_LINES`] steps), else the steps that carry its time.
pub(super) enum PathView<'a> {
    /// Every step, in order, at its depth.
    Whole(&'a [PathStep]),
    /// The steps that carry the time, at any size: a step is *big* when it holds at least
    /// [`BIG_SHARE`] of the wall time; each big step with no big step inside it is a row (the
    /// chain of parents above it folded into its `in …` line: `make → bash → libtool → gcc`
    /// above `cc1 … closures.c`), and a big step whose big steps inside leave at least as much
    /// again uncovered is a row for that rest (its own work and the shorter steps: configure's
    /// probes). A stretch bounded by parallelism ([`ParallelSpan`]) is one row naming its
    /// longest step, not one slot's compiles. In path order, at most [`CARRY_ROWS`] (the
    /// heaviest).
    Carrying {
        /// The rows.
        rows: Vec<Carry<'a>>,
        /// The time they hold, ns.
        held_ns: u64,
    },
}

/// What a row of [`PathView::Carrying`] holds.
pub(super) enum Held<'a> {
    /// The step, whole.
    Step,
    /// The step's time not in its big steps: its own work and `shorter` steps.
    Rest {
        /// Steps inside it in that time.
        shorter: usize,
        /// The programs of the steps directly inside it in that time that held the most of
        /// it: program, steps, their time (at most three).
        most: Vec<(&'a str, u64, u64)>,
    },
    /// A stretch bounded by parallelism.
    Parallel(&'a ParallelSpan),
}

/// One row of [`PathView::Carrying`].
pub(super) struct Carry<'a> {
    /// The step.
    pub step: &'a PathStep,
    /// Its index in the path.
    pub index: usize,
    /// Its parents on the path below the root, each fitted to [`VIA_STEP`] columns: `make
    /// -j2 → bash -c … → make all-am`.
    pub via: String,
    /// The time it holds, ns.
    pub held_ns: u64,
    /// What that is.
    pub held: Held<'a>,
}

impl Carry<'_> {
    /// What the row says after its times: the step's label, or what its time was.
    pub(super) fn what(&self) -> String {
        self.step.step.label.clone()
    }

    /// [`Carry::what`] in `width` columns ([`fit`]).
    pub(super) fn what_in(&self, width: usize) -> String {
        fit(&self.what(), width)
    }

    /// What the row says below it, before its chain of parents, in `width` columns each: for a
    /// stretch bounded by parallelism, that ("2 jobs at once for 94% of 1.18s: bounded by its
    /// job slots, not by one chain") and its longest job, its label fitted to what the words
    /// before it leave ("longest job: 706.1ms … gcc … ../src/closures.c"); for a rest row what
    /// its time was ("its own work and 393 shorter steps; most: …"), cut.
    pub(super) fn details_in(&self, width: usize) -> Vec<String> {
        match &self.held {
            Held::Parallel(x) => {
                let mut v = vec![cut(&parallel_text(x), width)];
                if let Some(l) = &x.longest_job {
                    let head = format!("longest job: {} ", fmt_duration(l.duration_ns));
                    let room = width
                        .saturating_sub(crate::model::naming::width(&head))
                        .min(LONGEST_JOB);
                    v.push(format!("{head}{}", fit(&l.label, room)));
                }
                v
            }
            Held::Rest { shorter, most } => {
                let mut s = format!(
                    "its own work and {}",
                    plural(*shorter as u64, "shorter step", "shorter steps")
                );
                for (k, (program, n, ns)) in most.iter().enumerate() {
                    let _ = write!(
                        s,
                        "{} {n}× {program} {}",
                        if k == 0 { "; most:" } else { "," },
                        fmt_duration(*ns)
                    );
                }
                vec![cut(&s, width)]
            }
            Held::Step => Vec::new(),
        }
    }
}

/// The programs of the steps directly inside step `i` (up to `end`) shorter than `big_ns`, by
/// the time they held: program, steps, their time, the three with the most.
fn most_inside(all: &[PathStep], i: usize, end: usize, big_ns: u64) -> Vec<(&str, u64, u64)> {
    let depth = all[i].depth + 1;
    let mut by: Vec<(&str, u64, u64)> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for s in &all[i + 1..end] {
        if s.depth != depth || s.step.duration_ns >= big_ns {
            continue;
        }
        let k = *index.entry(s.step.program.as_str()).or_insert_with(|| {
            by.push((s.step.program.as_str(), 0, 0));
            by.len() - 1
        });
        by[k].1 += 1;
        by[k].2 = by[k].2.saturating_add(s.step.duration_ns);
    }
    by.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)));
    by.truncate(3);
    by
}

/// The critical path as shown (see [`PathView`]).
pub(super) fn path_view(r: &RunReport) -> PathView<'_> {
    let all = &r.critical_path;
    if all.len() <= PATH_LINES {
        return PathView::Whole(all);
    }
    let n = all.len();
    // Where each step's inside ends: the first step after it no deeper than it.
    let mut end = vec![n; n];
    let mut open: Vec<usize> = Vec::new();
    for (i, s) in all.iter().enumerate() {
        while let Some(&j) = open.last() {
            if all[j].depth >= s.depth {
                end[j] = i;
                open.pop();
            } else {
                break;
            }
        }
        open.push(i);
    }
    let big_ns = (BIG_SHARE * r.wall_ns as f64) as u64;
    let big = |i: usize| all[i].step.duration_ns >= big_ns.max(1);
    let parallel_at = |i: usize| r.parallel.iter().find(|p| p.step == i);
    let mut rows: Vec<(usize, u64, Held<'_>)> = Vec::new();
    // Depth-first over the big steps, from the root's images.
    let mut todo = Vec::new();
    let mut k = 0;
    while k < n {
        todo.push(k);
        k = end[k];
    }
    todo.retain(|&k| big(k));
    todo.reverse();
    while let Some(i) = todo.pop() {
        if let Some(x) = parallel_at(i) {
            rows.push((i, x.window_ns, Held::Parallel(x)));
            continue;
        }
        // Its big steps directly inside (a big step's big steps are inside its big children).
        let mut kids = Vec::new();
        let mut k = i + 1;
        while k < end[i] {
            if big(k) {
                kids.push(k);
                k = end[k];
            } else {
                k += 1;
            }
        }
        let covered: u64 = kids.iter().map(|&k| all[k].step.duration_ns).sum();
        let rest = all[i].step.duration_ns.saturating_sub(covered);
        if end[i] == i + 1 {
            rows.push((i, rest, Held::Step));
        } else if kids.is_empty() || rest >= big_ns.max(1) {
            let inside: usize = kids.iter().map(|&k| end[k] - k).sum();
            rows.push((
                i,
                rest,
                Held::Rest {
                    shorter: end[i] - i - 1 - inside,
                    most: most_inside(all, i, end[i], big_ns.max(1)),
                },
            ));
        }
        todo.extend(kids.into_iter().rev());
    }
    if rows.len() > CARRY_ROWS {
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        rows.truncate(CARRY_ROWS);
    }
    rows.sort_by_key(|r| r.0);
    let held_ns = rows.iter().map(|r| r.1).sum();
    let rows = rows
        .into_iter()
        .map(|(i, held_ns, held)| {
            // The chain of parents, rebuilt for the few rows kept.
            let mut chain: Vec<String> = Vec::new();
            let mut want = all[i].depth;
            for a in all[..i].iter().rev() {
                if want <= 1 {
                    break;
                }
                if a.depth + 1 == want {
                    chain.push(via_name(&a.step));
                    want = a.depth;
                }
            }
            chain.reverse();
            Carry {
                step: &all[i],
                index: i,
                via: chain.join(" → "),
                held_ns,
                held,
            }
        })
        .collect();
    PathView::Carrying { rows, held_ns }
}

/// The rows of a long critical path as people read it ([`PathView::Carrying`]): each the index
/// of its step in `r.critical_path`, the time it holds, and what it says below the step's label
/// (what a rest was, a stretch bounded by parallelism and its longest job); `None` when the
/// path is short enough to show whole. For `diff`, which shows the new run's path this way.
pub fn path_rows(r: &RunReport) -> Option<Vec<(usize, u64, Option<String>)>> {
    match path_view(r) {
        PathView::Whole(_) => None,
        PathView::Carrying { rows, .. } => Some(
            rows.iter()
                .map(|c| {
                    let d = c.details_in(LONGEST_JOB + 60);
                    (c.index, c.held_ns, (!d.is_empty()).then(|| d.join("; ")))
                })
                .collect(),
        ),
    }
}

/// "2 jobs at once for 85% of 1.25s: bounded by its job slots, not by one chain".
pub(super) fn parallel_text(p: &ParallelSpan) -> String {
    format!(
        "{} jobs at once for {} of {}: bounded by its job slots, not by one chain",
        p.slots,
        share(p.full_ns, p.window_ns),
        fmt_duration(p.window_ns)
    )
}

/// "make -j2: 2 jobs at once for 85% of 1.25s: …": [`parallel_text`] after its process's label,
/// for the note under a path shown whole.
pub(super) fn parallel_note(p: &ParallelSpan) -> String {
    format!("{}: {}", p.label, parallel_text(p))
}

/// "CPU 12.3s over 4.1s wall: 3.0 cores on average", and how many were measured when not all.
pub(super) fn cost_line(r: &RunReport, c: &Costs) -> String {
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
pub(super) fn cost_text(c: &Cost) -> String {
    format!("{} CPU, {} peak", fmt_duration(c.cpu_ns), fmt_kib(c.max_rss_kib))
}

/// What a cause did, after its command line: "exit 1 after 12.3ms" (its status and, when its
/// fork is known, its duration).
pub(super) fn cause_outcome(c: &Cause, p: Paint) -> String {
    let mut s = exit_text(c.failure.status.raw, p);
    if let Some(d) = c.duration_ns {
        let _ = write!(s, " after {}", fmt_duration(d));
    }
    s
}

/// Its failed parents on one line: "make → sh -c … → gcc -c bad.c" (`None` for the command).
pub(super) fn cause_chain(c: &Cause) -> Option<&str> {
    (!c.chain_label.is_empty()).then_some(c.chain_label.as_str())
}

/// What a client whose work ran elsewhere hid, in words: `bazel (2×, first: pid 7): its work
/// ran in the Bazel server (…), not in this trace`; `docker (pid 7): the container's processes
/// ran in dockerd's containerd (…), not in this trace`.
pub fn outside_words(o: &super::OutsideWork) -> String {
    let runs = if o.runs == 1 {
        format!("pid {}", o.pid)
    } else {
        format!("{}×, first: pid {}", o.runs, o.pid)
    };
    format!(
        "{} ({runs}): {} ran in {}, not in this trace",
        o.client, o.work, o.ran_in
    )
}

/// What ran in a daemon `run --include-daemons` followed: `the sccache server (pid 7): 3
/// processes ran in it during the run (CPU 1.2s)`.
pub fn daemon_words(d: &super::DaemonWork) -> String {
    let mut s = format!("{} (pid {}): ", d.server, d.pid);
    if d.processes == 0 {
        s.push_str("started no process during the run");
    } else {
        let _ = write!(
            s,
            "{} ran in it during the run",
            plural(d.processes, "process", "processes")
        );
        if let Some(c) = d.cpu_ns {
            let _ = write!(s, " (CPU {})", fmt_duration(c));
        }
    }
    s
}

/// `45 read, 9 written, 9 created, 1 deleted, 1 renamed by 18 processes; 9 written then read by
/// another`.
pub(super) fn files_line(f: &super::FilesReport) -> String {
    let mut parts = vec![format!("{} read", f.read), format!("{} written", f.written)];
    for (n, what) in [
        (f.created, "created"),
        (f.deleted, "deleted"),
        (f.renamed, "renamed"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    let mut s = format!(
        "{} by {}",
        parts.join(", "),
        plural(f.processes, "process", "processes")
    );
    if !f.produced.is_empty() {
        s.push_str(&format!("; {} written then read by another", f.produced.len()));
    }
    s
}

/// How many directories the text lists per access (read, written); the Markdown lists [`TOP`].
const TEXT_DIRS: [usize; 2] = [5, 3];

/// A directory entry's most used files, by their names in it (`stdio.h, stdlib.h`), as people
/// read them.
pub(super) fn top_names(e: &super::DirEntry) -> String {
    let names: Vec<&str> = e
        .top
        .iter()
        .map(|t| t.people().strip_prefix(e.people()).unwrap_or(t.people()))
        .collect();
    let mut s = names.join(", ");
    if (e.top.len() as u64) < e.files {
        s.push_str(", …");
    }
    s
}

/// `s` cut at its start to `width` columns, with `…` (a path's end is what tells it apart).
fn cut_start(s: &str, width: usize) -> String {
    let room = width.saturating_sub(1);
    let mut used = 0;
    let mut start = s.len();
    for (i, c) in s.char_indices().rev() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        start = i;
    }
    format!("…{}", &s[start..])
}

/// The whole run's directories that stand for more than `--files-dirs` files, as text lines
/// (without the indent): `read 65 files in /usr/include/…/bits/ by 1 process: a.h, b.h, …`,
/// then how many more there are.
pub(super) fn dir_lines(d: &super::Directories, width: usize, p: Paint) -> Vec<String> {
    let mut out = Vec::new();
    for ((verb, list), max) in [("read", &d.read), ("written", &d.written)]
        .into_iter()
        .zip(TEXT_DIRS)
    {
        let dirs: Vec<&super::DirEntry> = list.iter().filter(|e| e.dir).collect();
        for e in dirs.iter().take(max) {
            // The directory whole when it fits (its start cut when it does not), then who used
            // it, then its most used files in the room left.
            let room = width.saturating_sub(2 + 8 + 10);
            let path = if crate::model::naming::width(e.people()) > room.saturating_sub(20) {
                cut_start(e.people(), room.saturating_sub(20))
            } else {
                e.people().to_string()
            };
            let mut rest = format!(
                "{path} by {}",
                plural(e.processes.unwrap_or(0), "process", "processes")
            );
            let left = room.saturating_sub(crate::model::naming::width(&rest) + 2);
            if left >= 12 {
                let _ = write!(rest, ": {}", cut(&top_names(e), left));
            }
            out.push(format!(
                "{} {:>4} files in {rest}",
                p.secondary(&format!("{verb:<7}")),
                e.files
            ));
        }
        if dirs.len() > max {
            out.push(p.secondary(&format!(
                "… {} with more than {} of the files {verb}",
                plural((dirs.len() - max) as u64, "more directory", "more directories"),
                d.more_than.unwrap_or(0)
            )));
        }
    }
    out
}

/// The summary for people, as printed on stderr after the tree: aligned columns, coloured like
/// the tree when `o.color`. A failed command's summary opens with its causes.
pub fn render_text(r: &RunReport, o: TextOptions) -> String {
    let p = Paint { on: o.color };
    let mut out = String::new();
    let _ = writeln!(out, "{} {}", p.emphasis("summary:"), headline(r, p));
    for c in r.causes.iter().take(TOP) {
        let _ = writeln!(
            out,
            "{} {} {}: {}",
            p.failure("cause:"),
            p.emphasis(&c.failure.pid.to_string()),
            cause_outcome(c, p),
            fit(&c.failure.label, o.width.saturating_sub(40))
        );
        if let Some(chain) = cause_chain(c) {
            let _ = writeln!(
                out,
                "  {} {}",
                p.secondary("under:"),
                cut(chain, o.width.saturating_sub(9))
            );
        }
    }
    if r.causes.len() > TOP {
        let _ = writeln!(
            out,
            "  {}",
            p.secondary(&format!("… {} more causes", r.causes.len() - TOP))
        );
    }
    for w in &r.outside {
        let _ = writeln!(out, "{} {}", p.loss("outside the tree:"), outside_words(w));
        let _ = writeln!(out, "  {} {}", p.secondary("fix:"), w.fix);
    }
    for d in &r.daemons {
        let _ = writeln!(out, "{} {}", p.emphasis("daemon:"), daemon_words(d));
    }
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
                fit(
                    &h.label,
                    o.width
                        .saturating_sub(what.chars().count() + h.pid.to_string().len() + 13)
                )
            );
        }
    }

    if let Some(f) = &r.files {
        let _ = writeln!(out, "{} {}", p.emphasis("files:"), files_line(f));
        // Most read: files read by more than one process (one read each is no "most").
        for m in f.most_read.iter().filter(|m| m.readers > 1).take(5) {
            let _ = writeln!(
                out,
                "  {} {}",
                p.secondary(&format!("read by {:>3}:", m.readers)),
                fit(&m.people, o.width.saturating_sub(16))
            );
        }
        for line in dir_lines(&f.directories, o.width, p) {
            let _ = writeln!(out, "  {line}");
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
                fit(&f.label, o.width.saturating_sub(w + sw + 6))
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
                fit(&b.label, o.width.saturating_sub(w + 40)),
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
                fit(&s.label, o.width.saturating_sub(dw + w + 6))
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
                format!(" [{}]", escape::text(&s.thread))
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
        path_text(&mut out, r, p, o.width);
    }
    out
}

/// The critical path section (see [`PathView`]).
fn path_text(out: &mut String, r: &RunReport, p: Paint, width: usize) {
    match path_view(r) {
        PathView::Whole(steps) => {
            let _ = writeln!(
                out,
                "{} {}",
                p.emphasis("critical path:"),
                p.secondary("(start, duration, share of wall time)")
            );
            let ow = steps
                .iter()
                .map(|s| offset(s.step.start_ns).len())
                .max()
                .unwrap_or(0);
            let dw = steps
                .iter()
                .map(|s| fmt_duration(s.step.duration_ns).len())
                .max()
                .unwrap_or(0);
            for s in steps {
                let indent = "  ".repeat(s.depth);
                let into = s.ran_in.map(|d| format!("[in {d}] ")).unwrap_or_default();
                let used =
                    ow + dw + 5 + 2 + indent.len() + s.step.pid.to_string().len() + 4 + into.chars().count();
                let _ = writeln!(
                    out,
                    "  {}  {:>dw$}  {:>4}  {indent}{} {}{}",
                    p.secondary(&format!("{:>ow$}", offset(s.step.start_ns))),
                    fmt_duration(s.step.duration_ns),
                    share(s.step.duration_ns, r.wall_ns),
                    p.emphasis(&s.step.pid.to_string()),
                    p.secondary(&into),
                    fit(&s.step.label, width.saturating_sub(used))
                );
            }
            for x in &r.parallel {
                let _ = writeln!(
                    out,
                    "  {}",
                    p.secondary(&cut(&parallel_note(x), width.saturating_sub(2)))
                );
            }
        }
        PathView::Carrying { rows, held_ns } => {
            let _ = writeln!(
                out,
                "{} {}",
                p.emphasis("critical path:"),
                p.secondary(&format!(
                    "({} steps; {} shown, holding {} of the {} wall: start, time, share)",
                    r.critical_path.len(),
                    rows.len(),
                    share(held_ns, r.wall_ns),
                    fmt_duration(r.wall_ns)
                ))
            );
            let ow = rows
                .iter()
                .map(|c| offset(c.step.step.start_ns).len())
                .max()
                .unwrap_or(0);
            let dw = rows
                .iter()
                .map(|c| fmt_duration(c.held_ns).len())
                .max()
                .unwrap_or(0);
            for c in rows {
                let pid = c.step.step.pid.to_string();
                let used = ow + dw + 4 + 6 + pid.len() + 1;
                let _ = writeln!(
                    out,
                    "  {}  {:>dw$}  {:>4}  {} {}",
                    p.secondary(&format!("{:>ow$}", offset(c.step.step.start_ns))),
                    fmt_duration(c.held_ns),
                    share(c.held_ns, r.wall_ns),
                    p.emphasis(&pid),
                    c.what_in(width.saturating_sub(used))
                );
                // Under the label when there is room, else a short indent (80 columns).
                let pad = if width >= 100 { ow + dw + 10 } else { 6 };
                for l in c.details_in(width.saturating_sub(pad + 2)) {
                    let _ = writeln!(out, "  {:pad$}{l}", "");
                }
                if !c.via.is_empty() {
                    let _ = writeln!(
                        out,
                        "  {:pad$}{}",
                        "",
                        p.secondary(&cut(&format!("in {}", c.via), width.saturating_sub(pad + 2)))
                    );
                }
            }
            let _ = writeln!(out, "  {}", p.secondary("(the whole path is in --summary-json)"));
        }
    }
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
    let nw = top.iter().map(|(n, _)| width(n)).max().unwrap_or(0).min(max_name);
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
        let pad = nw.saturating_sub(width(&name));
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
            fit(&c.label, width.saturating_sub(aw + bw + w + 8))
        );
    }
}
