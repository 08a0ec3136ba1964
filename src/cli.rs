//! The command line: every command, option and help text (clap derive), parsed by `main` and
//! read by the commands in [`crate::cmd`]. The output flags come from the output registry
//! ([`crate::output::OutputArgs`]), not from here.

use clap::builder::TypedValueParser as _;
use clap::{Parser, Subcommand, ValueEnum};

use crate::filter;
use crate::output::{LiveOutputArgs, OutputArgs};

/// Every process a command starts — or the whole system — with the kernel's timestamps.
#[derive(Parser, Debug)]
#[command(
    name = "proctrace",
    version,
    propagate_version = true,
    about,
    long_about = None,
    after_long_help = EXAMPLES
)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// Examples at the end of `proctrace --help`.
pub const EXAMPLES: &str = "\
Examples:
  proctrace run -- make -j2                 trace a build; the tree on stderr at the end
  proctrace run -o build.jsonl -- make      also every fact as JSON Lines
  proctrace watch -e exec                   every program started on the system (an execsnoop)
  proctrace run --record cap.jsonl -- make  record, then: proctrace replay cap.jsonl
  proctrace completions bash >/etc/bash_completion.d/proctrace
  proctrace man | man -l -

Run `proctrace help COMMAND` (or COMMAND --help) for each command's options and examples.";

/// Examples at the end of `proctrace run --help`.
pub const RUN_EXAMPLES: &str = "\
Examples:
  proctrace run -- make -j2
      Trace a build: a status line while it runs (on a terminal), the process tree and a summary
      with the slowest commands and the critical path at the end.
  proctrace run --chrome build.json --svg build.svg -- make -j8
      Also a timeline for ui.perfetto.dev (or chrome://tracing) and a picture of the run.
  proctrace run --summary-md \"$GITHUB_STEP_SUMMARY\" --summary-json summary.json -- make
      The summary for a CI job page (appended as Markdown) and for dashboards (JSON).
  proctrace run -o build.jsonl --trace2-event t2.json -- make
      Every fact as JSON Lines, and git Trace2 events, while the tree goes to stderr.
  proctrace run --wait-bg 5 --fail-on-leak -- ./test.sh
      Follow what the tests leave running for 5 s; exit 3 if anything is still there.
  proctrace run --quiet -o out.jsonl -- sh -c 'ls -la'
      Nothing on stderr but errors; the file is still written.
  proctrace run --include-daemons -- cargo build
      With RUSTC_WRAPPER=sccache: the compiles the sccache server ran during the build are in
      the trace too, under \"ran in the sccache server\".
  proctrace run -- -cmd-starting-with-dash
      Options end at the first word that is not one (or at `--`); a mistyped option is an error,
      never run as the command.";

/// Examples at the end of `proctrace watch --help`.
pub const WATCH_EXAMPLES: &str = "\
Examples:
  proctrace watch -e exec
      Only program starts, system-wide (an execsnoop).
  proctrace watch -e exec,exit --user www-data
      What one user's processes run, and how they end.
  proctrace watch --comm cron -o cron.jsonl
      Facts about processes named cron, as JSON Lines.
  proctrace watch -p 1234 --duration 60
      One running process and its descendants, for a minute.";

/// Examples at the end of `proctrace replay --help`.
pub const REPLAY_EXAMPLES: &str = "\
Examples:
  proctrace run --record cap.jsonl -- make
  proctrace replay cap.jsonl --tree full
      The tree again, from the recording.
  proctrace replay cap.jsonl -o facts.jsonl --trace2-perf perf.txt --quiet
      Other outputs from the same recording, byte for byte as the live run wrote them.";

/// Examples at the end of `proctrace analyze --help`.
pub const ANALYZE_EXAMPLES: &str = "\
Examples:
  GIT_TRACE2_EVENT=/tmp/t2 git clone https://example.com/repo.git
  proctrace analyze /tmp/t2 --svg clone.svg
      git's own trace of a clone, as a tree and summary, and a picture.
  proctrace run -o build.jsonl -- make -j8
  proctrace analyze build.jsonl --chrome build.json --tree full
      Save the facts once in CI, render later.
  proctrace analyze --lenient --json traces/
      A directory of Trace2 files from many machines; bad lines skipped and counted.";

/// Examples at the end of `proctrace diff --help`.
pub const DIFF_EXAMPLES: &str = "\
Examples:
  proctrace run --record before.cap -- make -j8
  proctrace run --record after.cap -- make -j8
  proctrace diff before.cap after.cap
      What got slower, faster, failed, appeared or disappeared, and the new critical path.
  proctrace diff --json --fail-if-slower 20 main.jsonl branch.jsonl
      For CI: one JSON object on stdout; exit 1 when the wall time grew by more than 20%.";

/// `--backend`: `auto`, or the name of one of [`crate::capture::BACKENDS`].
fn backend_names() -> clap::builder::PossibleValuesParser {
    let auto =
        clap::builder::PossibleValue::new("auto").help("Each backend in turn: the first that works here");
    let named = crate::capture::BACKENDS
        .iter()
        .map(|b| clap::builder::PossibleValue::new(b.name).help(b.help));
    clap::builder::PossibleValuesParser::new(std::iter::once(auto).chain(named))
}

/// `watch --backend`: `auto`, or a backend that can follow processes it did not start.
fn watch_backend_names() -> clap::builder::PossibleValuesParser {
    let auto =
        clap::builder::PossibleValue::new("auto").help("Each backend in turn: the first that works here");
    let named = crate::capture::BACKENDS
        .iter()
        .filter(|b| b.watches)
        .map(|b| clap::builder::PossibleValue::new(b.name).help(b.help));
    clap::builder::PossibleValuesParser::new(std::iter::once(auto).chain(named))
}

/// `--tree`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum TreeArg {
    /// Up to 200 lines.
    Auto,
    /// Every process.
    Full,
    /// Only the verdict line.
    None,
}

