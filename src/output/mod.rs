//! Outputs: every output proctrace can write is declared once ([`OutputSpec`], listed in
//! [`registry::OUTPUTS`]), and everything else is derived from the declarations — the command-line
//! flags ([`args::OutputArgs`]), checking and opening the destinations, whether records of exited
//! processes must be kept to the end, the report step at the end, the golden tests — with one
//! failure policy for every command:
//!
//! - Every destination is checked and opened **before** any existing file is truncated and before
//!   the traced command starts ([`Outputs::plan`]): a usage error leaves the user's files as they
//!   were. Two outputs on one file, or an output that is also an input, is a usage error.
//! - An output that fails while writing is dropped (the others go on, the trace goes on) and
//!   reported once at the end, by its path and the error ([`Outputs::finish`]); a closed stdout
//!   (`| head`) ends quietly. Commands turn the [`Outcome`] into their exit status.
//!
//! Two kinds of output ([`Make`]): *streaming* ones are [`Sink`]s fed fact by fact as the run
//! goes (JSON Lines, Chrome, Trace2, OTLP, the capture); *whole-run* reports are pure functions of
//! the finished run into bytes ([`FinishedRun`] → a writer: the summary files, the SVG), as
//! hyperfine's exporters are. The tree and text summary on stderr are the commands' own report
//! for a person ([`Outputs::print_tree`]).
//!
//! This is the one place that looks at the terminal and the environment for output (isatty,
//! `NO_COLOR`, `TERM`, `COLUMNS`: [`term`]); sinks and reports get plain decisions.

use std::cell::OnceCell;
use std::io::{self, Write};
use std::path::PathBuf;

use crate::ProctraceError;
use crate::model::session::{Header, Summary};
use crate::model::tracker::Tracker;
use crate::report::summary::{self, RunReport, TextOptions};
use crate::report::tree::{TreeOptions, render};
use crate::sink::{self, Fanout, LineDest, Sink};

pub mod args;
pub mod dest;
pub mod registry;
pub mod term;

pub use args::{LiveOutputArgs, OutputArgs};
pub use dest::DestKind;
use dest::{Identity, Opened};

/// One output, declared once. Adding an output is one file that implements it and declares its
/// `OutputSpec`, plus one line in [`registry::OUTPUTS`] (ARCHITECTURE.md, "Add an output").
pub struct OutputSpec {
    /// Its long flag, without `--` (`chrome`).
    pub flag: &'static str,
    /// Its short flag, if any (`-o`).
    pub short: Option<char>,
    /// The flag's value in `--help` (`FILE`, `DEST`).
    pub value_name: &'static str,
    /// The flag's help text.
    pub help: &'static str,
    /// What it is, in messages: "cannot write {what} to 'PATH'".
    pub what: &'static str,
    /// The extension of its golden files (tests/fixtures/golden/CAPTURE.EXT); `None`: tested
    /// by its own end-to-end tests only (it talks to a collector, or it is the capture itself).
    pub golden: Option<&'static str>,
    /// How its value is read.
    pub dest: DestKind,
    /// Only while capturing (`run`, `watch`): `--record`.
    pub live_only: bool,
    /// How it is made.
    pub make: Make,
}

/// How an output is made.
pub enum Make {
    /// A sink fed as the run goes; opened from its destination and the shared settings.
    Stream(fn(To, &Settings) -> io::Result<Box<dyn Sink>>),
    /// A report of the finished run (it reads every record: exited ones are kept to the end).
    WholeRun(fn(&FinishedRun<'_>, &mut dyn Write) -> io::Result<()>),
}

/// Where a streaming output writes.
pub enum To {
    /// Lines to a file or stdout.
    Lines(LineDest),
    /// The flag's value, for an output that opens its own destinations (Trace2, OTLP).
    Value(String),
}

impl To {
    /// The line destination (every [`DestKind::File`] output gets one).
    pub fn lines(self) -> io::Result<LineDest> {
        match self {
            To::Lines(d) => Ok(d),
            To::Value(v) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("'{v}' is not a file destination"),
            )),
        }
    }
}

/// Settings every output shares.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// Hide URL credentials in argv.
    pub redact: bool,
    /// Colour allowed (no `--no-color`); whether it is used depends on the terminal.
    pub color_allowed: bool,
    /// Trace2 brief mode.
    pub trace2_brief: bool,
    /// `--quiet`: nothing on stderr but errors.
    pub quiet: bool,
    /// OpenTelemetry export settings (`--otlp` and the `OTEL_*` variables), when asked for.
    pub otlp: Option<sink::otlp::config::OtlpConfig>,
    /// `--files-dirs`: how the summaries' lists of files are summarised by directory.
    pub files_dirs: summary::dirs::MoreThan,
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

