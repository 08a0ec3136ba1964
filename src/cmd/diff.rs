//! `proctrace diff OLD NEW`: what changed between two traced runs of the same job.
//!
//! Each side is anything `analyze` reads (a `--record` capture, `-o` JSON Lines, Trace2
//! streams); both go through [`crate::cmd::analyze::analyze`] with no outputs, and the finished
//! models are compared. Nothing here reads a file or a terminal: [`compare`] is a pure function
//! of the two analyses, [`render_text`] and [`render_json`] format its [`DiffReport`].
//!
//! # Matching
//!
//! What is matched between the runs is each process's *images* ([`crate::model::images`]): the
//! fork image when it forked a child (one that stands only by its time before the exec is
//! counted with that exec: see `groups`), then one per exec, so a dash subshell that runs `a`
//! and then execs `b`, or `sh -c 'x; exec y'`, is two things compared, each on its own. Images
//! are matched by their exec's argv with the volatile parts replaced ([`normalize_argv`]); the
//! images of one run sharing a normalised argv form a *group*, compared by count, total and
//! median time. A fork image counts as `[fork of COMM]` (the kernel's name it inherited), an
//! image whose argv was not read as `[COMM]` (the names every output gives them,
//! [`crate::model::naming::image_command_line`]: the kernel's name, at exit for the last
//! image). The unread images of a name in one run account for that name's commands found only
//! in the other (`unread_accounted`). The traced command itself (the root, up to and
//! including its first exec) is left out of the groups: its change is the wall time; what it
//! exec'd after that is compared. How a process ended (failed, fixed) and what it cost (CPU,
//! peak memory: measured for the whole process) count for its last image.
//!
//! # Normalisation rules (each word of argv)
//!
//! A word is read as runs of ASCII letters and digits (*tokens*) between other characters,
//! which are kept as they are. In order:
//!
//! 1. **Timestamps** → `<TIME>`: an ISO 8601 date `YYYY-MM-DD`, with an optional time
//!    `[T _]HH:MM[:SS[.frac]]` and zone (`Z`, `+HH:MM`, `-HHMM`); a time of day `HH:MM:SS[.frac]`;
//!    the compact `YYYYMMDDTHHMMSS`.
//! 2. **Numbers that look like pids, ports or epochs** → `<N>`: a token of 4 or more digits.
//!    Shorter numbers (`-j8`, `-O2`, `sleep 0.3`, `u12.c`) are kept: they usually mean
//!    something, and a token mixing letters and digits (`unit1234`) is a name, kept whole.
//! 3. **Hex hashes and addresses** → `<HEX>` (after rule 4 inside a temp path): a token of 7 or more hex digits with at least one
//!    digit and one letter `a-f` (a git abbreviated hash, a SHA), or `0x` and 4 or more hex
//!    digits.
//! 4. **Temporary paths** → `<TMP>`: inside a path under `/tmp/`, `/var/tmp/` or `/dev/shm/`
//!    (not `$TMPDIR`: the trace may come from another machine) (where a path starts: the word's first `/`, or after `=`, `:`, `,` or `@`), a
//!    token of 6 or more characters mixing letters and digits or upper and lower case, or
//!    made by a known template whatever its letters: gcc's `ccXXXXXX`, mktemp's
//!    `tmp.XXXXXXXXXX`, Python's `tmpXXXXXXXX` (`/tmp/tmp.Xy3kLm9QzA` → `/tmp/tmp.<TMP>`,
//!    `/tmp/ccAbc123.s` and `/tmp/ccqwoihv.s` → `/tmp/<TMP>.s`). Other all-lowercase names
//!    (`/tmp/build`) are kept.
//! 5. **Autoconf's scratch names**: `conf` and six random letters and digits (`mktemp -d
//!    ./confXXXXXX`; six lowercase letters only as a directory) → `conf<TMP>`; `conf` and the
//!    shell's pid (`conf$$`, `conf$$subs`, `conf$$-$RANDOM`) → `conf<N>` (and `-<N>`).
//! 6. **mktemp's default name** `tmp.XXXXXXXXXX` anywhere → `tmp.<TMP>`.
//! 7. **Cargo's metadata hashes**: 16 hex digits after a `-` → `<HEX>` whatever their digits
//!    and letters (`target/debug/build/foo-0123456789abcdef/`).
//!
//! # What counts as a change
//!
//! A group present in both runs is **slower** (or **faster**) when its total time changed by
//! more than `threshold_pct` percent of the old total *and* by at least `min_ms` milliseconds
//! (defaults 10% and 50 ms: timings of one process vary by tens of ms on a busy machine).
//! **Failed** lists the groups with a failed process (non-zero exit or a signal) now and none
//! before (a new command that fails is both new and failed; one that failed now is not also
//! listed as slower or faster: it stopped early, or hung); **fixed** the reverse. Slower and
//! faster compare each group's *own* time: each image's span minus the time covered by the
//! children forked during it (their lives clipped to the image, overlaps counted once), so a
//! waiter — `make`, the recipe's `sh -c`, libtool, the `cc` driver, a subshell's fork image —
//! is not listed for its children's change, only the child that changed is; `old_s`/`new_s`
//! keep the images' spans. Lists are sorted by the size of the change (own time for slower and
//! faster), largest first.
//!
//! # Costs
//!
//! When both runs carry the processes' cost figures (`ProcessRecord::usage`), a group present
//! in both and measured in both is compared by its CPU (user + system, summed over its
//! processes; same thresholds as the times) and by the largest peak memory of one of its
//! processes (`threshold_pct` percent and at least `min_rss_mib` MiB): [`CostDiff`].

mod command;
mod normalize;
mod render;
pub use command::command;
pub use normalize::{normalize_argv, normalize_word};
pub use render::{render_json, render_text};

use std::collections::HashMap;

use crate::model::bytes::shown;
use std::path::PathBuf;

use serde::Serialize;

