//! The signal mask and the process groups proctrace runs with, which the backends rely on.
//!
//! - The forwarded signals (taken by `supervise`'s signal thread) and SIGCHLD (which nobody
//!   takes: the ptrace tracer waits with `waitpid`) are blocked in every thread; the command gets
//!   the mask back before it execs.
//! - The command runs in its own process group (set in the child before exec, and by the parent,
//!   the way a shell sets up a job), so a signal sent to proctrace's group — a terminal's, a
//!   `timeout`'s, a process manager's — reaches proctrace alone, and proctrace passes it on once.
//! - When proctrace is the foreground job of its terminal, the command's group is made the
//!   terminal's foreground group (^C and ^Z go straight to it) and proctrace takes the terminal
//!   back when the command stops or ends, as a shell does. A stopped command stops proctrace too
//!   (so the shell sees the job stopped); when proctrace is continued it continues the command.
//!   docs/signals.md has the whole design.
//!
//! Here, below the backends, so that a backend needs nothing from `supervise` (which sends
//! capture notices and so sits above capture). Nothing here may allocate or take a lock:
//! [`child_before_exec`] runs between fork and exec.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The signals proctrace forwards.
pub const FORWARDED: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Blocked in every thread: the forwarded signals (taken by the signal thread) and SIGCHLD (left
/// pending: no thread is interrupted by it).
const BLOCKED: [i32; 5] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGCHLD,
];

/// The controlling terminal (a close-on-exec descriptor of `/dev/tty`), -1 without one.
static TTY: AtomicI32 = AtomicI32::new(-1);
/// proctrace was the terminal's foreground group at the start of `run`: the command starts
/// with the terminal.
static FOREGROUND: AtomicBool = AtomicBool::new(false);
/// The command's group has been given the terminal's foreground at least once.
static HANDED: AtomicBool = AtomicBool::new(false);
/// proctrace's own process group.
static OWN_PGRP: AtomicI32 = AtomicI32::new(0);
/// The command's pid, which is also its process group (0 before it exists).
static COMMAND: AtomicI32 = AtomicI32::new(0);
/// The command's exit code as a shell gives it, once a backend has reaped it (-1 before).
static REAPED: AtomicI32 = AtomicI32::new(-1);

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

/// Blocks the forwarded signals (and SIGCHLD)
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

/// Before the command is started: notes proctrace's process group and keeps a descriptor of its
/// controlling terminal, if it has one, to hand the terminal's foreground to the command (at
/// once when proctrace is the foreground job; later when a shell brings it to the foreground).
/// SIGTTOU is ignored from here on, so that proctrace, in the background of its terminal while
/// the command has it, can still take the terminal back and write its status lines (the command
/// gets the default disposition back before it execs).
pub fn prepare_job_control() {
    // SAFETY: getpgrp has no preconditions.
    let own = unsafe { libc::getpgrp() };
    OWN_PGRP.store(own, Ordering::Relaxed);
    // SAFETY: open with a NUL-terminated path; the descriptor is ours.
    let fd = unsafe {
        libc::open(
            c"/dev/tty".as_ptr(),
            libc::O_RDWR | libc::O_CLOEXEC | libc::O_NOCTTY,
        )
    };
    if fd < 0 {
        return; // no controlling terminal: nothing to hand over
    }
    // SAFETY: tcgetpgrp on a descriptor we own.
    FOREGROUND.store(unsafe { libc::tcgetpgrp(fd) } == own, Ordering::Relaxed);
    // SAFETY: signal with a valid signal number and SIG_IGN.
    unsafe { libc::signal(libc::SIGTTOU, libc::SIG_IGN) };
    TTY.store(fd, Ordering::Relaxed);
}

/// In the command's process, between fork and exec: its own process group, the terminal's
/// foreground when proctrace had it, SIGTTOU's default disposition and the signal mask back.
/// Async-signal-safe (setpgid, tcsetpgrp, sigaction, sigprocmask).
pub fn child_before_exec() {
    // SAFETY: async-signal-safe calls on our own process and an inherited descriptor.
    unsafe {
        libc::setpgid(0, 0);
        let tty = TTY.load(Ordering::Relaxed);
        if tty >= 0 && FOREGROUND.load(Ordering::Relaxed) {
            // SIGTTOU is still ignored (inherited), so this cannot stop us.
            libc::tcsetpgrp(tty, libc::getpid());
        }
        libc::signal(libc::SIGTTOU, libc::SIG_DFL);
    }
    unblock_stop_signals();
}