/// Options of the commands that capture (`run`, `watch`).
#[derive(clap::Args, Debug)]
pub struct Common {
    /// Where the results go.
    #[command(flatten)]
    pub out: LiveOutputArgs,
    /// Kernel receive buffer to request, e.g. 64M (absorbs bursts; 832 bytes per queued event).
    #[arg(long, value_name = "BYTES", default_value = "32M", value_parser = parse_size)]
    pub buffer: usize,
    /// Do not read argv, exe and cwd from /proc after each exec: lowest overhead, no argv.
    #[arg(long)]
    pub no_enrich: bool,
    /// Do not run the connector's /proc reader thread at real-time priority (it is when allowed:
    /// root, CAP_SYS_NICE or RLIMIT_RTPRIO).
    #[arg(long)]
    pub no_realtime: bool,
    /// Do not measure what each process cost (CPU, peak memory, I/O, context switches, delays
    /// on the exit lines): no taskstats socket (connector), no exit stop (ptrace).
    #[arg(long)]
    pub no_usage: bool,
    /// Taskstats receive buffer to request (connector; about 1.2 KiB per queued exit). Hidden:
    /// for tests that force its overflow.
    #[arg(long, value_name = "BYTES", hide = true, value_parser = parse_size)]
    pub usage_buffer: Option<usize>,
}

