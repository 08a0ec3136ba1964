//! The end-of-run summary: where the time went.
//!
//! [`summarize`] is a pure function of the session's [`Header`](crate::model::session::Header),
//! the finished [`Tracker`](crate::model::tracker::Tracker) (exited records retained) and the
//! [`Summary`](crate::model::session::Summary); it yields a [`RunReport`] that renders three
//! ways: text for the terminal ([`render_text`]), Markdown for a CI job summary
//! ([`render_markdown`]) and one JSON object for dashboards (its `serde::Serialize`).
//!
//! # Definitions
//!
//! - **Origin and wall time.** When proctrace saw the command (the root) fork and exit — `run`,
//!   and `replay` of a `run` capture — wall time is the root's lifetime and every offset counts
//!   from its fork. Otherwise (`watch`) it is the observation window, from the header's start to
//!   the summary's end.
//! - **Images** ([`crate::model::images`]): what a process ran, one after the other — the fork
//!   image when it stands on its own, then one per exec. Slowest, by program and the critical
//!   path count images.
//! - **Program**: the base name of `argv[0]` of the image's exec, else of its executable, else
//!   its `comm`; a fork image counts as `[fork of COMM]`
//!   ([`crate::model::naming::image_program`], the name every output gives it).
//! - **Slowest**: the longest images with a known start and end, except the root's (it always
//!   wins), background children's, and images that take at least 90% of the parent's image they
//!   were forked from: those are folded into the parent, whose command line is the one a person
//!   wrote and names them (`sh -c CMD` → `CMD`, `cc -c f5.c` → `cc1`, `timeout 10 ./t` → `./t`),
//!   so one compile is not listed two or three times. Never into a fork image (it names
//!   nothing); a fork image one of whose children took 90% of it is left out for the child.
//! - **Critical path**: the chain of images whose durations set the wall time. From the root,
//!   walk backward from its end: take the child that ended last (at or before the end), then the
//!   child that ended last at or before *that* child's fork, and so on back to the parent's fork;
//!   descend into each chosen child the same way. A process on the path is on it for its whole
//!   life: each of its images is a step, followed by the chosen children it forked. Only
//!   children with a known fork and a real exit count: background children (they outlived the
//!   command, so nothing waited for them) and processes whose exit was lost never do. A process
//!   that outlived its parent counts as a child of the nearest ancestor still running when it
//!   ended, what waited for it (the kernel's subreaper rule: conmon and containerd-shim wait for
//!   a container's first process, which outlives `runc create`). The gaps
//!   between chosen children are the image's own work (its `own_s`). For `make -j2` this names
//!   the compiles that gated the link, then the link, not merely the link. A stretch of the path
//!   under a process that kept all its job slots busy ([`ParallelSpan`]) is bounded by
//!   parallelism rather than by that chain. `watch` without `-p` has no single root and so no
//!   critical path. How people are shown a long path: `text.rs` (`PathView`).
//! - **What it cost** (only when the trace has the figures, `ProcessRecord::usage`): CPU is the
//!   user and system time of each process itself (not its children: the kernel's per-process account);
//!   peak memory is its peak resident set (RSS). The whole tree's CPU is the sum over the
//!   processes measured, and *achieved parallelism* is that sum over the wall time: how many
//!   cores were busy on average. The **hungriest** process is the one that used the most CPU.
//!   Processes without figures count nowhere here (the JSON says how many were measured), so
//!   with some missing the sums are lower bounds. By program, CPU is summed and peak memory is
//!   the largest peak of one process (peaks of processes that never ran together do not add).
//!   In the lists, a process doing its parent's work (at least 90% of the parent's time, as
//!   the slowest list folds it, and more CPU than the parent) is named with the parent's
//!   command: `cc1, for: cc -c f4.c`.
//! - **Failures, handled exits, causes** ([`failures`]): a non-zero exit or a kill is a
//!   *failure* when it is part of the command's failure (the command when it failed, and each
//!   failed child of a failure that it stopped at and that ended before it); every other one is
//!   *handled* (configure's probes, `test`, `grep -q`). The *causes* are the deepest failures
//!   (the compile that failed, not make); a failed command's text and Markdown summaries open
//!   with them. `failures` and `causes` are the JSON's lists of those, `nonzero_exits` has every
//!   non-zero exit, handled ones included.

