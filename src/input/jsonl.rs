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
//! Timestamps are decimal seconds with nine decimals, parsed exactly to nanoseconds (never
//! through `f64`). Read as a stream: memory holds one line, the one `pre_existing` fork waiting
//! for its exec and the pids marked background that are still alive.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Input, InputError, InputOptions, InputStats};
use crate::model::event::{Data, DataValue, Event, ExecDetails, ExitStatus, Pid, Region};
use crate::model::tracker::{BackgroundState, TrackerStats};
use crate::sink::{CaptureSummary, Header, Mode, Summary};

/// Every key any line kind has; which ones a line must have depends on its `event`. Unknown keys
/// are ignored (a newer proctrace may add some). Borrowed where the line allows it.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Line<'a> {
    #[serde(borrow)]
    event: Cow<'a, str>,
    #[serde(borrow)]
    ts: Option<&'a RawValue>,
    pid: Option<i64>,
    ppid: Option<i64>,
    pre_existing: bool,
    #[serde(borrow)]
    comm: Option<Cow<'a, str>>,
    argv: Option<Vec<String>>,
    exe: Option<String>,
    cwd: Option<String>,
    uid: Option<u32>,
    code: Option<i64>,
    signal: Option<i64>,
    core: Option<bool>,
    exit_lost: bool,
    /// `true` on an exit line, a count on the end line.
    #[serde(borrow)]
    background: Option<&'a RawValue>,
    #[serde(borrow)]
    state: Option<Cow<'a, str>>,
    count: Option<u64>,
    ruid: Option<u32>,
    euid: Option<u32>,
    rgid: Option<u32>,
    egid: Option<u32>,
    tracer: Option<i64>,
    // Regions and data.
    #[serde(borrow)]
    duration: Option<&'a RawValue>,
    thread: Option<String>,
    category: Option<String>,
    label: Option<String>,
    msg: Option<String>,
    key: Option<String>,
    name: Option<String>,
    nesting: Option<u32>,
    #[serde(borrow)]
    value: Option<&'a RawValue>,
    intervals: Option<u64>,
    #[serde(borrow)]
    total: Option<&'a RawValue>,
    #[serde(borrow)]
    min: Option<&'a RawValue>,
    #[serde(borrow)]
    max: Option<&'a RawValue>,
    per_thread: bool,
    // start
    #[serde(borrow)]
    tool: Option<Cow<'a, str>>,
    version: Option<String>,
    backend: Option<String>,
    #[serde(borrow)]
    wall_offset: Option<&'a RawValue>,
    #[serde(borrow)]
    mode: Option<Cow<'a, str>>,
    capture: Option<String>,
    root: Option<i64>,
    // end
    processes: Option<u64>,
    execs: Option<u64>,
    execs_with_argv: Option<u64>,
    exits: Option<u64>,
    lost: Option<u64>,
    recovered: Option<u64>,
    exits_lost: Option<u64>,
    rejected: Option<u64>,
    overflows: Option<u64>,
    socket_drops: Option<u64>,
    kernel_events: Option<u64>,
    notes: Option<u64>,
    notes_unmatched: Option<u64>,
    filtered: Option<u64>,
    argv_reader: Option<String>,
    #[serde(borrow)]
    tracer_cpu: Option<&'a RawValue>,
}

