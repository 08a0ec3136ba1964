//! git Trace2 streams of the processes proctrace observes, in git's `event`, `normal` and `perf`
//! formats, to any destination git accepts (file, directory, `af_unix:` socket, fd).
//!
//! The mapping, chosen so that git's own trace2 tooling reads an observed tree the way it reads a
//! tree of git processes:
//!
//! - proctrace itself is one session (`version`, `start` with its own argv, …, `exit`, `atexit`);
//!   its SID nests under `GIT_TRACE2_PARENT_SID` when that is set.
//! - every observed process is a session nested under its parent's SID (roots under proctrace's),
//!   with the component built from its pid and fork time: `version`, `start` (argv at its first
//!   exec), `exec` for later execs, `exit` + `atexit` with its code — or `signal` when a signal
//!   killed it, as git writes for a process that never reached exit.
//! - the parent session carries `child_start` (when the child's argv is known: its first exec,
//!   or its exit for a fork that never exec'd), `child_exit` (`code` is 128+N for signal N, −1
//!   when the exit was lost) and `child_ready` for a child that outlived the traced command.
//! - uid/gid changes, setsid, ptrace, renames and lost events are `data` events, category
//!   `proctrace`.
//!
//! Times are the kernel's: `time` is the event's wall time, `t_abs` seconds since that process
//! forked. Events carry no `file`/`line` (there is no source location to name).
//!
//! Everything else comes from the [`Header`]: proctrace's pid, argv, version, parent SID, the
//! host name hashed into SIDs and the time zone of the normal and perf time column. This sink
//! never reads the clock, the environment or the process itself, so a replayed capture gives
//! the same bytes as the live run.

use std::collections::HashMap;
use std::io;

use trace2::dst::{Destination, DestinationSpec, OpenOptions};
use trace2::{Event as T2, EventKind as K, FormatOptions, ReadyState, Sid, Str, TargetKind, Timestamp};

use super::{Header, Mode, Sink, Summary};
use crate::model::event::ExitStatus;
use crate::model::tracker::{BackgroundState, Fact, ProcId, ProcessRecord, Tracker};
use crate::redact::redact_arg;

/// One requested target: a format and where it goes.
#[derive(Debug, Clone)]
pub struct Trace2Target {
    /// Format.
    pub kind: TargetKind,
    /// Destination value as git spells it (`/tmp/x.json`, a directory, `af_unix:…`, `2`).
    pub value: String,
}

struct Target {
    kind: TargetKind,
    spec: DestinationSpec,
    /// Open once for file, fd and socket destinations; per session for directories.
    shared: Option<Destination>,
}

struct Session {
    sid: String,
    /// Monotonic ns that `t_abs` counts from.
    t0: u64,
    next_child: i64,
    /// Per-target destinations of a directory target (one file per session).
    files: Vec<Option<Destination>>,
}

struct Observed {
    session: Session,
    /// This process's child id in its parent's session, and when it was announced.
    child_id: i64,
    child_start_ts: Option<u64>,
    parent: Option<ProcId>,
    started: bool,
    execs: i64,
    /// Children not yet reported ended or ready: an exited parent's session stays addressable
    /// until they are, so their `child_exit`/`child_ready` can still be written to it (after its
    /// `atexit`, as git's detached children do).
    open_children: u32,
    ended: bool,
}

/// The trace2 sink.
pub struct Trace2Sink {
    targets: Vec<Target>,
    opts: FormatOptions,
    redact: bool,
    real_minus_mono: i64,
    me: Option<Session>,
    observed: HashMap<ProcId, Observed>,
    exe: String,
    /// The host name hashed into SIDs (from the header).
    host: Option<String>,
    /// The latest time seen: stands in for facts that carry none.
    now: u64,
    buf: Vec<u8>,
    failed: Option<io::Error>,
}

/// Wall time of a monotonic timestamp.
fn wall(real_minus_mono: i64, ts: u64) -> Timestamp {
    Timestamp::from_micros((ts as i128 + real_minus_mono as i128) / 1000)
}

/// Exit code as git's `child_exit` reports it.
fn git_code(status: Option<ExitStatus>) -> i32 {
    status.map_or(-1, |s| s.shell_code())
}