/// What `watch` writes: facts are narrowed before formatting (the model still sees everything).
#[derive(clap::Args, Debug)]
pub struct FilterArgs {
    /// Only these kinds of facts (comma-separated, repeatable): fork, exec, exit, background,
    /// lost, uid, gid, setsid, ptrace, comm, region, data (Trace2), or all; forkstat's sid and ptrce work too.
    #[arg(short, long, value_name = "LIST", value_parser = filter::parse_kind_list)]
    pub events: Vec<filter::KindList>,
    /// Only processes whose real or effective uid is this user (a name or a number; repeatable).
    #[arg(long, value_name = "USER", value_parser = parse_user)]
    pub user: Vec<u32>,
    /// Only processes with this name: their comm, or the file name of the program they run
    /// (repeatable). Any bytes: a name need not be UTF-8.
    #[arg(long, value_name = "NAME", value_parser = clap::builder::OsStringValueParser::new().map(crate::model::bytes::from_os_string))]
    pub comm: Vec<String>,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Run CMD and trace it and all its descendants; exit with its status.
    #[command(after_long_help = RUN_EXAMPLES)]
    Run(RunArgs),
    /// Stream lifecycle facts system-wide (or for one subtree) until interrupted.
    #[command(after_long_help = WATCH_EXAMPLES)]
    Watch(WatchArgs),
    /// Replay a capture recorded with --record through the model and outputs.
    #[command(after_long_help = REPLAY_EXAMPLES)]
    Replay(ReplayArgs),
    /// Read saved traces - proctrace's own (`-o` JSON Lines or a `--record` capture) or git
    /// Trace2 event streams (files or per-session directories, from any producer) - and give
    /// the outputs of a run: the tree, the summary, a timeline, a picture, Trace2, JSON Lines.
    #[command(after_long_help = ANALYZE_EXAMPLES)]
    Analyze(AnalyzeArgs),
    /// Compare two saved traces of the same job (anything `analyze` reads): commands new, gone,
    /// failed now, slower or faster beyond a threshold, matched by argv with volatile parts
    /// (temp paths, pids, hashes, timestamps) normalised; the change in wall time and the
    /// critical path.
    #[command(after_long_help = DIFF_EXAMPLES)]
    Diff(DiffArgs),
    /// Print a shell completion script to stdout (e.g. `source <(proctrace completions bash)`).
    Completions(CompletionsArgs),
    /// Print a man page (roff) to stdout: `proctrace man | man -l -`.
    Man(ManArgs),
}

/// Run CMD and trace it and all its descendants; exit with its status.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Capture and output options.
    #[command(flatten)]
    pub common: Common,
    /// After CMD exits, keep following its background children up to SECS seconds.
    #[arg(long, value_name = "SECS")]
    pub wait_bg: Option<f64>,
    /// Exit with status 3 when CMD succeeded but left processes running.
    #[arg(long)]
    pub fail_on_leak: bool,
    /// How to observe processes: the kernel connector, ptrace, or auto (the connector when
    /// it answers, else ptrace).
    #[arg(long, default_value = "auto", value_parser = backend_names())]
    pub backend: String,
    /// Process tree on stderr at the end: auto (up to 200 lines), full or none.
    #[arg(long, value_enum, default_value = "auto")]
    pub tree: TreeArg,
    /// Merge what git (and programs using the trace2 crate) report about themselves
    /// (regions, data, timers, counters) into the traced processes: CMD gets
    /// GIT_TRACE2_EVENT pointed at a socket of proctrace's.
    #[arg(long)]
    pub trace2: bool,
    /// With --trace2, also set PREFIX_TRACE2_EVENT etc. (for a program using the trace2
    /// crate with that prefix). Repeatable; GIT is always set.
    #[arg(long, value_name = "PREFIX", requires = "trace2", value_parser = parse_prefix)]
    pub trace2_prefix: Vec<String>,
    /// List the files each process read, wrote, created, renamed and deleted (fanotify, as
    /// root; under --backend ptrace a seccomp filter, no privilege needed): `file` lines in the
    /// JSON Lines, counts and producers in the summaries. Leaves out what every process reads at
    /// start (shared libraries, locale files) unless --files-all.
    #[arg(long)]
    pub files: bool,
    /// With --files, keep every file (shared libraries and locale files too).
    #[arg(long, requires = "files")]
    pub files_all: bool,
    /// With --files, leave out every use of PATH and of what is below it (a directory or a
    /// file: `--files-ignore /usr/include`, `--files-ignore target`). Repeatable; with
    /// --files-all too.
    #[arg(long, value_name = "PATH", requires = "files", value_parser = parse_files_ignore)]
    pub files_ignore: Vec<String>,
    /// Also trace the processes that daemons running before the command start while it runs
    /// (the sccache server's compiles, the Bazel, buck2 and Gradle servers' actions, what
    /// containerd starts for `docker run`: the container's processes), each daemon as a node "[ran in the sccache
    /// server]" beside the command's tree; they count in the summary, the costs and the
    /// critical path. Optionally
    /// only these kinds (comma-separated): bazel, buck2, gradle, sccache, docker, nerdctl,
    /// podman. Needs a backend that sees the whole system (eBPF, the connector): ptrace
    /// cannot, and says so. Work a daemon does for others meanwhile is included too.
    #[arg(long, value_name = "KINDS", num_args = 0..=1, require_equals = true,
          default_missing_value = "all", value_parser = parse_daemons)]
    pub include_daemons: Option<DaemonList>,
    /// The command and its arguments. Options end at its first word; a command whose name
    /// starts with `-` needs `--` before it.
    // No `allow_hyphen_values`: with it, a mistyped option (`--otpl`) was run as the command.
    // `trailing_var_arg` alone still hands `ls -la` over whole once `ls` is seen.
    // OsString: any bytes run (`run -- echo $'caf\xe9'`).
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub argv: Vec<std::ffi::OsString>,
}

