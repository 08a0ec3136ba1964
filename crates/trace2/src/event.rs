//! The vocabulary: one typed [`Event`] per line git's Trace2 can write
//! (event format version "4", git 2.47).
//!
//! An [`Event`] is plain data: the common header every target needs (SID,
//! thread, wall time, source location, repo id, the thread's region nesting
//! and the process-relative `t_abs`) plus an [`EventKind`] with the
//! event-specific fields. The instrumentation API builds them; the reader
//! produces them; the formatters turn them into bytes. Nothing here does I/O.

use std::borrow::Cow;

use crate::time::Timestamp;

/// A string that is borrowed while emitting and owned after reading.
pub type Str<'a> = Cow<'a, str>;

/// The format version this crate writes in `version.evt`.
pub const EVENT_FORMAT_VERSION: &str = "4";

/// One Trace2 event with its common header.
#[derive(Debug, Clone, PartialEq)]
pub struct Event<'a> {
    /// Full session id (`parent/…/component`).
    pub sid: Str<'a>,
    /// Thread name: `main`, `thNN:<name>` (at most 24 bytes).
    pub thread: Str<'a>,
    /// Wall-clock time of the event. `None` in brief event streams (except
    /// `version` and `atexit`); formatters then use the current time if they
    /// need one.
    pub time: Option<Timestamp>,
    /// Source file of the caller (omitted from output when `None` or empty).
    pub file: Option<Str<'a>>,
    /// Source line of the caller.
    pub line: u32,
    /// Repository id, present only on events whose call carried a repository
    /// (`def_repo` always; `region_*`, `data`, `data_json` optionally).
    pub repo: Option<i64>,
    /// The thread's region nesting at emission time (1 outside any region).
    /// Written as `nesting` for region and data events; perf draws
    /// `2 × (nesting − 1)` dots from it on every line.
    pub nesting: u32,
    /// Seconds since the process started. Written as `t_abs` by the events
    /// that carry it; the perf target shows it in its `t_abs` column for
    /// more events than the event target does.
    pub t_abs: Option<f64>,
    /// The event-specific part.
    pub kind: EventKind<'a>,
}

/// The state a background child was released in (`child_ready.ready`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadyState {
    /// The readiness probe said the child is ready.
    Ready,
    /// The child was still not ready when the timeout expired.
    Timeout,
    /// The probe failed.
    Error,
}

impl ReadyState {
    /// The string git writes.
    pub fn as_str(&self) -> &'static str {
        match self {
            ReadyState::Ready => "ready",
            ReadyState::Timeout => "timeout",
            ReadyState::Error => "error",
        }
    }

    /// Parses git's string.
    pub fn parse(s: &str) -> Option<ReadyState> {
        match s {
            "ready" => Some(ReadyState::Ready),
            "timeout" => Some(ReadyState::Timeout),
            "error" => Some(ReadyState::Error),
            _ => None,
        }
    }
}

