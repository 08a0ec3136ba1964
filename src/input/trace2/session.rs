//! What the stream said, kept per SID while reading: a [`Session`] (its command line, exits,
//! execs and `child_start`s, by phase) and the [`Family`] of sessions under one root SID, the
//! unit that is built into processes. Plain state: filled by [`super::stream`], read by
//! [`super::build`]; it never reads, orders or feeds anything itself.

use foldhash::HashMap;
use trace2::Timestamp;

use super::super::notes::NoteBuilder;
use crate::model::event::{Event, Pid};
use crate::model::tracker::BackgroundState;

/// A `child_start` and what its parent later said about it.
#[derive(Debug, Clone)]
pub(super) struct Child {
    pub(super) id: i64,
    /// Which process of the session started it (0; k for the k-th detached fork).
    pub(super) phase: usize,
    pub(super) argv: Vec<String>,
    pub(super) use_shell: bool,
    pub(super) start: u64,
    /// `child_exit` / `child_ready` time.
    pub(super) end: Option<u64>,
    pub(super) pid: Option<Pid>,
    pub(super) code: Option<i32>,
    pub(super) ready: Option<BackgroundState>,
    pub(super) failed_spawn: bool,
    /// git said "`<cmd> died of signal N`" for it (its `code` is then 128+N by a signal).
    pub(super) signal: Option<i32>,
}

/// How one process of a session ended (phase 0: the session's own process; k ≥ 1: its k-th
/// detached fork).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Phase {
    pub(super) exit: Option<(u64, i32)>,
    pub(super) atexit: Option<(u64, i32)>,
    pub(super) signal: Option<(u64, i32)>,
    /// Time of the last event of this phase.
    pub(super) last: Option<u64>,
}

/// What one SID said, kept while reading.
#[derive(Debug, Default)]
pub(super) struct Session {
    pub(super) sid: String,
    /// First time seen (the `version` time, or the earliest event time).
    pub(super) first: Option<u64>,
    /// `version.time`, for brief streams' `t_abs`.
    pub(super) base: Option<Timestamp>,
    pub(super) argv: Option<Vec<String>>,
    /// Successful `exec`s: (exec_id, time, argv).
    pub(super) execs: Vec<(i64, u64, Vec<String>)>,
    pub(super) children: Vec<Child>,
    pub(super) phases: Vec<Phase>,
    /// The current phase is over (its `atexit` or `signal` was seen).
    pub(super) phase_closed: bool,
    pub(super) last: Option<u64>,
    pub(super) too_many_files: bool,
    /// The last "died of signal N" error not yet given to a child_exit.
    pub(super) died_of: Option<i32>,
}

impl Session {
    pub(super) fn phase(&mut self) -> &mut Phase {
        if self.phases.is_empty() {
            self.phases.push(Phase::default());
        }
        let n = self.phases.len() - 1;
        &mut self.phases[n]
    }
    pub(super) fn phase_index(&self) -> usize {
        self.phases.len().saturating_sub(1)
    }
}

/// The sessions that share a root SID (its first component): one process tree, built as a
/// whole once all of its processes ended (and no line came for [`super::WINDOW_NS`]) or at the end.
pub(super) struct Family {
    /// Unique among every family ever made (slab slots are reused).
    pub(super) id: u64,
    pub(super) key: String,
    pub(super) sessions: Vec<Session>,
    pub(super) by_sid: HashMap<String, usize>,
    /// The session of the previous line.
    pub(super) last_session: Option<usize>,
    pub(super) notes: NoteBuilder,
    /// Note slot (passed to [`NoteBuilder`] as the tgid) → (session, phase).
    pub(super) slots: Vec<(usize, usize)>,
    pub(super) slot_of: HashMap<(usize, usize), Pid>,
    /// The last (session, phase, slot) [`Family::slot`] gave.
    pub(super) last_slot: Option<(usize, usize, Pid)>,
    /// Notes with their slot as tgid.
    pub(super) note_events: Vec<Event>,
    pub(super) first: Option<u64>,
    pub(super) last: Option<u64>,
    /// Sessions whose current process has not ended (no `atexit`/`signal` yet).
    pub(super) open: usize,
    /// The line at which `open` last came to 0.
    pub(super) closed_line: u64,
}

impl Family {
    pub(super) fn slot(&mut self, session: usize, phase: usize) -> Pid {
        // Region and data lines come in runs of one session: the last answer first (the map
        // lookup hashed on ~70% of a git stream's lines).
        if let Some((se, ph, s)) = self.last_slot
            && (se, ph) == (session, phase)
        {
            return s;
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
