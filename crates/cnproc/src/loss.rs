//! Loss accounting from the kernel's per-CPU sequence numbers.
//!
//! Every generated event (acks included) takes the next value of its CPU's counter whether or not
//! any socket receives it. Without an event filter, the sum of gaps therefore equals what this
//! socket missed (drops plus the rare allocation failure that no counter records). With a filter,
//! gaps include filtered events and must not be reported as loss.

/// Highest CPU index tracked; larger values (old kernels send acks with cpu = -1) are skipped.
const MAX_CPUS: u32 = 8192;

/// Per-CPU sequence tracking.
#[derive(Debug, Default, Clone)]
pub struct SeqGaps {
    last: Vec<Option<u32>>,
    total: u64,
}

impl SeqGaps {
    /// A tracker with no history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an event's `(cpu, seq)` and returns how many events are missing before it on that
    /// CPU. The first event seen on a CPU establishes the baseline and returns 0; a sequence
    /// number that goes backwards (reordering, another socket's ack on 4.x) returns 0.
    #[inline]
    pub fn observe(&mut self, cpu: u32, seq: u32) -> u64 {
        if cpu >= MAX_CPUS {
            return 0;
        }
        let idx = cpu as usize;
        if idx >= self.last.len() {
            self.last.resize(idx + 1, None);
        }
        let slot = &mut self.last[idx];
        let missing = match *slot {
            None => 0,
            Some(prev) => {
                let d = seq.wrapping_sub(prev) as i32;
                if d > 1 { (d - 1) as u64 } else { 0 }
            }
        };
        if slot.is_none_or(|prev| (seq.wrapping_sub(prev) as i32) > 0) {
            *slot = Some(seq);
        }
        self.total += missing;
        missing
    }

    /// Sum of all gaps seen so far.
    pub fn total(&self) -> u64 {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_per_cpu_and_wrap() {
        let mut g = SeqGaps::new();
        assert_eq!(g.observe(0, 10), 0);
        assert_eq!(g.observe(1, 100), 0);
        assert_eq!(g.observe(0, 11), 0);
        assert_eq!(g.observe(0, 15), 3);
        assert_eq!(g.observe(1, 101), 0);
        assert_eq!(g.observe(0, 14), 0, "backwards is not loss");
        assert_eq!(g.observe(0, 16), 0);
        assert_eq!(g.observe(2, u32::MAX - 1), 0);
        assert_eq!(g.observe(2, 1), 2, "wraps: MAX and 0 missing");
        assert_eq!(g.observe(u32::MAX, 5), 0, "cpu -1 skipped");
        assert_eq!(g.total(), 5);
    }
}
