//! The model: the one event type every backend yields, the pure tracker that turns events into
//! per-process records and lifecycle facts, the one name of a process made from its record
//! ([`naming`]), the session's header and summary, and the vocabulary of the JSON Lines those
//! facts are written as (read back by `analyze`). No I/O, no clock.

pub mod argv;
pub mod bytes;
pub mod elsewhere;
pub mod escape;
pub mod event;
pub mod images;
pub mod jsonl_schema;
pub mod naming;
pub mod session;
pub mod tracker;