/// Stream lifecycle facts system-wide (or for one subtree) until interrupted.
#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    /// Capture and output options.
    #[command(flatten)]
    pub common: Common,
    /// Which facts reach the outputs.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Only this running process and its descendants; stops when they are all gone.
    #[arg(short, long, value_name = "PID")]
    pub pid: Option<i32>,
    /// Stop after SECS seconds.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// How to observe processes: eBPF, the kernel connector, or auto (eBPF where the kernel
    /// allows it, else the connector).
    #[arg(long, default_value = "auto", value_parser = watch_backend_names())]
    pub backend: String,
    /// At the end, print the summary (slowest, by program, failures; with -p the critical
    /// path) on stderr. Keeps exited processes in memory until then.
    #[arg(long)]
    pub summary: bool,
    /// With -p: list the files each process of the tree read, wrote, created, renamed and
    /// deleted (fanotify, as root; see run --files).
    #[arg(long, requires = "pid")]
    pub files: bool,
    /// With --files, keep every file (shared libraries and locale files too).
    #[arg(long, requires = "files")]
    pub files_all: bool,
    /// With --files, leave out every use of PATH and of what is below it (a directory or a
    /// file: `--files-ignore /usr/include`, `--files-ignore target`). Repeatable; with
    /// --files-all too.
    #[arg(long, value_name = "PATH", requires = "files", value_parser = parse_files_ignore)]
    pub files_ignore: Vec<String>,
}

/// Replay a capture recorded with --record through the model and outputs.
#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// The capture file.
    pub capture: std::path::PathBuf,
    /// Follow only this process's tree (for captures made by `watch`; a `run` capture
    /// names its command).
    #[arg(long, value_name = "PID")]
    pub root: Option<i32>,
    /// Where the results go.
    #[command(flatten)]
    pub out: OutputArgs,
    /// Process tree on stderr at the end: auto (up to 200 lines), full or none.
    #[arg(long, value_enum, default_value = "auto")]
    pub tree: TreeArg,
    /// The longest line a saved trace may have, e.g. 64M: a longer one is bad input (with
    /// --lenient, skipped and counted), read in bounded memory.
    #[arg(long, value_name = "BYTES", default_value = "64M", value_parser = parse_size)]
    pub max_line: usize,
}