/// Decimal seconds (`12.000000345`, at most nine decimals, no sign or exponent) as
/// nanoseconds, exactly.
pub fn parse_seconds(s: &[u8]) -> Option<u64> {
    let (int, frac) = match s.iter().position(|&b| b == b'.') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &s[s.len()..]),
    };
    if int.is_empty() || frac.len() > 9 || (s.len() > int.len() && frac.is_empty()) {
        return None;
    }
    let mut secs: u64 = 0;
    for &b in int {
        if !b.is_ascii_digit() {
            return None;
        }
        secs = secs.checked_mul(10)?.checked_add((b - b'0') as u64)?;
    }
    let mut ns: u64 = 0;
    for i in 0..9 {
        let d = match frac.get(i) {
            Some(&b) if b.is_ascii_digit() => (b - b'0') as u64,
            Some(_) => return None,
            None => 0,
        };
        ns = ns * 10 + d;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// [`parse_seconds`] with an optional leading `-` (the clock offset).
fn parse_signed_seconds(s: &[u8]) -> Option<i64> {
    match s.strip_prefix(b"-") {
        Some(rest) => i64::try_from(parse_seconds(rest)?).ok().map(|v| -v),
        None => i64::try_from(parse_seconds(s)?).ok(),
    }
}

fn secs(v: Option<&RawValue>, key: &str) -> Result<Option<u64>, String> {
    match v.map(|r| r.get()) {
        None | Some("null") => Ok(None),
        Some(t) => parse_seconds(t.as_bytes())
            .map(Some)
            .ok_or_else(|| format!("\"{key}\" is not a decimal number of seconds: {t}")),
    }
}

fn need<T>(v: Option<T>, key: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("missing \"{key}\""))
}

fn pid(v: Option<i64>, key: &str) -> Result<Pid, String> {
    Pid::try_from(need(v, key)?).map_err(|_| format!("\"{key}\" out of range"))
}

/// A `pre_existing` fork waiting for the line after it (its exec, if it has one).
struct HeldExisting {
    pid: Pid,
    ppid: Pid,
    start_ns: Option<u64>,
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
}

