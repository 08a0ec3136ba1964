//! Which processes share a row of the picture, and which are folded into a summary row.
//!
//! A build's tree is mostly drivers waiting for one thing: make's `bash -c` recipe waits for
//! libtool, libtool for gcc (twice: PIC and not), gcc for cc1 and then as. Drawn one row a
//! process, a compile takes four to six rows of bars that cover each other, and the picture is
//! mostly the empty space beside them. So a row is a **job**: a head process and the processes
//! drawn with it (its *members*).
//!
//! # Rule
//!
//! A process's *span* is its fork to its exit (the picture's end while it runs). A child is
//! *visible* when its span is at least [`VISIBLE_NS`], and *significant* for its parent when
//! it is visible and spans at least a twentieth of the parent's span. A process **continues**
//! (its children are drawn in its own row) when all its children are shorter than
//! [`VISIBLE_NS`] (a subshell's pipeline of `sed`s), or
//!
//! - its visible children ran one at a time (none started before the one before it ended):
//!   it waited for each;
//! - it has one or two significant children, and they cover at least half of its span
//!   (it spent its life waiting for them);
//! - with two, both are *closed*: each a process without children, or one that continues and
//!   whose children are all closed (its whole subtree fits in the row). That takes libtool's
//!   two compiles of one source and gcc's cc1 then as into one row, and never a `configure
//!   && make` whose halves have rows of their own.
//!
//! Every child of a process that continues is a member of its row (short ones included: they
//! are drawn where they ran, under the longer bars); the children of a member that does not
//! continue start rows of their own, one level deeper. The root of each tree heads a row.
//!
//! The row is labelled by its **work**: from the head, down through the member that covers
//! nine tenths of its parent (a wrapper) and has children of its own, as far as that goes
//! (the libtool of a recipe, the gcc of a compile, the subshell that became `sleep 0.4`; for
//! a link, gcc's `collect2`); the chain from the head is the label's hover text.
//!
//! # Folding
//!
//! When there are more than [`FOLD_ABOVE`] rows, a row (and every row under it) is folded into
//! one summary row under its parent's row when none of its processes is notable (a failure
//! that mattered, still running, exit lost) and its head either is short or
//! exited non-zero and was handled (configure's probes): "312 short (<1 ms) · 113 handled
//! exits ≠ 0", with a tick where each began (under [`FOLD_ROW_MIN`] processes: the ticks in
//! the parent's row instead). Failures that mattered always keep their rows. *Short* is
//! relative to the picture: a bar under 4 px (and at least [`VISIBLE_NS`]) shows that
//! something ran, not what.
//!
//! Never formats or draws anything: the SVG module draws what this decides. Linear in the
//! processes apart from sorting each process's children by start.

use super::Proc;

/// A child shorter than this is never significant and never stops its parent's row (1 ms: a
/// `sed` in a pipeline, a `[fork of bash]` between fork and exec); a row whose head is shorter
/// is folded when there are many rows.
pub const VISIBLE_NS: u64 = 1_000_000;

/// Rows are folded only when there are more than this many (a picture of 40 rows fits a
/// screen: nothing is gained by hiding anything).
pub const FOLD_ABOVE: usize = 40;

/// What is folded under a row gets a summary row of its own from this many processes; fewer
/// are ticks in the row itself (a summary row for two `sed`s would cost more than it says).
pub const FOLD_ROW_MIN: usize = 8;

/// One row of processes.
#[derive(Debug, Clone)]
pub struct Job {
    /// Indexes into the processes, in tree order; the head first.
    pub members: Vec<usize>,
    /// The member that names the row (see the module docs).
    pub work: usize,
    /// The row this one is under.
    pub parent: Option<usize>,
}

/// What was folded under one row.
#[derive(Debug, Clone, Default)]
pub struct Fold {
    /// Processes folded (the heads of the folded rows and everything under them).
    pub processes: usize,
    /// Folded rows whose head was short.
    pub short: usize,
    /// Folded rows whose head exited non-zero, handled.
    pub handled: usize,
    /// When each folded head began.
    pub starts: Vec<u64>,
    /// The longest folded head's span.
    pub longest: u64,
}

/// The rows: each job, and what was folded under it.
pub struct Rows {
    pub jobs: Vec<Job>,
    /// Per job: folded into an ancestor's summary (not drawn).
    pub folded: Vec<bool>,
    /// Per job: what was folded under it.
    pub folds: Vec<Option<Fold>>,
    /// There were more than [`FOLD_ABOVE`] rows: short members of a row need no bar either.
    pub folding: bool,
}

