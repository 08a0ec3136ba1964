//! The `proctrace` command line.

use std::time::Duration;

// mimalloc rather than glibc's malloc: `analyze` allocates the strings of every exec (argv, exe,
// cwd, comm) and every event; under glibc malloc/free were ~22% of its time (malloc_consolidate,
// _int_malloc, _int_free in `perf`). Measured on a 76 MB proctrace JSON Lines file (150k processes)
// and Trace2 streams: see the "Ingest of saved traces" section of BENCHMARKS.md. Its `no_thp`
// feature (Cargo.toml): with transparent huge pages the kernel zeroing 2 MiB pages took more
// system time than the whole model (307 MB JSON Lines: sys 2.0-3.4 s with THP, 0.7-0.9 s without).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand, ValueEnum};
use proctrace::capture::{BackendChoice, CaptureOptions};
use proctrace::cmd::run::{RunConfig, run};
use proctrace::cmd::watch::{WatchConfig, watch};
use proctrace::filter::{self, FactFilter};
use proctrace::model::session::Tool;
use proctrace::output::{Outputs, TreeMode};
use proctrace::sink::trace2::Trace2Target;
use proctrace::{ProctraceError, exit_codes};
use trace2::TargetKind;

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
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

const EXAMPLES: &str = "\
Examples:
  proctrace run -- make -j2                 trace a build; the tree on stderr at the end
  proctrace run -o build.jsonl -- make      also every fact as JSON Lines
  proctrace watch -e exec                   every program started on the system (an execsnoop)
  proctrace run --record cap.jsonl -- make  record, then: proctrace replay cap.jsonl
  proctrace completions bash >/etc/bash_completion.d/proctrace
  proctrace man | man -l -

Run `proctrace help COMMAND` (or COMMAND --help) for each command's options and examples.";

const RUN_EXAMPLES: &str = "\
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
  proctrace run -- -cmd-starting-with-dash
      Options end at the first word that is not one (or at `--`); a mistyped option is an error,
      never run as the command.";

const WATCH_EXAMPLES: &str = "\
Examples:
  proctrace watch -e exec
      Only program starts, system-wide (an execsnoop).
  proctrace watch -e exec,exit --user www-data
      What one user's processes run, and how they end.
  proctrace watch --comm cron -o cron.jsonl
      Facts about processes named cron, as JSON Lines.
  proctrace watch -p 1234 --duration 60
      One running process and its descendants, for a minute.";

const REPLAY_EXAMPLES: &str = "\
Examples:
  proctrace run --record cap.jsonl -- make
  proctrace replay cap.jsonl --tree full
      The tree again, from the recording.
  proctrace replay cap.jsonl -o facts.jsonl --trace2-perf perf.txt --quiet
      Other outputs from the same recording, byte for byte as the live run wrote them.";

const ANALYZE_EXAMPLES: &str = "\
Examples:
  GIT_TRACE2_EVENT=/tmp/t2 git clone https://example.com/repo.git
  proctrace analyze /tmp/t2 --svg clone.svg
      git's own trace of a clone, as a tree and summary, and a picture.
  proctrace run -o build.jsonl -- make -j8
  proctrace analyze build.jsonl --chrome build.json --tree full
      Save the facts once in CI, render later.
  proctrace analyze --lenient --json traces/
      A directory of Trace2 files from many machines; bad lines skipped and counted.";

const DIFF_EXAMPLES: &str = "\
Examples:
  proctrace run --record before.cap -- make -j8
  proctrace run --record after.cap -- make -j8
  proctrace diff before.cap after.cap
      What got slower, faster, failed, appeared or disappeared, and the new critical path.
  proctrace diff --json --fail-if-slower 20 main.jsonl branch.jsonl
      For CI: one JSON object on stdout; exit 1 when the wall time grew by more than 20%.";