//!
//! # Where things are
//!
//! This file holds the report's shape ([`RunReport`] and its parts); `analysis.rs` computes it
//! ([`summarize`]); `text.rs`, `markdown.rs` and `json.rs` render it. The renderers read only the
//! report, never the tracker, so all three say the same thing.

mod analysis;
pub mod dirs;
pub mod failures;
pub mod json;
pub mod markdown;
#[cfg(test)]
mod tests;
mod text;

use serde::Serialize;

use crate::model::event::ExitStatus;
use crate::sink::text::signal_name;

pub use crate::model::naming::region_name;
pub use analysis::{
    FileIndex, PathUses, all_records, command_cwd, cost_label, dir_rule, root_cwd, slowest_order, summarize,
    wall,
};
pub(crate) use json::json_string;
pub use json::{render_json, write_json};
pub use markdown::render_markdown;
pub use text::{TextOptions, outside_words, path_rows, render_text};

/// How many entries the slowest and by-program lists keep, and failures, causes and background
/// children the text and Markdown show (JSON lists every one of them).
pub const TOP: usize = 10;

/// The share of a stretch of the critical path under one process during which all its job
/// slots were busy above which that stretch is said to be bounded by parallelism, not by one
/// chain ([`ParallelSpan`]).
pub const PARALLEL_FULL: f64 = 0.8;

/// How many entries the lists by CPU and by peak memory keep.
pub const TOP_COST: usize = 5;

/// The whole summary, ready to render or serialize.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The traced command (`run`), redacted as asked.
    pub command: Option<Vec<String>>,
    /// Its status.
    pub status: Option<StatusJson>,
    /// Wall time (see the module docs), seconds.
    #[serde(rename = "wall_s", serialize_with = "json::secs")]
    pub wall_ns: u64,
    /// Processes seen.
    pub processes: u64,
    /// Execs seen.
    pub execs: u64,
    /// The command's failure (`failures` module docs): the command when it failed and each
    /// failed process its failure was reported through, in order of fork. Empty when the
    /// command succeeded.
    pub failures: Vec<Failure>,
    /// The deepest failures: what failed first (the compile, not make), in order of fork.
    pub causes: Vec<Cause>,
    /// Every process that exited non-zero or was killed, failures and handled alike, in order
    /// of fork.
    pub nonzero_exits: Vec<Failure>,
    /// Processes whose exit was lost (closed when their pid was reused): neither ok nor failed.
    pub exit_unknown: u64,
    /// Processes that outlived the command (leaks), in order of fork.
    pub background: Vec<Background>,
    /// Events lost by the capture.
    pub lost: u64,
    /// Processes the capture never saw start (ptrace: `CLONE_UNTRACED` children): missing from
    /// the trace with their trees. Only when there were any.
    #[serde(skip_serializing_if = "is_zero")]
    pub untraced: u64,
    /// Clients of build daemons and container engines whose work ran outside the traced tree
    /// ([`crate::model::elsewhere`]): their server is not in the trace. Only when there were any.
    #[serde(rename = "outside_tree", skip_serializing_if = "Vec::is_empty")]
    pub outside: Vec<OutsideWork>,
    /// The daemons `run --include-daemons` followed, and what ran in them during the run.
    /// Only when there were any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub daemons: Vec<DaemonWork>,
    /// The longest processes (see the module docs), longest first.
    pub slowest: Vec<Step>,
    /// The critical path in order from the root: images, each followed by its children on the
    /// path (see the module docs).
    pub critical_path: Vec<PathStep>,
    /// The processes on the critical path whose stretch of it was bounded by their parallelism
    /// (job slots all busy at least [`PARALLEL_FULL`] of it), in path order.
    pub parallel: Vec<ParallelSpan>,
    /// Count and total time by program, most total time first.
    pub by_program: ByProgram,
    /// The regions processes reported about themselves (Trace2: git's own), when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regions: Option<Regions>,
    /// The files the processes used (`--files`), when the trace has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<FilesReport>,
    /// What the processes cost, when the trace has the figures (see the module docs); its
    /// fields sit at the top level of the JSON.
    #[serde(flatten)]
    pub costs: Option<Costs>,
    /// Every image the slowest list draws from (its first [`TOP`] are `slowest`), unsorted:
    /// (duration, start, pid, record, image index). For the HTML report's full table; not in the JSON.
    #[serde(skip)]
    pub slowest_all: Vec<(u64, u64, i32, crate::model::tracker::ProcId, usize)>,
}