use crate::ProctraceError;
use crate::cmd::analyze::{Analysis, analyze};
use crate::input::{InputOptions, open};
use crate::model::event::{Argv, ExitStatus};
use crate::model::images::{Image, images};
use crate::model::naming::image_command_line;
use crate::model::session::{Header, Mode, Summary};
use crate::model::tracker::{ProcId, Tracker};
use crate::redact::redact_argv;
use crate::report::summary::{DirEntry, StatusJson, dirs, summarize, wall};
use crate::sink::Fanout;

/// The exit status of `proctrace diff --fail-if-slower PCT` when the wall time grew by more
/// than PCT percent (as `diff(1)` exits 1 when the files differ).
pub const EXIT_SLOWER: i32 = 1;

/// What counts as a change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiffOptions {
    /// A group is slower or faster when its total time changed by more than this percentage of
    /// the old total…
    pub threshold_pct: f64,
    /// …and by at least this many milliseconds.
    pub min_ms: f64,
    /// A group's peak memory changed only when it also changed by at least this many MiB
    /// (besides `threshold_pct` percent of the old peak).
    pub min_rss_mib: f64,
    /// Hide URL credentials in argv.
    pub redact: bool,
    /// `--files-dirs`: a directory holding more than this many of a list of files is one entry
    /// of its `_dirs` list (`None`: every file listed).
    pub files_dirs: Option<usize>,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            threshold_pct: 10.0,
            min_ms: 50.0,
            min_rss_mib: 10.0,
            redact: true,
            files_dirs: Some(crate::report::summary::dirs::DIRS_MORE_THAN),
        }
    }
}

/// Reads one side of a diff: the trace at `path` through the model, with no outputs. A line
/// that cannot be read is an error naming the file and line (unless `lenient`).
pub fn load(path: PathBuf, opts: &InputOptions) -> Result<Analysis, ProctraceError> {
    let mut input = open(&[path], opts)?;
    let mut a = analyze(input.as_mut(), None, Fanout::new(), true);
    match a.error.take() {
        Some(e) => Err(e.into()),
        None => Ok(a),
    }
}

/// One run, as compared.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    /// Its header.
    pub header: &'a Header,
    /// The finished model (exited records retained).
    pub tracker: &'a Tracker,
    /// Its summary.
    pub summary: &'a Summary,
}

impl<'a> From<&'a Analysis> for Side<'a> {
    fn from(a: &'a Analysis) -> Self {
        Side {
            header: &a.header,
            tracker: &a.engine.tracker,
            summary: &a.summary,
        }
    }
}

/// A pair of values, old and new.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OldNew<T> {
    /// In the old run.
    pub old: T,
    /// In the new run.
    pub new: T,
}

/// One run's headline.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    /// The traced command (`run`), redacted as asked.
    pub command: Option<Vec<String>>,
    /// Its status.
    pub status: Option<StatusJson>,
    /// Processes seen.
    pub processes: u64,
    /// Processes that failed.
    pub failures: u64,
}

/// One step of a critical path.
#[derive(Debug, Clone, Serialize)]
pub struct PathEntry {
    /// Normalised argv (the matching key).
    pub argv: Vec<String>,
    /// 0 for the root, 1 for its children, …
    pub depth: usize,
    /// Fork to exit, seconds.
    pub duration_s: f64,
    /// The same step's duration in the other run (same normalised argv on its critical
    /// path), when it is there.
    pub other_s: Option<f64>,
}

/// A row of a long critical path as the text shows it (the summary's view of it).
#[derive(Debug, Clone)]
pub struct PathRow {
    /// The step's index in the new path.
    pub step: usize,
    /// The time it holds, ns.
    pub held_ns: u64,
    /// What the summary says below it.
    pub detail: Option<String>,
}

/// A group of images with the same normalised argv, compared.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// The normalised argv (the matching key).
    pub argv: Vec<String>,
    /// Images in the run the entry is about: the new one, the old one for `gone`.
    pub count: u64,
    /// Images in the old run.
    pub old_count: u64,
    /// Images in the new run.
    pub new_count: u64,
    /// Total time in the old run, each image from its start to its end, seconds (`null`: not
    /// in it).
    pub old_s: Option<f64>,
    /// Total time in the new run, seconds (`null`: not in it).
    pub new_s: Option<f64>,
    /// Median time of one image in the old run, seconds.
    pub old_median_s: Option<f64>,
    /// Median time of one image in the new run, seconds.
    pub new_median_s: Option<f64>,
    /// `new_s - old_s` (a missing side counts as 0).
    pub delta_s: f64,
    /// Total *own* time in the old run, seconds: each image's span minus the time the children
    /// forked during it cover (`null`: not in it). What `slower` and `faster` compare.
    pub old_own_s: Option<f64>,
    /// Total own time in the new run, seconds (`null`: not in it).
    pub new_own_s: Option<f64>,
    /// `new_own_s - old_own_s` (a missing side counts as 0): the size of a change.
    pub delta_own_s: f64,
    /// Failed processes in the old run.
    pub old_failed: u64,
    /// Failed processes in the new run.
    pub new_failed: u64,
    /// CPU (user + system) of the group's processes in the old run, seconds (`null`: none of
    /// them measured, or not in it).
    pub old_cpu_s: Option<f64>,
    /// The same in the new run.
    pub new_cpu_s: Option<f64>,
    /// The largest peak resident set of one of the group's processes in the old run, KiB
    /// (`null`: none measured, or not in it).
    pub old_max_rss_kib: Option<u64>,
    /// The same in the new run.
    pub new_max_rss_kib: Option<u64>,
    /// How the first failure of the run the entry is about ended (`failed`: now; `fixed`:
    /// before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusJson>,
    /// One real argv of the group (the new run's when there, else the old's), redacted as
    /// asked.
    pub example: Vec<String>,
    #[serde(skip)]
    first_status: Option<ExitStatus>,
}

