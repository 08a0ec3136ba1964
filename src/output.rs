//! Wiring from the command line to the outputs: which sinks to open and where, and the tree and
//! whole-run reports (the SVG picture) at the end.
//!
//! The one place that looks at the terminal and the environment for output (isatty, `NO_COLOR`,
//! `TERM`, `COLUMNS`); it hands the sinks and the tree plain decisions (colour on or off, a width),
//! so they stay functions of what they are given.

use std::io::IsTerminal;

use crate::ProctraceError;
use crate::model::tracker::Tracker;
use crate::report::svg::{self, SvgOptions};
use crate::report::tree::{TreeOptions, render};
use crate::sink::{self, Fanout, Header, Mode, Summary};

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
    /// SVG picture of the run, written at the end.
    pub svg: Option<String>,
}

fn color_for(stream_is_tty: bool, allowed: bool) -> bool {
    allowed
        && stream_is_tty
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

impl Outputs {
    /// Whether a whole-run report is asked for, which needs the records of exited processes
    /// (`watch` keeps them only then).
    pub fn wants_records(&self) -> bool {
        self.svg.is_some()
    }

    /// Opens every destination. Fails before anything runs when one cannot be opened (a report
    /// file is created empty now and written at the end).
    pub fn open_sinks(&self) -> Result<Fanout, ProctraceError> {
        if let Some(path) = &self.svg {
            std::fs::File::create(path)
                .map_err(|e| ProctraceError::Io(format!("cannot open output '{path}'"), e))?;
        }
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

    /// Writes the whole-run reports (the SVG picture) from the finished records. A report that
    /// cannot be written is reported on stderr with its path and the reason and does not stop the
    /// others; returns whether all were written.
    pub fn write_reports(&self, h: &Header, t: &Tracker, sum: &Summary) -> bool {
        let mut ok = true;
        if let Some(path) = &self.svg {
            let text = svg::render(
                h,
                t,
                sum,
                SvgOptions {
                    redact: self.redact,
                    ..SvgOptions::default()
                },
            );
            if let Err(e) = std::fs::write(path, text) {
                eprintln!("proctrace: cannot write SVG to '{path}': {e}");
                ok = false;
            }
        }
        ok
    }
}
