//! `proctrace watch [-p PID]`: stream lifecycle facts system-wide or for one running subtree
//! until interrupted; memory stays bounded because exited processes leave the table.

use std::time::{Duration, Instant};

use crate::event::Pid;
use crate::procfs::{self, Clocks};
use crate::session::{Pumped, Session};
use crate::sink::{Header, Mode};
use crate::supervise::{self, SignalTarget};
use crate::tracker::{Scope, Tracker, TrackerOptions};
use crate::{Outputs, ProctraceError, exit_codes};

/// Settings of `watch`.
#[derive(Debug, Clone)]
pub struct WatchConfig {
    /// Only this process and its descendants.
    pub root: Option<Pid>,
    /// Where lines go.
    pub outputs: Outputs,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Connector options.
    pub connector: cnproc::Options,
    /// Read argv/exe/cwd from `/proc` after each exec.
    pub enrich: bool,
    /// Record events for replay.
    pub record: Option<String>,
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
    let conn = cnproc::Connector::open(&cfg.connector).map_err(ProctraceError::Connector)?;
    let sinks = cfg.outputs.open_sinks()?;
    let scope = if cfg.root.is_some() {
        Scope::Tree
    } else {
        Scope::All
    };
    let tracker = Tracker::new(TrackerOptions {
        scope,
        retain_exited: false,
        want_details: true,
    });
    let mut s = Session::open(
        conn,
        &cfg.connector,
        tracker,
        sinks,
        cfg.enrich,
        cfg.record.as_deref(),
        cfg.outputs.redact,
    )?;
    supervise::spawn_signal_thread(SignalTarget::default(), s.notifier())
        .map_err(|e| ProctraceError::Io("starting signal thread".into(), e))?;
    let mode = Mode::Watch { root: cfg.root };
    s.start(&Header {
        mode: mode.clone(),
        ts: procfs::mono_now(),
        real_minus_mono: clocks.real_minus_mono,
    });

    if let Some(root) = cfg.root {
        // Seed the subtree as it is now, parents before children.
        let all = procfs::all_processes();
        let mut facts = Vec::new();
        let mut in_tree = vec![root];
        for (pid, st) in &all {
            if *pid == root || in_tree.contains(&st.ppid) {
                if *pid != root {
                    in_tree.push(*pid);
                }
                let details = procfs::exec_details(*pid);
                let start = Some(clocks.starttime_to_mono(st.starttime));
                s.tracker
                    .add_existing(*pid, st.ppid, start, Some(details), &mut facts);
            }
        }
        s.dispatch(facts);
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
        if cfg.root.is_some() && s.tracker.live_count() == 0 {
            break; // the whole subtree is gone
        }
    }
    s.stop();
    let sum = s.summary(None, 0);
    s.sinks.finish(&sum, &s.tracker);
    let st = sum.stats;
    eprintln!(
        "proctrace: {} processes, {} execs (argv read for {}), {} exits, {} events lost{}, {} datagrams rejected; peak {} records held",
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
        st.peak_held
    );
    crate::run::report_problems(&s);
    Ok(exit_codes::OK)
}