/// The comparison, ready to render or serialize.
#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    /// Wall time of each run, seconds (as the summary computes it).
    pub wall_s: OldNew<f64>,
    /// Each run's headline.
    pub runs: OldNew<RunInfo>,
    /// Each run's critical path.
    pub critical_path: OldNew<Vec<PathEntry>>,
    /// How the text shows a long new path: the steps that carry its time, as the summary does
    /// (`None`: short enough to show whole).
    #[serde(skip)]
    pub path_rows: Option<Vec<PathRow>>,
    /// What counted as a change.
    pub threshold: Threshold,
    /// Groups only in the new run, most total time first.
    pub new: Vec<Entry>,
    /// Groups only in the old run, most total time first.
    pub gone: Vec<Entry>,
    /// Groups that failed now and did not before, in order of their first fork.
    pub failed: Vec<Entry>,
    /// Groups that failed before and do not now.
    pub fixed: Vec<Entry>,
    /// Groups slower beyond the threshold, largest change first.
    pub slower: Vec<Entry>,
    /// Groups faster beyond the threshold, largest change first.
    pub faster: Vec<Entry>,
    /// Regions the processes reported about themselves (Trace2), compared by name.
    pub regions: RegionDiff,
    /// CPU of every measured process of each run, user + system, seconds (`null`: that run has
    /// no cost figures, e.g. recorded with `--no-usage` or an older proctrace).
    pub cpu_s: OldNew<Option<f64>>,
    /// The largest peak resident set of one process of each run, KiB (`null`: no figures).
    pub max_rss_kib: OldNew<Option<u64>>,
    /// Commands whose CPU or peak memory changed beyond the thresholds.
    pub costs: CostDiff,
    /// Commands in both runs that read or wrote other files now (both runs traced with
    /// `--files`; `null` otherwise), in order of their first fork. Paths are compared with
    /// their volatile parts replaced as argv is (`/tmp/<TMP>.s`).
    pub files: Option<Vec<FilesChange>>,
}

/// Most paths each list of a [`FilesChange`] names (the counts are whole).
pub const FILES_LISTED: usize = 20;

/// What a command read and wrote differently (`diff` of two `--files` traces).
#[derive(Debug, Clone, Serialize)]
pub struct FilesChange {
    /// The command (normalised argv, redacted as asked).
    pub argv: Vec<String>,
    /// Paths it reads now and did not before (at most [`FILES_LISTED`]: the build's own first,
    /// then those under `/usr/`).
    pub newly_read: Vec<String>,
    /// How many it newly reads.
    pub newly_read_count: usize,
    /// Paths it no longer reads.
    pub no_longer_read: Vec<String>,
    /// How many it no longer reads.
    pub no_longer_read_count: usize,
    /// Paths it writes now and did not before.
    pub newly_written: Vec<String>,
    /// How many it newly writes.
    pub newly_written_count: usize,
    /// Paths it no longer writes.
    pub no_longer_written: Vec<String>,
    /// How many it no longer writes.
    pub no_longer_written_count: usize,
    /// The four lists summarised by directory (docs/files.md, "Directories summarised"): the
    /// build's own files (under the new run's working directory) one by one, first; a
    /// directory holding more than `--files-dirs` of a list's files one entry with their
    /// count; at most [`FILES_LISTED`] entries each.
    pub newly_read_dirs: Vec<DirEntry>,
    /// [`no_longer_read`](Self::no_longer_read) summarised.
    pub no_longer_read_dirs: Vec<DirEntry>,
    /// [`newly_written`](Self::newly_written) summarised.
    pub newly_written_dirs: Vec<DirEntry>,
    /// [`no_longer_written`](Self::no_longer_written) summarised.
    pub no_longer_written_dirs: Vec<DirEntry>,
}

/// A group of processes present in both runs with cost figures in both, compared by CPU or
/// by peak memory.
#[derive(Debug, Clone, Serialize)]
pub struct CostEntry {
    /// The normalised argv (the matching key).
    pub argv: Vec<String>,
    /// One real argv of the group (the new run's), redacted as asked.
    pub example: Vec<String>,
    /// Processes in the old run.
    pub old_count: u64,
    /// Processes in the new run.
    pub new_count: u64,
    /// Their CPU (user + system) in the old run, seconds.
    pub old_cpu_s: f64,
    /// Their CPU in the new run, seconds.
    pub new_cpu_s: f64,
    /// `new_cpu_s - old_cpu_s`.
    pub delta_cpu_s: f64,
    /// The largest peak resident set of one of them in the old run, KiB.
    pub old_max_rss_kib: u64,
    /// The same in the new run.
    pub new_max_rss_kib: u64,
    /// `new_max_rss_kib - old_max_rss_kib`.
    pub delta_rss_kib: i64,
}

/// What changed in what the commands cost (the figures of `run`'s usage capture: taskstats or
/// `/proc` at exit). Groups are compared when both runs measured some of their processes;
/// a failed-now group is left out (it stopped early). Empty lists when either run has no
/// figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CostDiff {
    /// CPU grew by more than the threshold percent of the old CPU and by at least `min_ms`,
    /// largest change first.
    pub more_cpu: Vec<CostEntry>,
    /// CPU shrank likewise.
    pub less_cpu: Vec<CostEntry>,
    /// The largest peak memory of one process grew by more than the threshold percent and by
    /// at least `min_rss_mib`, largest change first.
    pub more_memory: Vec<CostEntry>,
    /// Peak memory shrank likewise.
    pub less_memory: Vec<CostEntry>,
}

/// Regions of one name (Trace2 `category:label`), compared: every region of that name in the
/// run, in any process, nested ones included (as the summary's `regions.by_name` counts them).
#[derive(Debug, Clone, Serialize)]
pub struct RegionEntry {
    /// `category:label`.
    pub name: String,
    /// Regions of this name in the old run.
    pub old_count: u64,
    /// Regions of this name in the new run.
    pub new_count: u64,
    /// Their total time in the old run, seconds (`null`: none).
    pub old_s: Option<f64>,
    /// Their total time in the new run, seconds (`null`: none).
    pub new_s: Option<f64>,
    /// `new_s - old_s` (a missing side counts as 0).
    pub delta_s: f64,
}

/// The regions' changes, by the same thresholds as the commands'. Empty lists when neither run
/// has regions.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RegionDiff {
    /// Names only in the new run, most total time first.
    pub new: Vec<RegionEntry>,
    /// Names only in the old run, most total time first.
    pub gone: Vec<RegionEntry>,
    /// Names slower beyond the threshold, largest change first.
    pub slower: Vec<RegionEntry>,
    /// Names faster beyond the threshold, largest change first.
    pub faster: Vec<RegionEntry>,
}

