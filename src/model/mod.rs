//! The model: the one event type every backend yields, and the pure tracker that turns events into
//! per-process records and lifecycle facts. No I/O, no clock.

pub mod argv;
pub mod event;
pub mod session;
pub mod tracker;
