//! proctrace's own `-o` JSON Lines (the format [`crate::sink::jsonl`] writes), read back into
//! the events that made it, so `analyze` of a saved `-o` file gives the run's tree, summary and
//! outputs again (JSON Lines out equal, byte for byte, to the JSON Lines in).
//!
//! How each line becomes events:
//!
//! - `start` → the [`Header`] (mode, `ts`, `wall_offset`, backend, version; proctrace's pid and
//!   argv are not in the file: the reading proctrace's own stand in).
//! - `fork` → [`Event::Fork`] (`child_pid = child_tgid = pid`). In a `run` the first fork is the
//!   traced command: an [`Event::Root`] comes before it. A `pre_existing` fork is an
//!   [`Event::Existing`], with the details of the `exec` line that immediately follows it when
//!   that line is its synthetic exec (same time, or 0 when the start was unknown). A fork with
//!   `ts: null` that is neither is a process taken in without its fork: the root (adopted on its
//!   next event, as the live run did) or one found through `/proc` ([`Event::Ancestry`]).
//! - `exec` → [`Event::Exec`] + [`Event::ExecDetails`].
//! - `exit` → [`Event::Exit`] with the wait status rebuilt from `code`/`signal`/`core`
//!   (`core: false` means the core-dumping signal was seen without a core: an
//!   [`Event::Coredump`] first); `exit_lost` → [`Event::Gone`], which closes the process with
//!   no status exactly as the tracker closes one whose exit was lost; `background: true` on a
//!   process with no `background` line → a quiet [`Event::Background`] (`report: false`).
//! - `background`, `lost`, `uid`, `gid`, `setsid`, `ptrace`, `comm` → the event of that name.
//! - `region` → [`Event::Region`]; `data`, `timer`, `counter` → [`Event::Data`].
//! - `end` → the recorded [`Summary`] (a file from a killed proctrace has none and is still read).
//!
//! The vocabulary (event names, keys, their types, the writer's order) is
//! [`crate::model::jsonl_schema`]'s; the reference is docs/json-lines.md. Any valid JSON a JSON
//! tool writes for the same content reads to the same events (`jq -c .`, `jq -S .`, Python's
//! `json.dumps`): spaces, keys in any order or escaped, numbers in any form. Lines laid out as
//! proctrace writes them take a fast path (`Table::fill_laid_out`); any other line the general
//! scanner (`Table::scan`). Seconds are parsed exactly to nanoseconds (never through `f64`):
//! nine decimals in place, any other form (`scaled`: `5.3688e-05`, 17 digits from jq 1.6)
//! with decimal arithmetic, rounded half to even below the nanosecond. An integer may be written
//! in any form of a whole number (`3.0`, `1e+17`). Unknown keys are ignored.
//!
//! Read as a stream: memory holds the lines of the reorder window ([`super::lines`]: at most 128
//! waiting, each within the line limit), the one `pre_existing` fork waiting for its exec and the
//! pids marked background that are still alive.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::lines::{Lines, Order, jsonl_key};
use super::{Input, InputError, InputOptions, InputStats};
use crate::model::argv::ArgvBuilder;
use crate::model::elsewhere::DaemonKind;
use crate::model::event::{
    Argv, Data, DataValue, Event, ExecDetails, ExitStatus, FileAccess, KernelName, Pid, Region, Usage,
};
use crate::model::jsonl_schema::{CTX_SWITCHES_KEYS, EVENTS, EventName, Field, Key as K, Type};
use crate::model::session::{CaptureSummary, Header, Mode, Summary};
use crate::model::tracker::{BackgroundState, TrackerStats};

mod numbers;
mod scan;
mod table;

pub use numbers::parse_seconds;
use numbers::*;
use scan::*;
use table::*;

