//! Flow arrows from the process that wrote a file to each process that read it afterwards
//! (`run --files`): a Chrome `s` event inside the writer's slice at the write, an `f` event
//! (`bp: e`, bound to the enclosing slice) inside the reader's at the read, one id per pair, so
//! Perfetto draws the build's produced-by / consumed-by links. The arrows are written at the
//! end, once every slice is placed. Memory, only for a trace of `--files`: where each slice went
//! (24 bytes a process), the written paths (the latest writer of each) and the arrows, at most
//! [`FLOWS_MAX`].

use std::collections::HashMap;
use std::io;

use super::{ChromeTrace, json, us};
use crate::model::bytes::shown;
use crate::model::event::FileAccess;
use crate::model::tracker::{ProcId, Tracker};

/// Most arrows a trace gets (a file read by every compile would otherwise make thousands).
pub const FLOWS_MAX: u64 = 100_000;

/// An arrow: from a write to a later read by another process.
struct Arrow {
    from: (ProcId, u64),
    to: (ProcId, u64),
    path: Box<str>,
}

/// The state of the arrows.
#[derive(Default)]
pub struct Flows {
    /// The trace has file uses (the header says `--files`).
    pub on: bool,
    /// The latest writer of each path, and when.
    writers: HashMap<Box<str>, (ProcId, u64)>,
    /// Placed slices: lane, start, end.
    placed: HashMap<ProcId, (usize, u64, u64)>,
    /// Every arrow, in the order of the reads (written at the end, so the file does not depend
    /// on when a use arrived beside the exits: live, its uses trail them).
    arrows: Vec<Arrow>,
}

impl ChromeTrace {
    /// A file use: a write remembers its writer; a read after a write by another process is an
    /// arrow from the writer to it.
    pub(super) fn file_use(&mut self, id: ProcId, index: usize, t: &Tracker) {
        let Some(u) = t
            .get(id)
            .and_then(|r| r.files.as_ref())
            .and_then(|f| f.uses.get(index))
        else {
            return;
        };
        match u.access {
            FileAccess::Write => {
                self.flows.writers.insert(u.path.clone(), (id, u.ts));
            }
            FileAccess::Read => {
                let Some(&(w, wts)) = self.flows.writers.get(&u.path) else {
                    return;
                };
                if w != id && wts <= u.ts && (self.flows.arrows.len() as u64) < FLOWS_MAX {
                    self.flows.arrows.push(Arrow {
                        from: (w, wts),
                        to: (id, u.ts),
                        path: u.path.clone(),
                    });
                }
            }
            _ => {}
        }
    }

    /// A process's slice was placed on `lane` over `[s, e]` (remembered for every process:
    /// its uses can arrive after its exit, and the arrows must not depend on when they did).
    pub(super) fn placed(&mut self, id: ProcId, lane: usize, s: u64, e: u64) {
        if self.flows.on {
            self.flows.placed.insert(id, (lane, s, e));
        }
    }

    /// Writes every arrow both of whose processes have a slice (at the end, after the slices of
    /// the processes still running), numbered in order.
    pub(super) fn write_arrows(&mut self) -> io::Result<()> {
        let arrows = std::mem::take(&mut self.flows.arrows);
        let mut n = 0;
        for a in &arrows {
            let (Some(&f), Some(&t)) = (self.flows.placed.get(&a.from.0), self.flows.placed.get(&a.to.0))
            else {
                continue;
            };
            self.write_point(f, n, a.from.1, true, &a.path)?;
            self.write_point(t, n, a.to.1, false, &a.path)?;
            n += 1;
        }
        Ok(())
    }

    /// `{"ph":"s"|"f",…,"ts":…,"id":N,"name":PATH,"cat":"file"}`, its time inside the slice
    /// (fanotify's times are when proctrace read the event: a close at exit reads after it).
    fn write_point(
        &mut self,
        (lane, s, e): (usize, u64, u64),
        id: u64,
        ts: u64,
        start: bool,
        path: &str,
    ) -> io::Result<()> {
        let ts = ts.clamp(s, e.saturating_sub(1).max(s));
        let t0 = self.t0;
        let b = self.head(if start { "s" } else { "f" }, Some(lane));
        b.extend_from_slice(b",\"ts\":");
        us(b, ts.saturating_sub(t0));
        if !start {
            b.extend_from_slice(b",\"bp\":\"e\"");
        }
        b.extend_from_slice(b",\"id\":");
        json::int(b, id as i64);
        b.extend_from_slice(b",\"name\":");
        json::string(b, &shown(path));
        b.extend_from_slice(b",\"cat\":\"file\"");
        self.next()
    }
}