#[derive(Clone, Copy, Debug, ValueEnum)]
enum BackendArg {
    /// The connector when the kernel answers, else ptrace.
    Auto,
    /// The kernel's process events connector.
    Connector,
    /// ptrace (event stops only): works in containers and user namespaces.
    Ptrace,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum TreeArg {
    Auto,
    Full,
    None,
}

#[derive(clap::Args, Debug)]
struct Common {
    #[command(flatten)]
    out: OutputArgs,
    /// Kernel receive buffer to request, e.g. 64M (absorbs bursts; 832 bytes per queued event).
    #[arg(long, value_name = "BYTES", default_value = "32M", value_parser = parse_size)]
    buffer: usize,
    /// Do not read argv, exe and cwd from /proc after each exec: lowest overhead, no argv.
    #[arg(long)]
    no_enrich: bool,
    /// Do not run the connector's /proc reader thread at real-time priority (it is when allowed:
    /// root, CAP_SYS_NICE or RLIMIT_RTPRIO).
    #[arg(long)]
    no_realtime: bool,
    /// Record every event (with /proc details) to FILE for `proctrace replay`.
    #[arg(long, value_name = "FILE")]
    record: Option<String>,
    /// Do not measure what each process cost (CPU, peak memory, I/O, context switches, delays
    /// on the exit lines): no taskstats socket (connector), no exit stop (ptrace).
    #[arg(long)]
    no_usage: bool,
    /// Taskstats receive buffer to request (connector; about 1.2 KiB per queued exit). Hidden:
    /// for tests that force its overflow.
    #[arg(long, value_name = "BYTES", hide = true, value_parser = parse_size)]
    usage_buffer: Option<usize>,
}

/// Where the results go: the same on every command.
#[derive(clap::Args, Debug)]
struct OutputArgs {
    /// Write JSON Lines (one object per lifecycle fact) to FILE; `-` for stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<String>,
    /// Show credentials in URLs (https://user:secret@host) instead of redacting them.
    #[arg(long)]
    no_redact: bool,
    /// Never colour output (also: NO_COLOR=1).
    #[arg(long)]
    no_color: bool,
    /// Also write git Trace2 `event` JSON lines to DEST (a file, a directory for one file per
    /// process, af_unix:PATH, or a descriptor 1-9), one trace2 session per observed process.
    #[arg(long, value_name = "DEST")]
    trace2_event: Option<String>,
    /// Also write git Trace2 `perf` lines to DEST.
    #[arg(long, value_name = "DEST")]
    trace2_perf: Option<String>,
    /// Also write git Trace2 `normal` lines to DEST.
    #[arg(long, value_name = "DEST")]
    trace2_normal: Option<String>,
    /// Trace2 brief mode (no file/line; event target: time only on version and atexit).
    #[arg(long)]
    trace2_brief: bool,
    /// Write a timeline in the Chrome Trace Event Format to FILE (`-` for stdout): open it in
    /// ui.perfetto.dev or chrome://tracing. One slice per process on lanes, a `running` counter.
    #[arg(long, value_name = "FILE")]
    chrome: Option<String>,
    /// Append the end-of-run summary (critical path, slowest, by program, failures, leaks) as
    /// Markdown to FILE, e.g. "$GITHUB_STEP_SUMMARY".
    #[arg(long, value_name = "FILE")]
    summary_md: Option<String>,
    /// Write the end-of-run summary as one JSON object to FILE.
    #[arg(long, value_name = "FILE")]
    summary_json: Option<String>,
    /// Write an SVG picture of the run to FILE at the end: a timeline of the processes coloured
    /// by outcome (at most 200 rows: failures first, then the longest), with how many ran at
    /// each moment.
    #[arg(long, value_name = "FILE")]
    svg: Option<String>,
    /// Nothing on stderr but errors: no status line, no tree, no totals (files are still
    /// written).
    #[arg(short, long)]
    quiet: bool,
    /// Export every process as an OpenTelemetry span to the collector at ENDPOINT (OTLP/HTTP,
    /// protobuf, gzip; `/v1/traces` is appended, e.g. http://127.0.0.1:4318). Also turned on by
    /// OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; OTEL_EXPORTER_OTLP_HEADERS,
    /// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and TRACEPARENT are honoured.
    #[arg(long, value_name = "ENDPOINT")]
    otlp: Option<String>,
    /// With OTLP export, do not give the traced command a TRACEPARENT pointing at its own span.
    #[arg(long)]
    no_propagate: bool,
}

/// What `watch` writes: facts are narrowed before formatting (the model still sees everything).
#[derive(clap::Args, Debug)]
struct FilterArgs {
    /// Only these kinds of facts (comma-separated, repeatable): fork, exec, exit, background,
    /// lost, uid, gid, setsid, ptrace, comm, region, data (Trace2), or all; forkstat's sid and ptrce work too.
    #[arg(short, long, value_name = "LIST", value_parser = filter::parse_kind_list)]
    events: Vec<filter::KindList>,
    /// Only processes whose real or effective uid is this user (a name or a number; repeatable).
    #[arg(long, value_name = "USER", value_parser = parse_user)]
    user: Vec<u32>,
    /// Only processes with this name: their comm, or the file name of the program they run
    /// (repeatable).
    #[arg(long, value_name = "NAME")]
    comm: Vec<String>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run CMD and trace it and all its descendants; exit with its status.
    #[command(after_long_help = RUN_EXAMPLES)]
    Run {
        #[command(flatten)]
        common: Common,
        /// After CMD exits, keep following its background children up to SECS seconds.
        #[arg(long, value_name = "SECS")]
        wait_bg: Option<f64>,
        /// Exit with status 3 when CMD succeeded but left processes running.
        #[arg(long)]
        fail_on_leak: bool,
        /// How to observe processes: the kernel connector, ptrace, or auto (the connector when
        /// it answers, else ptrace).
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendArg,
        /// Process tree on stderr at the end: auto (up to 200 lines), full or none.
        #[arg(long, value_enum, default_value = "auto")]
        tree: TreeArg,
        /// Merge what git (and programs using the trace2 crate) report about themselves
        /// (regions, data, timers, counters) into the traced processes: CMD gets
        /// GIT_TRACE2_EVENT pointed at a socket of proctrace's.
        #[arg(long)]
        trace2: bool,
        /// With --trace2, also set PREFIX_TRACE2_EVENT etc. (for a program using the trace2
        /// crate with that prefix). Repeatable; GIT is always set.
        #[arg(long, value_name = "PREFIX", requires = "trace2", value_parser = parse_prefix)]
        trace2_prefix: Vec<String>,
        /// The command and its arguments. Options end at its first word; a command whose name
        /// starts with `-` needs `--` before it.
        // No `allow_hyphen_values`: with it, a mistyped option (`--otpl`) was run as the command.
        // `trailing_var_arg` alone still hands `ls -la` over whole once `ls` is seen.
        #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
        argv: Vec<String>,
    },
    /// Stream lifecycle facts system-wide (or for one subtree) until interrupted.
    #[command(after_long_help = WATCH_EXAMPLES)]
    Watch {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        filter: FilterArgs,
        /// Only this running process and its descendants; stops when they are all gone.
        #[arg(short, long, value_name = "PID")]
        pid: Option<i32>,
        /// Stop after SECS seconds.
        #[arg(long, value_name = "SECS")]
        duration: Option<f64>,
        /// At the end, print the summary (slowest, by program, failures; with -p the critical
        /// path) on stderr. Keeps exited processes in memory until then.
        #[arg(long)]
        summary: bool,
    },
    /// Replay a capture recorded with --record through the model and outputs.
    #[command(after_long_help = REPLAY_EXAMPLES)]
    Replay {
        /// The capture file.
        capture: String,
        /// Follow only this process's tree (for captures made by `watch`; a `run` capture
        /// names its command).
        #[arg(long, value_name = "PID")]
        root: Option<i32>,
        #[command(flatten)]
        out: OutputArgs,
        /// Process tree on stderr at the end: auto (up to 200 lines), full or none.
        #[arg(long, value_enum, default_value = "auto")]
        tree: TreeArg,
    },
    /// Read saved traces - proctrace's own (`-o` JSON Lines or a `--record` capture) or git
    /// Trace2 event streams (files or per-session directories, from any producer) - and give
    /// the outputs of a run: the tree, the summary, a timeline, a picture, Trace2, JSON Lines.
    #[command(after_long_help = ANALYZE_EXAMPLES)]
    Analyze {
        /// Trace files or Trace2 target directories: one proctrace trace, or any number of
        /// Trace2 streams read as one set of sessions. The format is told from the content.
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<std::path::PathBuf>,
        /// Follow only this process's tree.
        #[arg(long, value_name = "PID")]
        root: Option<i32>,
        /// Skip and count lines that are not valid events, instead of stopping at the first.
        #[arg(long)]
        lenient: bool,
        /// Print the analysis as one JSON object on stdout (the `--summary-json` schema plus
        /// `sessions` and `skipped_lines`); no tree unless --tree asks for one.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        out: OutputArgs,
        /// Process tree on stderr at the end: auto (up to 200 lines), full or none. With none,
        /// and no --json, summary file or --svg, each process's record is freed at its exit:
        /// memory follows the processes alive at once, not the file.
        #[arg(long, value_enum)]
        tree: Option<TreeArg>,
    },
    /// Compare two saved traces of the same job (anything `analyze` reads): commands new, gone,
    /// failed now, slower or faster beyond a threshold, matched by argv with volatile parts
    /// (temp paths, pids, hashes, timestamps) normalised; the change in wall time and the
    /// critical path.
    #[command(after_long_help = DIFF_EXAMPLES)]
    Diff {
        /// The earlier trace.
        old: std::path::PathBuf,
        /// The later trace.
        new: std::path::PathBuf,
        /// A command is slower or faster when its total time changed by more than PCT percent of the old total
        #[arg(long, value_name = "PCT", default_value_t = 10.0)]
        threshold: f64,
        /// A command is slower or faster only when its total time also changed by at least MS
        /// milliseconds.
        #[arg(long, value_name = "MS", default_value_t = 50.0)]
        min_ms: f64,
        /// A command's peak memory changed only when it also changed by at least MIB MiB
        /// (besides --threshold percent).
        #[arg(long, value_name = "MIB", default_value_t = 10.0)]
        min_rss_mib: f64,
        /// Exit with status 1 when the new wall time is more than PCT percent above the old
        /// (for CI).
        #[arg(long, value_name = "PCT")]
        fail_if_slower: Option<f64>,
        /// Print the comparison as one JSON object on stdout instead of text.
        #[arg(long)]
        json: bool,
        /// Skip and count lines that are not valid events, instead of stopping at the first.
        #[arg(long)]
        lenient: bool,
        /// Show credentials in URLs instead of redacting them.
        #[arg(long)]
        no_redact: bool,
        /// Never colour output (also: NO_COLOR=1).
        #[arg(long)]
        no_color: bool,
    },
    /// Print a shell completion script to stdout (e.g. `source <(proctrace completions bash)`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff) to stdout: `proctrace man | man -l -`.
    Man {
        /// A command's own page (run, watch, replay, ...) instead of the overview.
        command: Option<String>,
    },
}

fn parse_user(s: &str) -> Result<u32, String> {
    if let Ok(uid) = s.parse::<u32>() {
        return Ok(uid);
    }
    match nix::unistd::User::from_name(s) {
        Ok(Some(u)) => Ok(u.uid.as_raw()),
        Ok(None) => Err(format!("no user '{s}' in the passwd database")),
        Err(e) => Err(format!("cannot look up user '{s}': {e}")),
    }
}

/// Writes a completion script or a man page for this command line to stdout.
fn generate(what: &Cmd) -> Result<i32, ProctraceError> {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    match what {
        Cmd::Completions { shell } => clap_complete::generate(*shell, &mut cmd, "proctrace", &mut out),
        Cmd::Man { command } => {
            let page = match command {
                None => cmd,
                Some(name) => {
                    cmd.build();
                    // Built, a subcommand is named `proctrace-run` (title) and `proctrace run`
                    // (synopsis).
                    cmd.find_subcommand(name)
                        .cloned()
                        .ok_or_else(|| {
                            ProctraceError::Usage(format!("no command '{name}' (try: run, watch, replay)"))
                        })?
                        .version(env!("CARGO_PKG_VERSION"))
                }
            };
            clap_mangen::Man::new(page)
                .render(&mut out)
                .map_err(|e| ProctraceError::Io("rendering the man page".into(), e))?;
        }
        _ => {}
    }
    use std::io::Write;
    match std::io::stdout().write_all(&out) {
        Ok(()) => Ok(exit_codes::OK),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(exit_codes::OK),
        Err(e) => Err(ProctraceError::Io("writing to stdout".into(), e)),
    }
}

/// A Trace2 variable prefix: what comes before `_TRACE2_EVENT` (`GIT`, `MYAPP`).
fn parse_prefix(s: &str) -> Result<String, String> {
    let s = s.strip_suffix('_').unwrap_or(s);
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        Ok(s.to_string())
    } else {
        Err(format!(
            "'{s}' is not a variable prefix (letters, digits and _, as in MYAPP for MYAPP_TRACE2_EVENT)"
        ))
    }
}