/// A process's cost from its `exit` line (the fields [`crate::sink::jsonl`] writes), if it has
/// one: `cpu_user_s` is the mark; the other fields default to 0 (delays to unknown).
fn usage(l: &Line<'_>) -> Res<Option<Usage>> {
    let Some(cpu_user_ns) = l.secs(K::CpuUserS, "cpu_user_s")? else {
        return Ok(None);
    };
    let n = |k: K, name: &str| -> Res<u64> { Ok(l.int::<u64>(k, name)?.unwrap_or(0)) };
    let (vol_ctx_switches, invol_ctx_switches) = match l.get(K::CtxSwitches) {
        None | Some(Val::Null) => (0, 0),
        Some(Val::Raw(r)) if r.starts_with('{') => ctx_switches(r)?,
        Some(_) => return Err("\"ctx_switches\" is not an object".into()),
    };
    Ok(Some(Usage {
        cpu_user_ns,
        cpu_sys_ns: l.secs(K::CpuSysS, "cpu_sys_s")?.unwrap_or(0),
        max_rss_kib: n(K::MaxRssKib, "max_rss_kib")?,
        read_chars: n(K::ReadChars, "read_chars")?,
        write_chars: n(K::WriteChars, "write_chars")?,
        read_bytes: n(K::ReadBytes, "read_bytes")?,
        write_bytes: n(K::WriteBytes, "write_bytes")?,
        cancelled_write_bytes: n(K::CancelledWriteBytes, "cancelled_write_bytes")?,
        vol_ctx_switches,
        invol_ctx_switches,
        cpu_delay_ns: l.secs(K::CpuDelayS, "cpu_delay_s")?,
        io_delay_ns: l.secs(K::IoDelayS, "io_delay_s")?,
    }))
}

fn need<T>(v: Option<T>, key: &str) -> Res<T> {
    v.ok_or_else(|| format!("missing \"{key}\""))
}

/// A `pre_existing` fork waiting for the line after it (its exec, if it has one).
struct HeldExisting {
    pid: Pid,
    ppid: Pid,
    start_ns: Option<u64>,
    daemon: Option<DaemonKind>,
}

/// Turns parsed lines into events: the little state the format needs.
#[derive(Default)]
struct Decoder {
    /// The header says `run`: the first fork is the traced command's.
    run: bool,
    /// The root was named.
    rooted: bool,
    held: Option<HeldExisting>,
    /// Processes with a `background` line (removed at their exit).
    background: HashSet<Pid>,
    /// The argv being read (reused: see [`Line::argv`]).
    argv: ArgvBuilder,
    /// Executables and working directories seen so far.
    paths: Paths,
}

/// The paths of `exe` and `cwd`, shared: a build runs the same few programs in the same few
/// directories hundreds of thousands of times, and every record keeps them. The
/// [`Paths::KEPT`] most recently used distinct paths are remembered, most recent first, and
/// compared (no hashing: a `HashSet` with std's SipHash cost as much time as the allocations
/// it saved, on the 307 MB ingest file); a path not among them gets its own copy and takes the
/// least recently used one's place. Bounded whatever the input.
#[derive(Default)]
struct Paths {
    kept: Vec<Arc<str>>,
}

impl Paths {
    const KEPT: usize = 16;

    fn share(&mut self, p: &str) -> Arc<str> {
        if let Some(i) = self.kept.iter().position(|a| a.len() == p.len() && **a == *p) {
            self.kept[..=i].rotate_right(1);
            return Arc::clone(&self.kept[0]);
        }
        let a: Arc<str> = Arc::from(p);
        if self.kept.len() == Self::KEPT {
            self.kept.pop();
        }
        self.kept.insert(0, Arc::clone(&a));
        a
    }
}

