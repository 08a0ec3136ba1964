//! The output flags, made from the registry: one `--FLAG VALUE` per [`OutputSpec`], the same on
//! every command (`--record` only on `run` and `watch`), plus the switches every output shares.
//! A new output gets its flag here without an edit.

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};

use super::OutputSpec;
use super::registry::OUTPUTS;

/// Switches shared by every output.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Switches {
    /// Show credentials in the traced argv (https://user:secret@host, --password=X) instead of
    /// redacting them (proctrace's own stay redacted).
    #[arg(long)]
    pub no_redact: bool,
    /// Never colour output (also: NO_COLOR=1).
    #[arg(long)]
    pub no_color: bool,
    /// Trace2 brief mode (no file/line; event target: time only on version and atexit).
    #[arg(long)]
    pub trace2_brief: bool,
    /// Nothing on stderr but errors: no status line, no tree, no totals (files are still
    /// written).
    #[arg(short, long)]
    pub quiet: bool,
    /// With OTLP export, do not give the traced command a TRACEPARENT pointing at its own span.
    #[arg(long)]
    pub no_propagate: bool,
    /// With files (--files): in the summaries and the HTML report, a directory holding more
    /// than N of a list's files is one line with their count (the files under the command's
    /// working directory stay listed in each process's list); `none`: every file listed.
    /// JSON Lines and the summary JSON's per-file lists keep every file.
    #[arg(long, value_name = "N", default_value = "3",
          value_parser = clap::builder::ValueParser::new(crate::report::summary::dirs::parse_more_than))]
    pub files_dirs: crate::report::summary::dirs::MoreThan,
}

/// Where the results go (`analyze`, `replay`): every output of the registry but the live-only
/// ones.
#[derive(Debug, Clone, Default)]
pub struct OutputArgs {
    /// Each output's value, by flag.
    values: Vec<(&'static str, String)>,
    /// The shared switches.
    pub switches: Switches,
}

impl OutputArgs {
    /// The value given to `--flag`.
    pub fn value(&self, flag: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(f, _)| *f == flag)
            .map(|(_, v)| v.as_str())
    }

    /// Sets `--flag VALUE` (tests, and commands that add an output of their own).
    pub fn set(&mut self, flag: &'static str, value: impl Into<String>) {
        self.values.retain(|(f, _)| *f != flag);
        self.values.push((flag, value.into()));
    }

    fn augment(mut cmd: Command, live: bool) -> Command {
        for spec in OUTPUTS.iter().filter(|s| live || !s.live_only) {
            cmd = cmd.arg(arg(spec));
        }
        Switches::augment_args(cmd)
    }

    fn from_matches(m: &ArgMatches, live: bool) -> Result<Self, clap::Error> {
        let mut values = Vec::new();
        for spec in OUTPUTS.iter().filter(|s| live || !s.live_only) {
            // Any bytes (a file name need not be UTF-8), kept as the model's text.
            if let Some(v) = m.get_one::<std::ffi::OsString>(spec.flag) {
                values.push((spec.flag, crate::model::bytes::from_os_string(v.clone())));
            }
        }
        Ok(OutputArgs {
            values,
            switches: Switches::from_arg_matches(m)?,
        })
    }
}

fn arg(spec: &'static OutputSpec) -> Arg {
    let a = Arg::new(spec.flag)
        .long(spec.flag)
        .value_name(spec.value_name)
        .help(spec.help)
        .value_parser(clap::value_parser!(std::ffi::OsString))
        .action(ArgAction::Set);
    match spec.short {
        Some(c) => a.short(c),
        None => a,
    }
}

/// `clap::Args` for an output-flags type: `$live` says whether the live-only outputs are in.
macro_rules! output_args {
    ($ty:ty, $live:expr, $wrap:expr) => {
        impl FromArgMatches for $ty {
            fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
                OutputArgs::from_matches(m, $live).map($wrap)
            }
            fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
                *self = OutputArgs::from_matches(m, $live).map($wrap)?;
                Ok(())
            }
        }

        impl Args for $ty {
            fn augment_args(cmd: Command) -> Command {
                OutputArgs::augment(cmd, $live)
            }
            fn augment_args_for_update(cmd: Command) -> Command {
                OutputArgs::augment(cmd, $live)
            }
        }
    };
}

output_args!(OutputArgs, false, |a| a);

/// Where the results go while capturing (`run`, `watch`): every output, `--record` included.
#[derive(Debug, Clone, Default)]
pub struct LiveOutputArgs(pub OutputArgs);

output_args!(LiveOutputArgs, true, LiveOutputArgs);
