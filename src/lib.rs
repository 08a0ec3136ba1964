//! proctrace: every process a command (or the whole system) starts, precisely timed, as a tree
//! for people and as structured lines for tools.
//!
//! Data flows one way: a backend ([`capture`], the kernel's process events connector) yields
//! [`event::Event`]s; the pure [`tracker::Tracker`] turns them into per-process records and
//! [`tracker::Fact`]s; [`sink`]s format facts. The commands ([`run`], [`watch`], [`replay`]) wire
//! them together.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod capture;
pub mod cmd;
pub mod engine;
pub mod model;
pub mod redact;
pub mod sink;
pub mod supervise;

use std::io::IsTerminal;

use model::tracker::Tracker;
use sink::tree::{TreeOptions, render};
use sink::{Fanout, Mode, Summary};

/// proctrace's own exit codes (otherwise it exits with the traced command's status).
pub mod exit_codes {
    /// Success.
    pub const OK: i32 = 0;
    /// Bad command line.
    pub const USAGE: i32 = 2;
    /// `--fail-on-leak`: the command succeeded but left processes running.
    pub const LEAK: i32 = 3;
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
    /// An I/O step failed.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    /// The request makes no sense.
    #[error("{0}")]
    Usage(String),
    /// A capture could not be replayed.
    #[error("{0}")]
    Replay(#[from] cmd::replay::ReplayError),
}

impl ProctraceError {
    /// The exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            ProctraceError::Connector(_) => exit_codes::UNAVAILABLE,
            ProctraceError::Usage(_) => exit_codes::USAGE,
            ProctraceError::Io(..) | ProctraceError::Replay(_) => exit_codes::INTERNAL,
        }
    }
}

/// How much of the tree to print at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeMode {
    /// Up to 200 process lines.
    Auto,
    /// Everything.
    Full,
    /// Nothing but the summary line.
    None,
}

/// Where output goes.
#[derive(Debug, Clone)]
pub struct Outputs {
    /// JSON Lines destination: a path, or `-` for stdout.
    pub jsonl: Option<String>,
    /// Human lines on stdout (watch without `-o`).
    pub human_stdout: bool,
    /// Tree at the end on stderr.
    pub tree: TreeMode,
    /// Colour on stderr/stdout when they are terminals and `NO_COLOR` is unset.
    pub color_allowed: bool,
    /// Hide URL credentials in argv.
    pub redact: bool,
    /// git Trace2 targets for the observed processes.
    pub trace2: Vec<sink::trace2::Trace2Target>,
    /// Trace2 brief mode.
    pub trace2_brief: bool,
}

fn color_for(stream_is_tty: bool, allowed: bool) -> bool {
    allowed
        && stream_is_tty
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

impl Outputs {
    /// Opens every destination. Fails before anything runs when one cannot be opened.
    pub fn open_sinks(&self) -> Result<Fanout, ProctraceError> {
        let mut f = Fanout::new();
        if let Some(path) = &self.jsonl {
            let out = if path == "-" {
                sink::LineDest::Stream(Box::new(std::io::stdout()))
            } else {
                sink::LineDest::File(
                    std::fs::File::create(path)
                        .map_err(|e| ProctraceError::Io(format!("cannot open output '{path}'"), e))?,
                )
            };
            f.add(
                format!("JSON Lines to {path}"),
                Box::new(sink::jsonl::JsonLines::new(out, self.redact)),
            );
        }
        if !self.trace2.is_empty() {
            let t2 = sink::trace2::Trace2Sink::new(&self.trace2, self.trace2_brief, self.redact)
                .map_err(|e| ProctraceError::Io("cannot open trace2 output".into(), e))?;
            f.add("trace2 output", Box::new(t2));
        }
        if self.human_stdout {
            let color = color_for(std::io::stdout().is_terminal(), self.color_allowed);
            f.add(
                "stdout",
                Box::new(sink::lines::HumanLines::new(
                    sink::LineDest::Stream(Box::new(std::io::stdout())),
                    color,
                    self.redact,
                )),
            );
        }
        Ok(f)
    }

    /// Prints the tree and summary on stderr.
    pub fn print_tree(&self, t: &Tracker, mode: &Mode, sum: &Summary) {
        let color = color_for(std::io::stderr().is_terminal(), self.color_allowed);
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(120usize);
        let max_lines = match self.tree {
            TreeMode::Auto => 200,
            TreeMode::Full => usize::MAX,
            TreeMode::None => 0,
        };
        let text = render(
            t,
            mode,
            sum,
            TreeOptions {
                color,
                redact: self.redact,
                max_lines,
                width,
            },
        );
        let text = if self.tree == TreeMode::None {
            text.lines().last().map(|l| format!("{l}\n")).unwrap_or_default()
        } else {
            text
        };
        use std::io::Write;
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
}