impl Decoder {
    /// The events of one line (appended to `out`); `end` gives the summary instead.
    fn decode(&mut self, l: Line<'_>, out: &mut Vec<Event>) -> Res<Option<Summary>> {
        let (ev, name) = match l.t.event {
            Some(e) => (Cow::Borrowed(e.name()), Some(e)),
            None => {
                let ev = need(opt_cow(l.get(K::Event), "event")?, "event")?;
                let name = EventName::of(&ev);
                (ev, name)
            }
        };
        if let Some(h) = self.held.take() {
            let synthetic = name == Some(EventName::Exec)
                && l.int::<Pid>(K::Pid, "pid")? == Some(h.pid)
                && l.secs(K::Ts, "ts")? == Some(h.start_ns.unwrap_or(0));
            let details = if synthetic {
                Some(exec_details(&l, &mut self.argv, &mut self.paths)?)
            } else {
                None
            };
            out.push(Event::Existing {
                tgid: h.pid,
                ppid: h.ppid,
                start_ns: h.start_ns,
                details,
                seen_ns: None,
                daemon: h.daemon,
            });
            if synthetic {
                return Ok(None);
            }
        }
        let ts = || -> Res<u64> { need(l.secs(K::Ts, "ts")?, "ts") };
        let Some(name) = name else {
            return Err(format!("unknown event '{ev}'"));
        };
        match name {
            EventName::Fork => {
                let (p, pp) = (l.pid(K::Pid, "pid")?, l.pid(K::Ppid, "ppid")?);
                let t = l.secs(K::Ts, "ts")?;
                let pre = flag(l.get(K::PreExisting), "pre_existing")?;
                // A daemon's processes (`--include-daemons`) are found running, never the root.
                if self.run && !self.rooted && !pre {
                    self.rooted = true;
                    out.push(Event::Root { tgid: p });
                    // Without a time its fork was lost: the tracker adopts it at its next event.
                    if let Some(ts) = t {
                        out.push(fork(ts, pp, p));
                    }
                } else if pre {
                    let daemon = match opt_cow(l.get(K::Daemon), "daemon")? {
                        None => None,
                        Some(d) => Some(DaemonKind::of_name(&d).ok_or_else(|| {
                            format!(
                                "unknown \"daemon\" '{}' (known: {})",
                                crate::model::escape::text(&d),
                                DaemonKind::names()
                            )
                        })?),
                    };
                    self.held = Some(HeldExisting {
                        pid: p,
                        ppid: pp,
                        start_ns: t,
                        daemon,
                    });
                } else {
                    out.push(match t {
                        Some(ts) => fork(ts, pp, p),
                        None => Event::Ancestry {
                            tgid: p,
                            ppid: pp,
                            start_ns: None,
                        },
                    });
                }
            }
            EventName::Exec => {
                let tgid = l.pid(K::Pid, "pid")?;
                let ts = ts()?;
                let details = exec_details(&l, &mut self.argv, &mut self.paths)?;
                out.push(Event::Exec { ts, tgid });
                out.push(Event::ExecDetails { tgid, details });
            }
            EventName::Exit => {
                let (p, ts) = (l.pid(K::Pid, "pid")?, ts()?);
                let bg = flag(l.get(K::Background), "background")?;
                let reported = self.background.remove(&p);
                if bg && !reported {
                    out.push(Event::Background {
                        ts,
                        tgid: p,
                        state: BackgroundState::Ready,
                        report: false,
                    });
                }
                if flag(l.get(K::ExitLost), "exit_lost")? {
                    out.push(Event::Gone { ts, tgid: p });
                    return Ok(None);
                }
                let core = match l.get(K::Core) {
                    None | Some(Val::Null) => None,
                    v => Some(flag(v, "core")?),
                };
                let status = match (l.int::<i64>(K::Code, "code")?, l.int::<i64>(K::Signal, "signal")?) {
                    (Some(c), None) if (0..=255).contains(&c) => (c as u32) << 8,
                    (None, Some(s)) if (1..=127).contains(&s) => {
                        if core == Some(false) {
                            out.push(Event::Coredump { ts, tgid: p });
                        }
                        s as u32 | if core == Some(true) { 0x80 } else { 0 }
                    }
                    (None, None) => return Err("an exit needs \"code\" or \"signal\"".into()),
                    _ => return Err("bad \"code\"/\"signal\"".into()),
                };
                if let Some(c) = l.bytes_text(K::Comm, K::CommBase64, "comm", l.exact())? {
                    let b = crate::model::bytes::decode(&c);
                    if b.len() > KernelName::MAX || b.contains(&0) {
                        return Err(format!(
                            "an exit's \"comm\" is a kernel name: at most {} bytes, no NUL",
                            KernelName::MAX
                        ));
                    }
                    let comm = KernelName::new(&b).ok_or("an exit's \"comm\" is empty")?;
                    out.push(Event::ExitName { tgid: p, comm });
                }
                if let Some(usage) = usage(&l)? {
                    out.push(Event::Usage {
                        tgid: p,
                        usage: Box::new(usage),
                    });
                }
                out.push(Event::Exit {
                    ts,
                    pid: p,
                    tgid: p,
                    status,
                    parent_tgid: l.pid(K::Ppid, "ppid")?,
                });
            }
            EventName::Background => {
                let p = l.pid(K::Pid, "pid")?;
                let state = match need(opt_cow(l.get(K::State), "state")?, "state")?.as_ref() {
                    "ready" => BackgroundState::Ready,
                    "timeout" => BackgroundState::Timeout,
                    "error" => BackgroundState::Error,
                    s => return Err(format!("unknown background \"state\" '{s}'")),
                };
                out.push(Event::Background {
                    ts: ts()?,
                    tgid: p,
                    state,
                    report: true,
                });
                self.background.insert(p);
            }
            EventName::Lost => out.push(Event::Lost {
                ts: l.secs(K::Ts, "ts")?,
                count: need(l.int(K::Count, "count")?, "count")?,
            }),
            EventName::Uid => out.push(Event::Uid {
                ts: ts()?,
                tgid: l.pid(K::Pid, "pid")?,
                ruid: need(l.int(K::Ruid, "ruid")?, "ruid")?,
                euid: need(l.int(K::Euid, "euid")?, "euid")?,
            }),
            EventName::Gid => out.push(Event::Gid {
                ts: ts()?,
                tgid: l.pid(K::Pid, "pid")?,
                rgid: need(l.int(K::Rgid, "rgid")?, "rgid")?,
                egid: need(l.int(K::Egid, "egid")?, "egid")?,
            }),
            EventName::Setsid => out.push(Event::Sid {
                ts: ts()?,
                tgid: l.pid(K::Pid, "pid")?,
            }),
            EventName::Ptrace => out.push(Event::Ptrace {
                ts: ts()?,
                tgid: l.pid(K::Pid, "pid")?,
                tracer: l.pid(K::Tracer, "tracer")?,
            }),
            EventName::Comm => {
                let p = l.pid(K::Pid, "pid")?;
                out.push(Event::Comm {
                    ts: ts()?,
                    pid: p,
                    tgid: p,
                    comm: need(l.bytes_text(K::Comm, K::CommBase64, "comm", l.exact())?, "comm")?
                        .into_owned(),
                });
            }
            EventName::Region => {
                let start = ts()?;
                let d = need(l.secs(K::Duration, "duration")?, "duration")?;
                out.push(Event::Region {
                    tgid: l.pid(K::Pid, "pid")?,
                    region: Region {
                        ts: start,
                        end: start.checked_add(d).ok_or("\"duration\" out of range")?,
                        thread: opt_string(l.get(K::Thread), "thread")?.unwrap_or_default(),
                        category: opt_string(l.get(K::Category), "category")?.unwrap_or_default(),
                        label: opt_string(l.get(K::Label), "label")?.unwrap_or_default(),
                        msg: opt_string(l.get(K::Msg), "msg")?,
                        nesting: need(l.int(K::Nesting, "nesting")?, "nesting")?,
                    },
                });
            }
            EventName::Data | EventName::Timer | EventName::Counter => {
                let per_thread = flag(l.get(K::PerThread), "per_thread")?;
                let (value, key) = match name {
                    EventName::Data => {
                        let v = match need(l.get(K::Value), "value")? {
                            Val::Str(s, esc) => DataValue::Text(if esc { unescape(s) } else { s.to_owned() }),
                            Val::Num(s) | Val::Raw(s) => DataValue::Json(s.to_owned()),
                            Val::Bool(b) => DataValue::Json(b.to_string()),
                            Val::Null => DataValue::Json("null".into()),
                        };
                        (v, opt_string(l.get(K::Key), "key")?)
                    }
                    EventName::Timer => (
                        DataValue::Timer {
                            intervals: need(l.int(K::Intervals, "intervals")?, "intervals")?,
                            total_ns: need(l.secs(K::Total, "total")?, "total")?,
                            min_ns: need(l.secs(K::Min, "min")?, "min")?,
                            max_ns: need(l.secs(K::Max, "max")?, "max")?,
                            per_thread,
                        },
                        opt_string(l.get(K::Name), "name")?,
                    ),
                    _ => (
                        DataValue::Counter {
                            count: need(l.int(K::Count, "count")?, "count")?,
                            per_thread,
                        },
                        opt_string(l.get(K::Name), "name")?,
                    ),
                };
                out.push(Event::Data {
                    tgid: l.pid(K::Pid, "pid")?,
                    data: Data {
                        ts: ts()?,
                        thread: opt_string(l.get(K::Thread), "thread")?.unwrap_or_default(),
                        category: opt_string(l.get(K::Category), "category")?.unwrap_or_default(),
                        key: need(key, if name == EventName::Data { "key" } else { "name" })?,
                        nesting: need(l.int(K::Nesting, "nesting")?, "nesting")?,
                        value,
                    },
                });
            }
            EventName::File => {
                let exact = l.exact();
                let access = need(opt_cow(l.get(K::Access), "access")?, "access")?;
                let access =
                    FileAccess::from_name(&access).ok_or_else(|| format!("unknown \"access\" '{access}'"))?;
                out.push(Event::File {
                    ts: ts()?,
                    tgid: l.pid(K::Pid, "pid")?,
                    access,
                    path: need(l.bytes_text(K::Path, K::PathBase64, "path", exact)?, "path")?.into_owned(),
                    to: l
                        .bytes_text(K::To, K::ToBase64, "to", exact)?
                        .map(Cow::into_owned),
                });
            }
            EventName::End => return summary(&l).map(Some),
            EventName::Start => return Err("a second \"start\" line: two outputs in one file?".into()),
        }
        Ok(None)
    }

