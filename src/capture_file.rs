//! The `--record` capture format: one JSON object a line — a header, every event the model was
//! fed (with the `/proc` details the live run read), and the summary — so that `replay` and
//! `analyze` give exactly what the live run gave. Documented in docs/capture-format.md.
//!
//! The format is its own, declared here, not the serde shape of the in-memory [`Event`]: the
//! line types below are a serde *remote* definition of `Event`, field by field, so a change to
//! the model's enum does not change the file unless it is made here too (the compiler checks the
//! two agree). The header line carries the format's [`VERSION`]; a capture without one is
//! version 1 (proctrace before the version was written), whose lines are read by the same
//! definitions. A newer version than this proctrace knows is refused, not guessed at.
//!
//! Writer: [`crate::sink::record`]. Reader: [`crate::input::capture`].

use serde::{Deserialize, Serialize};

use crate::model::event::{Data, Event, ExecDetails, FileAccess, KernelName, Pid, Region, Usage};
use crate::model::session::{Header, Summary};
use crate::model::tracker::BackgroundState;

/// The capture format's version, written in the header line.
pub const VERSION: u32 = 4;

/// The events of a capture, one line each: `{"e":"fork","ts":…,"parent_tgid":…,…}`. Times are
/// CLOCK_MONOTONIC nanoseconds; ids the kernel's (initial pid namespace).
#[derive(Serialize, Deserialize)]
#[serde(remote = "Event", tag = "e", rename_all = "snake_case")]
pub enum EventLine {
    /// `fork`: a new task; `child_pid != child_tgid` is a thread.
    Fork {
        /// When.
        ts: u64,
        /// The real parent process.
        parent_tgid: Pid,
        /// The new task.
        child_pid: Pid,
        /// Its process.
        child_tgid: Pid,
    },
    /// `exec`: a successful exec.
    Exec {
        /// When.
        ts: u64,
        /// The process.
        tgid: Pid,
    },
    /// `exec_details`: what the process runs after its latest exec (argv, exe, cwd, uid, comm,
    /// and from version 4 the exec'd path, `filename`, when the backend knew it).
    ExecDetails {
        /// The process.
        tgid: Pid,
        /// What `/proc` said.
        details: ExecDetails,
    },
    /// `exit`: a task exited with a wait status.
    Exit {
        /// When.
        ts: u64,
        /// The task.
        pid: Pid,
        /// Its process.
        tgid: Pid,
        /// The wait status.
        status: u32,
        /// The parent the kernel reported at exit.
        parent_tgid: Pid,
    },
    /// `coredump`.
    Coredump {
        /// When.
        ts: u64,
        /// The process.
        tgid: Pid,
    },
    /// `uid`.
    Uid {
        /// When.
        ts: u64,
        /// The process.
        tgid: Pid,
        /// Real uid.
        ruid: u32,
        /// Effective uid.
        euid: u32,
    },
    /// `gid`.
    Gid {
        /// When.
        ts: u64,
        /// The process.
        tgid: Pid,
        /// Real gid.
        rgid: u32,
        /// Effective gid.
        egid: u32,
    },
    /// `sid`: became a session leader.
    Sid {
        /// When.
        ts: u64,
        /// The process.
        tgid: Pid,
    },
    /// `ptrace`: a tracer attached (or detached: 0).
    Ptrace {
        /// When.
        ts: u64,
        /// The traced process.
        tgid: Pid,
        /// The tracer.
        tracer: Pid,
    },
    /// `comm`: a thread renamed.
    Comm {
        /// When.
        ts: u64,
        /// The task.
        pid: Pid,
        /// Its process.
        tgid: Pid,
        /// The new name.
        comm: String,
    },
    /// `ancestry`: a parent read from `/proc` after events were lost.
    Ancestry {
        /// The process.
        tgid: Pid,
        /// Its parent.
        ppid: Pid,
        /// Its start, from `/proc`.
        start_ns: Option<u64>,
    },
    /// `root`: the traced command.
    Root {
        /// Its process.
        tgid: Pid,
    },
    /// `existing`: a process already running when `watch -p` began (or, with `daemon`, a
    /// daemon `run --include-daemons` followed, taken in at its first new process).
    Existing {
        /// The process.
        tgid: Pid,
        /// Its parent.
        ppid: Pid,
        /// Its start, from `/proc`.
        start_ns: Option<u64>,
        /// What it runs.
        details: Option<ExecDetails>,
        /// When `/proc` was read for it: its fork and exec stamped earlier are not applied
        /// again (absent from earlier proctraces' captures, which replay such duplicates as they were).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seen_ns: Option<u64>,
        /// The daemon's kind (`sccache`, …): a node of its own.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        daemon: Option<crate::model::elsewhere::DaemonKind>,
    },
    /// `background`: it outlived the command.
    Background {
        /// When.
        ts: u64,
        /// The process.
        tgid: Pid,
        /// `ready`, `timeout` or `error`.
        state: BackgroundState,
        /// Reported now, or only marked.
        report: bool,
    },
    /// `gone`: found gone without an exit event.
    Gone {
        /// When.
        ts: u64,
        /// The process.
        tgid: Pid,
    },
    /// `region`: a Trace2 region the process reported.
    Region {
        /// The process.
        tgid: Pid,
        /// The region.
        region: Region,
    },
    /// `data`: a Trace2 value the process reported.
    Data {
        /// The process.
        tgid: Pid,
        /// The value.
        data: Data,
    },
    /// `usage`: what the process cost.
    Usage {
        /// The process.
        tgid: Pid,
        /// Its figures.
        usage: Box<Usage>,
    },
    /// `exit_name`: the kernel's name of the process when it exited (bytes-in-text).
    ExitName {
        /// The process.
        tgid: Pid,
        /// Its `comm` at exit.
        #[serde(with = "kernel_name")]
        comm: KernelName,
    },
    /// `file`: a process used a file (`--files`).
    File {
        /// When.
        ts: u64,
        /// The process.
        tgid: Pid,
        /// How.
        access: FileAccess,
        /// The path (bytes-in-text).
        path: String,
        /// A rename's new path.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<String>,
    },
    /// `lost`: events the backend knows it missed.
    Lost {
        /// When, if known.
        ts: Option<u64>,
        /// How many.
        count: u64,
    },
}