/// The thresholds used, as JSON.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Threshold {
    /// Percent of the old total.
    pub pct: f64,
    /// Absolute, milliseconds.
    pub min_ms: f64,
    /// Absolute, MiB of peak memory.
    pub min_rss_mib: f64,
}

// ---------------------------------------------------------------------------------------------
// Normalisation
// ---------------------------------------------------------------------------------------------

// Hand-written rather than with `regex` (not a dependency): the rules are about tokens and
// where a path starts, which a one-pass scanner states directly, without allocation for words
// that have nothing volatile.

/// The images of one run sharing a normalised argv.
#[derive(Debug, Clone, Default)]
struct Group {
    /// A real argv of one of them.
    example: Vec<String>,
    count: u64,
    /// Start-to-end times of those with both known (a last image: when it exited with a status).
    durations: Vec<u64>,
    /// Their own times (span minus what the children forked during it cover), summed.
    own_ns: u64,
    failed: u64,
    first_status: Option<ExitStatus>,
    /// Rank of the first image (its process's fork order, then its place) for stable listing.
    rank: usize,
    /// The kernel's name of its first image (`comm`), when known.
    name: Option<String>,
    /// Its key is `[COMM]`: the images' argv was not read.
    unread: bool,
    /// Last images of processes with cost figures, their CPU summed and their largest peak
    /// memory.
    measured: u64,
    cpu_ns: u64,
    max_rss_kib: u64,
    /// The paths its processes read and wrote (`--files`), normalised.
    reads: std::collections::BTreeSet<String>,
    writes: std::collections::BTreeSet<String>,
}

impl Group {
    fn total(&self) -> u64 {
        self.durations.iter().sum()
    }
    fn cpu_s(&self) -> Option<f64> {
        (self.measured > 0).then(|| secs(self.cpu_ns))
    }
    fn max_rss(&self) -> Option<u64> {
        (self.measured > 0).then_some(self.max_rss_kib)
    }
    fn median(&self) -> Option<u64> {
        let mut d = self.durations.clone();
        d.sort_unstable();
        match d.len() {
            0 => None,
            n if n % 2 == 1 => Some(d[n / 2]),
            n => Some((d[n / 2 - 1] + d[n / 2]) / 2),
        }
    }
}

/// The matching key of an image (see the module docs): its exec's argv normalised, or the name
/// every output gives it (`[fork of COMM]`, `[COMM]`).
fn key_of(im: &Image<'_>) -> Vec<String> {
    match im.argv().filter(|a| !a.is_empty()) {
        Some(a) => normalize_argv(a),
        None => vec![image_command_line(im, false)],
    }
}

/// Whether an image's argv was not read: it is named `[COMM]` (the kernel's name only).
fn unread(im: &Image<'_>) -> bool {
    im.exec.is_some() && im.argv().is_none_or(|a| a.is_empty())
}

/// The image of `spans` (each image's start and end, in order) a child forked at `ts` belongs
/// to: the last one started at or before it, the first when none was (as
/// [`crate::model::images::Images::index_at`], without walking the images again for every child).
fn image_of(spans: &[(u64, u64)], ts: u64) -> usize {
    spans.partition_point(|&(s, _)| s <= ts).saturating_sub(1)
}

/// The time of the image `span` that none of `children` (their lives, `(fork, exit)`) covers:
/// a waiter's (make, the recipe's shell, libtool, a compiler driver) own work and start-up,
/// without the time it waited for what it ran. Children's lives are clipped to the image and
/// their overlaps counted once; `children` is sorted by fork.
fn own_ns((start, end): (u64, u64), children: &[(u64, u64)]) -> u64 {
    let (mut covered, mut reach) = (0u64, start);
    for &(cs, ce) in children {
        let (cs, ce) = (cs.max(reach), ce.min(end));
        if ce > cs {
            covered += ce - cs;
            reach = ce;
        }
    }
    end.saturating_sub(start).saturating_sub(covered)
}

/// The record of the traced command: the one the trace names, or the only root there is (a
/// Trace2 session tree), as the summary's critical path takes it.
fn root_of(s: Side<'_>) -> Option<ProcId> {
    let roots = s.tracker.roots();
    match s.summary.root.or(match s.header.mode {
        Mode::Watch { root } => root,
        _ => None,
    }) {
        Some(pid) => roots
            .iter()
            .copied()
            .find(|&id| s.tracker.get(id).is_some_and(|r| r.pid == pid)),
        None if roots.len() == 1 => Some(roots[0]),
        None => None,
    }
}

