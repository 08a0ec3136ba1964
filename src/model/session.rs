//! What a session is, as every output and input sees it: the [`Header`] known before the first
//! event (what was asked, when, by which proctrace) and the [`Summary`] known at the end (the
//! command's status, the model's and the capture's counters). Outputs learn about the session and
//! the tool only from these, never from the environment or the clock.

use crate::model::event::ExitStatus;
use crate::model::tracker::TrackerStats;

/// How the session was asked for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `proctrace run -- CMD`.
    Run {
        /// The command.
        argv: Vec<String>,
    },
    /// `proctrace watch`, optionally limited to a subtree.
    Watch {
        /// `-p PID`.
        root: Option<i32>,
    },
    /// Replay of a recorded capture.
    Replay {
        /// The capture file.
        path: String,
    },
    /// `proctrace analyze` of saved traces that record no session of their own (Trace2 streams).
    Analyze {
        /// The files and directories read.
        inputs: Vec<String>,
    },
}

/// proctrace itself, as the outputs describe it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tool {
    /// Its pid.
    pub pid: u32,
    /// Its command line, credentials redacted ([`crate::redact::own_argv`]).
    pub argv: Vec<String>,
    /// Its version.
    pub version: String,
    /// `GIT_TRACE2_PARENT_SID` it was started with: its trace2 session nests under it.
    pub parent_sid: Option<String>,
    /// The host name, hashed into trace2 SIDs as git does (`None`: git's `Localhost`).
    #[serde(default)]
    pub host: Option<String>,
    /// The local time zone at start, seconds east of UTC: trace2's normal and perf targets print
    /// local time (`None`: UTC).
    #[serde(default)]
    pub utc_offset: Option<i64>,
}

impl Tool {
    /// This process, read once at start (the only place outputs learn about the environment).
    /// Its command line is read as bytes (any argument, UTF-8 or not, see
    /// [`crate::model::bytes`]) and redacted here, always: proctrace's own credentials
    /// (`--otlp=http://user:secret@host`) never enter the model, so no output can show them,
    /// whatever `--no-redact` says (docs/outputs.md, "Redaction").
    pub fn this_process() -> Tool {
        let argv: Vec<String> = std::env::args_os()
            .map(crate::model::bytes::from_os_string)
            .collect();
        Tool {
            pid: std::process::id(),
            argv: crate::redact::own_argv(&argv),
            version: env!("CARGO_PKG_VERSION").to_string(),
            parent_sid: std::env::var("GIT_TRACE2_PARENT_SID")
                .ok()
                .filter(|s| !s.is_empty()),
            host: ::trace2::hostname().map(|h| String::from_utf8_lossy(&h).into_owned()),
            utc_offset: Some(::trace2::Timestamp::now().local_utc_offset()),
        }
    }
}

/// Session facts known before the first event. Everything an output says about the session and
/// the tool comes from here, never from the environment or the clock, so an output is a function
/// of header, events and summary — and a recorded capture replays to the same bytes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Header {
    /// What was asked.
    pub mode: Mode,
    /// Monotonic start.
    pub ts: u64,
    /// CLOCK_REALTIME − CLOCK_MONOTONIC at start, ns: add it to any `ts` for wall time.
    pub real_minus_mono: i64,
    /// proctrace itself.
    pub tool: Tool,
    /// The backend (`ebpf`, `connector`, `ptrace`); `None` when replaying a capture that does
    /// not say.
    pub backend: Option<String>,
    /// The backends `--backend auto` tried before this one, each as `name: why it was refused`,
    /// in the order tried (empty when the first one ran or one was named).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    /// `--files`: the trace has the files each process used (`file` events).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub files: bool,
    /// `run --include-daemons`: the daemons found running at the start whose new work was
    /// followed (each appears in the trace, as a node `ran in …`, only if it started a process
    /// during the run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub daemons: Vec<Followed>,
}

/// A daemon `run --include-daemons` followed: its kind and pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Followed {
    /// What it is (by its client's name: `sccache`, `bazel`, `docker`).
    pub daemon: crate::model::elsewhere::DaemonKind,
    /// Its pid.
    pub pid: i32,
}

impl Header {
    /// proctrace's own Trace2 session id: the SID its trace2 outputs give the session, and the
    /// `GIT_TRACE2_PARENT_SID` that `run --trace2` hands the command, so git's sessions nest
    /// under it. Nested under the `GIT_TRACE2_PARENT_SID` proctrace was started with.
    pub fn trace2_sid(&self) -> String {
        let wall = ::trace2::Timestamp::from_micros((self.ts as i128 + self.real_minus_mono as i128) / 1000);
        let host = self.tool.host.as_deref().map(str::as_bytes);
        let comp = ::trace2::Sid::component_with_host(self.tool.pid, wall, host);
        ::trace2::Sid::nested(self.tool.parent_sid.as_deref(), &comp)
            .as_str()
            .to_string()
    }
}

/// What the capture layer reported.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CaptureSummary {
    /// Datagrams not from the kernel or malformed, dropped unread.
    pub rejected: u64,
    /// Overflow episodes (ENOBUFS).
    pub overflows: u64,
    /// The socket's own drop counter (`SO_MEMINFO`), for cross-checking `lost`.
    pub socket_drops: u64,
    /// Events received from the kernel (all processes, before scoping).
    pub events: u64,
    /// Receive buffer granted, bytes.
    pub receive_buffer: u64,
    /// Taskstats exit records the kernel dropped (the taskstats socket was full): processes
    /// whose exit lines lack cost figures (connector backend; 0 when not used).
    #[serde(default)]
    pub usage_lost: u64,
    /// Processes left without figures because the record of one of their threads was lost.
    #[serde(default)]
    pub usage_incomplete: u64,
    /// Processes the capture found that it never saw start (ptrace: a `clone(CLONE_UNTRACED)`
    /// child, found when it exits as proctrace's child or signals a traced parent): they and
    /// their descendants are missing from the trace, which is known to be incomplete.
    #[serde(default)]
    pub untraced: u64,
    /// File events the kernel dropped (`--files`: fanotify's queue overflowed).
    #[serde(default)]
    pub files_lost: u64,
}

impl Summary {
    /// Whether the trace is known to be incomplete: events were lost, or processes ran that
    /// the capture never saw start. No output may call such a trace complete ("0 events lost").
    pub fn incomplete(&self) -> bool {
        self.stats.lost > 0 || self.capture.untraced > 0
    }
}

/// Session facts known at the end.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Monotonic end.
    pub ts: u64,
    /// The traced command's status (`run`).
    pub status: Option<ExitStatus>,
    /// Tracker counters.
    pub stats: TrackerStats,
    /// Capture counters.
    pub capture: CaptureSummary,
    /// Processes left running when the command ended.
    pub background: u64,
    /// The traced command's pid (`run`).
    pub root: Option<i32>,
    /// CPU time proctrace itself used (user + system, all threads), ns.
    pub tracer_cpu_ns: Option<u64>,
    /// The backend that ran.
    pub backend: Option<String>,
    /// How argv was read: `realtime`, `nice`, `normal` (the connector's reader thread),
    /// `exec-stop` (ptrace), `off`.
    pub argv_reader: Option<String>,
    /// Facts a `watch` filter kept from the outputs (`None`: no filter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filtered: Option<u64>,
}
