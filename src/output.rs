//! Wiring from the command line to the outputs: which sinks to open and where, and the tree and
//! whole-run reports (the SVG picture) at the end.
//!
//! The one place that looks at the terminal and the environment for output (isatty, `NO_COLOR`,
//! `TERM`, `COLUMNS`); it hands the sinks and the tree plain decisions (colour on or off, a width),
//! so they stay functions of what they are given.

use std::io::IsTerminal;

use crate::ProctraceError;
use crate::model::session::{Header, Summary};
use crate::model::tracker::Tracker;
use crate::report::summary::{self, TextOptions};
use crate::report::svg::{self, SvgOptions};
use crate::report::tree::{TreeOptions, render};
use crate::sink::{self, Fanout};

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
    /// Chrome Trace Event Format timeline (Perfetto, chrome://tracing): a path, or `-` for stdout.
    pub chrome: Option<String>,
    /// The text summary (slowest, by program, critical path) on stderr at the end: after the
    /// tree for `run` and `replay` unless `--tree none`; with `watch --summary`.
    pub summary_text: bool,
    /// Append the summary as Markdown to this file (`--summary-md`).
    pub summary_md: Option<String>,
    /// Write the summary as one JSON object to this file (`--summary-json`).
    pub summary_json: Option<String>,
    /// SVG picture of the run, written at the end.
    pub svg: Option<String>,
    /// A live status line on stderr (`run`), shown only when stderr is a terminal.
    pub progress: bool,
    /// OpenTelemetry export (`--otlp`, `OTEL_EXPORTER_OTLP_*`): spans to a collector.
    pub otlp: Option<sink::otlp::config::OtlpConfig>,
    /// `--quiet`: no status line and no tree or totals on stderr (files are still written;
    /// errors still print).
    pub quiet: bool,
}

