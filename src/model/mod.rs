//! The model: the one event type every backend yields, and the pure tracker that turns events into
//! per-process records and lifecycle facts, and the vocabulary of the JSON Lines those facts are
//! written as (read back by `analyze`). No I/O, no clock.

pub mod argv;
pub mod event;
pub mod jsonl_schema;
pub mod session;
pub mod tracker;