/// `procs` in tree order (parents before children); `notable[i]` and `handled[i]` per process;
/// a folded row's head is *short* under `short_ns` (at least [`VISIBLE_NS`]).
pub fn rows(procs: &[Proc], notable: &[bool], handled: &[bool], short_ns: u64) -> Rows {
    let n = procs.len();
    let span = |i: usize| procs[i].end - procs[i].start;
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, p) in procs.iter().enumerate() {
        if let Some(pa) = p.parent {
            kids[pa].push(i);
        }
    }
    // Children after parents in tree order: backwards, every child is decided first.
    let mut cont = vec![false; n];
    let mut closed = vec![false; n];
    let mut vis: Vec<usize> = Vec::new();
    for i in (0..n).rev() {
        vis.clear();
        vis.extend(kids[i].iter().copied().filter(|&c| span(c) >= VISIBLE_NS));
        vis.sort_by_key(|&c| (procs[c].start, c));
        let mut seq = true;
        let mut end = 0u64;
        for &c in &vis {
            if procs[c].start < end {
                seq = false;
                break;
            }
            end = end.max(procs[c].end);
        }
        let thr = VISIBLE_NS.max(span(i) / 20);
        let sig: Vec<usize> = vis.iter().copied().filter(|&c| span(c) >= thr).collect();
        let cover: u64 = sig.iter().map(|&c| span(c)).sum();
        cont[i] = (vis.is_empty() && !kids[i].is_empty())
            || (seq
                && !sig.is_empty()
                && cover.saturating_mul(2) >= span(i)
                && (sig.len() == 1 || (sig.len() == 2 && sig.iter().all(|&c| closed[c]))));
        closed[i] = kids[i].is_empty() || (cont[i] && kids[i].iter().all(|&c| closed[c]));
    }
    // Rows in tree order.
    let mut row_of = vec![usize::MAX; n];
    let mut jobs: Vec<Job> = Vec::new();
    for (i, p) in procs.iter().enumerate() {
        match p.parent.filter(|&pa| cont[pa] && row_of[pa] != usize::MAX) {
            Some(pa) => {
                row_of[i] = row_of[pa];
                jobs[row_of[pa]].members.push(i);
            }
            None => {
                row_of[i] = jobs.len();
                jobs.push(Job {
                    members: vec![i],
                    work: i,
                    parent: p.parent.map(|pa| row_of[pa]),
                });
            }
        }
    }
    for job in &mut jobs {
        let mut m = job.members[0];
        while cont[m] {
            let next = kids[m]
                .iter()
                .copied()
                .filter(|&c| !kids[c].is_empty() && span(c).saturating_mul(10) >= span(m).saturating_mul(9))
                .max_by_key(|&c| span(c));
            match next {
                Some(c) => m = c,
                None => break,
            }
        }
        job.work = m;
    }
    // Whether a row or any row under it has a notable process.
    let nj = jobs.len();
    let mut sub_notable: Vec<bool> = jobs
        .iter()
        .map(|j| j.members.iter().any(|&m| notable[m]))
        .collect();
    for k in (0..nj).rev() {
        if let Some(pa) = jobs[k].parent
            && sub_notable[k]
        {
            sub_notable[pa] = true;
        }
    }
    let mut folded = vec![false; nj];
    let mut folds: Vec<Option<Fold>> = vec![None; nj];
    if nj > FOLD_ABOVE {
        // The row each folded row is counted under: the nearest one not folded.
        let mut under = vec![usize::MAX; nj];
        for k in 0..nj {
            let Some(pa) = jobs[k].parent else { continue };
            let head = jobs[k].members[0];
            let (short, hand) = (span(head) < short_ns.max(VISIBLE_NS), handled[head]);
            let into = if folded[pa] {
                under[pa]
            } else if !sub_notable[k] && (short || hand) {
                pa
            } else {
                continue;
            };
            folded[k] = true;
            under[k] = into;
            let f = folds[into].get_or_insert_with(Fold::default);
            f.processes += jobs[k].members.len();
            if !folded[pa] {
                if short {
                    f.short += 1;
                } else {
                    f.handled += 1;
                }
                f.starts.push(procs[head].start);
                f.longest = f.longest.max(span(head));
            }
        }
    }
    Rows {
        jobs,
        folded,
        folds,
        folding: nj > FOLD_ABOVE,
    }
}
