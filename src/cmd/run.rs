//! `proctrace run -- CMD`: trace one command and everything it starts.
//!
//! Order matters: subscribe (the kernel's ack is in) before the command exists, so not one event
//! of its tree is missed; after it exits, wait for its EXIT event and a barrier so every event up
//! to that moment is in; then decide which descendants outlived it.

use std::cell::Cell;
use std::time::Duration;

use crate::capture::procfs::{self, Clocks};
use crate::capture::trace2::{Trace2Listener, child_env};
use crate::capture::{Backend, CaptureOptions};
use crate::cli::RunArgs;
use crate::engine::{Pumped, Session};
use crate::input::notes::Clock;
use crate::model::event::{Event, ExitStatus, Pid};
use crate::model::session::{Header, Mode, Tool};
use crate::model::tracker::{BackgroundState, ProcId, Scope, Tracker, TrackerOptions};
use crate::output::{Ask, FinishedRun, Outputs};
use crate::supervise::{self, SignalTarget};
use crate::{ProctraceError, exit_codes};

/// Settings of `run`.
pub struct RunConfig {
    /// The command.
    pub argv: Vec<String>,
    /// The outputs, checked and opened (not yet started).
    pub outputs: Outputs,
    /// Follow background children this long after the command exits.
    pub wait_bg: Option<Duration>,
    /// Exit non-zero when background children are left.
    pub fail_on_leak: bool,
    /// Which backend (`None`: auto).
    pub backend: Option<String>,
    /// Capture settings.
    pub capture: CaptureOptions,
    /// `--trace2`: listen for the command's Trace2 streams and merge them in.
    pub trace2: bool,
    /// Variable prefixes besides `GIT` pointed at the listener (`--trace2-prefix`).
    pub trace2_prefixes: Vec<String>,
    /// `--files`: watch file accesses (`None`: not asked).
    pub files: Option<crate::capture::files::FilesOptions>,
    /// `--include-daemons`: the kinds of daemons whose work during the run is traced too.
    pub include_daemons: Vec<crate::model::elsewhere::DaemonKind>,
}

/// How long the end of a run waits for the Trace2 connections of finished processes to reach
/// end of file (what they wrote before exiting is read at once; this only bounds the wait for
/// connections a surviving background process still holds).
const TRACE2_GRACE: Duration = Duration::from_millis(300);

/// How a probe of a leftover process went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Alive and the same instance.
    Alive,
    /// Gone (or the pid now belongs to someone else).
    Gone,
    /// Could not tell.
    Error,
}

/// Is the process that forked at `start_ns` with pid `pid` still there?
pub fn probe(pid: Pid, start_ns: Option<u64>, clocks: &Clocks) -> Probe {
    // SAFETY: pidfd_open via syscall with a pid and no flags; the fd is closed right away.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return if e.raw_os_error() == Some(libc::ESRCH) {
            Probe::Gone
        } else {
            Probe::Error
        };
    }
    // SAFETY: fd is a descriptor we just opened.
    unsafe { libc::close(fd as i32) };
    match procfs::stat(pid) {
        None => Probe::Gone,
        Some(st) if st.state == 'Z' || st.state == 'X' => Probe::Gone,
        Some(st) => match start_ns {
            Some(s) if clocks.mono_to_starttime(s).abs_diff(st.starttime) > 1 => Probe::Gone,
            _ => Probe::Alive,
        },
    }
}

/// `proctrace run`: the command line checked (every output before anything runs or any file is
/// touched), then [`run`].
pub fn command(a: RunArgs) -> Result<i32, ProctraceError> {
    let outputs = Outputs::plan(
        &a.common.out.0,
        Ask {
            live: true,
            human_stdout: false,
            tree: a.tree.into(),
            summary_text: true,
            progress: true,
            inputs: Vec::new(),
            propagate: true,
        },
    )?;
    run(RunConfig {
        outputs,
        wait_bg: a.wait_bg.map(|v| crate::cli::secs(v, "--wait-bg")).transpose()?,
        fail_on_leak: a.fail_on_leak,
        backend: (a.backend != "auto").then_some(a.backend),
        capture: a.common.capture_options(),
        trace2: a.trace2,
        trace2_prefixes: a.trace2_prefix,
        files: a.files.then_some(crate::capture::files::FilesOptions {
            all: a.files_all,
            ignore: a.files_ignore.clone(),
        }),
        include_daemons: a.include_daemons.map(|d| d.0).unwrap_or_default(),
        // The model's text: non-UTF-8 bytes kept (crate::model::bytes).
        argv: a
            .argv
            .into_iter()
            .map(crate::model::bytes::from_os_string)
            .collect(),
    })
}