/// In proctrace, once the command is forked: the same process group and terminal set-up as
/// the child does for itself (whichever runs first wins the race; both are needed, as in a
/// shell). Errors are expected when the child already exec'd (EACCES) and are ignored.
pub fn command_forked(pid: i32) {
    COMMAND.store(pid, Ordering::Relaxed);
    // SAFETY: setpgid and tcsetpgrp on our own child and our own descriptor.
    unsafe {
        libc::setpgid(pid, pid);
    }
    if FOREGROUND.load(Ordering::Relaxed) {
        hand_terminal(pid);
    }
}

/// Makes the command's group the terminal's foreground.
fn hand_terminal(cmd: i32) {
    let tty = TTY.load(Ordering::Relaxed);
    // SAFETY: tcsetpgrp on our own descriptor (SIGTTOU is ignored).
    if tty >= 0 && unsafe { libc::tcsetpgrp(tty, cmd) } == 0 {
        HANDED.store(true, Ordering::Relaxed);
    }
}

/// Whether proctrace's own group is the terminal's foreground.
fn in_foreground() -> bool {
    let tty = TTY.load(Ordering::Relaxed);
    // SAFETY: tcgetpgrp on our own descriptor.
    tty >= 0 && unsafe { libc::tcgetpgrp(tty) } == OWN_PGRP.load(Ordering::Relaxed)
}

/// A backend reaped the command with wait status `status`: known at once to the signal thread
/// (the model loop may be busy writing), so that a signal from now on hurries the end.
pub fn command_reaped(status: i32) {
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    REAPED.store(code, Ordering::Release);
}

/// The command's exit code, once it has been reaped.
pub fn reaped_code() -> Option<i32> {
    Some(REAPED.load(Ordering::Acquire)).filter(|&c| c >= 0)
}

/// The command's process group (0 before it exists).
pub fn command_pgrp() -> i32 {
    COMMAND.load(Ordering::Relaxed)
}

/// Whether the command was given the terminal's foreground.
pub fn has_terminal() -> bool {
    HANDED.load(Ordering::Relaxed)
}

/// Whether the terminal proctrace handed to the command has hung up (its descriptor then
/// answers EIO).
pub fn terminal_hung_up() -> bool {
    let tty = TTY.load(Ordering::Relaxed);
    // SAFETY: tcgetpgrp on our own descriptor.
    tty >= 0
        && unsafe { libc::tcgetpgrp(tty) } < 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EIO)
}

/// Takes the terminal back for proctrace's own group (the command stopped or ended). Only when
/// the command's group holds it: a shell that already moved it elsewhere keeps its choice.
fn take_terminal() {
    let tty = TTY.load(Ordering::Relaxed);
    let cmd = COMMAND.load(Ordering::Relaxed);
    // SAFETY: tcgetpgrp/tcsetpgrp on our own descriptor (SIGTTOU is ignored).
    unsafe {
        if tty >= 0 && cmd > 0 && libc::tcgetpgrp(tty) == cmd {
            libc::tcsetpgrp(tty, OWN_PGRP.load(Ordering::Relaxed));
        }
    }
}

/// The command has ended: the terminal comes back to proctrace's group.
pub fn command_ended() {
    take_terminal();
}

/// A backend saw `pid` stop (a group-stop: ^Z, SIGSTOP, SIGTTIN, SIGTTOU). When it is the command
/// and proctrace has a terminal, this does what a shell expects of a job:
///
/// - proctrace is the terminal's foreground but the command is not (a background `proctrace run
///   … &` brought back with `fg`, and the command stopped on reading the terminal): the command
///   gets the terminal and is continued;
/// - otherwise proctrace takes the terminal back (if the command had it) and stops itself with
///   SIGTSTP, so the shell sees the job stopped (the kernel drops that when proctrace's group is
///   orphaned, i.e. no job-control shell could continue it); once continued (`fg` or `bg`) it
///   gives the terminal back to the command's group if proctrace was put in the foreground, and
///   continues the command's group.
///
/// Returns once the command has been continued.
pub fn command_stopped(pid: i32) {
    let cmd = COMMAND.load(Ordering::Relaxed);
    if pid != cmd || cmd <= 0 || TTY.load(Ordering::Relaxed) < 0 {
        return;
    }
    if !in_foreground() {
        take_terminal();
        // SAFETY: tgkill to the calling thread of our own process: it takes the stop itself
        // before returning to user code, so this returns only once proctrace is continued.
        unsafe {
            libc::syscall(libc::SYS_tgkill, libc::getpid(), libc::gettid(), libc::SIGTSTP);
        }
    }
    if in_foreground() {
        hand_terminal(cmd);
    }
    // SAFETY: killpg (or kill) of the command's group with SIGCONT.
    unsafe {
        if libc::killpg(cmd, libc::SIGCONT) < 0 {
            libc::kill(cmd, libc::SIGCONT);
        }
    }
}