/// How many files to name in the lists of the files report (JSON: most read and per process).
pub const TOP_FILES: usize = 10;

/// The files the processes used (`--files`): distinct paths by access, the files most
/// processes read, and for each file written, who wrote it and who read it afterwards.
#[derive(Debug, Clone, Serialize)]
pub struct FilesReport {
    /// Processes that used a file.
    pub processes: u64,
    /// Distinct paths read.
    pub read: u64,
    /// Distinct paths written.
    pub written: u64,
    /// Distinct paths created.
    pub created: u64,
    /// Distinct paths deleted.
    pub deleted: u64,
    /// Renames.
    pub renamed: u64,
    /// The files read by the most processes, most first (at most [`TOP_FILES`]).
    pub most_read: Vec<FileReaders>,
    /// Each file written and then read by another process: its writers and its readers, in the
    /// order first written.
    pub produced: Vec<Produced>,
    /// Each process that used a file, in tree order: how many it read, and what it wrote.
    pub by_process: Vec<ProcessFiles>,
    /// The files read and written, summarised by directory ([`dirs`]).
    pub directories: Directories,
}

/// The whole run's files read and written, summarised by directory ([`dirs`]: a directory
/// holding more than `more_than` of a list's files is one entry).
#[derive(Debug, Clone, Serialize)]
pub struct Directories {
    /// The threshold (`--files-dirs`); `null`: no directory summarised.
    pub more_than: Option<usize>,
    /// The command's working directory, whose files the lists of one process keep one by one;
    /// `null` when unknown (or `/`).
    pub project: Option<String>,
    /// The files read: most files first, ties in the order first seen.
    pub read: Vec<DirEntry>,
    /// The files written.
    pub written: Vec<DirEntry>,
}

/// One entry of a list summarised by directory: a file, or a directory standing for the list's
/// files it holds.
#[derive(Debug, Clone, Serialize)]
pub struct DirEntry {
    /// The file's path, or the directory's, ending in `/`.
    pub path: String,
    /// The path as people read it on a terminal ([`crate::model::escape::text`] of its bytes)
    /// when that is not `path` ([`DirEntry::people`]).
    #[serde(skip)]
    pub people: Option<String>,
    /// A directory.
    pub dir: bool,
    /// The list's files it stands for (1 for a file).
    pub files: u64,
    /// The processes that used them (the whole run's lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
    /// A directory's most used files (by the processes of the run that used each, this way),
    /// at most [`dirs::TOP_IN_DIR`] (the whole run's lists).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<TopFile>,
}

impl DirEntry {
    /// The path as people read it on a terminal (escaped as every output for people).
    pub fn people(&self) -> &str {
        self.people.as_deref().unwrap_or(&self.path)
    }
}

impl TopFile {
    /// The path as people read it on a terminal.
    pub fn people(&self) -> &str {
        self.people.as_deref().unwrap_or(&self.path)
    }
}

/// One of a directory's most used files.
#[derive(Debug, Clone, Serialize)]
pub struct TopFile {
    /// The path.
    pub path: String,
    /// The path as people read it on a terminal, when that is not `path`.
    #[serde(skip)]
    pub people: Option<String>,
    /// The processes of the run that used it this way (read it, or wrote it).
    pub processes: u64,
}

/// The directories one process read (and wrote) more than the threshold's files in (the files
/// under the project aside), most files first: where it "touched many files under one
/// directory". Its other files are listed one by one nowhere in the summary JSON but in the
/// JSON Lines (a big build has a list for each of its compiles: only what is summarised).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProcessDirs {
    /// Directories it read in (at most [`PROCESS_DIR_ENTRIES`]).
    pub read: Vec<DirEntry>,
    /// Directories it wrote in (at most [`PROCESS_DIR_ENTRIES`]).
    pub written: Vec<DirEntry>,
}

impl ProcessDirs {
    /// No directory summarised: the field is left out.
    pub fn is_empty(&self) -> bool {
        self.read.is_empty() && self.written.is_empty()
    }
}