/// Read saved traces - proctrace's own (`-o` JSON Lines or a `--record` capture) or git
/// Trace2 event streams (files or per-session directories, from any producer) - and give
/// the outputs of a run: the tree, the summary, a timeline, a picture, Trace2, JSON Lines.
#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    /// Trace files or Trace2 target directories: one proctrace trace, or any number of
    /// Trace2 streams read as one set of sessions. The format is told from the content.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<std::path::PathBuf>,
    /// Follow only this process's tree.
    #[arg(long, value_name = "PID")]
    pub root: Option<i32>,
    /// Skip and count lines that are not valid events, instead of stopping at the first.
    #[arg(long)]
    pub lenient: bool,
    /// Print the analysis as one JSON object on stdout (the `--summary-json` schema plus
    /// `sessions` and `skipped_lines`); no tree unless --tree asks for one.
    #[arg(long)]
    pub json: bool,
    /// Where the results go.
    #[command(flatten)]
    pub out: OutputArgs,
    /// Process tree on stderr at the end: auto (up to 200 lines), full or none. With none,
    /// and no --json, summary file or --svg, each process's record is freed at its exit:
    /// memory follows the processes alive at once, not the file.
    #[arg(long, value_enum)]
    pub tree: Option<TreeArg>,
    /// The longest line a saved trace may have, e.g. 64M: a longer one is bad input (with
    /// --lenient, skipped and counted), read in bounded memory.
    #[arg(long, value_name = "BYTES", default_value = "64M", value_parser = parse_size)]
    pub max_line: usize,
}

/// Compare two saved traces of the same job (anything `analyze` reads): commands new, gone,
/// failed now, slower or faster beyond a threshold, matched by argv with volatile parts
/// (temp paths, pids, hashes, timestamps) normalised; the change in wall time and the
/// critical path.
#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// The earlier trace.
    pub old: std::path::PathBuf,
    /// The later trace.
    pub new: std::path::PathBuf,
    /// A command is slower or faster when its total time changed by more than PCT percent of the old total
    #[arg(long, value_name = "PCT", default_value_t = 10.0)]
    pub threshold: f64,
    /// A command is slower or faster only when its total time also changed by at least MS
    /// milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 50.0)]
    pub min_ms: f64,
    /// A command's peak memory changed only when it also changed by at least MIB MiB
    /// (besides --threshold percent).
    #[arg(long, value_name = "MIB", default_value_t = 10.0)]
    pub min_rss_mib: f64,
    /// Exit with status 1 when the new wall time is more than PCT percent above the old
    /// (for CI).
    #[arg(long, value_name = "PCT")]
    pub fail_if_slower: Option<f64>,
    /// Print the comparison as one JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the comparison as one self-contained HTML page to FILE (both runs, their
    /// critical paths side by side, what changed); `-`: the page on stdout instead of the text.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::ffi::OsString>,
    /// Skip and count lines that are not valid events, instead of stopping at the first.
    #[arg(long)]
    pub lenient: bool,
    /// Show credentials in the traced argv (https://user:secret@host, --password=X) instead of
    /// redacting them (docs/outputs.md, "Redaction").
    #[arg(long)]
    pub no_redact: bool,
    /// Never colour output (also: NO_COLOR=1).
    #[arg(long)]
    pub no_color: bool,
    /// With files (both traced with --files): in the lists of files read or written
    /// differently, a directory holding more than N of a list's files is one entry with their
    /// count (the files under the command's working directory stay listed); `none`: every
    /// file listed.
    #[arg(long, value_name = "N", default_value = "3",
          value_parser = clap::builder::ValueParser::new(crate::report::summary::dirs::parse_more_than))]
    pub files_dirs: crate::report::summary::dirs::MoreThan,
    /// The longest line a saved trace may have, e.g. 64M: a longer one is bad input (with
    /// --lenient, skipped and counted), read in bounded memory.
    #[arg(long, value_name = "BYTES", default_value = "64M", value_parser = parse_size)]
    pub max_line: usize,
}

/// Print a shell completion script to stdout (e.g. `source <(proctrace completions bash)`).
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    pub shell: clap_complete::Shell,
}

/// Print a man page (roff) to stdout: `proctrace man | man -l -`.
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// A command's own page (run, watch, replay, ...) instead of the overview.
    pub command: Option<String>,
}

