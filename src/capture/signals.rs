//! The signal mask proctrace runs with, which the backends rely on: the stop signals that
//! `supervise`'s signal thread takes, and SIGCHLD, which the ptrace tracer takes with
//! `sigtimedwait`, are blocked in every thread; the command gets the mask back before it execs.
//!
//! Here, below the backends, so that a backend needs nothing from `supervise` (which sends
//! capture notices and so sits above capture). Nothing here may allocate or take a lock:
//! [`unblock_stop_signals`] runs between fork and exec.

/// The signals proctrace forwards.
pub const FORWARDED: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Blocked in every thread: the forwarded signals (taken by the signal thread) and SIGCHLD (taken
/// by the ptrace backend with sigtimedwait).
const BLOCKED: [i32; 5] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGCHLD,
];

/// The set of `sigs`.
pub(crate) fn sigset(sigs: &[i32]) -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set; sigaddset with valid signal numbers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in sigs {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks the forwarded signals (and SIGCHLD, which the ptrace backend takes with sigtimedwait)
/// in the calling thread and every thread it starts afterwards. Call before any thread exists.
pub fn block_stop_signals() {
    let set = sigset(&BLOCKED);
    // SAFETY: set is initialised; the old mask is not needed.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// Undoes [`block_stop_signals`]; called in the command's process between fork and exec, since
/// std hands the child the parent's mask. Async-signal-safe.
pub fn unblock_stop_signals() {
    let set = sigset(&BLOCKED);
    // SAFETY: set is initialised; sigprocmask is async-signal-safe.
    unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
}