/// The event-specific fields, in git's key order.
#[derive(Debug, Clone, PartialEq)]
pub enum EventKind<'a> {
    /// First event of a process: format version and program version.
    Version {
        /// Event format version (`"4"`).
        evt: Str<'a>,
        /// Program version string.
        exe: Str<'a>,
    },
    /// Only in a directory target's `git-trace2-discard` sentinel, after `version`.
    TooManyFiles,
    /// The command line (`t_abs` in the header).
    Start {
        /// Arguments as received (redacted).
        argv: Vec<Str<'a>>,
    },
    /// The process called exit (`t_abs` in the header).
    Exit {
        /// Exit code, `& 0xff`.
        code: i32,
    },
    /// Last event of a normal run (`t_abs` in the header).
    Atexit {
        /// Exit code.
        code: i32,
    },
    /// The process was killed by a signal it hooked (`t_abs` in the header).
    Signal {
        /// Signal number.
        signo: i32,
    },
    /// An error message.
    Error {
        /// The formatted message (absent when the format is empty).
        msg: Option<Str<'a>>,
        /// The raw format string.
        fmt: Option<Str<'a>>,
    },
    /// Full path of the executable.
    CmdPath {
        /// The path.
        path: Str<'a>,
    },
    /// Parent process names, parent first.
    CmdAncestry {
        /// Names from `/proc/<pid>/stat`.
        ancestry: Vec<Str<'a>>,
    },
    /// The command's name, and its place in the hierarchy of traced parents.
    CmdName {
        /// Name.
        name: Str<'a>,
        /// `parent/…/name`.
        hierarchy: Option<Str<'a>>,
    },
    /// A sub-mode of the command.
    CmdMode {
        /// The mode name.
        name: Str<'a>,
    },
    /// An alias expansion.
    Alias {
        /// The alias.
        alias: Str<'a>,
        /// What it expanded to.
        argv: Vec<Str<'a>>,
    },
    /// A child process is about to start (`t_abs` in the header, perf only).
    ChildStart {
        /// Per-process child id, from 0.
        child_id: i64,
        /// Class (`?` when unknown, `hook` when `hook_name` is set).
        child_class: Str<'a>,
        /// Hook name for hooks.
        hook_name: Option<Str<'a>>,
        /// Working directory of the child, if changed.
        cd: Option<Str<'a>>,
        /// Whether the child runs through a shell.
        use_shell: bool,
        /// Whether this is a git command (`git` is then prepended to argv
        /// on output). Readers set it to `false` and keep `git` in argv.
        git_cmd: bool,
        /// Arguments (redacted).
        argv: Vec<Str<'a>>,
    },
    /// A child process ended.
    ChildExit {
        /// Child id from `child_start`.
        child_id: i64,
        /// Process id (−1 when the spawn failed).
        pid: i64,
        /// Exit status, `128 + signal` for a signalled child, −1 on failure.
        code: i32,
        /// Seconds since `child_start`.
        t_rel: f64,
    },
    /// A background child was released.
    ChildReady {
        /// Child id from `child_start`.
        child_id: i64,
        /// Process id.
        pid: i64,
        /// Its state when released.
        ready: ReadyState,
        /// Seconds since `child_start`.
        t_rel: f64,
    },
    /// The process is about to exec another program.
    Exec {
        /// Per-process exec id, from 0.
        exec_id: i64,
        /// The program.
        exe: Option<Str<'a>>,
        /// Arguments (redacted).
        argv: Vec<Str<'a>>,
    },
    /// An exec failed.
    ExecResult {
        /// Exec id.
        exec_id: i64,
        /// errno.
        code: i32,
    },
    /// A thread started (written by the thread itself).
    ThreadStart,
    /// A thread is ending.
    ThreadExit {
        /// Thread run time in seconds.
        t_rel: f64,
    },
    /// A setting worth recording.
    DefParam {
        /// Config scope (`system global local worktree command submodule unknown`).
        scope: Option<Str<'a>>,
        /// Parameter name.
        param: Str<'a>,
        /// Value (absent for a valueless entry).
        value: Option<Str<'a>>,
    },
    /// A repository was opened (`repo` in the header).
    DefRepo {
        /// Its worktree.
        worktree: Str<'a>,
    },
    /// A region was entered.
    RegionEnter {
        /// Category.
        category: Option<Str<'a>>,
        /// Label.
        label: Option<Str<'a>>,
        /// Message.
        msg: Option<Str<'a>>,
    },
    /// A region was left.
    RegionLeave {
        /// Seconds spent in the region.
        t_rel: f64,
        /// Category.
        category: Option<Str<'a>>,
        /// Label.
        label: Option<Str<'a>>,
        /// Message.
        msg: Option<Str<'a>>,
    },
    /// A key/value pair.
    Data {
        /// Seconds since the innermost region (or thread) started.
        t_rel: f64,
        /// Category.
        category: Str<'a>,
        /// Key.
        key: Str<'a>,
        /// Value, always a string.
        value: Str<'a>,
    },
    /// A key with a JSON value.
    DataJson {
        /// Seconds since the innermost region (or thread) started.
        t_rel: f64,
        /// Category.
        category: Str<'a>,
        /// Key.
        key: Str<'a>,
        /// Compact JSON, embedded verbatim.
        value: Str<'a>,
    },
    /// A free-form message.
    Printf {
        /// The message.
        msg: Option<Str<'a>>,
    },
    /// A timer's totals: `timer` for the process, `th_timer` for one thread.
    Timer {
        /// `true` for `th_timer`.
        per_thread: bool,
        /// Category.
        category: Str<'a>,
        /// Name.
        name: Str<'a>,
        /// Number of start/stop intervals.
        intervals: u64,
        /// Total seconds.
        t_total: f64,
        /// Shortest interval.
        t_min: f64,
        /// Longest interval.
        t_max: f64,
    },
    /// A counter's value: `counter` for the process, `th_counter` for one thread.
    Counter {
        /// `true` for `th_counter`.
        per_thread: bool,
        /// Category.
        category: Str<'a>,
        /// Name.
        name: Str<'a>,
        /// Value.
        count: u64,
    },
    /// An event this crate does not know (read from a newer or foreign
    /// producer). Formatters write nothing for it.
    Other {
        /// The `event` value.
        name: Str<'a>,
    },
}

