//! `proctrace watch [-p PID]`: stream lifecycle facts system-wide or for one running subtree
//! until interrupted; memory stays bounded because exited processes leave the table.

use std::time::{Duration, Instant};

use crate::capture::procfs::{self, Clocks};
use crate::capture::{Backend, BackendChoice, CaptureOptions};
use crate::engine::{Pumped, Session};
use crate::filter::FactFilter;
use crate::model::event::{Event, Pid};
use crate::model::session::{Header, Mode, Tool};
use crate::model::tracker::{Scope, Tracker, TrackerOptions};
use crate::output::Outputs;
use crate::supervise::{self, SignalTarget};
use crate::{ProctraceError, exit_codes};

/// Settings of `watch`.
#[derive(Debug, Clone)]
pub struct WatchConfig {
    /// Only this process and its descendants.
    pub root: Option<Pid>,
    /// Where lines go.
    pub outputs: Outputs,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Capture settings (watch uses the connector).
    pub capture: CaptureOptions,
    /// Record events for replay.
    pub record: Option<String>,
    /// Which facts reach the outputs.
    pub filter: FactFilter,
}

/// Watches until interrupted; returns proctrace's exit code.
pub fn watch(cfg: WatchConfig) -> Result<i32, ProctraceError> {
    supervise::block_stop_signals();
    let clocks = Clocks::sample();
    if let Some(root) = cfg.root {
        if procfs::stat(root).is_none() {
            return Err(ProctraceError::Usage(format!("no process with pid {root}")));
        }
    }
    let backend = Backend::open(BackendChoice::Connector, &cfg.capture)?;
    let sinks = cfg.outputs.open_sinks()?;
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
    if let Some(path) = cfg.record.as_deref() {
        s.engine
            .record_to(path, cfg.outputs.redact)
            .map_err(|e| ProctraceError::Io(format!("cannot create capture file '{path}'"), e))?;
    }
    supervise::spawn_signal_thread(SignalTarget::default(), s.notifier())
        .map_err(|e| ProctraceError::Io("starting signal thread".into(), e))?;
    let mode = Mode::Watch { root: cfg.root };
    let header = Header {
        mode,
        ts: procfs::mono_now(),
        real_minus_mono: clocks.real_minus_mono,
        tool: Tool::this_process(),
        backend: Some(s.backend.kind().as_str().to_string()),
    };
    s.start(&header);

    if let Some(root) = cfg.root {
        // Seed the subtree as it is now, parents before children.
        let all = procfs::all_processes();
        let mut in_tree = vec![root];
        for (pid, st) in &all {
            if *pid == root || in_tree.contains(&st.ppid) {
                if *pid != root {
                    in_tree.push(*pid);
                }
                let details = procfs::exec_details(*pid);
                let start = Some(clocks.starttime_to_mono(st.starttime));
                s.feed(&Event::Existing {
                    tgid: *pid,
                    ppid: st.ppid,
                    start_ns: start,
                    details: Some(details),
                });
            }
        }
    }

    let deadline = cfg.duration.map(|d| Instant::now() + d);
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        match s.pump(Duration::from_millis(200)) {
            Pumped::Interrupted(_) | Pumped::Ended => break,
            _ => {}
        }
        if cfg.root.is_some() && s.tracker().live_count() == 0 {
            break; // the whole subtree is gone
        }
    }
    s.stop();
    let sum = s.summary(None, 0, None);
    s.engine.finish(&sum);
    if cfg.outputs.summary_text {
        cfg.outputs.print_summary(s.tracker(), &header, &sum);
    }
    cfg.outputs.write_reports(&header, s.tracker(), &sum);
    let st = sum.stats;
    if cfg.outputs.quiet {
        crate::cmd::run::report_problems(&s);
        return Ok(exit_codes::OK);
    }
    eprintln!(
        "proctrace: {} processes, {} execs (argv read for {}), {} exits, {} events lost{}, {} datagrams rejected; peak {} records held{}",
        st.processes,
        st.execs,
        st.execs_with_argv,
        st.exits,
        st.lost,
        if st.lost > 0 {
            " (the picture is incomplete)"
        } else {
            ""
        },
        sum.capture.rejected,
        st.peak_held,
        match sum.filtered {
            Some(n) => format!("; {n} facts filtered out"),
            None => String::new(),
        }
    );
    crate::cmd::run::report_problems(&s);
    crate::cmd::run::report_usage_loss(&sum.capture);
    Ok(exit_codes::OK)
}