/// What a command asks of its outputs beyond the flags.
#[derive(Debug, Clone)]
pub struct Ask {
    /// A live capture (`run`, `watch`): live-only outputs allowed, OTLP sends while it runs.
    pub live: bool,
    /// Human lines on stdout (`watch` without `-o`).
    pub human_stdout: bool,
    /// The tree on stderr at the end.
    pub tree: TreeMode,
    /// The text summary on stderr at the end.
    pub summary_text: bool,
    /// A live status line on stderr (`run`, when stderr is a terminal).
    pub progress: bool,
    /// The command's inputs (saved traces): no output may be one of them.
    pub inputs: Vec<PathBuf>,
    /// OTLP export gives the traced command a `TRACEPARENT` (`run` without `--no-propagate`).
    pub propagate: bool,
}

/// A finished run, as whole-run reports read it. The summary analysis is made once, for all.
pub struct FinishedRun<'a> {
    /// The session's header.
    pub header: &'a Header,
    /// The model, with every record.
    pub tracker: &'a Tracker,
    /// The session's summary.
    pub summary: &'a Summary,
    /// Hide URL credentials.
    pub redact: bool,
    /// `--files-dirs`: the threshold of the summaries' directories (`None`: every file listed).
    pub files_dirs: Option<usize>,
    report: OnceCell<RunReport>,
}

impl<'a> FinishedRun<'a> {
    /// The run as reports see it.
    pub fn new(header: &'a Header, tracker: &'a Tracker, summary: &'a Summary, settings: &Settings) -> Self {
        FinishedRun {
            header,
            tracker,
            summary,
            redact: settings.redact,
            files_dirs: settings.files_dirs.0,
            report: OnceCell::new(),
        }
    }

    /// The summary analysis (slowest, by program, critical path, failures), made on first use.
    pub fn report(&self) -> &RunReport {
        self.report.get_or_init(|| {
            summary::summarize(
                self.header,
                self.tracker,
                self.summary,
                self.redact,
                self.files_dirs,
            )
        })
    }
}

/// How the outputs did, for the command's exit status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Outputs that failed (a closed stdout does not count); each was reported on stderr.
    pub failed: usize,
    /// stdout was closed by its reader (`| head`): the quiet end of a pipe.
    pub stdout_closed: bool,
}

impl Outcome {
    /// The exit status of a command whose job is its outputs (`analyze`, `replay`, `watch`,
    /// `diff`): [`exit_codes::OUTPUT`](crate::exit_codes::OUTPUT) when one failed, else `ok`.
    pub fn code(self, ok: i32) -> i32 {
        if self.failed > 0 {
            crate::exit_codes::OUTPUT
        } else {
            ok
        }
    }
}

/// One chosen output.
struct Chosen {
    spec: &'static OutputSpec,
    value: String,
    /// A whole-run report's destination, held until the end.
    opened: Option<Opened>,
}

/// The outputs a command line asked for: checked and opened by [`plan`](Self::plan), started by
/// [`start`](Self::start), reported on by [`finish`](Self::finish).
pub struct Outputs {
    /// Shared settings.
    pub settings: Settings,
    /// The tree on stderr.
    pub tree: TreeMode,
    /// The text summary on stderr.
    pub summary_text: bool,
    chosen: Vec<Chosen>,
    /// The streaming sinks, until [`start`](Self::start) hands them out.
    sinks: Option<Fanout>,
    /// Files proctrace created while planning: removed if it never starts.
    created: Vec<PathBuf>,
    /// Replaced files, emptied at the start.
    to_truncate: Vec<(String, std::fs::File)>,
    writes_stdout: bool,
    started: bool,
    /// The text summary is printed alone, without the tree (`watch --summary`).
    summary_alone: bool,
}