fn groups(s: Side<'_>) -> HashMap<Vec<String>, Group> {
    let t = s.tracker;
    let root = root_of(s);
    let mut ids = crate::report::summary::all_records(t);
    ids.sort_by_key(|&id| t.get(id).and_then(|r| r.start_ns));
    let mut map: HashMap<Vec<String>, Group> = HashMap::new();
    // Reused for every process: its images' spans, and its children's lives by image.
    let mut spans: Vec<(u64, u64)> = Vec::new();
    let mut kids: Vec<(usize, u64, u64)> = Vec::new();
    let mut lives: Vec<(u64, u64)> = Vec::new();
    let mut rank = 0usize;
    for id in ids {
        let Some(r) = t.get(id) else { continue };
        let ims = images(t, r);
        // The traced command is its run's wall time: its images up to its first exec are left
        // out; what it exec'd after (`sh -c 'x; exec y'`) is compared.
        let skip = match Some(id) == root {
            true => usize::from(ims.has_fork_image()) + 1,
            false => 0,
        };
        let status = r.exit.and_then(|x| x.status);
        // Every image but the last ended at an exec; the last is timed when it exited with a
        // status and was not left running in the background (as a process was).
        let timed = |im: &Image<'_>| !im.is_last() || (r.background.is_none() && status.is_some());
        spans.clear();
        spans.extend(ims.clone().map(|im| {
            let st = im.start_ns.unwrap_or(0);
            (st, im.end_ns.unwrap_or(u64::MAX).max(st))
        }));
        kids.clear();
        if ims.len() > skip {
            kids.extend(r.children.iter().filter_map(|&c| {
                let c = t.get(c)?;
                let cs = c.start_ns?;
                Some((image_of(&spans, cs), cs, c.exit.map_or(u64::MAX, |x| x.ts)))
            }));
            kids.sort_unstable();
        }
        // A fork image that forked nothing stands only by how long it ran before its exec
        // (`FORK_IMAGE_MIN_NS`), which a loaded machine decides as much as the build does (make
        // took 16 ms between fork and exec in one run of a test, 0.3 ms in the other): diff
        // counts it as part of the first exec's image, as every output counts a shorter one, so
        // the same build has the same images in both runs. One that forked a child (dash's
        // subshell) is the build's structure, and stands.
        let merged = ims.has_fork_image() && kids.first().is_none_or(|k| k.0 > 0);
        if merged {
            spans[1].0 = spans[0].0;
        }
        for im in ims.skip(skip.max(usize::from(merged))) {
            let start = match merged && im.index == 1 {
                true => r.start_ns,
                false => im.start_ns,
            };
            rank += 1;
            let g = map.entry(key_of(&im)).or_insert_with(|| Group {
                example: im.argv().map(Argv::to_vec).unwrap_or_default(),
                rank,
                name: im.comm().map(str::to_string),
                unread: unread(&im),
                ..Group::default()
            });
            g.count += 1;
            if timed(&im)
                && let Some(d) = im.end_ns.zip(start).map(|(e, s)| e.saturating_sub(s))
            {
                g.durations.push(d);
                let from = kids.partition_point(|k| k.0 < im.index);
                let to = kids.partition_point(|k| k.0 <= im.index);
                lives.clear();
                lives.extend(kids[from..to].iter().map(|k| (k.1, k.2)));
                g.own_ns += own_ns(spans[im.index], &lives);
            }
            if !im.is_last() {
                continue;
            }
            // How the process ended, and what it cost, are its last image's.
            if let Some(st) = status.filter(|st| !st.success()) {
                g.failed += 1;
                g.first_status.get_or_insert(st);
            }
            if let Some(f) = r.files.as_deref() {
                use crate::model::event::FileAccess;
                for u in &f.uses {
                    let set = match u.access {
                        FileAccess::Read => &mut g.reads,
                        FileAccess::Write => &mut g.writes,
                        _ => continue,
                    };
                    set.insert(normalize::normalize_word(&u.path));
                }
            }
            if let Some(u) = &r.usage {
                g.measured += 1;
                g.cpu_ns = g
                    .cpu_ns
                    .saturating_add(u.cpu_user_ns.saturating_add(u.cpu_sys_ns));
                g.max_rss_kib = g.max_rss_kib.max(u.max_rss_kib);
            }
        }
    }
    map
}

/// Groups of one run only that the other run's unread-argv processes account for, each with
/// whether those failed: `(in the new run only, in the old run only)`.
///
/// A short-lived process whose argv was not read in one run (`[mktemp]`, one exec in a few
/// hundred under load) is, in the other, whichever command of that kernel name was read there
/// (`mktemp -d ./confXXXXXX`): without this, the same command is both "new" and "gone". By
/// kernel name: the unread processes of one run account for the other run's one-run-only read
/// groups of that name, whole groups in order of their first fork while their count lasts; an
/// unread group only in one run is accounted for when the other run has at least as many more
/// read processes of that name than this one (its one-run-only groups and the extra count of
/// groups in both). A command whose argv was never read in one run cannot be told from another
/// of its name: a new `bash x.sh` beside unread `[bash]` processes of the old run is not listed.
fn unread_accounted(
    go: &HashMap<Vec<String>, Group>,
    gn: &HashMap<Vec<String>, Group>,
) -> (HashMap<Vec<String>, bool>, HashMap<Vec<String>, bool>) {
    /// Per kernel name: the unread group (key, count, failed) and the read groups of this run
    /// only (rank, key, count), and how many more read processes this run has than the other.
    #[derive(Default)]
    struct Name {
        unread: Option<(Vec<String>, u64, bool)>,
        only: Vec<(usize, Vec<String>, u64)>,
        surplus: u64,
    }
    // Nothing to account for when every argv was read (the usual case): no pass over the groups.
    if !go.values().chain(gn.values()).any(|g| g.unread) {
        return (HashMap::new(), HashMap::new());
    }
    let by_name = |m: &HashMap<Vec<String>, Group>, other: &HashMap<Vec<String>, Group>| {
        let mut by: HashMap<String, Name> = HashMap::new();
        for (k, g) in m {
            let Some(n) = &g.name else { continue };
            let e = by.entry(n.clone()).or_default();
            if g.unread {
                e.unread = Some((k.clone(), g.count, g.failed > 0));
                continue;
            }
            let theirs = other.get(k).map_or(0, |o| o.count);
            e.surplus += g.count.saturating_sub(theirs);
            if theirs == 0 {
                e.only.push((g.rank, k.clone(), g.count));
            }
        }
        for e in by.values_mut() {
            e.only.sort();
        }
        by
    };
    let (bo, bn) = (by_name(go, gn), by_name(gn, go));
    let (mut new_ok, mut old_ok) = (HashMap::new(), HashMap::new());
    let none = Name::default();
    // `this`'s unread processes of a name account for `that` run's one-run-only groups.
    let account = |this: &Name,
                   that: &Name,
                   that_groups: &HashMap<Vec<String>, Group>,
                   this_ok: &mut HashMap<Vec<String>, bool>,
                   that_ok: &mut HashMap<Vec<String>, bool>| {
        let Some((key, count, failed)) = &this.unread else {
            return;
        };
        let mut left = *count;
        for (_, k, n) in &that.only {
            if *n <= left {
                left -= n;
                that_ok.insert(k.clone(), *failed);
            }
        }
        let theirs = that.unread.as_ref().map_or(0, |u| u.1);
        if theirs == 0 && that.surplus >= *count {
            let failed = that.only.iter().any(|(_, k, _)| that_groups[k].failed > 0);
            this_ok.insert(key.clone(), failed);
        }
    };
    for (name, o) in &bo {
        account(o, bn.get(name).unwrap_or(&none), gn, &mut old_ok, &mut new_ok);
    }
    for (name, n) in &bn {
        account(n, bo.get(name).unwrap_or(&none), go, &mut new_ok, &mut old_ok);
    }
    (new_ok, old_ok)
}

