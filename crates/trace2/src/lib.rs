//! git's Trace2 for Rust.
//!
//! This crate writes the three Trace2 formats byte for byte as git 2.47
//! does (event format version "4"), to the same destinations, with the same
//! session ids, and reads event streams back — git's own included.
//!
//! It has three layers that stand on their own:
//!
//! * **Vocabulary and formatting** — [`Event`]/[`EventKind`] are typed
//!   events; [`format::Target`] (implemented by [`format::EventTarget`],
//!   [`format::NormalTarget`], [`format::PerfTarget`] and [`TargetKind`])
//!   turns one into one line. Use [`format_event`] to write trace2 streams
//!   about processes you *observe* rather than about yourself.
//! * **Destinations and SIDs** — [`dst::Destination`] parses git's target
//!   values (`1`, `2`…`9`, absolute file, directory, `af_unix:…`) and writes
//!   each line with one `write(2)`; [`Sid`] builds git-shaped session ids.
//! * **Instrumentation** — free functions ([`init()`], [`region_enter`],
//!   [`data`], [`child_start`], [`exit`], …) that cost one relaxed atomic
//!   load when tracing is off, plus [`child`] helpers that start children
//!   (synchronously, in the background with a readiness probe, or by exec)
//!   so that they nest under this process — git commands included.
//!
//! The [`reader`] parses event streams (files, per-session directories,
//! `af_unix` sockets) into [`Event`]s.
//!
//! # Example
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::temp_dir().join(format!("trace2-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let file = dir.join("events.json");
//!
//! // Normally: trace2::init_from_env("MYAPP"), configured by MYAPP_TRACE2_EVENT=… .
//! let config = trace2::Config::new("MYAPP")
//!     .target(trace2::TargetKind::Event, file.to_str().unwrap_or_default())
//!     .app_version("1.0.0");
//! assert!(trace2::init(config));
//! trace2::cmd_name("demo");
//! {
//!     let _region = trace2::region("demo", "work");
//!     trace2::data("demo", "items", 3);
//! }
//! let code = trace2::exit(0);
//! trace2::atexit(); // also runs by itself when the process exits
//!
//! let (records, _) = trace2::reader::read_file(&file, Default::default())?;
//! let names: Vec<&str> = records.iter().map(|r| r.event.kind.name()).collect();
//! assert_eq!(&names[..2], ["version", "start"]);
//! assert!(names.ends_with(&["cmd_name", "region_enter", "data", "region_leave", "exit", "atexit"]));
//! # std::fs::remove_dir_all(&dir)?;
//! # assert_eq!(code, 0);
//! # Ok(())
//! # }
//! ```
//!
//! # Differences from git
//!
//! See the crate's README: mainly that `t_abs` counts from [`init()`], not from
//! `main`; that no SIGPIPE handler writes `signal` (call [`signal`]
//! yourself); and that strings that are not UTF-8 are decoded lossily by
//! the reader.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod ancestry;
mod api;
pub mod child;
mod config;
pub mod dst;
mod event;
pub mod format;
pub mod gitconfig;
mod gitconfig_wildmatch;
#[cfg(feature = "tracing")]
pub mod layer;
pub mod quote;
pub mod reader;
pub mod sid;
mod sys;
mod time;

pub use ancestry::{ancestry_names, stat_name_ppid};
pub use api::{
    ChildId, ChildSpec, Counter, ExecId, RegionGuard, RepoId, Timer, alias, atexit, child_env, child_exit,
    child_ready, child_start, child_start_with, cmd_mode, cmd_name, cmd_path, cmd_set_config, cmd_start,
    data, data_json, data_with, def_param, def_repo, error, error_fmt, exec, exec_result, exit, hierarchy,
    init, init_from_env, is_enabled, prefix, printf, region, region_enter, region_enter_with, region_leave,
    region_leave_with, sid, signal, thread_exit, thread_start,
};
pub use config::{Config, atoi, parse_maybe_bool};
pub use event::{EVENT_FORMAT_VERSION, Event, EventKind, ReadyState, Str};
pub use format::{FormatOptions, Target, TargetKind, format_event};
pub use gitconfig::GitConfigError;
pub use sid::{Sid, sha1};
pub use sys::{hostname, strerror};
pub use time::Timestamp;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// [`init()`] from `<prefix>_TRACE2*` variables with the calling crate's
/// version (`CARGO_PKG_VERSION`) as `version.exe`.
///
/// ```no_run
/// trace2::init!("MYAPP");
/// ```
#[macro_export]
macro_rules! init {
    ($prefix:expr) => {
        $crate::init($crate::Config::from_env($prefix).app_version(env!("CARGO_PKG_VERSION")))
    };
}