impl EventKind<'_> {
    /// The `event` name git writes for this kind.
    pub fn name(&self) -> &str {
        match self {
            EventKind::Version { .. } => "version",
            EventKind::TooManyFiles => "too_many_files",
            EventKind::Start { .. } => "start",
            EventKind::Exit { .. } => "exit",
            EventKind::Atexit { .. } => "atexit",
            EventKind::Signal { .. } => "signal",
            EventKind::Error { .. } => "error",
            EventKind::CmdPath { .. } => "cmd_path",
            EventKind::CmdAncestry { .. } => "cmd_ancestry",
            EventKind::CmdName { .. } => "cmd_name",
            EventKind::CmdMode { .. } => "cmd_mode",
            EventKind::Alias { .. } => "alias",
            EventKind::ChildStart { .. } => "child_start",
            EventKind::ChildExit { .. } => "child_exit",
            EventKind::ChildReady { .. } => "child_ready",
            EventKind::Exec { .. } => "exec",
            EventKind::ExecResult { .. } => "exec_result",
            EventKind::ThreadStart => "thread_start",
            EventKind::ThreadExit { .. } => "thread_exit",
            EventKind::DefParam { .. } => "def_param",
            EventKind::DefRepo { .. } => "def_repo",
            EventKind::RegionEnter { .. } => "region_enter",
            EventKind::RegionLeave { .. } => "region_leave",
            EventKind::Data { .. } => "data",
            EventKind::DataJson { .. } => "data_json",
            EventKind::Printf { .. } => "printf",
            EventKind::Timer { per_thread: true, .. } => "th_timer",
            EventKind::Timer { .. } => "timer",
            EventKind::Counter { per_thread: true, .. } => "th_counter",
            EventKind::Counter { .. } => "counter",
            EventKind::Other { name } => name,
        }
    }
}