/// Groups in both runs whose CPU or peak memory changed beyond the thresholds (failed-now
/// groups left out, as for the times).
fn compare_costs(
    go: &HashMap<Vec<String>, Group>,
    gn: &HashMap<Vec<String>, Group>,
    o: DiffOptions,
) -> CostDiff {
    let mut d = CostDiff::default();
    for (k, b) in gn {
        let Some(a) = go.get(k) else { continue };
        if a.measured == 0 || b.measured == 0 || (b.failed > 0 && a.failed == 0) {
            continue;
        }
        let e = CostEntry {
            argv: redacted(k, o.redact),
            example: redacted(&b.example, o.redact),
            old_count: a.count,
            new_count: b.count,
            old_cpu_s: secs(a.cpu_ns),
            new_cpu_s: secs(b.cpu_ns),
            delta_cpu_s: secs(b.cpu_ns) - secs(a.cpu_ns),
            old_max_rss_kib: a.max_rss_kib,
            new_max_rss_kib: b.max_rss_kib,
            delta_rss_kib: b.max_rss_kib as i64 - a.max_rss_kib as i64,
        };
        let (ca, cb) = (a.cpu_ns as f64 / 1e6, b.cpu_ns as f64 / 1e6);
        let dc = cb - ca;
        if dc.abs() >= o.min_ms && dc.abs() > ca * o.threshold_pct / 100.0 {
            if dc > 0.0 {
                &mut d.more_cpu
            } else {
                &mut d.less_cpu
            }
            .push(e.clone());
        }
        let (ma, mb) = (a.max_rss_kib as f64 / 1024.0, b.max_rss_kib as f64 / 1024.0);
        let dm = mb - ma;
        if dm.abs() >= o.min_rss_mib && dm.abs() > ma * o.threshold_pct / 100.0 {
            if dm > 0.0 {
                &mut d.more_memory
            } else {
                &mut d.less_memory
            }
            .push(e);
        }
    }
    let by_cpu = |x: &CostEntry, y: &CostEntry| {
        y.delta_cpu_s
            .abs()
            .total_cmp(&x.delta_cpu_s.abs())
            .then_with(|| x.argv.cmp(&y.argv))
    };
    let by_rss = |x: &CostEntry, y: &CostEntry| {
        y.delta_rss_kib
            .unsigned_abs()
            .cmp(&x.delta_rss_kib.unsigned_abs())
            .then_with(|| x.argv.cmp(&y.argv))
    };
    d.more_cpu.sort_by(by_cpu);
    d.less_cpu.sort_by(by_cpu);
    d.more_memory.sort_by(by_rss);
    d.less_memory.sort_by(by_rss);
    d
}

/// The whole run's CPU and its largest peak memory of one process, from the records.
fn run_costs(s: Side<'_>) -> (Option<f64>, Option<u64>) {
    let mut measured = false;
    let (mut cpu, mut rss) = (0u64, 0u64);
    for id in crate::report::summary::all_records(s.tracker) {
        if let Some(u) = s.tracker.get(id).and_then(|r| r.usage.as_deref()) {
            measured = true;
            cpu = cpu.saturating_add(u.cpu_user_ns.saturating_add(u.cpu_sys_ns));
            rss = rss.max(u.max_rss_kib);
        }
    }
    match measured {
        true => (Some(secs(cpu)), Some(rss)),
        false => (None, None),
    }
}

/// Count and total time of the regions of each name, in every record of the run.
fn region_totals(s: Side<'_>) -> HashMap<String, (u64, u64)> {
    let mut map: HashMap<String, (u64, u64)> = HashMap::new();
    for id in crate::report::summary::all_records(s.tracker) {
        let Some(r) = s.tracker.get(id) else { continue };
        for g in &r.regions {
            let e = map
                .entry(crate::report::summary::region_name(&g.category, &g.label))
                .or_default();
            e.0 += 1;
            e.1 += g.end.saturating_sub(g.ts);
        }
    }
    map
}

fn compare_regions(old: Side<'_>, new: Side<'_>, o: DiffOptions) -> RegionDiff {
    let ro = region_totals(old);
    let rn = region_totals(new);
    let entry = |name: &str, a: Option<&(u64, u64)>, b: Option<&(u64, u64)>| RegionEntry {
        name: name.to_string(),
        old_count: a.map_or(0, |x| x.0),
        new_count: b.map_or(0, |x| x.0),
        old_s: a.map(|x| secs(x.1)),
        new_s: b.map(|x| secs(x.1)),
        delta_s: secs(b.map_or(0, |x| x.1)) - secs(a.map_or(0, |x| x.1)),
    };
    let mut d = RegionDiff::default();
    for (name, b) in &rn {
        let Some(a) = ro.get(name) else {
            d.new.push(entry(name, None, Some(b)));
            continue;
        };
        let (ta, tb) = (a.1 as f64 / 1e6, b.1 as f64 / 1e6);
        let ch = tb - ta;
        if ch.abs() >= o.min_ms && ch.abs() > ta * o.threshold_pct / 100.0 {
            let e = entry(name, Some(a), Some(b));
            if ch > 0.0 {
                d.slower.push(e)
            } else {
                d.faster.push(e)
            }
        }
    }
    for (name, a) in ro.iter().filter(|(k, _)| !rn.contains_key(*k)) {
        d.gone.push(entry(name, Some(a), None));
    }
    let by_size = |x: &RegionEntry, y: &RegionEntry| {
        y.delta_s
            .abs()
            .total_cmp(&x.delta_s.abs())
            .then(x.name.cmp(&y.name))
    };
    for l in [&mut d.new, &mut d.gone, &mut d.slower, &mut d.faster] {
        l.sort_by(by_size);
    }
    d
}

// ---------------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------------

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn redacted(argv: &[String], redact: bool) -> Vec<String> {
    if redact {
        redact_argv(argv)
            .into_iter()
            .map(std::borrow::Cow::into_owned)
            .collect()
    } else {
        argv.to_vec()
    }
}