impl Decoder {
    /// The events of one line (appended to `out`); `end` gives the summary instead.
    fn decode(&mut self, l: Line<'_>, out: &mut Vec<Event>) -> Result<Option<Summary>, String> {
        let ev = l.event.as_ref();
        if let Some(h) = self.held.take() {
            let synthetic = ev == "exec"
                && l.pid == Some(h.pid as i64)
                && secs(l.ts, "ts")? == Some(h.start_ns.unwrap_or(0));
            let details = if synthetic { Some(exec_details(&l)) } else { None };
            out.push(Event::Existing {
                tgid: h.pid,
                ppid: h.ppid,
                start_ns: h.start_ns,
                details,
            });
            if synthetic {
                return Ok(None);
            }
        }
        let ts = || -> Result<u64, String> { need(secs(l.ts, "ts")?, "ts") };
        match ev {
            "fork" => {
                let (p, pp) = (pid(l.pid, "pid")?, pid(l.ppid, "ppid")?);
                let t = secs(l.ts, "ts")?;
                if self.run && !self.rooted {
                    self.rooted = true;
                    out.push(Event::Root { tgid: p });
                    match t {
                        Some(ts) => out.push(fork(ts, pp, p)),
                        // Its fork was lost: the tracker adopts it at its next event.
                        None => {}
                    }
                } else if l.pre_existing {
                    self.held = Some(HeldExisting {
                        pid: p,
                        ppid: pp,
                        start_ns: t,
                    });
                } else {
                    match t {
                        Some(ts) => out.push(fork(ts, pp, p)),
                        None => out.push(Event::Ancestry {
                            tgid: p,
                            ppid: pp,
                            start_ns: None,
                        }),
                    }
                }
            }
            "exec" => {
                let tgid = pid(l.pid, "pid")?;
                out.push(Event::Exec { ts: ts()?, tgid });
                out.push(Event::ExecDetails {
                    tgid,
                    details: exec_details(&l),
                });
            }
            "exit" => {
                let (p, ts) = (pid(l.pid, "pid")?, ts()?);
                let bg = l.background.is_some_and(|v| v.get() == "true");
                if bg && !self.background.remove(&p) {
                    out.push(Event::Background {
                        ts,
                        tgid: p,
                        state: BackgroundState::Ready,
                        report: false,
                    });
                } else {
                    self.background.remove(&p);
                }
                if l.exit_lost {
                    out.push(Event::Gone { ts, tgid: p });
                    return Ok(None);
                }
                let status = match (l.code, l.signal) {
                    (Some(c), None) if (0..=255).contains(&c) => (c as u32) << 8,
                    (None, Some(s)) if (1..=127).contains(&s) => {
                        if l.core == Some(false) {
                            out.push(Event::Coredump { ts, tgid: p });
                        }
                        s as u32 | if l.core == Some(true) { 0x80 } else { 0 }
                    }
                    (None, None) => return Err("an exit needs \"code\" or \"signal\"".into()),
                    _ => return Err("bad \"code\"/\"signal\"".into()),
                };
                out.push(Event::Exit {
                    ts,
                    pid: p,
                    tgid: p,
                    status,
                    parent_tgid: pid(l.ppid, "ppid")?,
                });
            }
            "background" => {
                let p = pid(l.pid, "pid")?;
                let state = match need(l.state.as_deref(), "state")? {
                    "ready" => BackgroundState::Ready,
                    "timeout" => BackgroundState::Timeout,
                    "error" => BackgroundState::Error,
                    s => return Err(format!("unknown background \"state\" '{s}'")),
                };
                self.background.insert(p);
                out.push(Event::Background {
                    ts: ts()?,
                    tgid: p,
                    state,
                    report: true,
                });
            }
            "lost" => out.push(Event::Lost {
                ts: secs(l.ts, "ts")?,
                count: need(l.count, "count")?,
            }),
            "uid" => out.push(Event::Uid {
                ts: ts()?,
                tgid: pid(l.pid, "pid")?,
                ruid: need(l.ruid, "ruid")?,
                euid: need(l.euid, "euid")?,
            }),
            "gid" => out.push(Event::Gid {
                ts: ts()?,
                tgid: pid(l.pid, "pid")?,
                rgid: need(l.rgid, "rgid")?,
                egid: need(l.egid, "egid")?,
            }),
            "setsid" => out.push(Event::Sid {
                ts: ts()?,
                tgid: pid(l.pid, "pid")?,
            }),
            "ptrace" => out.push(Event::Ptrace {
                ts: ts()?,
                tgid: pid(l.pid, "pid")?,
                tracer: pid(l.tracer, "tracer")?,
            }),
            "comm" => {
                let p = pid(l.pid, "pid")?;
                out.push(Event::Comm {
                    ts: ts()?,
                    pid: p,
                    tgid: p,
                    comm: need(l.comm, "comm")?.into_owned(),
                });
            }
            "region" => {
                let start = ts()?;
                let d = need(secs(l.duration, "duration")?, "duration")?;
                out.push(Event::Region {
                    tgid: pid(l.pid, "pid")?,
                    region: Region {
                        ts: start,
                        end: start.checked_add(d).ok_or("\"duration\" out of range")?,
                        thread: l.thread.unwrap_or_default(),
                        category: l.category.unwrap_or_default(),
                        label: l.label.unwrap_or_default(),
                        msg: l.msg,
                        nesting: need(l.nesting, "nesting")?,
                    },
                });
            }
            "data" | "timer" | "counter" => {
                let value = match ev {
                    "data" => {
                        let raw = need(l.value, "value")?.get();
                        if raw.starts_with('"') {
                            DataValue::Text(serde_json::from_str(raw).map_err(|e| e.to_string())?)
                        } else {
                            DataValue::Json(raw.to_string())
                        }
                    }
                    "timer" => DataValue::Timer {
                        intervals: need(l.intervals, "intervals")?,
                        total_ns: need(secs(l.total, "total")?, "total")?,
                        min_ns: need(secs(l.min, "min")?, "min")?,
                        max_ns: need(secs(l.max, "max")?, "max")?,
                        per_thread: l.per_thread,
                    },
                    _ => DataValue::Counter {
                        count: need(l.count, "count")?,
                        per_thread: l.per_thread,
                    },
                };
                let key = if ev == "data" { l.key } else { l.name };
                out.push(Event::Data {
                    tgid: pid(l.pid, "pid")?,
                    data: Data {
                        ts: ts()?,
                        thread: l.thread.unwrap_or_default(),
                        category: l.category.unwrap_or_default(),
                        key: need(key, if ev == "data" { "key" } else { "name" })?,
                        nesting: need(l.nesting, "nesting")?,
                        value,
                    },
                });
            }
            "end" => return summary(l).map(Some),
            "start" => return Err("a second \"start\" line: two outputs in one file?".into()),
            other => return Err(format!("unknown event '{other}'")),
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

fn exec_details(l: &Line<'_>) -> ExecDetails {
    ExecDetails {
        argv: l.argv.clone(),
        exe: l.exe.clone(),
        cwd: l.cwd.clone(),
        uid: l.uid,
        comm: l.comm.as_deref().map(str::to_string),
    }
}

fn summary(l: Line<'_>) -> Result<Summary, String> {
    let n = |v: Option<u64>| v.unwrap_or(0);
    let status = match (l.code, l.signal) {
        (Some(c), _) => Some(ExitStatus::Code(
            i32::try_from(c).map_err(|_| "\"code\" out of range")?,
        )),
        (None, Some(s)) => Some(ExitStatus::Signal {
            signal: i32::try_from(s).map_err(|_| "\"signal\" out of range")?,
            core: false,
        }),
        (None, None) => None,
    };
    let background = match l.background.map(|v| v.get()) {
        None => 0,
        Some(v) => v
            .parse()
            .map_err(|_| format!("\"background\" is not a count: {v}"))?,
    };
    Ok(Summary {
        ts: need(secs(l.ts, "ts")?, "ts")?,
        status,
        stats: TrackerStats {
            processes: n(l.processes),
            execs: n(l.execs),
            execs_with_argv: n(l.execs_with_argv),
            exits: n(l.exits),
            lost: n(l.lost),
            exits_inferred: n(l.exits_lost),
            recovered: n(l.recovered),
            notes: n(l.notes),
            notes_unmatched: n(l.notes_unmatched),
            ..Default::default()
        },
        capture: CaptureSummary {
            rejected: n(l.rejected),
            overflows: n(l.overflows),
            socket_drops: n(l.socket_drops),
            events: n(l.kernel_events),
            receive_buffer: 0,
        },
        background,
        root: l.pid.map(|p| pid(Some(p), "pid")).transpose()?,
        tracer_cpu_ns: secs(l.tracer_cpu, "tracer_cpu")?,
        backend: l.backend,
        argv_reader: l.argv_reader,
        filtered: l.filtered,
    })
}

/// The header of a `start` line; `base` gives what the file does not record (proctrace's pid,
/// argv, host).
fn header(l: Line<'_>, mut base: Header) -> Result<Header, String> {
    if l.tool.as_deref() != Some("proctrace") {
        return Err("a \"start\" line not written by proctrace (\"tool\")".into());
    }
    base.ts = need(secs(l.ts, "ts")?, "ts")?;
    base.real_minus_mono = match l.wall_offset.map(|v| v.get()) {
        None => 0,
        Some(v) => parse_signed_seconds(v.as_bytes())
            .ok_or_else(|| format!("\"wall_offset\" is not a decimal number of seconds: {v}"))?,
    };
    base.mode = match need(l.mode.as_deref(), "mode")? {
        "run" => Mode::Run {
            argv: need(l.argv, "argv")?,
        },
        "watch" => Mode::Watch {
            root: l.root.map(|r| pid(Some(r), "root")).transpose()?,
        },
        "replay" => Mode::Replay {
            path: need(l.capture, "capture")?,
        },
        m => return Err(format!("unknown \"mode\" '{m}'")),
    };
    base.backend = l.backend;
    if let Some(v) = l.version {
        base.tool.version = v;
    }
    Ok(base)
}

/// What one line held.
enum Parsed {
    Header(Header),
    Events,
    Summary(Summary),
}

/// proctrace JSON Lines being read.
pub struct JsonlInput<R> {
    path: PathBuf,
    input: R,
    header: Header,
    base: Header,
    dec: Decoder,
    /// Events of the line being fed (reused).
    events: Vec<Event>,
    summary: Option<Summary>,
    stats: InputStats,
    lenient: bool,
    buf: Vec<u8>,
}

impl JsonlInput<std::io::BufReader<std::fs::File>> {
    /// Opens a JSON Lines file.
    pub fn open(path: &Path, opts: &InputOptions) -> Result<Self, InputError> {
        let f = std::fs::File::open(path).map_err(|source| InputError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        JsonlInput::new(std::io::BufReader::with_capacity(256 << 10, f), path, opts)
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
            input,
            header: base.clone(),
            base,
            dec: Decoder::default(),
            events: Vec::with_capacity(4),
            summary: None,
            stats: InputStats {
                files: 1,
                ..Default::default()
            },
            lenient: opts.lenient,
            buf: Vec::with_capacity(4096),
        };
        while let Some(p) = me.next_line(true)? {
            match p {
                Parsed::Header(h) => {
                    me.dec.run = matches!(h.mode, Mode::Run { .. });
                    me.header = h;
                    break;
                }
                Parsed::Summary(s) => me.summary = Some(s),
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
        loop {
            self.buf.clear();
            let n = self
                .input
                .read_until(b'\n', &mut self.buf)
                .map_err(|source| InputError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            if n == 0 {
                return Ok(None);
            }
            self.stats.bytes += n as u64;
            self.stats.lines += 1;
            let complete = self.buf.last() == Some(&b'\n');
            let line = self.buf.trim_ascii();
            if line.is_empty() {
                continue;
            }
            let parsed = match serde_json::from_slice::<Line<'_>>(line) {
                Err(e) => Err(e.to_string()),
                Ok(l) if first && l.event == "start" => header(l, self.base.clone()).map(Parsed::Header),
                Ok(l) => {
                    let n = self.events.len();
                    match self.dec.decode(l, &mut self.events) {
                        Ok(Some(s)) => Ok(Parsed::Summary(s)),
                        Ok(None) => Ok(Parsed::Events),
                        Err(e) => {
                            self.events.truncate(n);
                            Err(e)
                        }
                    }
                }
            };
            match parsed {
                Ok(p) => return Ok(Some(p)),
                Err(_) if !complete => {
                    self.stats.truncated += 1;
                    return Ok(None);
                }
                Err(_) if self.lenient => self.stats.skipped_lines += 1,
                Err(msg) => {
                    return Err(InputError::Line {
                        path: self.path.clone(),
                        line: self.stats.lines,
                        msg: format!("not a proctrace JSON Lines line: {msg}"),
                    });
                }
            }
        }
    }
}

impl<R: BufRead> Input for JsonlInput<R> {
    fn header(&self) -> &Header {
        &self.header
    }

    fn feed_all(&mut self, feed: &mut dyn FnMut(&Event)) -> Result<(), InputError> {
        loop {
            for e in self.events.drain(..) {
                feed(&e);
            }
            match self.next_line(false) {
                Ok(Some(Parsed::Summary(s))) => self.summary = Some(s),
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    self.dec.flush(&mut self.events);
                    for e in self.events.drain(..) {
                        feed(&e);
                    }
                    return Err(e);
                }
            }
        }
        self.dec.flush(&mut self.events);
        for e in self.events.drain(..) {
            feed(&e);
        }
        Ok(())
    }

    fn recorded_summary(&self) -> Option<&Summary> {
        self.summary.as_ref()
    }

    fn stats(&self) -> InputStats {
        self.stats
    }
}
