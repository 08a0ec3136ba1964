//! `proctrace watch [-p PID]`: stream lifecycle facts system-wide or for one running subtree
//! until interrupted; memory stays bounded because exited processes leave the table.

use std::time::{Duration, Instant};

use crate::capture::procfs::{self, Clocks};
use crate::capture::{Backend, CaptureOptions};
use crate::cli::WatchArgs;
use crate::engine::{Pumped, Session};
use crate::filter::FactFilter;
use crate::model::event::{Event, Pid};
use crate::model::session::{Header, Mode, Tool};
use crate::model::tracker::{Scope, Tracker, TrackerOptions};
use crate::output::{Ask, FinishedRun, Outputs, TreeMode};
use crate::supervise::{self, SignalTarget};
use crate::{ProctraceError, exit_codes};

/// Settings of `watch`.
pub struct WatchConfig {
    /// Only this process and its descendants.
    pub root: Option<Pid>,
    /// Where lines go.
    pub outputs: Outputs,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Capture settings (`whole_system` is set by [`watch`]).
    pub capture: CaptureOptions,
    /// Which backend (`None`: auto, among those that can watch).
    pub backend: Option<String>,
    /// Which facts reach the outputs.
    pub filter: FactFilter,
    /// `--files` (with `-p`): watch file accesses.
    pub files: Option<crate::capture::files::FilesOptions>,
}

/// `proctrace watch`: the command line checked (every output before any file is touched), then
/// [`watch`].
pub fn command(a: WatchArgs) -> Result<i32, ProctraceError> {
    let kinds: Vec<_> = a.filter.events.into_iter().flat_map(|k| k.0).collect();
    let out = &a.common.out.0;
    let mut outputs = Outputs::plan(
        out,
        Ask {
            live: true,
            human_stdout: out.value("output").is_none(),
            tree: TreeMode::None,
            summary_text: a.summary,
            progress: false,
            inputs: Vec::new(),
            propagate: false,
        },
    )?;
    // watch prints its summary without a tree.
    outputs.summary_alone();
    watch(WatchConfig {
        root: a.pid,
        filter: FactFilter::new(&kinds, a.filter.user, a.filter.comm),
        outputs,
        duration: a
            .duration
            .map(|v| crate::cli::secs(v, "--duration"))
            .transpose()?,
        capture: a.common.capture_options(),
        backend: (a.backend != "auto").then_some(a.backend),
        files: a.files.then_some(crate::capture::files::FilesOptions {
            all: a.files_all,
            ignore: a.files_ignore.clone(),
        }),
    })
}