    /// End of input: what is still held.
    fn flush(&mut self, out: &mut Vec<Event>) {
        if let Some(h) = self.held.take() {
            out.push(Event::Existing {
                tgid: h.pid,
                ppid: h.ppid,
                start_ns: h.start_ns,
                details: None,
                seen_ns: None,
                daemon: h.daemon,
            });
        }
    }
}

fn fork(ts: u64, parent: Pid, child: Pid) -> Event {
    Event::Fork {
        ts,
        parent_tgid: parent,
        child_pid: child,
        child_tgid: child,
    }
}

fn exec_details(l: &Line<'_>, argv: &mut ArgvBuilder, paths: &mut Paths) -> Res<ExecDetails> {
    let exact = l.exact();
    Ok(ExecDetails {
        argv: l.argv(argv, exact)?,
        filename: l
            .bytes_text(K::Filename, K::FilenameBase64, "filename", exact)?
            .map(|p| paths.share(&p)),
        exe: l
            .bytes_text(K::Exe, K::ExeBase64, "exe", exact)?
            .map(|p| paths.share(&p)),
        cwd: l
            .bytes_text(K::Cwd, K::CwdBase64, "cwd", exact)?
            .map(|p| paths.share(&p)),
        uid: l.int(K::Uid, "uid")?,
        comm: l
            .bytes_text(K::Comm, K::CommBase64, "comm", exact)?
            .map(Cow::into_owned),
    })
}

