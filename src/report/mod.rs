//! Whole-run outputs: pure functions from the finished records (the tracker at the end), the
//! session's header and summary to text or bytes, like hyperfine's exporters. They run after
//! capture, never on the drain thread, and read nothing from the environment or the clock, so
//! each is golden-tested from a recorded capture.
//!
//! Streaming outputs, written while events arrive, are [`crate::sink`]s instead.

pub mod svg;
pub mod tree;