impl Trace2Sink {
    /// Checks every target value now, so a bad one is reported before anything runs.
    pub fn new(targets: &[Trace2Target], brief: bool, redact: bool) -> io::Result<Trace2Sink> {
        let mut out = Vec::new();
        for t in targets {
            let spec = DestinationSpec::parse(&t.value);
            let shared = match &spec {
                DestinationSpec::Off => continue,
                DestinationSpec::Invalid(v) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "'{v}' is not a trace2 destination (an absolute path, a directory, af_unix:PATH or 1-9)"
                        ),
                    ));
                }
                DestinationSpec::Directory(_) => None,
                other => Some(
                    Destination::open(other, &OpenOptions::default())
                        .map_err(|e| io::Error::other(format!("trace2 destination '{}': {e}", t.value)))?,
                ),
            };
            out.push(Target {
                kind: t.kind,
                spec,
                shared,
            });
        }
        Ok(Trace2Sink {
            targets: out,
            opts: FormatOptions {
                brief,
                ..FormatOptions::default()
            },
            redact,
            real_minus_mono: 0,
            me: None,
            observed: HashMap::new(),
            exe: String::new(),
            host: None,
            now: 0,
            buf: Vec::with_capacity(512),
            failed: None,
        })
    }

    fn wall(&self, ts: u64) -> Timestamp {
        wall(self.real_minus_mono, ts)
    }

    fn host(&self) -> Option<&[u8]> {
        self.host.as_deref().map(str::as_bytes)
    }

    fn argv<'a>(&self, argv: &'a [String]) -> Vec<Str<'a>> {
        argv.iter()
            .map(|a| {
                if self.redact {
                    redact_arg(a)
                } else {
                    Str::Borrowed(a.as_str())
                }
            })
            .collect()
    }

    /// Emits on the session of `id` (or proctrace's own when `None`): formats the event (no copy
    /// of the SID) for every target, opening the session's own file first for a directory target.
    fn on(&mut self, id: Option<ProcId>, ts: u64, kind: K<'_>) -> io::Result<()> {
        let session = match id {
            Some(id) => self.observed.get_mut(&id).map(|o| &mut o.session),
            None => self.me.as_mut(),
        };
        let Some(Session { sid, t0, files, .. }) = session else {
            return Ok(());
        };
        let mut ev = T2::new(sid.as_str(), "main", kind);
        ev.time = Some(wall(self.real_minus_mono, ts));
        ev.t_abs = Some(ts.saturating_sub(*t0) as f64 / 1e9);
        if files.len() < self.targets.len() {
            files.resize_with(self.targets.len(), || None);
        }
        for (i, t) in self.targets.iter().enumerate() {
            self.buf.clear();
            if !trace2::format_event(t.kind, &ev, &self.opts, &mut self.buf) {
                continue;
            }
            let dst = match &t.shared {
                Some(d) => d,
                None => {
                    if files[i].is_none() {
                        let o = OpenOptions {
                            file_name: trace2::sid::last_component(sid).to_string(),
                            ..OpenOptions::default()
                        };
                        files[i] = Some(
                            Destination::open(&t.spec, &o).map_err(|e| io::Error::other(e.to_string()))?,
                        );
                    }
                    match &files[i] {
                        Some(d) => d,
                        None => continue,
                    }
                }
            };
            dst.write_line_buf(&mut self.buf)?;
        }
        Ok(())
    }

    /// The parent's session (a tracked parent, else proctrace's own).
    fn parent_key(&self, r: &ProcessRecord) -> Option<ProcId> {
        r.parent.filter(|p| self.observed.contains_key(p))
    }

    fn parent_session_mut(&mut self, parent: Option<ProcId>) -> Option<&mut Session> {
        match parent {
            Some(p) => self.observed.get_mut(&p).map(|o| &mut o.session),
            None => self.me.as_mut(),
        }
    }

    /// `start` in the child's session and `child_start` in the parent's, once.
    ///
    /// A fork that never exec'd runs its parent's program, so it shows its parent's argv (as its
    /// `/proc/PID/cmdline` would); failing that, the kernel's name in brackets.
    fn announce(&mut self, id: ProcId, r: &ProcessRecord, t: &Tracker, ts: u64) -> io::Result<()> {
        let Some(o) = self.observed.get(&id) else {
            return Ok(());
        };
        if o.started {
            return Ok(());
        }
        let parent = o.parent;
        let child_id = o.child_id;
        let fallback = [format!("[{}]", r.comm.as_deref().unwrap_or("?"))];
        let inherited = if r.execs.is_empty() {
            r.parent.and_then(|p| t.get(p)).and_then(|p| p.argv())
        } else {
            None
        };
        let argv: &[String] = r.argv().or(inherited).unwrap_or(&fallback);
        let argv = self.argv(argv);
        self.on(Some(id), ts, K::Start { argv: argv.clone() })?;
        let kind = K::ChildStart {
            child_id,
            child_class: Str::Borrowed("?"),
            hook_name: None,
            cd: None,
            use_shell: false,
            git_cmd: false,
            argv,
        };
        self.on(parent, ts, kind)?;
        if let Some(o) = self.observed.get_mut(&id) {
            o.started = true;
            o.child_start_ts = Some(ts);
        }
        Ok(())
    }

    /// Forgets an ended session once nothing more can be written to it.
    fn release(&mut self, id: ProcId) {
        if self
            .observed
            .get(&id)
            .is_some_and(|o| o.ended && o.open_children == 0)
        {
            self.observed.remove(&id);
        }
    }

    fn child_done(&mut self, parent: Option<ProcId>) {
        if let Some(p) = parent {
            if let Some(o) = self.observed.get_mut(&p) {
                o.open_children = o.open_children.saturating_sub(1);
            }
            self.release(p);
        }
    }

    fn data(&mut self, id: Option<ProcId>, ts: u64, key: &str, value: String) -> io::Result<()> {
        let kind = K::Data {
            t_rel: 0.0,
            category: Str::Borrowed("proctrace"),
            key: Str::Borrowed(key),
            value: Str::Owned(value),
        };
        self.on(id, ts, kind)
    }

    fn fact_inner(&mut self, fact: &Fact, t: &Tracker) -> io::Result<()> {
        match *fact {
            Fact::Fork(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let parent = self.parent_key(r);
                let start = r.start_ns.unwrap_or(self.now);
                let parent_sid = match parent {
                    Some(p) => self.observed.get(&p).map(|o| o.session.sid.clone()),
                    None => self.me.as_ref().map(|s| s.sid.clone()),
                };
                let comp = Sid::component_with_host(r.pid as u32, self.wall(start), self.host());
                let sid = Sid::nested(parent_sid.as_deref(), &comp).as_str().to_string();
                let child_id = match self.parent_session_mut(parent) {
                    Some(s) => {
                        s.next_child += 1;
                        s.next_child - 1
                    }
                    None => 0,
                };
                let session = Session {
                    sid,
                    t0: start,
                    next_child: 0,
                    files: Vec::new(),
                };
                self.observed.insert(
                    id,
                    Observed {
                        session,
                        child_id,
                        child_start_ts: None,
                        parent,
                        started: false,
                        execs: 0,
                        open_children: 0,
                        ended: false,
                    },
                );
                if let Some(p) = parent.and_then(|p| self.observed.get_mut(&p)) {
                    p.open_children += 1;
                }
                let exe = self.exe.clone();
                self.on(
                    Some(id),
                    start,
                    K::Version {
                        evt: Str::Borrowed(trace2::EVENT_FORMAT_VERSION),
                        exe: Str::Owned(exe),
                    },
                )?;
                // A pre-existing process whose argv is already known starts at once.
                if r.pre_existing && r.argv().is_some() {
                    self.announce(id, r, t, start)?;
                }
            }
            Fact::Exec { id, index } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(e) = r.execs.get(index) else {
                    return Ok(());
                };
                let started = self.observed.get(&id).is_some_and(|o| o.started);
                if !started {
                    return self.announce(id, r, t, e.ts);
                }
                let exec_id = match self.observed.get_mut(&id) {
                    Some(o) => {
                        o.execs += 1;
                        o.execs - 1
                    }
                    None => return Ok(()),
                };
                let d = e.details.as_ref();
                let fallback = [format!("[{}]", r.comm.as_deref().unwrap_or("?"))];
                let argv = self.argv(d.and_then(|d| d.argv.as_deref()).unwrap_or(&fallback));
                let exe = d.and_then(|d| d.exe.as_deref()).map(Str::Borrowed);
                self.on(Some(id), e.ts, K::Exec { exec_id, exe, argv })?;
            }
            Fact::Exit(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(x) = r.exit else { return Ok(()) };
                self.announce(id, r, t, x.ts)?;
                match x.status {
                    Some(ExitStatus::Signal { signal, .. }) => {
                        self.on(Some(id), x.ts, K::Signal { signo: signal })?
                    }
                    status => {
                        let code = git_code(status);
                        self.on(Some(id), x.ts, K::Exit { code: code & 0xff })?;
                        self.on(Some(id), x.ts, K::Atexit { code: code & 0xff })?;
                    }
                }
                let Some(o) = self.observed.get_mut(&id) else {
                    return Ok(());
                };
                o.ended = true;
                let (parent, child_id, t_rel) = (
                    o.parent,
                    o.child_id,
                    x.ts.saturating_sub(o.child_start_ts.unwrap_or(x.ts)) as f64 / 1e9,
                );
                let kind = K::ChildExit {
                    child_id,
                    pid: r.pid as i64,
                    code: git_code(x.status),
                    t_rel,
                };
                self.on(parent, x.ts, kind)?;
                self.release(id);
                self.child_done(parent);
            }
            Fact::Background(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(bg) = r.background else { return Ok(()) };
                self.announce(id, r, t, bg.ts)?;
                let Some(o) = self.observed.get(&id) else {
                    return Ok(());
                };
                let ready = match bg.state {
                    BackgroundState::Ready => ReadyState::Ready,
                    BackgroundState::Timeout => ReadyState::Timeout,
                    BackgroundState::Error => ReadyState::Error,
                };
                let t_rel = bg.ts.saturating_sub(o.child_start_ts.unwrap_or(bg.ts)) as f64 / 1e9;
                let kind = K::ChildReady {
                    child_id: o.child_id,
                    pid: r.pid as i64,
                    ready,
                    t_rel,
                };
                let parent = o.parent;
                self.on(parent, bg.ts, kind)?;
                // Released: the parent never reports on it again.
                self.child_done(parent);
            }
            // TODO(issue 9): a process's own regions and data inside its session.
            Fact::Region { .. } | Fact::Data { .. } => {}
            Fact::Lost { ts, count } => {
                let ts = ts.unwrap_or(self.now);
                self.data(None, ts, "lost_events", count.to_string())?;
            }
            Fact::Uid { id, ts, ruid, euid } => {
                self.data(Some(id), ts, "uid", format!("ruid={ruid} euid={euid}"))?
            }
            Fact::Gid { id, ts, rgid, egid } => {
                self.data(Some(id), ts, "gid", format!("rgid={rgid} egid={egid}"))?
            }
            Fact::Sid { id, ts } => self.data(Some(id), ts, "setsid", "1".into())?,
            Fact::Ptrace { id, ts, tracer } => self.data(Some(id), ts, "ptrace", tracer.to_string())?,
            Fact::Comm { id, ts } => {
                let comm = t.get(id).and_then(|r| r.comm.clone()).unwrap_or_default();
                self.data(Some(id), ts, "comm", comm)?;
            }
        }
        Ok(())
    }
}

