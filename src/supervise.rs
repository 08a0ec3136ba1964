//! Being a good parent to the traced command: signal forwarding, reaping, subreaper duty.
//!
//! Stop signals are blocked in every thread (so they must be blocked before any thread starts)
//! and taken synchronously by one thread with `sigwaitinfo`. Like sudo, a signal the terminal
//! sent to the whole foreground process group is not forwarded again when the command shares our
//! group; anything else (a `kill` aimed at proctrace) is passed on to the command.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::Sender;

use crate::capture::signals::sigset;
use crate::capture::{CaptureMsg, Notice};

pub use crate::capture::signals::{FORWARDED, block_stop_signals, unblock_stop_signals};

/// Where stop signals go.
#[derive(Clone, Default)]
pub struct SignalTarget {
    /// The command's pid (0 before it exists, -1 once it is gone) and a signal that arrived
    /// before it existed, to be passed on as soon as it does.
    state: Arc<std::sync::Mutex<(i32, i32)>>,
    /// Signals forwarded so far.
    pub forwarded: Arc<AtomicI32>,
}

impl SignalTarget {
    /// The command exists: signals go to it from now on, including one that came early (the
    /// command could have been told "ready" and signalled before its pid was known here).
    pub fn set(&self, pid: i32) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.0 = pid;
        if st.1 != 0 {
            // SAFETY: kill with a positive pid and a valid signal.
            unsafe { libc::kill(pid, st.1) };
            self.forwarded.fetch_add(1, Ordering::Relaxed);
            st.1 = 0;
        }
    }

    /// The command is gone: signals are only reported from now on.
    pub fn clear(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0 = -1;
    }

    fn forward(&self, sig: i32, from_terminal: bool, my_pgrp: i32) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match st.0 {
            0 => st.1 = sig,
            pid if pid > 0 => {
                // SAFETY: getpgid on any pid is safe; failure returns -1.
                let child_pgrp = unsafe { libc::getpgid(pid) };
                if !(from_terminal && child_pgrp == my_pgrp) {
                    // SAFETY: kill with a positive pid and a valid signal.
                    unsafe { libc::kill(pid, sig) };
                    self.forwarded.fetch_add(1, Ordering::Relaxed);
                }
            }
            _ => {}
        }
    }
}

/// Starts the thread that takes stop signals: forwarded to the command while it runs, and
/// reported to the model loop as [`Notice::Interrupted`] either way.
pub fn spawn_signal_thread(target: SignalTarget, notify: Sender<CaptureMsg>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("pt-signals".into())
        .spawn(move || {
            let set = sigset(&FORWARDED);
            // SAFETY: getpgrp has no preconditions.
            let my_pgrp = unsafe { libc::getpgrp() };
            loop {
                // SAFETY: siginfo_t is plain data; sigwaitinfo fills it.
                let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                // SAFETY: set is initialised and info is writable.
                let sig = unsafe { libc::sigwaitinfo(&set, &mut info) };
                if sig < 0 {
                    continue;
                }
                target.forward(sig, info.si_code == libc::SI_KERNEL, my_pgrp);
                if notify.send(CaptureMsg::Notice(Notice::Interrupted(sig))).is_err() {
                    return;
                }
            }
        })?;
    Ok(())
}

/// Makes orphaned descendants (double-forked daemons) children of proctrace, so they stay
/// reapable and their exits name us.
pub fn become_subreaper() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER and an integer flag.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}