impl Outputs {
    /// Checks every output the command line asked for and opens it — truncating nothing. A bad
    /// value is a usage error, a destination that cannot be opened an I/O error; either way
    /// every file the user had is as it was.
    pub fn plan(args: &OutputArgs, ask: Ask) -> Result<Outputs, ProctraceError> {
        let sw = &args.switches;
        let mut settings = Settings {
            redact: !sw.no_redact,
            color_allowed: !sw.no_color,
            trace2_brief: sw.trace2_brief,
            quiet: sw.quiet,
            otlp: None,
            files_dirs: sw.files_dirs,
        };
        let mut wanted: Vec<(&'static OutputSpec, String)> = Vec::new();
        for spec in registry::OUTPUTS {
            let value = args.value(spec.flag);
            if spec.live_only && !ask.live && value.is_some() {
                return Err(ProctraceError::Usage(format!(
                    "--{} is for run and watch",
                    spec.flag
                )));
            }
            match spec.dest {
                DestKind::Endpoint => {
                    let seed = sink::otlp::config::random_seed();
                    let env = |k: &str| std::env::var(k).ok();
                    let cfg =
                        sink::otlp::config::from_env(value, ask.propagate && !sw.no_propagate, seed, env)
                            .map_err(|e| ProctraceError::Usage(format!("otlp: {e}")))?;
                    if let Some(mut cfg) = cfg {
                        if let Some(why) = cfg.parent_error.as_deref() {
                            crate::say!("proctrace: otlp: {why}");
                        }
                        cfg.offline = !ask.live;
                        // The collector's URL names the output in messages: never its password.
                        wanted.push((spec, crate::redact::redact_arg(&cfg.url).into_owned()));
                        settings.otlp = Some(cfg);
                    }
                }
                DestKind::Trace2 => {
                    if let Some(v) = value {
                        match check_trace2(v) {
                            Ok(true) => wanted.push((spec, v.to_string())),
                            Ok(false) => {} // off, as git reads `0`/`false`/empty
                            Err(why) => return Err(ProctraceError::Usage(format!("--{}: {why}", spec.flag))),
                        }
                    }
                }
                DestKind::File | DestKind::Append => {
                    if let Some(v) = value {
                        wanted.push((spec, v.to_string()));
                    }
                }
            }
        }
        check_distinct(&wanted, &ask.inputs)?;

        let mut me = Outputs {
            settings,
            tree: ask.tree,
            summary_text: ask.summary_text,
            chosen: Vec::new(),
            sinks: None,
            created: Vec::new(),
            to_truncate: Vec::new(),
            writes_stdout: ask.human_stdout,
            started: false,
            summary_alone: false,
        };
        let mut fanout = Fanout::new();
        for (spec, value) in wanted {
            me.writes_stdout |= value == "-" && matches!(spec.dest, DestKind::File | DestKind::Append);
            // A Trace2 file destination is created by the Trace2 output itself (appended to, as
            // git does): one made for a run that never starts goes again too.
            if spec.dest == DestKind::Trace2
                && value.starts_with('/')
                && std::fs::symlink_metadata(dest::path_of(&value)).is_err()
            {
                me.created.push(dest::path_of(&value));
            }
            let opened = Opened::open(spec.dest, &value).map_err(|e| {
                ProctraceError::Io(format!("cannot open output '{value}' ({})", spec.what), e)
            })?;
            if let Opened::File { file, path, created } = &opened {
                if *created {
                    me.created.push(path.clone());
                }
                if spec.dest == DestKind::File {
                    let f = file
                        .try_clone()
                        .map_err(|e| ProctraceError::Io(format!("cannot open output '{value}'"), e))?;
                    me.to_truncate.push((value.clone(), f));
                }
            }
            match spec.make {
                Make::Stream(open) => {
                    let to = match opened {
                        Opened::Stdout => To::Lines(LineDest::Stream(Box::new(io::stdout()))),
                        Opened::File { file, .. } => To::Lines(LineDest::File(file)),
                        Opened::Value => To::Value(value.clone()),
                    };
                    let s = open(to, &me.settings).map_err(|e| {
                        ProctraceError::Io(format!("cannot open output '{value}' ({})", spec.what), e)
                    })?;
                    fanout.add(spec.what, value.clone(), s);
                    me.chosen.push(Chosen {
                        spec,
                        value,
                        opened: None,
                    });
                }
                Make::WholeRun(_) => me.chosen.push(Chosen {
                    spec,
                    value,
                    opened: Some(opened),
                }),
            }
        }
        if ask.human_stdout {
            let color = term::color_for(term::Stream::Stdout, me.settings.color_allowed);
            fanout.add(
                "lines",
                "-",
                Box::new(sink::lines::HumanLines::new(
                    LineDest::Stream(Box::new(io::stdout())),
                    color,
                    me.settings.redact,
                )),
            );
        }
        if ask.progress && !me.settings.quiet && term::stderr_is_live_terminal() {
            fanout.add(
                "the status line",
                "stderr",
                Box::new(sink::progress::Progress::new(me.settings.redact)),
            );
        }
        me.sinks = Some(fanout);
        Ok(me)
    }

    /// Empties the files being replaced and hands out the streaming sinks: from here on the
    /// outputs are the run's. Call once, right before the header goes out.
    pub fn start(&mut self) -> Result<Fanout, ProctraceError> {
        for (path, f) in self.to_truncate.drain(..) {
            if f.metadata().is_ok_and(|m| m.is_file()) {
                f.set_len(0)
                    .map_err(|e| ProctraceError::Io(format!("cannot empty output '{path}'"), e))?;
            }
        }
        self.started = true;
        let mut sinks = self.sinks.take().unwrap_or_default();
        if !self.reads_notes_at_end() {
            sinks.no_notes_at_end();
        }
        Ok(sinks)
    }

    /// Some output writes to stdout (`-`, or `watch`'s lines).
    pub fn writes_stdout(&self) -> bool {
        self.writes_stdout
    }

    /// The OTLP export settings, when export is on.
    pub fn otlp(&self) -> Option<&sink::otlp::config::OtlpConfig> {
        self.settings.otlp.as_ref()
    }

    /// A whole-run report is asked for (a summary on stderr, a summary file, the SVG picture):
    /// `watch` keeps exited records for it (it frees them otherwise).
    pub fn wants_records(&self) -> bool {
        self.summary_text || self.has_whole_run()
    }

    /// A report made at the end from every record is asked for: the tree (with the text summary
    /// under it), or a whole-run output. The verdict line and the streaming outputs need only
    /// the records of processes still running.
    pub fn reads_records_at_end(&self) -> bool {
        (self.tree != TreeMode::None && !self.settings.quiet) || self.has_whole_run()
    }

    /// The Trace2 notes (regions, data) of the records are read once the run has ended: by a
    /// whole-run report, or by the text summary (under the tree, or alone: `watch --summary`).
    /// Otherwise the model keeps them only as long as the streaming outputs need them.
    pub fn reads_notes_at_end(&self) -> bool {
        self.has_whole_run()
            || (self.summary_text
                && !self.settings.quiet
                && (self.tree != TreeMode::None || self.summary_alone))
    }

    /// The text summary is printed without the tree (`watch --summary`).
    pub fn summary_alone(&mut self) {
        self.summary_alone = true;
    }

    fn has_whole_run(&self) -> bool {
        self.chosen
            .iter()
            .any(|c| matches!(c.spec.make, Make::WholeRun(_)))
    }

    /// The end of every command: writes the whole-run reports, then reports every output that
    /// failed — streaming ones (from `sinks`) and reports alike — by its path and the error, once
    /// each. A closed stdout is not a failure: it is the quiet end of a pipe.
    pub fn finish(&mut self, run: &FinishedRun<'_>, sinks: &Fanout) -> Outcome {
        let mut out = Outcome::default();
        for (label, e) in sinks.failures() {
            if is_closed_pipe(e) && label.path == "-" {
                out.stdout_closed = true;
                continue;
            }
            if is_closed_pipe(e) && label.path == "stderr" {
                continue;
            }
            out.failed += 1;
            crate::say!(
                "proctrace: stopped writing {} to '{}': {e}",
                label.what,
                label.path
            );
        }
        for c in &mut self.chosen {
            let Make::WholeRun(write) = c.spec.make else {
                continue;
            };
            let res = match c.opened.take() {
                Some(Opened::File { file, .. }) => {
                    let mut w = io::BufWriter::with_capacity(64 << 10, file);
                    write(run, &mut w).and_then(|()| w.flush())
                }
                Some(Opened::Stdout) => {
                    let mut w = io::BufWriter::with_capacity(64 << 10, io::stdout().lock());
                    write(run, &mut w).and_then(|()| w.flush())
                }
                Some(Opened::Value) | None => Ok(()),
            };
            match res {
                Ok(()) => {}
                Err(e) if is_closed_pipe(&e) && c.value == "-" => out.stdout_closed = true,
                Err(e) => {
                    out.failed += 1;
                    crate::say!("proctrace: cannot write {} to '{}': {e}", c.spec.what, c.value);
                }
            }
        }
        out
    }

    /// Prints the tree on stderr, then the text summary (when [`summary_text`](Self::summary_text)),
    /// then the one-line verdict (nothing under `--quiet`).
    pub fn print_tree(&self, run: &FinishedRun<'_>) {
        if self.settings.quiet {
            return;
        }
        let (color, width) = term::stderr_style(self.settings.color_allowed);
        let max_lines = match self.tree {
            TreeMode::Auto => 200,
            TreeMode::Full => usize::MAX,
            TreeMode::None => 0,
        };
        let text = render(
            run.tracker,
            &run.header.mode,
            run.summary,
            TreeOptions {
                color,
                redact: self.settings.redact,
                max_lines,
                width,
            },
        );
        // The last line is the verdict; the summary goes between the tree and it.
        let body = text.trim_end_matches('\n');
        let (tree, verdict) = body.rsplit_once('\n').unwrap_or(("", body));
        let mut text = String::new();
        let mut summarized = false;
        if self.tree != TreeMode::None {
            if !tree.is_empty() {
                text.push_str(tree);
                text.push('\n');
            }
            if self.summary_text {
                text.push_str(&summary::render_text(run.report(), TextOptions { color, width }));
                summarized = true;
            }
        }
        // Work that ran outside the tree is said once: in the summary, else here.
        if !summarized {
            for w in &run.report().outside {
                text.push_str(&format!(
                    "proctrace: {}; fix: {}\n",
                    summary::outside_words(w),
                    w.fix
                ));
            }
        }
        text.push_str(verdict);
        // A backend `auto` fell back from is named again where the run is summed up.
        if let (Some(b), false) = (&run.header.backend, run.header.refused.is_empty()) {
            let names: Vec<&str> = run
                .header
                .refused
                .iter()
                .map(|r| r.split_once(':').map_or(r.as_str(), |(n, _)| n))
                .collect();
            text.push_str(&format!(", traced with {b} ({} refused)", names.join(", ")));
        }
        text.push('\n');
        term::to_stderr(text.as_bytes());
    }

    /// Prints only the text summary on stderr (`watch --summary`).
    pub fn print_summary(&self, run: &FinishedRun<'_>) {
        if self.settings.quiet {
            return;
        }
        let (color, width) = term::stderr_style(self.settings.color_allowed);
        term::to_stderr(summary::render_text(run.report(), TextOptions { color, width }).as_bytes());
    }
}

impl Drop for Outputs {
    /// Never started (a later usage error, a backend that is not available): the files
    /// proctrace created for outputs go again; nothing it did not create was touched.
    fn drop(&mut self) {
        if !self.started {
            for p in self.created.drain(..) {
                // Still empty: it is the one proctrace made. A failure leaves an empty file.
                if std::fs::metadata(&p).is_ok_and(|m| m.len() == 0) && std::fs::remove_file(&p).is_err() {}
            }
        }
    }
}

/// The reader of a pipe went away (`| head`): EPIPE.
pub fn is_closed_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

/// A Trace2 destination value, checked as git reads it: `Ok(false)` for off, an error for one
/// git would refuse (a relative path, an unknown word).
fn check_trace2(v: &str) -> Result<bool, String> {
    use trace2::dst::DestinationSpec as D;
    match D::parse(v) {
        D::Off => Ok(false),
        D::Invalid(v) => Err(format!(
            "'{v}' is not a trace2 destination (an absolute path, a directory, af_unix:/PATH or 1-9)"
        )),
        D::AfUnix { path, .. } if !path.is_absolute() => Err(format!(
            "'{v}': an af_unix socket path must be absolute, as git requires"
        )),
        _ => Ok(true),
    }
}

/// No two outputs on one file, and no output on an input: either would garble or destroy it.
fn check_distinct(
    wanted: &[(&'static OutputSpec, String)],
    inputs: &[PathBuf],
) -> Result<(), ProctraceError> {
    let mut seen: Vec<(Identity, &'static str)> = Vec::new();
    let inputs: Vec<Identity> = inputs.iter().filter_map(|p| Identity::of(p)).collect();
    for (spec, value) in wanted {
        let path = match spec.dest {
            DestKind::File | DestKind::Append => value.as_str(),
            // Only a Trace2 file destination names one file.
            DestKind::Trace2 if value.starts_with('/') && !std::path::Path::new(value).is_dir() => {
                value.as_str()
            }
            _ => continue,
        };
        let Some(id) = Identity::of(&dest::path_of(path)) else {
            continue;
        };
        if let Some((_, other)) = seen.iter().find(|(s, _)| *s == id) {
            return Err(ProctraceError::Usage(format!(
                "--{other} and --{} both write '{path}': give each output its own file",
                spec.flag
            )));
        }
        if inputs.contains(&id) {
            return Err(ProctraceError::Usage(format!(
                "'{path}' is both an input and the --{} output: it would be overwritten before it is read",
                spec.flag
            )));
        }
        seen.push((id, spec.flag));
    }
    Ok(())
}