fn summary(l: &Line<'_>) -> Res<Summary> {
    let n = |v: Option<Val<'_>>, key: &str| -> Res<u64> { Ok(opt_int(v, key)?.unwrap_or(0)) };
    let status = match (l.int::<i32>(K::Code, "code")?, l.int::<i32>(K::Signal, "signal")?) {
        (Some(c), _) => Some(ExitStatus::Code(c)),
        (None, Some(signal)) => Some(ExitStatus::Signal { signal, core: false }),
        (None, None) => None,
    };
    Ok(Summary {
        ts: need(l.secs(K::Ts, "ts")?, "ts")?,
        status,
        stats: TrackerStats {
            processes: n(l.get(K::Processes), "processes")?,
            execs: n(l.get(K::Execs), "execs")?,
            execs_with_argv: n(l.get(K::ExecsWithArgv), "execs_with_argv")?,
            exits: n(l.get(K::Exits), "exits")?,
            lost: n(l.get(K::Lost), "lost")?,
            exits_inferred: n(l.get(K::ExitsLost), "exits_lost")?,
            recovered: n(l.get(K::Recovered), "recovered")?,
            notes: n(l.get(K::Notes), "notes")?,
            notes_unmatched: n(l.get(K::NotesUnmatched), "notes_unmatched")?,
            notes_dropped: n(l.get(K::NotesDropped), "notes_dropped")?,
            usage: n(l.get(K::Usage), "usage")?,
            files: n(l.get(K::Files), "files")?,
            files_dropped: n(l.get(K::FilesDropped), "files_dropped")?,
            ..Default::default()
        },
        capture: CaptureSummary {
            rejected: n(l.get(K::Rejected), "rejected")?,
            overflows: n(l.get(K::Overflows), "overflows")?,
            socket_drops: n(l.get(K::SocketDrops), "socket_drops")?,
            events: n(l.get(K::KernelEvents), "kernel_events")?,
            receive_buffer: 0,
            usage_lost: n(l.get(K::UsageLost), "usage_lost")?,
            usage_incomplete: n(l.get(K::UsageIncomplete), "usage_incomplete")?,
            untraced: n(l.get(K::Untraced), "untraced")?,
            files_lost: n(l.get(K::FilesLost), "files_lost")?,
        },
        background: n(l.get(K::Background), "background")?,
        root: l.int(K::Pid, "pid")?,
        tracer_cpu_ns: l.secs(K::TracerCpu, "tracer_cpu")?,
        backend: opt_string(l.get(K::Backend), "backend")?,
        argv_reader: opt_string(l.get(K::ArgvReader), "argv_reader")?,
        filtered: l.int(K::Filtered, "filtered")?,
    })
}

