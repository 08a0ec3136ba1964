//! Where the tracker keeps its records: slots in fixed chunks, and a pid hasher that keeps
//! neighbouring pids neighbours. Each choice has its measured reason beside it.
//!
//! Storage only: no rule about processes lives here (those are the tracker's, stated at its top).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::ProcessRecord;
use crate::model::event::Pid;

/// Cheap hasher for pids. The table's bucket is the hash's low bits and its tag the top seven:
/// a pid is its own low 32 bits, so the pids the kernel hands out one after another land in
/// neighbouring buckets (one cache line and page for many, where a well-mixed hash sent each to
/// a random place in a 16 MB table: a cache miss per insert, 7% of `analyze` on 600,000
/// processes in `perf`), and the top bits are a multiplicative mix, so tags still differ.
#[derive(Default, Clone, Copy)]
pub(super) struct PidHasher(u64);

impl Hasher for PidHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_i32(&mut self, i: i32) {
        let p = i as u32 as u64;
        self.0 = p | (p.wrapping_mul(0x9E37_79B9_7F4A_7C15) & 0xFFFF_FFFF_0000_0000);
    }
}

pub(super) type PidMap<V> = HashMap<Pid, V, BuildHasherDefault<PidHasher>>;

/// One record's place: its generation (a handle of another generation is stale) and the record
/// while it is held.
pub(super) struct Slot {
    pub(super) generation: u32,
    pub(super) rec: Option<ProcessRecord>,
}

/// Slots in chunks of fixed size that never move: a single vector of records, doubling as it
/// grew, copied every record again at each doubling (600,000 records: the copies and the pages
/// of the abandoned vectors were an eighth of `analyze`'s time in `perf`, 307 MB file).
#[derive(Default)]
pub(super) struct Slots {
    chunks: Vec<Vec<Slot>>,
    len: usize,
}

/// Slots per chunk (a chunk is about a megabyte).
pub(super) const CHUNK: usize = 4096;

impl Slots {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn get(&self, i: usize) -> Option<&Slot> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    pub(super) fn get_mut(&mut self, i: usize) -> Option<&mut Slot> {
        self.chunks.get_mut(i / CHUNK)?.get_mut(i % CHUNK)
    }

    pub(super) fn push(&mut self, s: Slot) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push(s),
            _ => {
                let mut c = Vec::with_capacity(CHUNK);
                c.push(s);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }
}
