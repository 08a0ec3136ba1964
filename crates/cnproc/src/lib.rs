//! The Linux kernel's process events connector (`cn_proc`), and nothing else.
//!
//! Subscribe to fork, exec, exit, uid/gid, sid, ptrace, comm and coredump events with the kernel's
//! nanosecond timestamps; receive them in batches; believe only the kernel; never lose an event
//! silently. What to make of the events — threads versus processes, scopes, trees — is the
//! caller's business: this crate has no policy.
//!
//! ```no_run
//! use cnproc::{Connector, Options, Received, EventKind};
//!
//! let mut conn = Connector::open(&Options::default())?;
//! let mut items = Vec::new();
//! loop {
//!     items.clear();
//!     conn.recv(&mut items, 1000)?;
//!     for item in &items {
//!         match item {
//!             Received::Event(ev) => {
//!                 if let EventKind::Exec { tgid, .. } = ev.kind {
//!                     println!("{:.6} exec {tgid}", ev.timestamp_ns as f64 / 1e9);
//!                 }
//!             }
//!             Received::Loss(loss) => eprintln!("lost {} events", loss.count),
//!         }
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`parse`] is pure and works on recorded datagrams.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]
// The system calls are proctrace-netlink's.
#![forbid(unsafe_code)]

pub mod abi;
mod event;
mod loss;
mod parse;
mod socket;

pub use event::{EventKind, ProcEvent, WaitStatus};
pub use loss::SeqGaps;
pub use parse::{Messages, Rejected, encode, parse};
pub use socket::{
    BYTES_PER_QUEUED_EVENT, Connector, FilterMethod, Loss, LossSource, OpenError, Options, Received,
    RecvError, Stats, Waker,
};