fn run_info(s: Side<'_>, redact: bool) -> RunInfo {
    let r = summarize(s.header, s.tracker, s.summary, redact, None);
    RunInfo {
        command: r.command,
        status: r.status,
        processes: r.processes,
        failures: r.failures.len() as u64,
    }
}

fn path_of(s: Side<'_>, redact: bool) -> (Vec<PathEntry>, Option<Vec<PathRow>>) {
    let r = summarize(s.header, s.tracker, s.summary, redact, None);
    let rows = crate::report::summary::path_rows(&r).map(|rows| {
        rows.into_iter()
            .map(|(step, held_ns, detail)| PathRow {
                step,
                held_ns,
                detail,
            })
            .collect()
    });
    let path = r
        .critical_path
        .iter()
        .map(|p| {
            let argv = match &p.step.argv {
                Some(a) => redacted(&normalize_argv(a), redact),
                // `[fork of sh]` is bracketed already; `cc1` (argv not read) reads `[cc1]`.
                None if p.step.program.starts_with('[') => vec![p.step.program.clone()],
                None => vec![format!("[{}]", p.step.program)],
            };
            PathEntry {
                argv,
                depth: p.depth,
                duration_s: secs(p.step.duration_ns),
                other_s: None,
            }
        })
        .collect();
    (path, rows)
}

/// Fills each step's `other_s` from the other run's path: a step with the same argv under the
/// same chain of parents' argv (so a `[fork of bash]` of configure pairs with one of
/// configure's, not with one elsewhere), the longest of a key with the other's longest.
///
/// The steps of each key are grouped once: `n log n` in the path's length (a search of `b` per
/// step was quadratic: a 200,000-deep chain of one argv took minutes).
fn pair_paths(a: &mut [PathEntry], b: &mut [PathEntry]) {
    /// Each step's key: a hash of its argv and its parents' (the latest step above it at each
    /// depth).
    fn keys(path: &[PathEntry]) -> Vec<u64> {
        use std::hash::{BuildHasher as _, Hash as _, Hasher as _};
        let build = foldhash::fast::FixedState::with_seed(23);
        let mut above: Vec<u64> = Vec::new();
        path.iter()
            .map(|e| {
                above.truncate(e.depth);
                let mut h = build.build_hasher();
                above.last().copied().unwrap_or(0).hash(&mut h);
                e.argv.hash(&mut h);
                let k = h.finish();
                above.push(k);
                k
            })
            .collect()
    }
    let (ka, kb) = (keys(a), keys(b));
    // Within a key, the longest pairs with the longest, and so on: which of configure's 229
    // `[fork of bash]` on the path is which is not known, and pairing them in order pairs the
    // one that took 360 ms with one that took 1 ms, which reads as a change.
    let by_key = |keys: &[u64], path: &[PathEntry]| {
        let mut m: HashMap<u64, Vec<usize>> = HashMap::new();
        for (j, k) in keys.iter().enumerate() {
            m.entry(*k).or_default().push(j);
        }
        for v in m.values_mut() {
            v.sort_by(|&x, &y| path[y].duration_s.total_cmp(&path[x].duration_s).then(x.cmp(&y)));
        }
        m
    };
    let (ma, mb) = (by_key(&ka, a), by_key(&kb, b));
    for (k, xs) in &ma {
        let Some(ys) = mb.get(k) else { continue };
        for (&i, &j) in xs.iter().zip(ys) {
            a[i].other_s = Some(b[j].duration_s);
            b[j].other_s = Some(a[i].duration_s);
        }
    }
}

