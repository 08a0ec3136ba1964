//! The Trace2 notes (regions, data points) processes report about themselves, kept in their
//! records only as long as an output needs them ([`NotesKept`]), and never more than the caps:
//! a traced process that floods proctrace with regions costs memory only when something reads
//! them, and a bounded amount then. Part of [`Tracker`]; must never allocate per note beyond the
//! note itself.

use super::*;

/// How long the model keeps the Trace2 notes (regions, data points) a process reported: only as
/// long as some output needs them, so that a process flooding proctrace with regions costs
/// memory only when something will read them ([`Tracker::keep_notes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum NotesKept {
    /// Until the fact naming each reached the sinks (JSON Lines writes it then; nothing else
    /// reads it): dropped right after.
    AtFact,
    /// Until the process's exit reached the sinks (the Trace2 and Chrome outputs write a
    /// process's notes at its exit); notes that arrive after the exit, right after their fact.
    UntilExit,
    /// To the end of the run (a whole-run report, the text summary, OTLP's last span).
    #[default]
    ToEnd,
}

/// Most notes (regions plus data points) one process's record keeps; more are dropped and
/// counted ([`TrackerStats::notes_dropped`]).
pub const NOTES_PER_PROCESS_MAX: usize = 50_000;
/// Most notes all records keep together; more are dropped and counted.
pub const NOTES_HELD_MAX: u64 = 500_000;

impl Tracker {
    /// How long the Trace2 notes processes report are kept (from now on): what the outputs need
    /// ([`NotesKept`]; everything, to the end, unless told).
    pub fn keep_notes(&mut self, kept: NotesKept) {
        self.notes_kept = kept;
    }

    /// Drops the notes no output needs any more (see [`NotesKept`]). Call after the sinks have
    /// seen the facts; cheap when there is nothing to drop. The emptied lists keep their
    /// capacity: a flood of notes costs at most one batch's worth, reused.
    pub fn release_notes(&mut self) {
        for (id, region) in self.to_pop.drain(..) {
            let Some(slot) = self.slots.get_mut(id.idx as usize) else {
                continue;
            };
            if slot.generation != id.generation {
                continue;
            }
            if let Some(r) = slot.rec.as_mut() {
                let gone = if region {
                    r.regions.pop().is_some()
                } else {
                    r.data.pop().is_some()
                };
                if gone {
                    self.notes_held = self.notes_held.saturating_sub(1);
                }
            }
        }
        for id in self.to_release.drain(..) {
            let Some(slot) = self.slots.get_mut(id.idx as usize) else {
                continue;
            };
            if slot.generation != id.generation {
                continue;
            }
            if let Some(r) = slot.rec.as_mut() {
                self.notes_held = self
                    .notes_held
                    .saturating_sub((r.regions.len() + r.data.len()) as u64);
                r.regions.clear();
                r.data.clear();
            }
        }
    }

    /// Notes held in all records now.
    pub fn notes_held(&self) -> u64 {
        self.notes_held
    }

    /// Attaches a Trace2 note (region or data point) to the instance of `tgid` running at `ts`;
    /// `add` stores it and returns the fact naming it.
    pub(super) fn note(
        &mut self,
        tgid: Pid,
        ts: u64,
        facts: &mut Vec<Fact>,
        add: impl FnOnce(ProcId, &mut ProcessRecord) -> Fact,
    ) {
        let Some(id) = self.lookup_at(tgid, ts) else {
            self.stats.notes_unmatched += 1;
            return;
        };
        let full = self.notes_held >= NOTES_HELD_MAX;
        let kept = self.notes_kept;
        let Some((f, release, over)) = self.with(id, |r| {
            let over =
                (full || r.regions.len() + r.data.len() >= NOTES_PER_PROCESS_MAX).then_some(r.regions.len());
            let release = match kept {
                NotesKept::AtFact => true,
                NotesKept::UntilExit => r.exit.is_some(),
                NotesKept::ToEnd => false,
            };
            let f = add(id, r);
            // Over the cap: which list it went to, to take it back out after its fact.
            (f, release, over.map(|n| r.regions.len() > n))
        }) else {
            return;
        };
        self.stats.notes += 1;
        self.notes_held += 1;
        match over {
            // The streaming outputs still get it at its fact; nothing keeps it after.
            Some(region) => {
                self.stats.notes_dropped += 1;
                self.to_pop.push((id, region));
            }
            None if release => self.to_release.push(id),
            None => {}
        }
        facts.push(f);
    }

    /// A region of `tgid`, kept in its record (both [`apply`](Self::apply) and
    /// [`apply_owned`](Self::apply_owned)).
    pub(super) fn apply_region(&mut self, tgid: Pid, mut region: Region, facts: &mut Vec<Fact>) {
        // A saved trace can end a region before it starts: every output may count on
        // `ts <= end` (found by fuzzing twice: the picture overflowed; the second time because
        // the by-value path had its own copy of this without the fix).
        region.end = region.end.max(region.ts);
        self.note(tgid, region.ts, facts, |id, r| {
            r.regions.push(region);
            Fact::Region {
                id,
                index: r.regions.len() - 1,
            }
        });
    }

    /// A datum of `tgid`, kept in its record (both paths).
    pub(super) fn apply_data(&mut self, tgid: Pid, data: Data, facts: &mut Vec<Fact>) {
        self.note(tgid, data.ts, facts, |id, r| {
            r.data.push(data);
            Fact::Data {
                id,
                index: r.data.len() - 1,
            }
        });
    }
}