/// Watches until interrupted, for `--duration`, until `-p`'s tree is gone, or until stdout's
/// reader goes away (`watch | head`: a quiet end); returns proctrace's exit code: 0, or
/// [`exit_codes::OUTPUT`] when an output failed.
pub fn watch(mut cfg: WatchConfig) -> Result<i32, ProctraceError> {
    supervise::block_stop_signals();
    let clocks = Clocks::sample();
    if let Some(root) = cfg.root
        && procfs::stat(root).is_none()
    {
        return Err(ProctraceError::Usage(format!("no process with pid {root}")));
    }
    cfg.capture.whole_system = true;
    let backend = Backend::open(cfg.backend.as_deref(), &cfg.capture)?;
    // Before the outputs start: a refusal leaves nothing behind.
    let files = match &cfg.files {
        Some(o) => Some(crate::capture::files::FileWatcher::start(
            backend.sender(),
            o.clone(),
        )?),
        None => None,
    };
    let sinks = cfg.outputs.start()?;
    let scope = if cfg.root.is_some() {
        Scope::Tree
    } else {
        Scope::All
    };
    let tracker = Tracker::new(TrackerOptions {
        scope,
        // Whole-run reports need the exited records; streaming alone keeps memory flat.
        retain_exited: cfg.outputs.wants_records(),
        want_details: true,
    });
    let mut s = Session::new(backend, tracker, sinks);
    s.engine.set_filter(cfg.filter.clone());
    supervise::spawn_signal_thread(SignalTarget::without_command(), s.notifier())
        .map_err(|e| ProctraceError::Io("starting signal thread".into(), e))?;
    let mode = Mode::Watch { root: cfg.root };
    let header = Header {
        mode,
        ts: procfs::mono_now(),
        real_minus_mono: clocks.real_minus_mono,
        tool: Tool::this_process(),
        backend: Some(s.backend.name().to_string()),
        refused: s.backend.refused().to_vec(),
        files: files.is_some(),
        daemons: Vec::new(),
    };
    s.start(&header);

    // Processes seeded already dead (zombies: exited, not yet reaped by their parent). Their
    // exit is seen only if it came after the subscription; once what was queued has been read,
    // those still open are closed as gone, or `watch -p` of a zombie would wait for ever.
    let mut zombies: Vec<Pid> = Vec::new();
    if let Some(root) = cfg.root {
        // Seed the subtree as it is now, parents before children.
        let all = procfs::all_processes();
        let mut in_tree = vec![root];
        for (pid, st) in &all {
            if *pid == root || in_tree.contains(&st.ppid) {
                if *pid != root {
                    in_tree.push(*pid);
                }
                // Taken before the read: what the process did before it is in what is read,
                // and its fork or exec arriving later from the backend is not applied again.
                let seen = procfs::mono_now();
                let details = procfs::exec_details(*pid);
                let start = Some(clocks.starttime_to_mono(st.starttime));
                s.feed(&Event::Existing {
                    tgid: *pid,
                    ppid: st.ppid,
                    start_ns: start,
                    details: Some(details),
                    seen_ns: Some(seen),
                    daemon: None,
                });
                // A leader that ended while its threads run shows `Z` too: not dead.
                let threads = || std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
                if st.state == 'Z' && threads() <= 1 {
                    zombies.push(*pid);
                }
            }
        }
    }
    // Longer than any backend holds an event (eBPF's reader polls every 20 ms).
    let zombies_due = Instant::now() + Duration::from_millis(250);

    let deadline = cfg.duration.map(|d| Instant::now() + d);
    let writes_stdout = cfg.outputs.writes_stdout();
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let wait = if zombies.is_empty() {
            Duration::from_millis(200)
        } else {
            zombies_due.saturating_duration_since(Instant::now())
        };
        match s.pump(wait) {
            Pumped::Interrupted(_) | Pumped::Ended => break,
            _ => {}
        }
        if !zombies.is_empty() && Instant::now() >= zombies_due {
            for tgid in std::mem::take(&mut zombies) {
                if s.tracker().lookup(tgid).is_some() {
                    s.feed(&Event::Gone {
                        ts: procfs::mono_now(),
                        tgid,
                    });
                }
            }
        }
        if cfg.root.is_some() && s.tracker().live_count() == 0 {
            break; // the whole subtree is gone
        }
        if s.engine.sinks.stdout_closed() || (writes_stdout && crate::output::term::stdout_reader_gone()) {
            break; // `watch | head`: the reader has what it wanted
        }
    }
    // Watching is over: a signal from now on hurries the end (after a signal stopped watching,
    // the next one ends proctrace at once).
    supervise::finishing(None);
    // What the watched processes did to files is queued by now: read it all.
    let files_lost = files.map_or(0, |f| f.finish());
    s.stop();
    let mut sum = s.summary(None, 0, None);
    sum.capture.files_lost = files_lost;
    s.engine.finish(&sum);
    let run = FinishedRun::new(&header, s.tracker(), &sum, &cfg.outputs.settings);
    if cfg.outputs.summary_text {
        cfg.outputs.print_summary(&run);
    }
    let outcome = cfg.outputs.finish(&run, &s.engine.sinks);
    crate::cmd::run::report_capture_failure(&s);
    if cfg.outputs.settings.quiet || outcome.stdout_closed {
        return Ok(outcome.code(exit_codes::OK));
    }
    let st = sum.stats;
    crate::say!(
        "proctrace: {}, {} (argv read for {}), {}, {} lost{}, {} rejected; peak {} held{}",
        count(st.processes, "process", "processes"),
        count(st.execs, "exec", "execs"),
        st.execs_with_argv,
        count(st.exits, "exit", "exits"),
        count(st.lost, "event", "events"),
        if st.lost > 0 {
            " (the picture is incomplete)"
        } else {
            ""
        },
        count(sum.capture.rejected, "datagram", "datagrams"),
        count(st.peak_held, "record", "records"),
        match sum.filtered {
            Some(n) => format!("; {n} facts filtered out"),
            None => String::new(),
        }
    );
    crate::cmd::run::report_usage_loss(&sum.capture);
    Ok(outcome.code(exit_codes::OK))
}

/// `1 process`, `2 processes`.
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