/// A [`KernelName`] as text, its bytes held as the model holds bytes in text
/// ([`crate::model::bytes`]).
mod kernel_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::model::bytes;
    use crate::model::event::KernelName;

    pub fn serialize<S: Serializer>(k: &KernelName, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&bytes::encode(k.as_bytes()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<KernelName, D::Error> {
        let s = std::borrow::Cow::<str>::deserialize(d)?;
        KernelName::new(&bytes::decode(&s)).ok_or_else(|| serde::de::Error::custom("an empty \"comm\""))
    }
}

/// The header and summary lines.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "e", rename_all = "snake_case")]
pub enum SessionLine {
    /// `header`, the first line.
    Header {
        /// The format's version (absent: 1).
        #[serde(default = "version_1")]
        version: u32,
        /// The session's header.
        header: Header,
    },
    /// `summary`, the last line (absent when the recorder was killed).
    Summary {
        /// The session's summary.
        summary: Summary,
    },
}

fn version_1() -> u32 {
    1
}

/// One line of a capture, read.
#[derive(Debug)]
pub enum Line {
    /// The header (first line).
    Header(Header),
    /// An event.
    Event(Event),
    /// The summary (last line).
    Summary(Summary),
}

/// Why a capture line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// Not a capture line.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// A header of a version this proctrace does not know.
    #[error("a capture of format version {0}; this proctrace reads versions 1 to {VERSION}")]
    Version(u32),
}

impl LineError {
    /// The line ended early (a cut-off last line).
    pub fn is_eof(&self) -> bool {
        matches!(self, LineError::Json(e) if e.is_eof())
    }
}

/// Parses one capture line (without its newline).
pub fn parse_line(line: &[u8]) -> Result<Line, LineError> {
    // Events are nearly every line; header and summary lines are told by their tag, which
    // proctrace writes first. A line whose tag is not first (`jq -S` sorts keys) is tried as both.
    match session_tag_first(line) {
        Some(true) => session_line(line),
        Some(false) => event_line(line),
        None => event_line(line).or_else(|e| session_line(line).map_err(|_| e)),
    }
}

fn event_line(line: &[u8]) -> Result<Line, LineError> {
    let mut de = serde_json::Deserializer::from_slice(line);
    let ev = EventLine::deserialize(&mut de)?;
    de.end()?;
    Ok(Line::Event(ev))
}

fn session_line(line: &[u8]) -> Result<Line, LineError> {
    match serde_json::from_slice::<SessionLine>(line)? {
        SessionLine::Header { version, header } if (1..=VERSION).contains(&version) => {
            Ok(Line::Header(header))
        }
        SessionLine::Header { version, .. } => Err(LineError::Version(version)),
        SessionLine::Summary { summary } => Ok(Line::Summary(summary)),
    }
}

/// With the tag first (`{"e":"…"`, spaces allowed): whether it is a header or summary line.
/// `None` when the first key is not the tag.
fn session_tag_first(line: &[u8]) -> Option<bool> {
    let rest = line.trim_ascii_start().strip_prefix(b"{")?;
    let rest = rest.trim_ascii_start().strip_prefix(b"\"e\"")?;
    let rest = rest.trim_ascii_start().strip_prefix(b":")?.trim_ascii_start();
    Some(rest.starts_with(b"\"header\"") || rest.starts_with(b"\"summary\""))
}