/// Can a status line be redrawn in place on stderr?
fn stderr_is_live_terminal() -> bool {
    std::io::stderr().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

fn color_for(stream_is_tty: bool, allowed: bool) -> bool {
    allowed
        && stream_is_tty
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// Colour for text on stdout (`proctrace diff`): allowed, stdout a terminal, `NO_COLOR` unset,
/// `TERM` not `dumb`.
pub fn stdout_color(allowed: bool) -> bool {
    color_for(std::io::stdout().is_terminal(), allowed)
}

/// A file (created or truncated) or, for `-`, stdout.
fn dest(path: &str) -> Result<sink::LineDest, ProctraceError> {
    Ok(if path == "-" {
        sink::LineDest::Stream(Box::new(std::io::stdout()))
    } else {
        sink::LineDest::File(
            std::fs::File::create(path)
                .map_err(|e| ProctraceError::Io(format!("cannot open output '{path}'"), e))?,
        )
    })
}

impl Outputs {
    /// A whole-run report is asked for (a summary or the SVG picture): the tracker must keep
    /// exited records (`watch` frees them otherwise).
    pub fn wants_records(&self) -> bool {
        self.summary_text || self.summary_md.is_some() || self.summary_json.is_some() || self.svg.is_some()
    }

    /// A report made at the end from every record is asked for: the tree (with the text summary
    /// under it), a summary file or the SVG picture. The verdict line and the streaming outputs
    /// (`-o`, Trace2, Chrome, OTLP) need only the records of processes still running.
    pub fn reads_records_at_end(&self) -> bool {
        (self.tree != TreeMode::None && !self.quiet)
            || self.summary_md.is_some()
            || self.summary_json.is_some()
            || self.svg.is_some()
    }

    /// Opens every destination. Fails before anything runs when one cannot be opened (a report
    /// file is created now and written at the end).
    pub fn open_sinks(&self) -> Result<Fanout, ProctraceError> {
        let mut f = Fanout::new();
        // Whole-run reports are written at the end; find out now that their files can be.
        if let Some(path) = &self.summary_md {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| ProctraceError::Io(format!("cannot open summary file '{path}'"), e))?;
        }
        if let Some(path) = &self.summary_json {
            std::fs::File::create(path)
                .map_err(|e| ProctraceError::Io(format!("cannot open summary file '{path}'"), e))?;
        }
        if let Some(path) = &self.svg {
            std::fs::File::create(path)
                .map_err(|e| ProctraceError::Io(format!("cannot open output '{path}'"), e))?;
        }
        if let Some(path) = &self.jsonl {
            let out = dest(path)?;
            f.add(
                format!("JSON Lines to {path}"),
                Box::new(sink::jsonl::JsonLines::new(out, self.redact)),
            );
        }
        if let Some(path) = &self.chrome {
            f.add(
                format!("Chrome trace to {path}"),
                Box::new(sink::chrome::ChromeTrace::new(dest(path)?, self.redact)),
            );
        }
        if !self.trace2.is_empty() {
            let t2 = sink::trace2::Trace2Sink::new(&self.trace2, self.trace2_brief, self.redact)
                .map_err(|e| ProctraceError::Io("cannot open trace2 output".into(), e))?;
            f.add("trace2 output", Box::new(t2));
        }
        if let Some(cfg) = &self.otlp {
            f.add(
                format!("OTLP export to {}", cfg.url),
                Box::new(sink::otlp::OtlpSink::export(cfg.clone(), self.redact)),
            );
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
        if self.progress && !self.quiet && stderr_is_live_terminal() {
            f.add(
                "status line",
                Box::new(sink::progress::Progress::new(self.redact)),
            );
        }
        Ok(f)
    }

    /// Prints the tree on stderr, then the text summary (when [`summary_text`](Self::summary_text)),
    /// then the one-line verdict (nothing under `--quiet`).
    pub fn print_tree(&self, t: &Tracker, h: &Header, sum: &Summary) {
        if self.quiet {
            return;
        }
        let (color, width) = stderr_style(self.color_allowed);
        let mode = &h.mode;
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
        // The last line is the verdict; the summary goes between the tree and it.
        let body = text.trim_end_matches('\n');
        let (tree, verdict) = body.rsplit_once('\n').unwrap_or(("", body));
        let mut text = String::new();
        if self.tree != TreeMode::None {
            if !tree.is_empty() {
                text.push_str(tree);
                text.push('\n');
            }
            if self.summary_text {
                let r = summary::summarize(h, t, sum, self.redact);
                text.push_str(&summary::render_text(&r, TextOptions { color, width }));
            }
        }
        text.push_str(verdict);
        text.push('\n');
        use std::io::Write;
        let _ = std::io::stderr().write_all(text.as_bytes());
    }

    /// Prints only the text summary on stderr (`watch --summary`).
    pub fn print_summary(&self, t: &Tracker, h: &Header, sum: &Summary) {
        if self.quiet {
            return;
        }
        let (color, width) = stderr_style(self.color_allowed);
        let r = summary::summarize(h, t, sum, self.redact);
        use std::io::Write;
        let _ =
            std::io::stderr().write_all(summary::render_text(&r, TextOptions { color, width }).as_bytes());
    }

    /// Writes the whole-run report files (`--summary-md`, `--summary-json`, `--svg`). A file that
    /// cannot be written is reported on stderr with its path and the reason; the others are still
    /// written, and what was captured is unaffected. Returns whether all were written.
    pub fn write_reports(&self, h: &Header, t: &Tracker, sum: &Summary) -> bool {
        let mut ok = true;
        if self.summary_md.is_some() || self.summary_json.is_some() {
            let r = summary::summarize(h, t, sum, self.redact);
            if let Some(path) = &self.summary_md {
                // One write in append mode: summaries of several steps share a file
                // ($GITHUB_STEP_SUMMARY).
                let res = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .and_then(|mut f| {
                        use std::io::Write;
                        f.write_all(summary::render_markdown(&r).as_bytes())
                    });
                if let Err(e) = res {
                    eprintln!("proctrace: cannot write summary to '{path}': {e}");
                    ok = false;
                }
            }
            if let Some(path) = &self.summary_json {
                let res = std::fs::File::create(path).and_then(|f| {
                    use std::io::Write;
                    let mut w = std::io::BufWriter::with_capacity(64 << 10, f);
                    summary::write_json(&r, &mut w)?;
                    w.flush()
                });
                if let Err(e) = res {
                    eprintln!("proctrace: cannot write summary to '{path}': {e}");
                    ok = false;
                }
            }
        }
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

/// Colour and width for text on stderr.
fn stderr_style(allowed: bool) -> (bool, usize) {
    let color = color_for(std::io::stderr().is_terminal(), allowed);
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(120usize);
    (color, width)
}
