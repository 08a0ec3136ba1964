//! proctrace: every process a command (or the whole system) starts, precisely timed, as a tree
//! for people and as structured lines for tools.
//!
//! Data flows one way: a backend ([`capture`]: the kernel's process events connector, or ptrace)
//! yields [`model::event::Event`]s; the [`engine`] feeds them to the pure
//! [`model::tracker::Tracker`], which turns them into per-process records and
//! [`model::tracker::Fact`]s; [`sink`]s format facts. The commands ([`cmd`]) wire a backend or a
//! saved capture to the engine; [`output`] is the registry of outputs and the one failure policy
//! (checking, opening and reporting every output); [`capture_file`] is the `--record` format.
//!
//! This file holds only the module list, the error type, the exit codes and [`say!`].

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod capture;
pub mod capture_file;
pub mod cli;
pub mod cmd;
pub mod engine;
pub mod filter;
pub mod input;
pub mod model;
pub mod output;
pub mod redact;
pub mod report;
pub mod sink;
pub mod supervise;
#[doc(hidden)]
pub mod testkit;

/// Writes a line to stderr, as `eprintln!` does, but never panics: with stderr closed or full
/// there is nowhere left to say anything, and proctrace goes on (its outputs and the traced
/// command's status matter more than a message). Every message proctrace prints goes through it.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        // Nowhere to report a failed write to stderr itself: the message is dropped.
        if ::std::io::stderr().lock().write_fmt(format_args!("{}\n", format_args!($($arg)*))).is_err() {}
    }};
}

/// proctrace's own exit codes (otherwise it exits with the traced command's status).
pub mod exit_codes {
    /// Success.
    pub const OK: i32 = 0;
    /// Bad command line.
    pub const USAGE: i32 = 2;
    /// `--fail-on-leak`: the command succeeded but left processes running.
    pub const LEAK: i32 = 3;
    /// A saved trace could not be read (EX_DATAERR): what came before the bad line was still
    /// output.
    pub const DATA: i32 = 65;
    /// An output could not be written (EX_IOERR): `analyze`, `replay`, `diff` and `watch` (`run`
    /// exits with the command's status and says what was lost).
    pub const OUTPUT: i32 = 74;
    /// The process events connector cannot be used here (EX_UNAVAILABLE).
    pub const UNAVAILABLE: i32 = 69;
    /// proctrace itself failed (an output could not be opened, an internal error).
    pub const INTERNAL: i32 = 125;
}

/// Errors that end proctrace before or instead of tracing.
#[derive(Debug, thiserror::Error)]
pub enum ProctraceError {
    /// The connector refused or is missing.
    #[error("cannot listen to process events: {0}")]
    Connector(#[from] cnproc::OpenError),
    /// A capture backend cannot be used here (exit 69: `auto` tries the next).
    #[error("{0}")]
    Unavailable(String),
    /// An I/O step failed.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    /// The request makes no sense.
    #[error("{0}")]
    Usage(String),
    /// A saved trace could not be read.
    #[error("{0}")]
    Input(#[from] input::InputError),
}

impl ProctraceError {
    /// The exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            ProctraceError::Connector(_) | ProctraceError::Unavailable(_) => exit_codes::UNAVAILABLE,
            ProctraceError::Usage(_) => exit_codes::USAGE,
            ProctraceError::Io(..) => exit_codes::INTERNAL,
            ProctraceError::Input(_) => exit_codes::DATA,
        }
    }
}
