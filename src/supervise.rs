//! Being a good parent to the traced command: signal forwarding, reaping, subreaper duty, and
//! making sure proctrace itself can always be stopped.
//!
//! The forwarded signals are blocked in every thread (so they must be blocked before any thread
//! starts) and taken synchronously by one thread with `sigwaitinfo`. The command runs in its own
//! process group ([`crate::capture::signals`]), so whatever reaches proctrace — `kill PID`, a
//! group kill, `timeout`, a hang-up relayed by a shell — did not reach the command, and
//! proctrace passes it on to the command's group exactly once:
//!
//! - the same signal from the same sender (`si_pid`, `si_uid`, `si_code`) again within
//!   [`COALESCE`] is one signal (`timeout` signals proctrace, then its own group, which holds
//!   proctrace again);
//! - SIGHUP after the terminal that proctrace handed to the command hung up is not passed on
//!   when proctrace is not the session leader: the kernel sends SIGHUP to that terminal's
//!   foreground group (the command's) itself when the session leader exits.
//!
//! Once the command has ended, a signal makes proctrace hurry: the writes and exports still in
//! progress get [`HURRY_GRACE`], then what is left is counted as not delivered; another signal
//! after that ends proctrace at once, and so does still writing [`HURRY_LIMIT`] after the first
//! (a write nothing can cut short: stdout on a pipe nobody reads). Under `watch` (no command), the first signal stops
//! watching and the next one ends proctrace at once (even when the model loop is stuck
//! writing). docs/signals.md says it all for users. This module must never block the signal thread on anything but `sigwaitinfo`.

use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::capture::signals::{self, sigset};
use crate::capture::{CaptureMsg, Notice};

pub use crate::capture::signals::{FORWARDED, block_stop_signals, prepare_job_control, unblock_stop_signals};

/// The same signal from the same sender within this window is taken as one (`timeout` sends it
/// to proctrace and then to its own process group, microseconds apart).
pub const COALESCE: Duration = Duration::from_millis(200);

/// How long writes and exports still in progress get after a signal once the command has ended.
pub const HURRY_GRACE: Duration = Duration::from_millis(500);

/// How long after that signal proctrace may still be writing before it ends at once anyway: a
/// write no deadline can cut short (stdout or a file on a pipe nobody reads, a stuck disk) must
/// not keep it alive until a second signal.
pub const HURRY_LIMIT: Duration = Duration::from_millis(2500);

/// The command runs (or has not started): signals are forwarded.
const RUNNING: u8 = 0;
/// The command has ended: the next signal hurries the end.
const FINISHING: u8 = 1;
/// Hurrying: the next signal ends proctrace at once.
const HURRYING: u8 = 2;
/// `watch` was stopped by a signal: the next one ends proctrace at once.
const STOPPED: u8 = 3;

static PHASE: AtomicU8 = AtomicU8::new(RUNNING);
/// The exit code proctrace will have (the command's, under `run`), -1 while unknown.
static EXIT_CODE: AtomicI32 = AtomicI32::new(-1);
static HURRY_UNTIL: Mutex<Option<Instant>> = Mutex::new(None);

/// The command has ended (or `watch` stopped watching) and proctrace is writing its last
/// output; `code` is the exit code proctrace is going to have, when known. From now on a
/// signal hurries the end, and a second one ends proctrace at once with that code.
pub fn finishing(code: Option<i32>) {
    signals::command_ended();
    EXIT_CODE.store(code.unwrap_or(-1), Ordering::Relaxed);
    let _ = PHASE.compare_exchange(RUNNING, FINISHING, Ordering::AcqRel, Ordering::Acquire);
}

