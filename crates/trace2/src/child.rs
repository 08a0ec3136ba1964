//! Starting children with their trace2 events: synchronous runs
//! (`child_start` … `child_exit`), background starts with a readiness probe
//! (`child_start` … `child_ready`, git's `start_bg_command`) and exec.
//!
//! Every child started here gets `<P>_TRACE2_PARENT_SID` and
//! `GIT_TRACE2_PARENT_SID` (and the `…_PARENT_NAME` pair) so that traced
//! children, git included, nest under this process.

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use crate::api::{self, ChildId, ChildSpec};
use crate::event::ReadyState;

/// Adds the nesting variables to `cmd` (nothing if tracing is off).
pub fn prepare(cmd: &mut Command) {
    for (k, v) in api::child_env() {
        cmd.env(k, v);
    }
}

/// A child's exit status as git reports it: the code, or `128 + signal`.
pub fn status_code(st: &ExitStatus) -> i32 {
    match (st.code(), st.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => -1,
    }
}

fn argv_of(cmd: &Command) -> Vec<String> {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

#[track_caller]
fn start_event(cmd: &Command, class: &str) -> ChildId {
    let argv = argv_of(cmd);
    let cd = cmd.get_current_dir().map(|d| d.to_string_lossy().into_owned());
    let spec = ChildSpec {
        class: Some(class),
        cd: cd.as_deref(),
        argv: argv.iter().map(|s| s.as_str()).collect(),
        ..ChildSpec::default()
    };
    api::child_start_with(&spec)
}

/// Runs `cmd` to completion: `child_start`, spawn, wait, `child_exit`.
/// A failed spawn reports `pid:-1 code:-1` and returns the error.
#[track_caller]
pub fn run(cmd: &mut Command, class: &str) -> io::Result<ExitStatus> {
    let id = start_event(cmd, class);
    prepare(cmd);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            api::child_exit(&id, -1, -1);
            return Err(e);
        }
    };
    let pid = i64::from(child.id());
    match child.wait() {
        Ok(st) => {
            api::child_exit(&id, pid, status_code(&st));
            Ok(st)
        }
        Err(e) => {
            api::child_exit(&id, pid, -1);
            Err(e)
        }
    }
}

/// What a readiness probe says about a background child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// The child is ready: release it.
    Ready,
    /// Not yet: keep waiting until the timeout.
    NotYet,
    /// The probe failed: release the child as `error`.
    Error,
}

/// How a background start ended.
#[derive(Debug)]
pub enum BackgroundOutcome {
    /// Released; `child_ready` was written with this state.
    Released {
        /// The child (not waited for; it may outlive this process).
        child: Child,
        /// `ready`, `timeout` or `error`.
        state: ReadyState,
    },
    /// The child exited while being waited on; `child_exit` was written.
    Exited {
        /// Its pid.
        pid: u32,
        /// Its status.
        status: ExitStatus,
    },
    /// Spawning or waiting failed; `child_exit` with code −1 was written.
    Failed(io::Error),
}

/// Starts `cmd` in the background like git's `start_bg_command`: emits
/// `child_start` (class defaults to `background`), then polls until either
/// the child exits (→ `child_exit`) or `probe(pid)` says [`Probe::Ready`] or
/// [`Probe::Error`], or `timeout` passes (→ `child_ready` with
/// `ready`/`error`/`timeout`). After `child_ready` the child is released and
/// never reported again.
///
/// Unlike git (which polls without pausing and measures the timeout in whole
/// seconds), polling pauses 5 ms between rounds and the timeout is exact.
#[track_caller]
pub fn start_background(
    mut cmd: Command,
    class: Option<&str>,
    mut probe: impl FnMut(u32) -> Probe,
    timeout: Duration,
) -> BackgroundOutcome {
    let loc_id = start_event(&cmd, class.unwrap_or("background"));
    prepare(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            api::child_exit(&loc_id, -1, -1);
            return BackgroundOutcome::Failed(e);
        }
    };
    let pid = child.id();
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                api::child_exit(&loc_id, i64::from(pid), status_code(&status));
                return BackgroundOutcome::Exited { pid, status };
            }
            Ok(None) => {}
            Err(e) => {
                api::child_exit(&loc_id, i64::from(pid), -1);
                return BackgroundOutcome::Failed(e);
            }
        }
        let state = match probe(pid) {
            Probe::Ready => Some(ReadyState::Ready),
            Probe::Error => Some(ReadyState::Error),
            Probe::NotYet if Instant::now() >= deadline => Some(ReadyState::Timeout),
            Probe::NotYet => None,
        };
        if let Some(state) = state {
            api::child_ready(&loc_id, i64::from(pid), state);
            return BackgroundOutcome::Released { child, state };
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Replaces this process with `cmd` (`exec`; on failure `exec_result` with
/// the errno, and the error is returned). `exe` is what git records as the
/// program (`git` for git commands); `None` omits it.
#[track_caller]
pub fn exec(cmd: &mut Command, exe: Option<&str>) -> io::Error {
    let argv: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    let mut full = vec![cmd.get_program().to_string_lossy().into_owned()];
    full.extend(argv);
    let id = api::exec(exe, &full);
    prepare(cmd);
    let err = cmd.exec();
    api::exec_result(id, err.raw_os_error().unwrap_or(-1));
    err
}