/// A user name or uid, as a uid (`--user`).
pub fn parse_user(s: &str) -> Result<u32, String> {
    if let Ok(uid) = s.parse::<u32>() {
        return Ok(uid);
    }
    match nix::unistd::User::from_name(s) {
        Ok(Some(u)) => Ok(u.uid.as_raw()),
        Ok(None) => Err(format!("no user '{s}' in the passwd database")),
        Err(e) => Err(format!("cannot look up user '{s}': {e}")),
    }
}

/// A `--files-ignore` path, absolute and canonical as file uses name paths.
fn parse_files_ignore(v: &str) -> Result<String, String> {
    crate::capture::files::ignore_path(std::ffi::OsStr::new(v))
}

/// A Trace2 variable prefix: what comes before `_TRACE2_EVENT` (`GIT`, `MYAPP`).
pub fn parse_prefix(s: &str) -> Result<String, String> {
    let s = s.strip_suffix('_').unwrap_or(s);
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        Ok(s.to_string())
    } else {
        Err(format!(
            "'{s}' is not a variable prefix (letters, digits and _, as in MYAPP for MYAPP_TRACE2_EVENT)"
        ))
    }
}

/// The kinds of daemons `run --include-daemons` follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonList(pub Vec<crate::model::elsewhere::DaemonKind>);

/// `all`, or kinds of daemons by their client's name, comma-separated (`sccache,bazel`).
pub fn parse_daemons(s: &str) -> Result<DaemonList, String> {
    use crate::model::elsewhere::DaemonKind;
    if s == "all" {
        return Ok(DaemonList(DaemonKind::all().collect()));
    }
    let mut v = Vec::new();
    for name in s.split(',').map(str::trim) {
        let k = DaemonKind::of_name(name).ok_or_else(|| {
            format!(
                "'{}' is not a kind of daemon (known: {}, or all)",
                crate::model::escape::text(name),
                DaemonKind::names()
            )
        })?;
        if !v.contains(&k) {
            v.push(k);
        }
    }
    Ok(DaemonList(v))
}

/// A size in bytes with an optional K, M or G suffix (`--buffer 64M`).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, c)) if c.eq_ignore_ascii_case(&'k') => (&s[..i], 1usize << 10),
        Some((i, c)) if c.eq_ignore_ascii_case(&'m') => (&s[..i], 1 << 20),
        Some((i, c)) if c.eq_ignore_ascii_case(&'g') => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    let n: usize = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 65536, 512K, 64M)"))?;
    n.checked_mul(mult).ok_or_else(|| format!("'{s}' is too large"))
}

impl From<TreeArg> for crate::output::TreeMode {
    fn from(t: TreeArg) -> Self {
        match t {
            TreeArg::Auto => crate::output::TreeMode::Auto,
            TreeArg::Full => crate::output::TreeMode::Full,
            TreeArg::None => crate::output::TreeMode::None,
        }
    }
}

impl Common {
    /// The capture settings these options ask for.
    pub fn capture_options(&self) -> crate::capture::CaptureOptions {
        crate::capture::CaptureOptions {
            connector: cnproc::Options {
                recv_buffer: self.buffer,
                ..cnproc::Options::default()
            },
            enrich: !self.no_enrich,
            realtime: !self.no_realtime,
            usage: !self.no_usage,
            // Exits are at most half the connector's events and a record is charged about 1.5
            // times an event's 832 bytes: the same size holds more exits than the connector
            // holds events.
            usage_buffer: self.usage_buffer.unwrap_or(self.buffer),
            whole_system: false,
            files: None,
        }
    }
}

/// A number of seconds given to `what`, as a duration.
pub fn secs(v: f64, what: &str) -> Result<std::time::Duration, crate::ProctraceError> {
    std::time::Duration::try_from_secs_f64(v)
        .map_err(|_| crate::ProctraceError::Usage(format!("{what}: '{v}' is not a duration in seconds")))
}