fn parse_size(s: &str) -> Result<usize, String> {
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

fn secs(v: f64, what: &str) -> Result<Duration, ProctraceError> {
    Duration::try_from_secs_f64(v)
        .map_err(|_| ProctraceError::Usage(format!("{what}: '{v}' is not a duration in seconds")))
}

fn tree_mode(t: TreeArg) -> TreeMode {
    match t {
        TreeArg::Auto => TreeMode::Auto,
        TreeArg::Full => TreeMode::Full,
        TreeArg::None => TreeMode::None,
    }
}

fn outputs(
    c: &OutputArgs,
    human_stdout: bool,
    tree: TreeMode,
    summary_text: bool,
    progress: bool,
) -> Outputs {
    Outputs {
        jsonl: c.output.clone(),
        human_stdout,
        tree,
        color_allowed: !c.no_color,
        redact: !c.no_redact,
        trace2: [
            (TargetKind::Normal, &c.trace2_normal),
            (TargetKind::Perf, &c.trace2_perf),
            (TargetKind::Event, &c.trace2_event),
        ]
        .into_iter()
        .filter_map(|(kind, v)| v.clone().map(|value| Trace2Target { kind, value }))
        .collect(),
        trace2_brief: c.trace2_brief,
        chrome: c.chrome.clone(),
        summary_text,
        summary_md: c.summary_md.clone(),
        summary_json: c.summary_json.clone(),
        progress,
        quiet: c.quiet,
        svg: c.svg.clone(),
        otlp: otlp_config(c),
    }
}

/// OTLP export settings from `--otlp` and the OpenTelemetry variables: the one place they are
/// read. A setting that cannot be used stops proctrace before anything runs.
fn otlp_config(c: &OutputArgs) -> Option<proctrace::sink::otlp::config::OtlpConfig> {
    use proctrace::sink::otlp::config;
    let seed = config::random_seed();
    match config::from_env(c.otlp.as_deref(), !c.no_propagate, seed, |k| {
        std::env::var(k).ok()
    }) {
        Ok(cfg) => {
            if let Some(why) = cfg.as_ref().and_then(|c| c.parent_error.as_deref()) {
                eprintln!("proctrace: otlp: {why}");
            }
            cfg
        }
        Err(e) => {
            eprintln!("proctrace: otlp: {e}");
            std::process::exit(exit_codes::USAGE);
        }
    }
}

fn capture(c: &Common) -> CaptureOptions {
    CaptureOptions {
        connector: cnproc::Options {
            recv_buffer: c.buffer,
            ..cnproc::Options::default()
        },
        enrich: !c.no_enrich,
        realtime: !c.no_realtime,
        usage: !c.no_usage,
        // Exits are at most half the connector's events and a record is charged about 1.5 times
        // an event's 832 bytes: the same size holds more exits than the connector holds events.
        usage_buffer: c.usage_buffer.unwrap_or(c.buffer),
    }
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Run {
            common,
            wait_bg,
            fail_on_leak,
            backend,
            tree,
            trace2,
            trace2_prefix,
            argv,
        } => (|| {
            run(RunConfig {
                argv,
                outputs: outputs(&common.out, false, tree_mode(tree), true, true),
                wait_bg: wait_bg.map(|v| secs(v, "--wait-bg")).transpose()?,
                fail_on_leak,
                backend: match backend {
                    BackendArg::Auto => BackendChoice::Auto,
                    BackendArg::Connector => BackendChoice::Connector,
                    BackendArg::Ptrace => BackendChoice::Ptrace,
                },
                capture: capture(&common),
                record: common.record.clone(),
                trace2,
                trace2_prefixes: trace2_prefix,
            })
        })(),
        Cmd::Watch {
            common,
            filter,
            pid,
            duration,
            summary,
        } => (|| {
            let kinds: Vec<_> = filter.events.into_iter().flat_map(|k| k.0).collect();
            watch(WatchConfig {
                root: pid,
                filter: FactFilter::new(&kinds, filter.user, filter.comm),
                outputs: outputs(
                    &common.out,
                    common.out.output.is_none(),
                    TreeMode::None,
                    summary,
                    false,
                ),
                duration: duration.map(|v| secs(v, "--duration")).transpose()?,
                capture: capture(&common),
                record: common.record.clone(),
            })
        })(),
        Cmd::Replay {
            capture,
            root,
            out,
            tree,
        } => (|| {
            let mut out = outputs(&out, false, tree_mode(tree), true, false);
            if let Some(o) = &mut out.otlp {
                o.offline = true;
            }
            // Read as a stream, as `analyze` reads a capture: memory follows what is alive (or
            // the records an output reads at the end), not the file. A capture without a header
            // gets a `replay` one, with the time of its first event.
            let opts = proctrace::input::InputOptions {
                lenient: false,
                tool: Some(Tool::this_process()),
                ..Default::default()
            };
            let mut input =
                proctrace::input::capture::CaptureInput::open(std::path::Path::new(&capture), &opts)?;
            let sinks = out.open_sinks()?;
            let retain = out.reads_records_at_end();
            let mut a = proctrace::cmd::analyze::analyze(&mut input, root, sinks, retain);
            out.print_tree(&a.engine.tracker, &a.header, &a.summary);
            if !out.quiet {
                // As the live run said it, from the recorded summary.
                proctrace::cmd::run::report_usage_loss(&a.summary.capture);
                if a.stats.truncated > 0 {
                    eprintln!(
                        "proctrace: the capture ends in a cut-off line (a recorder killed mid-line): ignored"
                    );
                }
            }
            // Writing its outputs is all a replay does: one that fails fails it.
            let ok = out.write_reports(&a.header, &a.engine.tracker, &a.summary);
            // The process ends next: its memory goes back at once, not record by record.
            a.engine.tracker.leak_records();
            match a.error {
                Some(e) => Err(e.into()),
                None if ok => Ok(exit_codes::OK),
                None => Ok(exit_codes::INTERNAL),
            }
        })(),
        Cmd::Analyze {
            paths,
            root,
            lenient,
            json,
            out,
            tree,
        } => (|| {
            let tree = tree.map_or(if json { TreeMode::None } else { TreeMode::Auto }, tree_mode);
            let mut outs = outputs(&out, false, tree, true, false);
            if let Some(o) = &mut outs.otlp {
                o.offline = true;
            }
            let opts = proctrace::input::InputOptions {
                lenient,
                tool: Some(Tool::this_process()),
                ..Default::default()
            };
            let mut input = proctrace::input::open(&paths, &opts)?;
            let sinks = outs.open_sinks()?;
            // Records of exited processes are kept only for what reads them at the end.
            let retain = json || outs.reads_records_at_end();
            let mut a = proctrace::cmd::analyze::analyze(input.as_mut(), root, sinks, retain);
            if !(json && tree == TreeMode::None) {
                outs.print_tree(&a.engine.tracker, &a.header, &a.summary);
            }
            let mut ok = outs.write_reports(&a.header, &a.engine.tracker, &a.summary);
            if json {
                use std::io::Write;
                let mut w = std::io::BufWriter::with_capacity(64 << 10, std::io::stdout().lock());
                ok &= proctrace::cmd::analyze::write_json(&a, !out.no_redact, &mut w)
                    .and_then(|()| w.flush())
                    .is_ok();
            }
            if a.stats.skipped_lines > 0 && !out.quiet {
                eprintln!(
                    "proctrace: {} bad lines skipped (--lenient)",
                    a.stats.skipped_lines
                );
            }
            // Nothing lost silently: what reading could not take in is said once, on stderr.
            if a.stats.too_many_files > 0 && !out.quiet {
                eprintln!(
                    "proctrace: a Trace2 target directory hit its file limit (maxFiles) {} time(s): \
                     later sessions were not written, so processes are missing",
                    a.stats.too_many_files
                );
            }
            if a.stats.truncated > 0 && !out.quiet {
                eprintln!(
                    "proctrace: {} file(s) end in a cut-off line (a writer killed mid-line): ignored",
                    a.stats.truncated
                );
            }
            if a.stats.late_lines > 0 && !out.quiet {
                eprintln!(
                    "proctrace: {} Trace2 line(s) older than events already output (beyond the 2 s \
                     reorder window): read, but their events came out of time order",
                    a.stats.late_lines
                );
            }
            // The process ends next: its memory goes back at once, not record by record.
            a.engine.tracker.leak_records();
            match a.error {
                Some(e) => Err(e.into()),
                None if ok => Ok(exit_codes::OK),
                None => Ok(exit_codes::INTERNAL),
            }
        })(),
        Cmd::Diff {
            old,
            new,
            threshold,
            min_ms,
            min_rss_mib,
            fail_if_slower,
            json,
            lenient,
            no_redact,
            no_color,
        } => (|| {
            use proctrace::cmd::diff;
            if !(threshold >= 0.0
                && min_ms >= 0.0
                && min_rss_mib >= 0.0
                && fail_if_slower.is_none_or(|p| p >= 0.0))
            {
                return Err(ProctraceError::Usage(
                    "--threshold, --min-ms, --min-rss-mib and --fail-if-slower take a number ≥ 0".into(),
                ));
            }
            let a = diff::load(old, lenient, Some(Tool::this_process()))?;
            let b = diff::load(new, lenient, Some(Tool::this_process()))?;
            let opts = diff::DiffOptions {
                threshold_pct: threshold,
                min_ms,
                min_rss_mib,
                redact: !no_redact,
            };
            let r = diff::compare((&a).into(), (&b).into(), opts);
            let text = if json {
                diff::render_json(&r)
            } else {
                let width = std::env::var("COLUMNS")
                    .ok()
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(120usize);
                diff::render_text(&r, proctrace::output::stdout_color(!no_color), width)
            };
            use std::io::Write;
            match std::io::stdout().write_all(text.as_bytes()) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                Err(e) => return Err(ProctraceError::Io("writing to stdout".into(), e)),
            }
            let skipped = a.stats.skipped_lines + b.stats.skipped_lines;
            if skipped > 0 {
                eprintln!("proctrace: {skipped} bad lines skipped (--lenient)");
            }
            Ok(match fail_if_slower {
                Some(p) if r.slower_than(p) => diff::EXIT_SLOWER,
                _ => exit_codes::OK,
            })
        })(),
        what @ (Cmd::Completions { .. } | Cmd::Man { .. }) => generate(&what),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("proctrace: {e}");
            std::process::exit(e.exit_code());
        }
    }
}