/// Compares two runs (see the module docs).
pub fn compare(old: Side<'_>, new: Side<'_>, o: DiffOptions) -> DiffReport {
    let go = groups(old);
    let gn = groups(new);
    let entry = |key: &Vec<String>, a: Option<&Group>, b: Option<&Group>, about_new: bool| -> Entry {
        let total = |g: Option<&Group>| g.map(Group::total);
        let (ta, tb) = (total(a), total(b));
        let (oa, ob) = (a.map(|g| g.own_ns), b.map(|g| g.own_ns));
        let about = if about_new { b.or(a) } else { a.or(b) };
        Entry {
            argv: redacted(key, o.redact),
            count: about.map_or(0, |g| g.count),
            old_count: a.map_or(0, |g| g.count),
            new_count: b.map_or(0, |g| g.count),
            old_s: ta.map(secs),
            new_s: tb.map(secs),
            old_median_s: a.and_then(Group::median).map(secs),
            new_median_s: b.and_then(Group::median).map(secs),
            delta_s: secs(tb.unwrap_or(0)) - secs(ta.unwrap_or(0)),
            old_own_s: oa.map(secs),
            new_own_s: ob.map(secs),
            delta_own_s: secs(ob.unwrap_or(0)) - secs(oa.unwrap_or(0)),
            old_failed: a.map_or(0, |g| g.failed),
            new_failed: b.map_or(0, |g| g.failed),
            old_cpu_s: a.and_then(Group::cpu_s),
            new_cpu_s: b.and_then(Group::cpu_s),
            old_max_rss_kib: a.and_then(Group::max_rss),
            new_max_rss_kib: b.and_then(Group::max_rss),
            status: about.and_then(|g| g.first_status).map(StatusJson::from),
            example: redacted(&b.or(a).map(|g| g.example.clone()).unwrap_or_default(), o.redact),
            first_status: about.and_then(|g| g.first_status),
        }
    };
    let mut new_list = Vec::new();
    let mut gone = Vec::new();
    let mut failed = Vec::new();
    let mut fixed = Vec::new();
    let mut slower = Vec::new();
    let mut faster = Vec::new();
    let mut keys_new: Vec<(&Vec<String>, &Group)> = gn.iter().collect();
    keys_new.sort_by_key(|(_, g)| g.rank);
    let (new_accounted, old_accounted) = unread_accounted(&go, &gn);
    for (k, b) in keys_new {
        let a = go.get(k);
        // Only here by its argv: the old run's unread processes of its name account for it.
        if a.is_none()
            && let Some(&failed_before) = new_accounted.get(k)
        {
            if b.failed > 0 && !failed_before {
                failed.push(entry(k, None, Some(b), true));
            }
            continue;
        }
        if b.failed > 0 && a.is_none_or(|a| a.failed == 0) {
            failed.push(entry(k, a, Some(b), true));
            if a.is_some() {
                // Failing is the change; a failed step's time says little (it stopped early).
                continue;
            }
        }
        let Some(a) = a else {
            new_list.push(entry(k, None, Some(b), true));
            continue;
        };
        if a.failed > 0 && b.failed == 0 {
            fixed.push(entry(k, Some(a), Some(b), false));
        }
        // Own time: a waiter is not slower for what it waited for (its child is, and is listed).
        let (ta, tb) = (a.own_ns as f64 / 1e6, b.own_ns as f64 / 1e6);
        let d = tb - ta;
        if d.abs() >= o.min_ms && d.abs() > ta * o.threshold_pct / 100.0 {
            let e = entry(k, Some(a), Some(b), true);
            if d > 0.0 { slower.push(e) } else { faster.push(e) }
        }
    }
    let mut keys_old: Vec<(&Vec<String>, &Group)> = go
        .iter()
        .filter(|(k, _)| !gn.contains_key(*k) && !old_accounted.contains_key(*k))
        .collect();
    keys_old.sort_by_key(|(_, g)| g.rank);
    for (k, a) in keys_old {
        gone.push(entry(k, Some(a), None, false));
    }
    let by_size = |x: &Entry, y: &Entry| y.delta_s.abs().total_cmp(&x.delta_s.abs());
    let by_own = |x: &Entry, y: &Entry| y.delta_own_s.abs().total_cmp(&x.delta_own_s.abs());
    slower.sort_by(by_own);
    faster.sort_by(by_own);
    new_list.sort_by(by_size);
    gone.sort_by(by_size);

    let costs = compare_costs(&go, &gn, o);
    let files = (old.header.files && new.header.files).then(|| {
        let mut both: Vec<(&Vec<String>, &Group, &Group)> =
            gn.iter().filter_map(|(k, b)| Some((k, go.get(k)?, b))).collect();
        both.sort_by_key(|(_, _, b)| b.rank);
        // The project: the new run's working directory, normalised as the paths are.
        let cwd = crate::report::summary::command_cwd(new.header, new.tracker, new.summary)
            .map(|c| normalize::normalize_word(&format!("{}/", c.trim_end_matches('/'))));
        let rule = dirs::DirRule::new(o.files_dirs, cwd.as_deref());
        let listed = |from: &std::collections::BTreeSet<String>, not: &std::collections::BTreeSet<String>| {
            // The build's own files first: the system's headers and libraries (under `/usr/`)
            // after them.
            let mut all: Vec<&String> = from.difference(not).collect();
            all.sort_by_key(|p| (p.starts_with("/usr/"), *p));
            let n = all.len();
            let paths: Vec<&str> = all.iter().map(|p| p.as_str()).collect();
            let mut entries = dirs::collapse(&paths, &rule, true);
            dirs::sort_entries(&mut entries, &rule, true);
            let entries = entries
                .into_iter()
                .take(FILES_LISTED)
                .map(|e| DirEntry {
                    path: shown(e.path).into_owned(),
                    people: Some(crate::model::escape::text(e.path).into_owned()),
                    dir: e.dir,
                    files: e.members.len() as u64,
                    processes: None,
                    top: Vec::new(),
                })
                .collect();
            (
                all.into_iter()
                    .take(FILES_LISTED)
                    .map(|p| shown(p).into_owned())
                    .collect(),
                n,
                entries,
            )
        };
        both.into_iter()
            .filter_map(|(k, a, b)| {
                let (newly_read, newly_read_count, newly_read_dirs) = listed(&b.reads, &a.reads);
                let (no_longer_read, no_longer_read_count, no_longer_read_dirs) = listed(&a.reads, &b.reads);
                let (newly_written, newly_written_count, newly_written_dirs) = listed(&b.writes, &a.writes);
                let (no_longer_written, no_longer_written_count, no_longer_written_dirs) =
                    listed(&a.writes, &b.writes);
                (newly_read_count + no_longer_read_count + newly_written_count + no_longer_written_count > 0)
                    .then(|| FilesChange {
                        argv: redacted(k, o.redact),
                        newly_read,
                        newly_read_count,
                        no_longer_read,
                        no_longer_read_count,
                        newly_written,
                        newly_written_count,
                        no_longer_written,
                        no_longer_written_count,
                        newly_read_dirs,
                        no_longer_read_dirs,
                        newly_written_dirs,
                        no_longer_written_dirs,
                    })
            })
            .collect()
    });
    let (cpu_old, rss_old) = run_costs(old);
    let (cpu_new, rss_new) = run_costs(new);
    let (mut po, _) = path_of(old, o.redact);
    let (mut pn, path_rows) = path_of(new, o.redact);
    pair_paths(&mut pn, &mut po);
    DiffReport {
        wall_s: OldNew {
            old: secs(wall(old.header, old.tracker, old.summary).1),
            new: secs(wall(new.header, new.tracker, new.summary).1),
        },
        runs: OldNew {
            old: run_info(old, o.redact),
            new: run_info(new, o.redact),
        },
        critical_path: OldNew { old: po, new: pn },
        path_rows,
        threshold: Threshold {
            pct: o.threshold_pct,
            min_ms: o.min_ms,
            min_rss_mib: o.min_rss_mib,
        },
        new: new_list,
        gone,
        failed,
        fixed,
        slower,
        faster,
        regions: compare_regions(old, new, o),
        cpu_s: OldNew {
            old: cpu_old,
            new: cpu_new,
        },
        max_rss_kib: OldNew {
            old: rss_old,
            new: rss_new,
        },
        costs,
        files,
    }
}

impl DiffReport {
    /// The wall time grew by more than `pct` percent (`--fail-if-slower`).
    pub fn slower_than(&self, pct: f64) -> bool {
        self.wall_s.new > self.wall_s.old * (1.0 + pct / 100.0)
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests;