fn own(s: &Str<'_>) -> Str<'static> {
    Cow::Owned(s.to_string())
}

fn own_opt(s: &Option<Str<'_>>) -> Option<Str<'static>> {
    s.as_ref().map(own)
}

fn own_vec(v: &[Str<'_>]) -> Vec<Str<'static>> {
    v.iter().map(own).collect()
}

impl Event<'_> {
    /// A new event with the given header fields, no time, file or repo,
    /// nesting 1.
    pub fn new<'b>(sid: impl Into<Str<'b>>, thread: impl Into<Str<'b>>, kind: EventKind<'b>) -> Event<'b> {
        Event {
            sid: sid.into(),
            thread: thread.into(),
            time: None,
            file: None,
            line: 0,
            repo: None,
            nesting: 1,
            t_abs: None,
            kind,
        }
    }

    /// Copies every borrowed string so the event can outlive its sources.
    pub fn into_owned(&self) -> Event<'static> {
        use EventKind as K;
        let kind = match &self.kind {
            K::Version { evt, exe } => K::Version {
                evt: own(evt),
                exe: own(exe),
            },
            K::TooManyFiles => K::TooManyFiles,
            K::Start { argv } => K::Start { argv: own_vec(argv) },
            K::Exit { code } => K::Exit { code: *code },
            K::Atexit { code } => K::Atexit { code: *code },
            K::Signal { signo } => K::Signal { signo: *signo },
            K::Error { msg, fmt } => K::Error {
                msg: own_opt(msg),
                fmt: own_opt(fmt),
            },
            K::CmdPath { path } => K::CmdPath { path: own(path) },
            K::CmdAncestry { ancestry } => K::CmdAncestry {
                ancestry: own_vec(ancestry),
            },
            K::CmdName { name, hierarchy } => K::CmdName {
                name: own(name),
                hierarchy: own_opt(hierarchy),
            },
            K::CmdMode { name } => K::CmdMode { name: own(name) },
            K::Alias { alias, argv } => K::Alias {
                alias: own(alias),
                argv: own_vec(argv),
            },
            K::ChildStart {
                child_id,
                child_class,
                hook_name,
                cd,
                use_shell,
                git_cmd,
                argv,
            } => K::ChildStart {
                child_id: *child_id,
                child_class: own(child_class),
                hook_name: own_opt(hook_name),
                cd: own_opt(cd),
                use_shell: *use_shell,
                git_cmd: *git_cmd,
                argv: own_vec(argv),
            },
            K::ChildExit {
                child_id,
                pid,
                code,
                t_rel,
            } => K::ChildExit {
                child_id: *child_id,
                pid: *pid,
                code: *code,
                t_rel: *t_rel,
            },
            K::ChildReady {
                child_id,
                pid,
                ready,
                t_rel,
            } => K::ChildReady {
                child_id: *child_id,
                pid: *pid,
                ready: *ready,
                t_rel: *t_rel,
            },
            K::Exec { exec_id, exe, argv } => K::Exec {
                exec_id: *exec_id,
                exe: own_opt(exe),
                argv: own_vec(argv),
            },
            K::ExecResult { exec_id, code } => K::ExecResult {
                exec_id: *exec_id,
                code: *code,
            },
            K::ThreadStart => K::ThreadStart,
            K::ThreadExit { t_rel } => K::ThreadExit { t_rel: *t_rel },
            K::DefParam { scope, param, value } => K::DefParam {
                scope: own_opt(scope),
                param: own(param),
                value: own_opt(value),
            },
            K::DefRepo { worktree } => K::DefRepo {
                worktree: own(worktree),
            },
            K::RegionEnter { category, label, msg } => K::RegionEnter {
                category: own_opt(category),
                label: own_opt(label),
                msg: own_opt(msg),
            },
            K::RegionLeave {
                t_rel,
                category,
                label,
                msg,
            } => K::RegionLeave {
                t_rel: *t_rel,
                category: own_opt(category),
                label: own_opt(label),
                msg: own_opt(msg),
            },
            K::Data {
                t_rel,
                category,
                key,
                value,
            } => K::Data {
                t_rel: *t_rel,
                category: own(category),
                key: own(key),
                value: own(value),
            },
            K::DataJson {
                t_rel,
                category,
                key,
                value,
            } => K::DataJson {
                t_rel: *t_rel,
                category: own(category),
                key: own(key),
                value: own(value),
            },
            K::Printf { msg } => K::Printf { msg: own_opt(msg) },
            K::Timer {
                per_thread,
                category,
                name,
                intervals,
                t_total,
                t_min,
                t_max,
            } => K::Timer {
                per_thread: *per_thread,
                category: own(category),
                name: own(name),
                intervals: *intervals,
                t_total: *t_total,
                t_min: *t_min,
                t_max: *t_max,
            },
            K::Counter {
                per_thread,
                category,
                name,
                count,
            } => K::Counter {
                per_thread: *per_thread,
                category: own(category),
                name: own(name),
                count: *count,
            },
            K::Other { name } => K::Other { name: own(name) },
        };
        Event {
            sid: own(&self.sid),
            thread: own(&self.thread),
            time: self.time,
            file: own_opt(&self.file),
            line: self.line,
            repo: self.repo,
            nesting: self.nesting,
            t_abs: self.t_abs,
            kind,
        }
    }
}