impl Sink for Trace2Sink {
    fn start(&mut self, h: &Header) -> io::Result<()> {
        self.real_minus_mono = h.real_minus_mono;
        self.now = h.ts;
        self.host = h.tool.host.clone();
        self.opts.utc_offset = Some(h.tool.utc_offset.unwrap_or(0));
        let comp = Sid::component_with_host(h.tool.pid, self.wall(h.ts), self.host());
        let sid = Sid::nested(h.tool.parent_sid.as_deref(), &comp)
            .as_str()
            .to_string();
        self.me = Some(Session {
            sid,
            t0: h.ts,
            next_child: 0,
            files: Vec::new(),
        });
        self.exe = format!("proctrace-{}", h.tool.version);
        let exe = self.exe.clone();
        self.on(
            None,
            h.ts,
            K::Version {
                evt: Str::Borrowed(trace2::EVENT_FORMAT_VERSION),
                exe: Str::Owned(exe),
            },
        )?;
        let argv = self
            .argv(&h.tool.argv)
            .into_iter()
            .map(|a| Str::Owned(a.into_owned()))
            .collect();
        self.on(None, h.ts, K::Start { argv })?;
        let name = match h.mode {
            Mode::Run { .. } => "run",
            Mode::Watch { .. } => "watch",
            Mode::Replay { .. } => "replay",
        };
        self.on(
            None,
            h.ts,
            K::CmdName {
                name: Str::Borrowed(name),
                hierarchy: Some(Str::Borrowed(name)),
            },
        )
    }

    fn fact(&mut self, fact: &Fact, t: &Tracker) -> io::Result<()> {
        if self.failed.is_some() {
            return Ok(());
        }
        if let Some(ts) = fact.ts(t) {
            self.now = self.now.max(ts);
        }
        self.fact_inner(fact, t)
    }

    fn finish(&mut self, s: &Summary, _t: &Tracker) -> io::Result<()> {
        // Processes still open (left running, or whose exit was never seen) keep their sessions
        // open, as a daemon's would be; proctrace's own session ends here.
        let code = s.status.map_or(0, |st| st.shell_code()) & 0xff;
        self.on(None, s.ts, K::Exit { code })?;
        self.on(None, s.ts, K::Atexit { code })
    }
}