/// The header of a `start` line; `base` gives what the file does not record (proctrace's pid,
/// argv, host).
fn header(l: &Line<'_>, mut base: Header) -> Res<Header> {
    if opt_cow(l.get(K::Tool), "tool")?.as_deref() != Some("proctrace") {
        return Err("a \"start\" line not written by proctrace (\"tool\")".into());
    }
    base.ts = need(l.secs(K::Ts, "ts")?, "ts")?;
    base.real_minus_mono = match l.get(K::WallOffset) {
        None | Some(Val::Null) => 0,
        Some(Val::Num(v)) => parse_signed_seconds(v.as_bytes())
            .ok_or_else(|| format!("\"wall_offset\" is not a decimal number of seconds: {v}"))?,
        Some(_) => return Err("\"wall_offset\" is not a number".into()),
    };
    base.mode = match need(opt_cow(l.get(K::Mode), "mode")?, "mode")?.as_ref() {
        "run" => Mode::Run {
            argv: {
                let a = need(opt_strings(l.get(K::Argv), "argv", &mut Vec::new())?, "argv")?;
                exact_argv(Argv::from(a), l.get(K::ArgvBase64))?.to_vec()
            },
        },
        "watch" => Mode::Watch {
            root: l.int(K::Root, "root")?,
        },
        "replay" => Mode::Replay {
            path: need(opt_string(l.get(K::Capture), "capture")?, "capture")?,
        },
        "analyze" => Mode::Analyze {
            inputs: need(
                opt_strings(l.get(K::Inputs), "inputs", &mut Vec::new())?,
                "inputs",
            )?,
        },
        m => return Err(format!("unknown \"mode\" '{m}'")),
    };
    base.backend = opt_string(l.get(K::Backend), "backend")?;
    base.refused = opt_strings(l.get(K::Refused), "refused", &mut Vec::new())?.unwrap_or_default();
    base.files = flag(l.get(K::Files), "files")?;
    base.daemons = match l.get(K::Daemons) {
        None | Some(Val::Null) => Vec::new(),
        Some(Val::Raw(r)) if r.starts_with('[') => daemons(r)?,
        Some(_) => return Err("\"daemons\" is not an array".into()),
    };
    if let Some(v) = opt_string(l.get(K::Version), "version")? {
        base.tool.version = v;
    }
    Ok(base)
}