/// Runs the command under trace; returns proctrace's exit code: the command's status, whatever
/// happened to the outputs (what was lost is said on stderr).
pub fn run(mut cfg: RunConfig) -> Result<i32, ProctraceError> {
    supervise::block_stop_signals();
    let clocks = Clocks::sample();
    cfg.capture.files = cfg.files.clone();
    let mut backend = Backend::open(cfg.backend.as_deref(), &cfg.capture)?;
    // Before the outputs start: a refusal leaves nothing behind. The ptrace backend reports
    // file calls itself (seccomp); with the others fanotify watches, and when it is refused
    // (no CAP_SYS_ADMIN) `auto` goes on to ptrace.
    let files = match &cfg.files {
        Some(_) if backend.captures_files() => None,
        Some(o) => match crate::capture::files::FileWatcher::start(backend.sender(), o.clone()) {
            Ok(w) => Some(w),
            Err(ProctraceError::Io(why, e))
                if cfg.backend.is_none() && e.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                let why = why.strip_prefix("--files: ").unwrap_or(&why).to_string();
                backend = backend.files_fallback(&cfg.capture, &why)?;
                None
            }
            Err(e) => return Err(e),
        },
        None => None,
    };
    supervise::become_subreaper();
    let sinks = cfg.outputs.start()?;
    let tracker = Tracker::new(TrackerOptions {
        scope: Scope::Tree,
        retain_exited: true,
        want_details: cfg.capture.enrich,
    });
    let mut s = Session::new(backend, tracker, sinks);
    let target = SignalTarget::default();
    supervise::spawn_signal_thread(target.clone(), s.notifier())
        .map_err(|e| ProctraceError::Io("starting signal thread".into(), e))?;
    let mode = Mode::Run {
        argv: cfg.argv.clone(),
    };
    let header = Header {
        mode,
        ts: procfs::mono_now(),
        real_minus_mono: clocks.real_minus_mono,
        tool: Tool::this_process(),
        backend: Some(s.backend.name().to_string()),
        refused: s.backend.refused().to_vec(),
        files: files.is_some() || (cfg.files.is_some() && s.backend.captures_files()),
        daemons: Vec::new(),
    };
    let mut header = header;
    let daemons = follow_daemons(&mut s, &cfg.include_daemons);
    header.daemons = daemons
        .servers
        .iter()
        .map(|&(pid, daemon)| crate::model::session::Followed { daemon, pid })
        .collect();
    let (listener, env) = if cfg.trace2 {
        let clock = Clock {
            offset_ns: header.real_minus_mono,
        };
        let l = Trace2Listener::start(clock, s.notifier(), s.notes_queued())
            .map_err(|e| ProctraceError::Io("starting the trace2 listener".into(), e))?;
        let mut prefixes = vec!["GIT".to_string()];
        prefixes.extend(cfg.trace2_prefixes.iter().cloned());
        let env = child_env(l.socket_path(), &header.trace2_sid(), &prefixes, |k| {
            std::env::var_os(k)
        });
        for (name, old) in &env.replaced {
            let old = crate::model::escape::text(old);
            crate::say!(
                "proctrace: --trace2 takes over {name} for the command (it was '{old}'; the command's events are merged into proctrace's outputs instead)"
            );
        }
        (Some(l), env.vars)
    } else {
        (None, Vec::new())
    };
    let mut env = env;
    if let Some(o) = cfg.outputs.otlp().filter(|o| o.propagate) {
        // The command joins the exported trace: its TRACEPARENT names its own process span.
        let tp = crate::sink::otlp::command_traceparent(o);
        env.push(("TRACEPARENT".into(), tp.to_header().into()));
    }
    s.start(&header);
    if !daemons.servers.is_empty() {
        s.engine
            .tracker
            .follow_daemons(&daemons.servers, &daemons.under, header.ts);
    }

    // The command gets its own process group (and the terminal, when proctrace has it).
    supervise::prepare_job_control();
    let cmd_pid = match s.backend.spawn(&cfg.argv, &env) {
        Ok(pid) => pid,
        Err(e) => {
            supervise::finishing(Some(e.code));
            s.stop();
            let sum = s.summary(None, 0, None);
            s.engine.finish(&sum);
            let run = FinishedRun::new(&header, s.tracker(), &sum, &cfg.outputs.settings);
            cfg.outputs.finish(&run, &s.engine.sinks);
            crate::say!(
                "proctrace: cannot run '{}': {}",
                crate::model::escape::text(&cfg.argv[0]),
                e.error
            );
            return Ok(e.code);
        }
    };
    s.feed(&Event::Root { tgid: cmd_pid });
    target.set(cmd_pid);

    // Follow the tree until the command itself is reaped.
    let mut raw_status = None;
    while raw_status.is_none() {
        match s.pump(Duration::from_millis(500)) {
            Pumped::CommandExited(status) => raw_status = Some(status),
            Pumped::Ended => break,
            _ => {}
        }
    }
    target.clear();
    let status = raw_status.map(|st| ExitStatus::from_wait(st as u32));
    // From here on a signal hurries the end, and a second one ends proctrace at once: every
    // wait below is bounded, and shortened to the hurry deadline (docs/signals.md).
    supervise::finishing(status.map(|st| st.shell_code()));
    // The EXIT event can trail the reap by a little: wait for it, then a barrier for the rest.
    let root_done = |t: &Tracker| {
        supervise::hurrying()
            || t.first_root()
                .and_then(|r| t.get(r))
                .is_some_and(|r| r.exit.is_some())
    };
    s.pump_until(Duration::from_secs(2), root_done, |_| {});
    s.barrier(supervise::bounded(Duration::from_secs(2)));

    // Whatever in the tree is still alive outlived the command (a daemon's work is not the
    // command's: `--include-daemons`).
    let mut leftovers: Vec<ProcId> = commands_live(s.tracker());
    if let Some(wait) = cfg.wait_bg
        && !leftovers.is_empty()
    {
        // Mark them now so their exits say they outlived the command; like git's
        // start_bg_command, one that exits while waited on gets a plain exit, no background fact.
        let now = procfs::mono_now();
        for pid in pids(&s, &leftovers) {
            s.feed(&Event::Background {
                ts: now,
                tgid: pid,
                state: BackgroundState::Ready,
                report: false,
            });
        }
        let interrupted = Cell::new(false);
        s.pump_until(
            wait,
            |t| {
                interrupted.get()
                    || supervise::hurrying()
                    || !t
                        .live_ids()
                        .any(|id| t.get(id).is_some_and(|r| r.ran_in.is_none()))
            },
            |n| {
                if matches!(n, Pumped::Interrupted(_)) {
                    interrupted.set(true);
                }
            },
        );
        s.barrier(supervise::bounded(Duration::from_secs(1)));
        leftovers = commands_live(s.tracker());
    }
    let mut background = 0u64;
    let mut gone = Vec::new();
    for &id in &leftovers {
        let Some(r) = s.tracker().get(id) else { continue };
        let (pid, start) = (r.pid, r.start_ns);
        let state = match probe(pid, start, &clocks) {
            Probe::Gone => {
                gone.push(pid);
                continue;
            }
            Probe::Alive if cfg.wait_bg.is_some() => BackgroundState::Timeout,
            Probe::Alive => BackgroundState::Ready,
            Probe::Error => BackgroundState::Error,
        };
        background += 1;
        s.feed(&Event::Background {
            ts: procfs::mono_now(),
            tgid: pid,
            state,
            report: true,
        });
    }
    if !gone.is_empty() {
        // They ended between the barrier and the probe: their EXIT is on its way.
        s.barrier(supervise::bounded(Duration::from_secs(1)));
        let now = procfs::mono_now();
        for pid in gone {
            s.feed(&Event::Gone { ts: now, tgid: pid });
        }
    }

    if let Some(l) = listener {
        // What the finished processes wrote is queued ahead of the backend's final message.
        let st = l.finish(supervise::bounded(TRACE2_GRACE));
        if st.malformed > 0 {
            crate::say!(
                "proctrace: --trace2: {} of {} lines received were not Trace2 events; ignored",
                st.malformed,
                st.lines
            );
        }
        if st.too_deep > 0 {
            crate::say!(
                "proctrace: --trace2: {} region events dropped (a connection kept more than 256 regions open, or entered regions in more than 64 sessions)",
                st.too_deep
            );
        }
    }
    // What the finished processes did to files is queued by now: read it all.
    let files_lost = files.map(|f| f.finish());
    s.stop();
    let mut sum = s.summary(status, background, Some(cmd_pid));
    if let Some(lost) = files_lost {
        // fanotify's overflows (the ptrace backend counts its own in its summary).
        sum.capture.files_lost = lost;
    }
    s.engine.finish(&sum);
    let run = FinishedRun::new(&header, s.tracker(), &sum, &cfg.outputs.settings);
    cfg.outputs.print_tree(&run);
    cfg.outputs.finish(&run, &s.engine.sinks);
    report_capture_failure(&s);
    if !cfg.outputs.settings.quiet {
        report_usage_loss(&sum.capture);
    }

    let code = match status {
        Some(st) => st.shell_code(),
        None => exit_codes::INTERNAL,
    };
    if cfg.fail_on_leak && background > 0 && code == 0 {
        return Ok(exit_codes::LEAK);
    }
    Ok(code)
}