/// Appends the header line (with [`VERSION`]) to `out`.
pub fn write_header(out: &mut Vec<u8>, header: &Header) -> serde_json::Result<()> {
    #[derive(Serialize)]
    struct HeaderLine<'a> {
        e: &'static str,
        version: u32,
        header: &'a Header,
    }
    serde_json::to_writer(
        &mut *out,
        &HeaderLine {
            e: "header",
            version: VERSION,
            header,
        },
    )?;
    out.push(b'\n');
    Ok(())
}

/// Appends one event line to `out`.
pub fn write_event(out: &mut Vec<u8>, ev: &Event) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::new(&mut *out);
    EventLine::serialize(ev, &mut ser)?;
    out.push(b'\n');
    Ok(())
}

/// Appends the summary line to `out`.
pub fn write_summary(out: &mut Vec<u8>, summary: &Summary) -> serde_json::Result<()> {
    #[derive(Serialize)]
    struct SummaryLine<'a> {
        e: &'static str,
        summary: &'a Summary,
    }
    serde_json::to_writer(
        &mut *out,
        &SummaryLine {
            e: "summary",
            summary,
        },
    )?;
    out.push(b'\n');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every recorded fixture (version 1: written before the version was) reads, and its events
    /// write back to lines that read as the same events (byte for byte, but for the order of a
    /// region's keys in the oldest fixtures).
    #[test]
    fn version_1_captures_read_and_their_events_write_back_the_same() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/captures");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read(entry.unwrap().path()).unwrap();
            for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                match parse_line(line).unwrap() {
                    Line::Event(ev) => {
                        let mut out = Vec::new();
                        write_event(&mut out, &ev).unwrap();
                        let back = parse_line(out.trim_ascii_end()).unwrap();
                        assert!(
                            matches!(&back, Line::Event(b) if *b == ev),
                            "{}",
                            String::from_utf8_lossy(line)
                        );
                        if !matches!(ev, Event::Region { .. }) {
                            assert_eq!(out.trim_ascii_end(), line, "{}", String::from_utf8_lossy(line));
                        }
                        n += 1;
                    }
                    Line::Header(_) | Line::Summary(_) => {}
                }
            }
        }
        assert!(n > 400, "{n} events");
    }

    #[test]
    fn the_header_says_its_version_and_a_newer_one_is_refused() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/captures/make-j2.jsonl"),
        )
        .unwrap();
        let Line::Header(h) = parse_line(text.lines().next().unwrap().as_bytes()).unwrap() else {
            panic!("not a header")
        };
        let mut out = Vec::new();
        write_header(&mut out, &h).unwrap();
        assert!(
            out.starts_with(format!("{{\"e\":\"header\",\"version\":{VERSION},\"header\":{{").as_bytes()),
            "{}",
            String::from_utf8_lossy(&out)
        );
        assert!(matches!(parse_line(out.trim_ascii_end()).unwrap(), Line::Header(back) if back == h));
        let newer = String::from_utf8(out).unwrap().replace(
            &format!("\"version\":{VERSION}"),
            &format!("\"version\":{}", VERSION + 1),
        );
        let e = parse_line(newer.trim_end().as_bytes()).unwrap_err();
        assert!(
            e.to_string().contains(&format!("format version {}", VERSION + 1)),
            "{e}"
        );
        // Version 4's exec'd path: read back, and absent when not known (as older versions).
        let d = "{\"e\":\"exec_details\",\"tgid\":7,\"details\":{\"argv\":[\"/bin/sh\",\"./configure\"],\"exe\":\"/usr/bin/dash\",\"cwd\":\"/src\",\"uid\":0,\"comm\":\"sh\",\"filename\":\"./configure\"}}";
        let Line::Event(ev) = parse_line(d.as_bytes()).unwrap() else {
            panic!("not an event")
        };
        assert!(
            matches!(&ev, Event::ExecDetails { details, .. } if details.filename.as_deref() == Some("./configure")),
            "{ev:?}"
        );
        let mut out = Vec::new();
        write_event(&mut out, &ev).unwrap();
        assert_eq!(out.trim_ascii_end(), d.as_bytes());
        let old = d.replace(",\"filename\":\"./configure\"", "");
        let Line::Event(Event::ExecDetails { details, .. }) = parse_line(old.as_bytes()).unwrap() else {
            panic!("not exec details")
        };
        assert_eq!(details.filename, None);
        let mut out = Vec::new();
        write_event(&mut out, &Event::ExecDetails { tgid: 7, details }).unwrap();
        assert_eq!(out.trim_ascii_end(), old.as_bytes());
        // Spaces, as any JSON tool may write them.
        let spaced = "{ \"e\" : \"exec\" , \"ts\" : 5 , \"tgid\" : 7 }";
        assert!(matches!(
            parse_line(spaced.as_bytes()).unwrap(),
            Line::Event(Event::Exec { ts: 5, tgid: 7 })
        ));
    }
}
