//! The model: the one event type every backend yields, the pure tracker that turns events into
//! per-process records and lifecycle facts, and the one name of a process made from its record
//! ([`naming`]). No I/O, no clock.

pub mod argv;
pub mod event;
pub mod naming;
pub mod session;
pub mod tracker;
