//! Whole-run outputs: pure functions from the finished records (the tracker at the end), the
//! session's header and summary to text or bytes, like hyperfine's exporters. They run after
//! capture, never on the drain thread, and read nothing from the environment or the clock, so
//! each is golden-tested from a recorded capture.
//!
//! [`tree`] is the process tree printed when a run ends; [`summary`] says where the time went
//! (slowest commands, time by program, failures, leaks and the critical path) as text, Markdown
//! and JSON.
//!
//! Streaming outputs, written while events arrive, are [`crate::sink`]s instead.

pub mod html;
pub mod summary;
pub mod svg;
pub mod tree;