/// Most entries each list of one process's [`ProcessDirs`] keeps.
pub const PROCESS_DIR_ENTRIES: usize = TOP_FILES * 10;

/// A file and how many processes read it.
#[derive(Debug, Clone, Serialize)]
pub struct FileReaders {
    /// The path.
    pub path: String,
    /// Processes that read it.
    pub readers: u64,
    /// The path as people read it on a terminal ([`crate::model::escape::text`] of its bytes).
    #[serde(skip)]
    pub people: String,
}

/// A file one process wrote and others read afterwards.
#[derive(Debug, Clone, Serialize)]
pub struct Produced {
    /// The path.
    pub path: String,
    /// The processes that wrote it (pids), in order.
    pub producers: Vec<i32>,
    /// The processes that read it after it was first written (pids), in order.
    pub consumers: Vec<i32>,
}

/// What one process did with files.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessFiles {
    /// Process id.
    pub pid: i32,
    /// Program.
    pub program: String,
    /// Distinct paths it read.
    pub read: u64,
    /// Paths it wrote, in order (at most [`TOP_FILES`] × 10).
    pub wrote: Vec<String>,
    /// The directories it read or wrote many files in (more than the threshold); absent when
    /// none.
    #[serde(skip_serializing_if = "ProcessDirs::is_empty")]
    pub directories: ProcessDirs,
}

/// A kind of client whose work ran outside the traced tree.
#[derive(Debug, Clone, Serialize)]
pub struct OutsideWork {
    /// Which (`bazel`, `sccache`, `docker`).
    pub client: &'static str,
    /// Execs of it in the trace.
    pub runs: u64,
    /// The first one's process id.
    pub pid: i32,
    /// What of it ran elsewhere (`its work`, `the container's processes`).
    pub work: &'static str,
    /// What ran the work instead.
    pub ran_in: &'static str,
    /// How to bring it into the trace, or see it (with the backend of the run in mind: ptrace
    /// cannot follow a daemon).
    pub fix: String,
}

/// A daemon `run --include-daemons` followed, and what ran in it during the run.
#[derive(Debug, Clone, Serialize)]
pub struct DaemonWork {
    /// Its kind, by its client's name (`sccache`, `bazel`, `docker`).
    pub daemon: &'static str,
    /// What it is (`the sccache server`).
    pub server: &'static str,
    /// Its process id.
    pub pid: i32,
    /// Processes it (or a process of it) started during the run: they are in the trace, under
    /// its node `[ran in …]`, and count in the totals, the costs and the critical path.
    pub processes: u64,
    /// Their CPU (user + system), seconds, when measured.
    #[serde(
        rename = "cpu_s",
        skip_serializing_if = "Option::is_none",
        serialize_with = "json::opt_secs"
    )]
    pub cpu_ns: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What the processes cost (CPU, peak memory), when any was measured.
#[derive(Debug, Clone, Serialize)]
pub struct Costs {
    /// Processes with figures.
    pub measured: u64,
    /// CPU of every process measured, user + system, seconds.
    #[serde(rename = "cpu_s", serialize_with = "json::secs")]
    pub cpu_ns: u64,
    /// Of it, user time.
    #[serde(rename = "cpu_user_s", serialize_with = "json::secs")]
    pub cpu_user_ns: u64,
    /// Of it, system time.
    #[serde(rename = "cpu_sys_s", serialize_with = "json::secs")]
    pub cpu_sys_ns: u64,
    /// `cpu_s / wall_s`: cores busy on average; `null` for no wall time.
    pub parallelism: Option<f64>,
    /// Most CPU first (at most [`TOP_COST`]); the first is the hungriest process.
    pub top_cpu: Vec<Cost>,
    /// Highest peak memory first (at most [`TOP_COST`]).
    pub top_rss: Vec<Cost>,
}