/// The `daemons` of a `start` line (checked as JSON when the line was scanned):
/// `[{"daemon":KIND,"pid":PID}, …]`, keys in any order, other keys ignored.
fn daemons(raw: &str) -> Res<Vec<crate::model::session::Followed>> {
    const WHAT: &str = "\"daemons\" is a list of {\"daemon\":KIND,\"pid\":PID}";
    let mut out = Vec::new();
    let mut p = Scan::new(raw);
    p.ws();
    p.eat(b'[')?;
    p.ws();
    if p.peek() == Some(b']') {
        return Ok(out);
    }
    loop {
        p.ws();
        let Val::Raw(obj) = p.value(1)? else {
            return Err(WHAT.into());
        };
        let mut q = Scan::new(obj);
        q.ws();
        q.eat(b'{')?;
        let (mut daemon, mut pid) = (None, None);
        loop {
            q.ws();
            if q.peek() == Some(b'}') {
                break;
            }
            let (k, esc) = q.string()?;
            let k = if esc {
                Cow::Owned(unescape(k))
            } else {
                Cow::Borrowed(k)
            };
            q.ws();
            q.eat(b':')?;
            q.ws();
            let v = q.value(2)?;
            match k.as_ref() {
                "daemon" => {
                    let name = need(opt_cow(Some(v), "daemon")?, "daemon")?;
                    daemon = Some(DaemonKind::of_name(&name).ok_or_else(|| {
                        format!(
                            "unknown \"daemon\" '{}' (known: {})",
                            crate::model::escape::text(&name),
                            DaemonKind::names()
                        )
                    })?);
                }
                "pid" => pid = opt_int::<Pid>(Some(v), "pid")?,
                _ => {}
            }
            q.ws();
            match q.peek() {
                Some(b',') => q.i += 1,
                Some(b'}') => break,
                _ => return Err(WHAT.into()),
            }
        }
        match (daemon, pid) {
            (Some(daemon), Some(pid)) => out.push(crate::model::session::Followed { daemon, pid }),
            _ => return Err(WHAT.into()),
        }
        p.ws();
        match p.peek() {
            Some(b',') => p.i += 1,
            Some(b']') => return Ok(out),
            _ => return Err(WHAT.into()),
        }
    }
}

/// Whether `line` is a `start` line proctrace wrote, laid out in any way JSON allows (spaces,
/// keys in any order or escaped): for telling the format of a file a JSON tool rewrote.
pub fn is_start_line(line: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(line) else {
        return false;
    };
    let mut t = Table::default();
    if t.scan(s).is_err() {
        return false;
    }
    let l = Line { s, t: &t };
    let is = |k: K, v: &str| opt_cow(l.get(k), k.name()).is_ok_and(|x| x.as_deref() == Some(v));
    is(K::Event, EventName::Start.name()) && is(K::Tool, "proctrace")
}

/// What one line held. Boxed: this travels up from every line, and a move of the enum copies
/// its largest variant (with a `Header` and a `Summary` inline, that copy was 2% of `analyze`).
enum Parsed {
    Header(Box<Header>),
    Events,
    Summary(Box<Summary>),
}

/// Scans and decodes one line (without its newline): its events go to `out` (nothing on an
/// error). `first`: a `start` line is the header.
fn parse_line(
    line: &[u8],
    first: bool,
    base: &Header,
    table: &mut Table,
    dec: &mut Decoder,
    out: &mut Vec<Event>,
) -> Res<Parsed> {
    // Written by proctrace, a line is UTF-8; anything else is read lossily rather than refused.
    let text = match std::str::from_utf8(line) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(line),
    };
    if !table.fill_laid_out(&text) {
        table.scan(&text)?;
    }
    let l = Line { s: &text, t: table };
    if first && opt_cow(l.get(K::Event), "event").is_ok_and(|e| e.as_deref() == Some(EventName::Start.name()))
    {
        return header(&l, base.clone()).map(|h| Parsed::Header(Box::new(h)));
    }
    let n = out.len();
    match dec.decode(l, out) {
        Ok(Some(s)) => Ok(Parsed::Summary(Box::new(s))),
        Ok(None) => Ok(Parsed::Events),
        Err(e) => {
            out.truncate(n);
            Err(e)
        }
    }
}

