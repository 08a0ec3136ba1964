//! Which non-zero exits are the command's failure and which were handled.
//!
//! A build that succeeds is full of processes that exit non-zero on purpose: configure's
//! probes, `test -f`, `grep -q`, `cmd || true`. Calling those failures buries the one that
//! matters, so every output that colours or counts failures (the summary, the tree, the SVG)
//! asks this module, and they all say the same thing.
//!
//! # Rule
//!
//! A process *failed* when its exit is known and is not `exit 0`: a non-zero code or a killing
//! signal. The **failures** are:
//!
//! - the command (the designated root: the `run` command, the `watch -p` process, the only root
//!   of a saved trace) when it failed; with no designated root (`watch` system-wide, `analyze`
//!   of several roots) each root that failed;
//! - recursively, the failed children of a failure that ended at or before it did and that it
//!   *stopped at*: after the child ended, the parent started no other child. That is what the
//!   parent reported — make's failing recipe shell (make starts no job after a failure; the
//!   jobs still running are waited for and count the same way), the `gcc` under it, the `cc1`
//!   under that. A failed child the parent went on after (a probe of a configure that fails
//!   later, `a` in `sh -c 'a; b'`) was handled. When a failure stopped at none of its failed
//!   children — it started a process after the last one, e.g. the `rm` of a cleanup trap — the
//!   failed child that ended last counts (it reported that one, then cleaned up).
//!
//! Every other failed process is **handled**: its parent went on, or succeeded, or has not
//! ended. In particular:
//!
//! - nothing is a failure when the command succeeded or has not ended (`watch -p` of a process
//!   still running): there is no failure for a non-zero exit to be part of;
//! - a failed process whose parent is still running at the end is handled (nothing has
//!   reported it yet), and so is everything under it;
//! - a background child (one that outlived the command) is never a failure: the command did
//!   not wait for it. A child that ended after its failed parent is not either;
//! - a process killed by a signal the command did not end with (`yes | head`'s `SIGPIPE`, a
//!   `timeout` victim under a successful root) follows the same rule as an exit code;
//! - an exit that was lost (pid reuse) is neither failed nor handled;
//! - `make -k` goes on after a failure: only its failures after which it started nothing are
//!   found (the last ones); the others read as handled.
//!
//! The **causes** are the deepest failures: those with no failure among their children (in a
//! failed `make` of C files: the compiler process that failed, with make, its recipe shell and
//! the compiler driver as its chain of failed parents). The rule takes the deepest *failed*
//! process as it is, with no knowledge of programs: under `gcc -c bad.c` that is `cc1` (it
//! exited 1 and gcc reported it), and the chain names the `gcc` line.
//!
//! Never formats anything; walks only the failures and their children (a successful build of
//! 600,000 processes costs one look at the root).

#[cfg(test)]
#[path = "failures_tests.rs"]
mod tests;

use std::collections::HashSet;

use crate::model::session::{Mode, Summary};
use crate::model::tracker::{ProcId, ProcessRecord, Tracker};

/// The failures of a finished trace (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Failures {
    set: HashSet<ProcId>,
}

/// The process's exit is known and is not `exit 0`.
pub fn failed(r: &ProcessRecord) -> bool {
    r.exit.and_then(|x| x.status).is_some_and(|s| !s.success())
}

impl Failures {
    /// Classifies `t`'s processes. `mode` and `sum` name the command (the designated root).
    pub fn of(t: &Tracker, mode: &Mode, sum: &Summary) -> Failures {
        let starts: Vec<ProcId> = match designated_root(t, mode, sum) {
            Some(id) => vec![id],
            None => t.roots().to_vec(),
        };
        let mut set = HashSet::new();
        let mut stack: Vec<ProcId> = starts
            .into_iter()
            .filter(|&id| t.get(id).is_some_and(|r| failed(r) && r.background.is_none()))
            .collect();
        while let Some(id) = stack.pop() {
            let Some(r) = t.get(id) else { continue };
            if !set.insert(id) {
                continue;
            }
            let Some(end) = r.exit.map(|x| x.ts) else { continue };
            // The last child it started: a failed child that ended before it was gone past.
            let last_start = r
                .children
                .iter()
                .filter_map(|&c| t.get(c)?.start_ns)
                .max()
                .unwrap_or(0);
            // Failed children it saw end (ended at or before it, not left in the background),
            // with their exit time.
            let reported = r.children.iter().filter_map(|&c| {
                let k = t.get(c)?;
                let x = k.exit?.ts;
                (failed(k) && k.background.is_none() && x <= end).then_some((c, x))
            });
            let before = stack.len();
            stack.extend(reported.clone().filter(|&(_, x)| x >= last_start).map(|(c, _)| c));
            if stack.len() == before {
                // Stopped at none: the one that ended last (ties: the first forked).
                stack.extend(
                    reported
                        .fold(None, |best: Option<(ProcId, u64)>, (c, x)| match best {
                            Some((_, bx)) if bx >= x => best,
                            _ => Some((c, x)),
                        })
                        .map(|(c, _)| c),
                );
            }
        }
        Failures { set }
    }

    /// `id` is one of the failures.
    pub fn contains(&self, id: ProcId) -> bool {
        self.set.contains(&id)
    }

    /// How many failures there are.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// There are none (the command succeeded).
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// `id` is a cause: a failure none of whose children is one.
    pub fn is_cause(&self, t: &Tracker, id: ProcId) -> bool {
        self.contains(id)
            && t.get(id)
                .is_some_and(|r| !r.children.iter().any(|&c| self.contains(c)))
    }

    /// The failed parents of failure `id`, from the root down to its parent.
    pub fn chain(&self, t: &Tracker, id: ProcId) -> Vec<ProcId> {
        let mut out = Vec::new();
        let mut at = t.get(id).and_then(|r| r.parent);
        while let Some(p) = at.filter(|&p| self.contains(p)) {
            out.push(p);
            at = t.get(p).and_then(|r| r.parent);
        }
        out.reverse();
        out
    }
}

/// The record the command is: the `run` command, the `-p` process (`watch`), or the only root
/// there is.
pub(crate) fn designated_root(t: &Tracker, mode: &Mode, sum: &Summary) -> Option<ProcId> {
    let pid = sum.root.or(match mode {
        Mode::Watch { root } => *root,
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