/// One process in the lists by CPU and by peak memory.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    /// Process id.
    pub pid: i32,
    /// Program (see the module docs).
    pub program: String,
    /// argv of the last exec, redacted as asked; `null` when never read.
    pub argv: Option<Vec<String>>,
    /// User + system CPU, seconds.
    #[serde(rename = "cpu_s", serialize_with = "json::secs")]
    pub cpu_ns: u64,
    /// User CPU, seconds.
    #[serde(rename = "cpu_user_s", serialize_with = "json::secs")]
    pub cpu_user_ns: u64,
    /// System CPU, seconds.
    #[serde(rename = "cpu_sys_s", serialize_with = "json::secs")]
    pub cpu_sys_ns: u64,
    /// Peak resident set, KiB.
    pub max_rss_kib: u64,
    /// Fork to exit, seconds (`null` when either is unknown).
    #[serde(rename = "duration_s", serialize_with = "json::opt_secs")]
    pub duration_ns: Option<u64>,
    #[serde(skip)]
    label: String,
}

/// What the processes reported about their own work (Trace2 regions).
#[derive(Debug, Clone, Serialize)]
pub struct Regions {
    /// How many regions were reported.
    pub count: u64,
    /// The longest regions, longest first (at most [`TOP`]).
    pub slowest: Vec<RegionStep>,
    /// Count and summed time by `category:label`, most total time first (nested regions count
    /// in their own name and in their enclosing region's: the time is not split).
    pub by_name: ByProgram,
}

/// One region in a list.
#[derive(Debug, Clone, Serialize)]
pub struct RegionStep {
    /// `category:label` (or the label alone when there is no category).
    pub name: String,
    /// Process that reported it.
    pub pid: i32,
    /// Its program (see the module docs).
    pub program: String,
    /// Reporting thread (`main`, `th01:…`).
    pub thread: String,
    /// Depth, 1 at the top of its thread.
    pub nesting: u32,
    /// The region's message, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msg: Option<String>,
    /// Entered, seconds from the origin.
    #[serde(rename = "start_s", serialize_with = "json::secs_signed")]
    pub start_ns: i64,
    /// Entered to left, seconds.
    #[serde(rename = "duration_s", serialize_with = "json::secs")]
    pub duration_ns: u64,
}

/// How a process ended, as JSON: `{"code": 3}` or `{"signal": 9, "signal_name": "SIGKILL",
/// "core": false}`.
#[derive(Debug, Clone, Serialize)]
pub struct StatusJson {
    /// Exit code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// Killing signal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal_name: Option<String>,
    /// A core dump was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core: Option<bool>,
    #[serde(skip)]
    raw: Option<ExitStatus>,
}

impl From<ExitStatus> for StatusJson {
    fn from(s: ExitStatus) -> Self {
        match s {
            ExitStatus::Code(c) => StatusJson {
                code: Some(c),
                signal: None,
                signal_name: None,
                core: None,
                raw: Some(s),
            },
            ExitStatus::Signal { signal, core } => StatusJson {
                code: None,
                signal: Some(signal),
                signal_name: Some(signal_name(signal)),
                core: Some(core),
                raw: Some(s),
            },
        }
    }
}

/// One image of a process in a list ([`crate::model::images`]: a process that never exec'd
/// again after its fork is one image from fork to exit).
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Process id.
    pub pid: i32,
    /// Which image of the process (0 for the first), only when it has more than one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<usize>,
    /// Program (see the module docs).
    pub program: String,
    /// argv of the image's exec, redacted as asked; `null` when never read (or the fork image).
    pub argv: Option<Vec<String>>,
    /// The image's start (the fork for the first), seconds from the origin (negative for a
    /// process older than the trace).
    #[serde(rename = "start_s", serialize_with = "json::secs_signed")]
    pub start_ns: i64,
    /// Start to the next exec or the exit, seconds.
    #[serde(rename = "duration_s", serialize_with = "json::secs")]
    pub duration_ns: u64,
    /// How people are shown it (`naming::image_command_line`).
    #[serde(skip)]
    pub(crate) label: String,
}

/// One step of the critical path: an image.
#[derive(Debug, Clone, Serialize)]
pub struct PathStep {
    /// The image.
    #[serde(flatten)]
    pub step: Step,
    /// Its own time on the path: its duration minus that of its children on the path (the time
    /// it, not something it waited for, held the path), seconds.
    #[serde(rename = "own_s", serialize_with = "json::secs")]
    pub own_ns: u64,
    /// 0 for the root, 1 for its children, …
    pub depth: usize,
    /// The daemon it ran in, when the path went from a client into the daemon's work
    /// (`run --include-daemons`: `the sccache server`); its steps below are the daemon's too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ran_in: Option<&'static str>,
}