/// The processes of the command's tree believed alive, in order of start (not a daemon's:
/// `--include-daemons`).
fn commands_live(t: &Tracker) -> Vec<ProcId> {
    let mut v = t.live();
    v.retain(|&id| t.get(id).is_some_and(|r| r.ran_in.is_none()));
    v
}

/// `--include-daemons`: finds the daemons of `kinds` running now and has the backend pass on
/// what they do from now on; the model takes each in when it starts a process. A backend that
/// sees only the command's tree (ptrace) cannot: said once, and nothing is followed.
fn follow_daemons(
    s: &mut Session,
    kinds: &[crate::model::elsewhere::DaemonKind],
) -> crate::capture::daemons::Found {
    use crate::capture::daemons;
    if kinds.is_empty() {
        return daemons::Found::default();
    }
    let found = daemons::find(kinds, std::process::id() as Pid);
    if found.servers.is_empty() {
        return found;
    }
    match s.backend.follow_also(&found.pids()) {
        Ok(()) => found,
        Err(why) => {
            let names: Vec<String> = found
                .servers
                .iter()
                .map(|(pid, k)| format!("{} (pid {pid})", k.client().server))
                .collect();
            crate::say!(
                "proctrace: --include-daemons: {why}: the work of {} during the run is not in this trace",
                names.join(", ")
            );
            daemons::Found::default()
        }
    }
}

fn pids(s: &Session, ids: &[ProcId]) -> Vec<Pid> {
    ids.iter()
        .filter_map(|&id| s.tracker().get(id).map(|r| r.pid))
        .collect()
}

/// Says how many processes lack their cost figures because taskstats records were dropped (its
/// own loss, apart from the connector's `lost` events).
pub fn report_usage_loss(c: &crate::model::session::CaptureSummary) {
    if c.usage_lost > 0 {
        crate::say!(
            "proctrace: {} taskstats exit records lost (its receive buffer was full): some processes have no cost figures (usage_lost in the end line)",
            c.usage_lost
        );
    }
    if c.usage_incomplete > 0 {
        crate::say!(
            "proctrace: {} processes left without cost figures: the record of one of their threads was lost",
            c.usage_incomplete
        );
    }
}

/// Tells the user the capture failed (outputs report their own failures:
/// [`Outputs::finish`]).
pub fn report_capture_failure(s: &Session) {
    if let Some(f) = s.failure() {
        crate::say!("proctrace: event capture failed: {f}; the trace is incomplete from that point");
    }
}
