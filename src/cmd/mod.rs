//! One module per command: each wires a backend (or a saved capture) to the engine and the outputs.

pub mod analyze;
pub mod diff;
pub mod replay;
pub mod run;
pub mod watch;
