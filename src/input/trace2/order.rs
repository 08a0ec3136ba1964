//! The output side of the Trace2 input: built events held in time order (one sorted run per
//! family, merged by a heap of the runs' heads) until nothing can come before them, and the pids
//! handed out to built processes (a stand-in when a pid is still held by another process over
//! the same time). It never reads a line or builds a process; it only orders and feeds.

use std::collections::BinaryHeap;

use foldhash::HashMap;

use super::{MAX_HELD, PID_MAX_LIMIT};
use crate::model::event::{Event, Pid};

/// One built event waiting for its turn, fed by (time, fork < exec < notes < background <
/// exit, creation).
pub(super) struct Item {
    pub(super) ts: u64,
    pub(super) prio: u8,
    pub(super) seq: u64,
    pub(super) ev: Event,
}

/// Built events in time order: one sorted run per family, merged by a heap of the runs'
/// first keys (events move once into their run and once out, never through heap sifts).
#[derive(Default)]
pub(super) struct Held {
    /// The run being built.
    pub(super) building: Vec<Item>,
    pub(super) runs: Vec<std::collections::VecDeque<Item>>,
    pub(super) free: Vec<usize>,
    /// (time, priority, creation, run) of each run's first event.
    pub(super) heads: BinaryHeap<std::cmp::Reverse<(u64, u8, u64, usize)>>,
    pub(super) len: usize,
}

impl Held {
    pub(super) fn push(&mut self, it: Item) {
        self.building.push(it);
    }

    /// The run built since the last call joins the merge.
    pub(super) fn end_run(&mut self) {
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

    pub(super) fn head(&mut self, r: usize) {
        if let Some(i) = self.runs[r].front() {
            self.heads.push(std::cmp::Reverse((i.ts, i.prio, i.seq, r)));
        } else {
            self.runs[r] = Default::default();
            self.free.push(r);
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn peek_ts(&self) -> Option<u64> {
        self.heads.peek().map(|h| h.0.0)
    }

    pub(super) fn pop(&mut self) -> Option<Item> {
        let std::cmp::Reverse((_, _, _, r)) = self.heads.pop()?;
        let it = self.runs[r].pop_front();
        self.head(r);
        self.len -= usize::from(it.is_some());
        it
    }
}

/// The output side: built events in time order, and the pids handed out.
pub(super) struct Out {
    pub(super) held: Held,
    pub(super) seq: u64,
    /// The latest time fed.
    pub(super) watermark: u64,
    /// pid → (fork, exit) of processes given it whose exit may not have been fed yet.
    pub(super) pids: HashMap<Pid, Vec<(u64, u64)>>,
    pub(super) intervals: usize,
    pub(super) prune_at: usize,
    pub(super) next_standin: Pid,
    /// Processes without a parent built so far, and the last one's pid.
    pub(super) roots: usize,
    pub(super) root_pid: Option<Pid>,
    /// Whether a `Root` comes first is settled (and it was fed if so): nothing is fed before.
    pub(super) decided: bool,
}

impl Out {
    pub(super) fn new() -> Out {
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

    pub(super) fn push(&mut self, ts: u64, prio: u8, ev: Event) {
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
    pub(super) fn claim(&mut self, pid: Option<Pid>, fork: u64, end: u64) -> Pid {
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
    pub(super) fn prune(&mut self) {
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
    pub(super) fn emit(&mut self, low: u64, feed: &mut dyn FnMut(Event)) {
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
    pub(super) fn finish(&mut self, feed: &mut dyn FnMut(Event)) {
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