/// When a signal asked proctrace to hurry: the moment by which waits at exit give up.
pub fn hurry_deadline() -> Option<Instant> {
    *HURRY_UNTIL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether a signal asked proctrace to hurry.
pub fn hurrying() -> bool {
    PHASE.load(Ordering::Acquire) == HURRYING
}

/// `normal`, or what is left until the hurry deadline when that is sooner.
pub fn bounded(normal: Duration) -> Duration {
    match hurry_deadline() {
        Some(d) => normal.min(d.saturating_duration_since(Instant::now())),
        None => normal,
    }
}

/// Where forwarded signals go.
#[derive(Clone, Default)]
pub struct SignalTarget {
    /// There is no command (`watch`): the first signal stops proctrace, the next ends it at once.
    no_command: bool,
    /// The command's pid (0 before it exists, -1 once it is gone) and a signal that arrived
    /// before it existed, to be passed on as soon as it does.
    state: Arc<std::sync::Mutex<(i32, i32)>>,
    /// Signals forwarded so far.
    pub forwarded: Arc<AtomicI32>,
}

/// Sends `sig` to the command's process group, or to the command alone when it has left the
/// group proctrace made for it.
fn send_to_command(pid: i32, sig: i32) {
    // SAFETY: killpg/kill with a positive pid and a valid signal.
    unsafe {
        if libc::getpgid(pid) != pid || libc::killpg(pid, sig) < 0 {
            libc::kill(pid, sig);
        }
    }
}

impl SignalTarget {
    /// For `watch`: no command to forward to; the first signal stops watching, the next one
    /// ends proctrace at once.
    pub fn without_command() -> SignalTarget {
        SignalTarget {
            no_command: true,
            ..SignalTarget::default()
        }
    }

    /// The command exists: signals go to it from now on, including one that came early (the
    /// command could have been told "ready" and signalled before its pid was known here).
    pub fn set(&self, pid: i32) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.0 = pid;
        if st.1 != 0 {
            send_to_command(pid, st.1);
            self.forwarded.fetch_add(1, Ordering::Relaxed);
            st.1 = 0;
        }
    }

    /// The command is gone: signals are only reported from now on.
    pub fn clear(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0 = -1;
    }

    fn forward(&self, sig: i32) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match st.0 {
            0 => st.1 = sig,
            pid if pid > 0 => {
                if sig == libc::SIGHUP && hangup_reaches_command() {
                    return;
                }
                send_to_command(pid, sig);
                self.forwarded.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
}

/// A SIGHUP the command gets from the kernel anyway: proctrace handed it the terminal, the
/// terminal hung up, and proctrace is not the session leader (the kernel sends SIGHUP to the
/// terminal's last foreground group, the command's, when the session leader exits; a session
/// leader itself gets the only SIGHUP and must pass it on).
fn hangup_reaches_command() -> bool {
    // SAFETY: getsid(0) and getpid have no preconditions.
    let leader = unsafe { libc::getsid(0) == libc::getpid() };
    signals::has_terminal() && !leader && signals::terminal_hung_up()
}

/// Ends proctrace now: a signal came while it was already hurrying (`again`), or it was still
/// writing [`HURRY_LIMIT`] after the signal that asked it to hurry.
fn exit_now(sig: i32, again: bool) -> ! {
    let code = match EXIT_CODE.load(Ordering::Relaxed) {
        c if c >= 0 => c,
        _ => 128 + sig,
    };
    // The message must not hold up the exit (stderr may be a pipe nobody reads).
    let (tx, rx) = std::sync::mpsc::channel();
    let said = std::thread::Builder::new().spawn(move || {
        if again {
            crate::say!(
                "proctrace: signal {sig} again: exiting now (exit status {code}); outputs may be incomplete"
            );
        } else {
            crate::say!(
                "proctrace: still writing {:.1} s after signal {sig}: exiting now (exit status {code}); outputs may be incomplete",
                HURRY_LIMIT.as_secs_f64()
            );
        }
        let _ = tx.send(());
    });
    if said.is_ok() {
        let _ = rx.recv_timeout(Duration::from_millis(100));
    }
    // SAFETY: _exit ends the process without running anything else (no locks taken).
    unsafe { libc::_exit(code) }
}

/// Starts the thread that takes the forwarded signals: passed on to the command while it runs,
/// and reported to the model loop as [`Notice::Interrupted`] either way (but a repeat within
/// [`COALESCE`]); once [`finishing`], a signal hurries the end and the next one ends proctrace.
pub fn spawn_signal_thread(target: SignalTarget, notify: Sender<CaptureMsg>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("pt-signals".into())
        .spawn(move || {
            let set = sigset(&FORWARDED);
            let mut last: Option<((i32, i32, u32, i32), Instant)> = None;
            // The signal that asked proctrace to hurry, and when: past HURRY_LIMIT, it ends.
            let mut hurried: Option<(i32, Instant)> = None;
            loop {
                // SAFETY: siginfo_t is plain data; sigwaitinfo fills it.
                let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                let sig = match hurried {
                    None => {
                        // SAFETY: set is initialised and info is writable.
                        unsafe { libc::sigwaitinfo(&set, &mut info) }
                    }
                    Some((first, at)) => {
                        let left = HURRY_LIMIT.saturating_sub(at.elapsed());
                        let ts = libc::timespec {
                            tv_sec: left.as_secs() as libc::time_t,
                            tv_nsec: left.subsec_nanos() as libc::c_long,
                        };
                        // SAFETY: set and ts are initialised and info is writable.
                        let sig = unsafe { libc::sigtimedwait(&set, &mut info, &ts) };
                        if sig < 0 && at.elapsed() >= HURRY_LIMIT {
                            exit_now(first, false);
                        }
                        sig
                    }
                };
                if sig < 0 {
                    continue;
                }
                // SAFETY: si_pid/si_uid are valid to read for any siginfo (zero when unset).
                let sender = unsafe { (sig, info.si_pid(), info.si_uid(), info.si_code) };
                let now = Instant::now();
                if last.is_some_and(|(s, at)| s == sender && now.duration_since(at) < COALESCE) {
                    continue; // the same signal again (timeout's direct and group copies)
                }
                last = Some((sender, now));
                let mut phase = PHASE.load(Ordering::Acquire);
                if phase == RUNNING
                    && let Some(code) = signals::reaped_code()
                {
                    // The command has ended; the model loop just has not got there yet.
                    let _ = EXIT_CODE.compare_exchange(-1, code, Ordering::AcqRel, Ordering::Acquire);
                    phase = FINISHING;
                }
                match phase {
                    // watch's normal end (its finish keeps its own bounds: the OTLP budget).
                    RUNNING if target.no_command => PHASE.store(STOPPED, Ordering::Release),
                    RUNNING => target.forward(sig),
                    FINISHING => {
                        let until = now + HURRY_GRACE;
                        *HURRY_UNTIL.lock().unwrap_or_else(|e| e.into_inner()) = Some(until);
                        trace2::dst::give_up_waiting_at(until);
                        PHASE.store(HURRYING, Ordering::Release);
                        hurried = Some((sig, now));
                    }
                    _ => exit_now(sig, true),
                }
                if notify.send(CaptureMsg::Notice(Notice::Interrupted(sig))).is_err() {
                    // The model loop is gone; signals still hurry and end proctrace.
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