/// A process on the critical path whose children on it were bounded by how many it ran at
/// once, not by one chain: while the path ran through its children, it was running as many as
/// it ever did ([`RunReport::parallel`]).
#[derive(Debug, Clone, Serialize)]
pub struct ParallelSpan {
    /// The process (`make -j2`, or the recursive make that ran the jobs).
    pub pid: i32,
    /// Its program.
    pub program: String,
    /// The most children it ran at once: its job slots as observed.
    pub slots: u64,
    /// The index in `critical_path` of its step.
    pub step: usize,
    /// From the first to the end of the last of its children on the path, seconds.
    #[serde(rename = "window_s", serialize_with = "json::secs")]
    pub window_ns: u64,
    /// Of it, the time `slots` children were running, seconds.
    #[serde(rename = "full_s", serialize_with = "json::secs")]
    pub full_ns: u64,
    /// The longest of its children running in the stretch (a job: `make`'s recipe), named by
    /// the process doing most of its time (down the children that each hold at least half of
    /// their parent's: recipe → libtool → …); its duration is the job's.
    pub longest_job: Option<Step>,
    #[serde(skip)]
    label: String,
}

/// A process that exited non-zero or was killed.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// Process id.
    pub pid: i32,
    /// Program.
    pub program: String,
    /// argv, redacted as asked.
    pub argv: Option<Vec<String>>,
    /// Fork, seconds from the origin.
    #[serde(rename = "start_s", serialize_with = "json::opt_secs_signed")]
    pub start_ns: Option<i64>,
    /// How it ended.
    #[serde(flatten)]
    pub status: StatusJson,
    /// Not part of the command's failure (a probe, `test`, `grep -q`, `|| true`).
    pub handled: bool,
    #[serde(skip)]
    label: String,
}

/// One of the deepest failures: what failed first.
#[derive(Debug, Clone, Serialize)]
pub struct Cause {
    /// The process.
    #[serde(flatten)]
    pub failure: Failure,
    /// Fork to exit, seconds (`null` when the fork is unknown).
    #[serde(rename = "duration_s", serialize_with = "json::opt_secs")]
    pub duration_ns: Option<u64>,
    /// Pids of its failed parents, from the command down to its parent (each is in `failures`).
    pub chain: Vec<i32>,
    /// Those parents' short command lines joined with ` → `.
    #[serde(skip)]
    chain_label: String,
}

/// A process that outlived the command.
#[derive(Debug, Clone, Serialize)]
pub struct Background {
    /// Process id.
    pub pid: i32,
    /// Program.
    pub program: String,
    /// argv, redacted as asked.
    pub argv: Option<Vec<String>>,
    /// Fork, seconds from the origin.
    #[serde(rename = "start_s", serialize_with = "json::opt_secs_signed")]
    pub start_ns: Option<i64>,
    /// `ready` (left running), `timeout` (still running after `--wait-bg`), `error` (could not
    /// be probed).
    pub state: &'static str,
    /// How it ended, when it ended while proctrace still followed it (`--wait-bg`).
    pub exit: Option<StatusJson>,
    #[serde(skip)]
    label: String,
}

/// Count and total time of one program (and, when measured, what it cost).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ProgramStat {
    /// Processes running it.
    pub count: u64,
    /// Their summed fork-to-exit time (those with a known exit), seconds.
    #[serde(rename = "total_s", serialize_with = "json::secs")]
    pub total_ns: u64,
    /// Their summed CPU (user + system; those measured), seconds; absent when none was.
    #[serde(
        rename = "cpu_s",
        serialize_with = "json::opt_secs",
        skip_serializing_if = "Option::is_none"
    )]
    pub cpu_ns: Option<u64>,
    /// The largest peak memory of one of them, KiB; absent when none was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rss_kib: Option<u64>,
    /// The longest of their images (those with a known exit), for the HTML report; not in the JSON.
    #[serde(skip)]
    pub max_ns: u64,
}

/// Programs, most total time first; serialized as a JSON object in that order.
#[derive(Debug, Clone, Default)]
pub struct ByProgram(pub Vec<(String, ProgramStat)>);