/// proctrace JSON Lines being read.
pub struct JsonlInput<R> {
    path: PathBuf,
    /// The lines, bounded and in time order ([`Lines`]).
    lines: Lines<R>,
    header: Header,
    base: Header,
    dec: Decoder,
    table: Box<Table>,
    /// Events of the line being fed (reused).
    events: Vec<Event>,
    summary: Option<Summary>,
    stats: InputStats,
    lenient: bool,
}

impl JsonlInput<super::source::LineReader<std::fs::File>> {
    /// Opens a JSON Lines file (`-`: stdin), once; refused if it never ends or is empty.
    pub fn open(path: &Path, opts: &InputOptions) -> Result<Self, InputError> {
        let (name, reader) = super::open_one(path, super::Format::Jsonl, opts)?;
        JsonlInput::new(reader, &name, opts)
    }
}

impl<R: BufRead> JsonlInput<R> {
    /// Reads proctrace JSON Lines from `input`; `path` names it in errors. Reads up to the
    /// `start` line, or the first line with events in a file without one (its header is then
    /// a replay's, starting at that line's time). Any bytes: an error or events, never a panic.
    pub fn new(input: R, path: &Path, opts: &InputOptions) -> Result<Self, InputError> {
        let base = opts.fallback_header(&[path.to_path_buf()], 0, 0);
        let mut me = JsonlInput {
            path: path.to_path_buf(),
            lines: Lines::new(input, path, opts.max_line, opts.lenient, jsonl_key, Order::ByTime),
            header: base.clone(),
            base,
            dec: Decoder::default(),
            table: Box::default(),
            events: Vec::with_capacity(4),
            summary: None,
            stats: InputStats {
                files: 1,
                ..Default::default()
            },
            lenient: opts.lenient,
        };
        while let Some(p) = me.next_line(true)? {
            match p {
                Parsed::Header(h) => {
                    me.dec.run = matches!(h.mode, Mode::Run { .. });
                    me.header = *h;
                    break;
                }
                Parsed::Summary(s) => me.summary = Some(*s),
                Parsed::Events => {
                    if let Some(ts) = me.events.iter().find_map(|e| e.ts()) {
                        me.header.ts = ts;
                    }
                    break;
                }
            }
        }
        Ok(me)
    }

    /// The next good line (its events in `self.events`); `None` at the end or at a truncated
    /// last line. `first`: a `start` line is the header.
    fn next_line(&mut self, first: bool) -> Result<Option<Parsed>, InputError> {
        // Lines are parsed where they lie in the reader's buffer (see [`Lines`]).
        while let Some(l) = self.lines.next_line() {
            let parsed = parse_line(
                l.text.trim_ascii(),
                first,
                &self.base,
                &mut self.table,
                &mut self.dec,
                &mut self.events,
            );
            match parsed {
                Ok(p) => return Ok(Some(p)),
                Err(_) if !l.complete => {
                    self.stats.truncated += 1;
                    return Ok(None);
                }
                Err(_) if self.lenient => self.stats.skipped_lines += 1,
                Err(msg) => {
                    return Err(InputError::Line {
                        path: self.path.clone(),
                        line: l.no,
                        msg: format!("not a proctrace JSON Lines line: {msg}"),
                    });
                }
            }
        }
        match self.lines.take_error() {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }
}

impl<R: BufRead> Input for JsonlInput<R> {
    fn header(&self) -> &Header {
        &self.header
    }

    fn feed_all(&mut self, feed: &mut dyn FnMut(Event)) -> Result<(), InputError> {
        loop {
            for e in self.events.drain(..) {
                feed(e);
            }
            match self.next_line(false) {
                Ok(Some(Parsed::Summary(s))) => self.summary = Some(*s),
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    self.dec.flush(&mut self.events);
                    for e in self.events.drain(..) {
                        feed(e);
                    }
                    return Err(e);
                }
            }
        }
        self.dec.flush(&mut self.events);
        for e in self.events.drain(..) {
            feed(e);
        }
        Ok(())
    }

    fn recorded_summary(&self) -> Option<&Summary> {
        self.summary.as_ref()
    }

    fn stats(&self) -> InputStats {
        self.stats.with_lines(self.lines.counts())
    }
}

#[cfg(test)]
mod any_json_tests;

#[cfg(test)]
mod tests;
