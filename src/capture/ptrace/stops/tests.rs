//! The stop machine driven by sequences of stops, in the orders real kernels report them
//! (`docs/facts/ptrace-facts.md`, A0 and A3). The live tests (`tests/it/ptrace.rs`, and every
//! `both_backends!` test) run the same code against the kernel.

use super::*;
use libc::{SIGCHLD, SIGCONT, SIGKILL, SIGSTOP, SIGTRAP, SIGTSTP, SIGUSR1};

/// proctrace's own pid: the command's parent.
const ME: Pid = 1;
/// The command.
const CMD: Pid = 100;
/// 1 ms between stops.
const STEP: u64 = 1_000_000;

/// A tracer whose command has exec'd, with the clock of the stops.
struct Run {
    t: Tracees,
    ts: u64,
}

impl Run {
    fn new(usage: bool, enrich: bool) -> Run {
        let mut t = Tracees::new(usage, enrich);
        t.command_forked(CMD, ME);
        let mut out = Vec::new();
        let start = t.command_stop(CMD, Stop::Exec { former: None }, 0, STEP, ME, &mut out);
        assert_eq!(start, CommandStart::Running);
        Run { t, ts: STEP }
    }

    /// Plain: neither usage nor exec details.
    fn plain() -> Run {
        Run::new(false, false)
    }

    /// The actions for the next stop of `pid`, one [`STEP`] after the previous.
    fn stop(&mut self, pid: Pid, stop: Stop) -> Vec<Action> {
        self.ts += STEP;
        let mut out = Vec::new();
        self.t.on_stop(pid, stop, self.ts, &mut out);
        out
    }

    /// The command forks process 200, whose leader then starts `threads`, each stopping after
    /// its creator's clone event.
    fn process_with_threads(&mut self, threads: &[Pid]) {
        self.stop(CMD, Stop::Fork { child: 200 });
        self.stop(200, FIRST_STOP);
        for &child in threads {
            self.stop(200, Stop::Clone { child, thread: true });
            self.stop(child, FIRST_STOP);
        }
    }

    /// The events the actions emit.
    fn events(actions: &[Action]) -> Vec<&Event> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Emit(e) => Some(e),
                _ => None,
            })
            .collect()
    }
}

fn resume(pid: Pid) -> Action {
    Action::Resume { pid, sig: 0 }
}

fn fork(ts: u64, parent: Pid, child: Pid) -> Action {
    Action::Emit(Event::Fork {
        ts,
        parent_tgid: parent,
        child_pid: child,
        child_tgid: child,
    })
}

fn exec(ts: u64, tgid: Pid) -> Action {
    Action::Emit(Event::Exec { ts, tgid })
}

fn exit(ts: u64, pid: Pid, tgid: Pid, status: i32, parent: Pid) -> Action {
    Action::Emit(Event::Exit {
        ts,
        pid,
        tgid,
        status: status as u32,
        parent_tgid: parent,
    })
}

const FIRST_STOP: Stop = Stop::Trap { sig: SIGTRAP };

/// An exit stop whose event message (the wait status to come) was read.
fn exiting(status: i32) -> Stop {
    Stop::Exiting { status: Some(status) }
}

/// An exit stop whose event message could not be read.
const EXITING_UNKNOWN: Stop = Stop::Exiting { status: None };

fn read(tgid: Pid, tid: Pid, last: bool, whole_io: bool) -> Action {
    Action::ReadUsage {
        tgid,
        tid,
        last,
        whole_io,
    }
}

fn detach(pid: Pid) -> Action {
    Action::Detach { pid }
}

#[test]
fn the_command_is_forked_by_proctrace_and_execs_before_it_runs() {
    let mut t = Tracees::new(false, true);
    t.command_forked(CMD, ME);
    let mut out = Vec::new();
    // A terminal's SIGINT before the exec is passed on; the exec makes it the root.
    let sig = Stop::Signal { sig: libc::SIGINT };
    assert_eq!(
        t.command_stop(CMD, sig, 5, 6, ME, &mut out),
        CommandStart::Pending
    );
    assert_eq!(
        out,
        [Action::Resume {
            pid: CMD,
            sig: libc::SIGINT
        }]
    );
    out.clear();
    let start = t.command_stop(CMD, Stop::Exec { former: None }, 5, 7, ME, &mut out);
    assert_eq!(start, CommandStart::Running);
    assert_eq!(
        out,
        [
            fork(5, ME, CMD),
            exec(7, CMD),
            Action::ReadExec { tgid: CMD },
            resume(CMD)
        ]
    );
    out.clear();
    t.on_stop(CMD, Stop::Exited { status: 3 << 8 }, 9, &mut out);
    assert_eq!(
        out,
        [
            exit(9, CMD, CMD, 3 << 8, ME),
            Action::CommandExited { status: 3 << 8 }
        ]
    );
}

#[test]
fn a_command_that_cannot_exec_is_forgotten() {
    let mut t = Tracees::new(true, false);
    t.command_forked(CMD, ME);
    let mut out = Vec::new();
    let start = t.command_stop(CMD, exiting(127 << 8), 5, 6, ME, &mut out);
    assert_eq!((start, &out[..]), (CommandStart::Pending, &[resume(CMD)][..]));
    out.clear();
    let status = 127 << 8;
    let start = t.command_stop(CMD, Stop::Exited { status }, 5, 7, ME, &mut out);
    assert_eq!(start, CommandStart::Failed { status });
    assert!(out.is_empty());
    // Its pid, reused by a task that stops first, is unknown again: held.
    t.on_stop(CMD, FIRST_STOP, 8, &mut out);
    assert_eq!(out, [Action::Hold { pid: CMD }]);
}

#[test]
fn a_child_that_stops_after_its_parents_fork_event_runs_on_at_once() {
    // A3, sequential fork: P:FORK, C:first stop, C:EXEC, C:EXIT, C:exited, P:SIGCHLD; with
    // usage the child is let go at its exit stop, which is its exit: no exit notification.
    for usage in [false, true] {
        let mut r = Run::new(usage, true);
        assert_eq!(
            r.stop(CMD, Stop::Fork { child: 200 }),
            [fork(2 * STEP, CMD, 200), resume(CMD)]
        );
        assert_eq!(r.stop(200, FIRST_STOP), [resume(200)]);
        assert_eq!(
            r.stop(200, Stop::Exec { former: Some(200) }),
            [exec(4 * STEP, 200), Action::ReadExec { tgid: 200 }, resume(200)]
        );
        if usage {
            // It never had a child: its I/O is read once, for the whole process.
            assert_eq!(
                r.stop(200, exiting(0)),
                [
                    read(200, 200, true, true),
                    detach(200),
                    exit(5 * STEP, 200, 200, 0, CMD)
                ]
            );
        } else {
            assert_eq!(
                r.stop(200, Stop::Exited { status: 0 }),
                [exit(5 * STEP, 200, 200, 0, CMD)]
            );
        }
        let at_sigchld = r.stop(CMD, Stop::Signal { sig: SIGCHLD });
        assert_eq!(
            at_sigchld,
            [Action::Resume {
                pid: CMD,
                sig: SIGCHLD
            }]
        );
        // Its SIGCHLD names a known exit, not an untraced process.
        let mut out = Vec::new();
        r.t.child_signal(CMD, 200, &mut out);
        assert!(untraced(&out).is_empty(), "{out:?}");
    }
}

/// A process let go at its exit stop is a zombie until its parent reaps it: if the parent
/// dies first, proctrace (the subreaper) reaps it, long after, and that is no untraced
/// process; nor is it once its pid is taken by a new traced process and that one is let go.
#[test]
fn a_process_let_go_at_its_exit_stop_is_gone_not_untraced() {
    let mut r = Run::new(true, false);
    r.stop(CMD, Stop::Fork { child: 200 });
    r.stop(200, FIRST_STOP);
    r.stop(200, exiting(7 << 8));
    // Many other exits push it out of the recent window.
    for i in 0..(RECENT_EXITS as Pid + 10) {
        let pid = 1000 + i;
        r.stop(CMD, Stop::Fork { child: pid });
        r.stop(pid, FIRST_STOP);
        r.stop(pid, exiting(0));
    }
    assert!(!r.t.is_unknown(200));
    let reaped = r.stop(200, Stop::Exited { status: 7 << 8 });
    assert_eq!(reaped, [], "its exit went out at its exit stop");
    // Reaped, it is forgotten: the pid free again, an exit under it is news.
    assert_eq!(
        untraced(&r.stop(200, Stop::Exited { status: 0 })),
        [(200, Found::Reaped)]
    );
    // Bounded.
    for i in 0..(GONE_REMEMBERED as Pid + 10) {
        r.t.note_gone(100_000 + i);
    }
    assert_eq!(r.t.gone.len(), GONE_REMEMBERED);
    assert_eq!(r.t.gone_order.len(), GONE_REMEMBERED);
    assert!(!r.t.is_unknown(100_000 + GONE_REMEMBERED as Pid));
    // A pid taken again by a traced process is that process's.
    r.stop(CMD, Stop::Fork { child: 100_010 });
    r.stop(100_010, FIRST_STOP);
    assert!(!r.t.gone.contains(&100_010));
}

/// Which processes may read their I/O once for the whole process: only one that never had a
/// child (the kernel adds a reaped child's counters to its parent's), at its leader's stop.
#[test]
fn only_a_process_without_children_reads_its_io_once() {
    let mut r = Run::new(true, false);
    r.stop(CMD, Stop::Fork { child: 200 });
    r.stop(200, FIRST_STOP);
    r.stop(200, Stop::Vfork { child: 210 });
    r.stop(210, FIRST_STOP);
    assert_eq!(r.stop(210, exiting(0))[0], read(210, 210, true, true));
    assert_eq!(r.stop(200, exiting(0))[0], read(200, 200, true, false));
    // An untraced child found signalling its parent makes a parent too.
    r.stop(CMD, Stop::Fork { child: 220 });
    r.stop(220, FIRST_STOP);
    let mut out = Vec::new();
    r.t.child_signal(220, 300, &mut out);
    assert_eq!(r.stop(220, exiting(0))[0], read(220, 220, true, false));
    // The pid of a parent, freed and reused by a childless process: once again.
    r.stop(CMD, Stop::Fork { child: 200 });
    r.stop(200, FIRST_STOP);
    assert_eq!(r.stop(200, exiting(0))[0], read(200, 200, true, true));
}

#[test]
fn a_child_that_stops_before_its_parents_fork_event_is_held_until_the_event_names_it() {
    // A3, concurrent: the child's first stop is reported before the parent's FORK event.
    let mut r = Run::plain();
    assert_eq!(r.stop(200, FIRST_STOP), [Action::Hold { pid: 200 }]);
    assert!(r.t.has_held());
    // The fork is timed at the child's stop, the earlier of the two.
    assert_eq!(
        r.stop(CMD, Stop::Fork { child: 200 }),
        [fork(2 * STEP, CMD, 200), resume(200), resume(CMD)]
    );
    assert!(!r.t.has_held());
    let at_exec = r.stop(200, Stop::Exec { former: Some(200) });
    assert_eq!(
        Run::events(&at_exec),
        [&Event::Exec {
            ts: 4 * STEP,
            tgid: 200
        }]
    );
}

#[test]
fn a_child_killed_while_held_forks_then_exits_when_its_parents_event_comes() {
    let mut r = Run::plain();
    assert_eq!(r.stop(200, FIRST_STOP), [Action::Hold { pid: 200 }]);
    // SIGKILL ends even a ptrace-stop: its death is kept, nothing to answer.
    assert_eq!(r.stop(200, Stop::Exited { status: SIGKILL }), []);
    assert_eq!(
        r.stop(CMD, Stop::Fork { child: 200 }),
        [
            fork(2 * STEP, CMD, 200),
            exit(3 * STEP, 200, 200, SIGKILL, CMD),
            resume(CMD)
        ]
    );
}

#[test]
fn a_child_held_too_long_is_taken_in_with_what_proc_says_and_its_late_fork_event_adds_nothing() {
    let mut r = Run::plain();
    assert_eq!(r.stop(300, FIRST_STOP), [Action::Hold { pid: 300 }]);
    let held_at = r.ts;
    let mut out = Vec::new();
    let mut asked = Vec::new();
    r.t.release_overdue(held_at + HOLD_MAX_NS - 1, |p| Some((p, 250)), &mut out);
    assert!(out.is_empty(), "not overdue yet: {out:?}");
    r.t.release_overdue(
        held_at + HOLD_MAX_NS,
        |p| {
            asked.push(p);
            Some((p, 250))
        },
        &mut out,
    );
    assert_eq!(asked, [300]);
    assert_eq!(out, [fork(held_at, 250, 300), resume(300)]);
    assert!(!r.t.has_held());
    // The parent's event, very late: the child is known already.
    assert_eq!(r.stop(250, Stop::Fork { child: 300 }), [resume(250)]);
    // Gone from /proc by then: itself, parent unknown.
    assert_eq!(r.stop(301, FIRST_STOP), [Action::Hold { pid: 301 }]);
    out.clear();
    r.t.release_all(|_| None, &mut out);
    assert_eq!(out, [fork(r.ts, 0, 301), resume(301)]);
}

#[test]
fn releasing_at_the_end_lets_every_held_task_go_with_its_exit_if_it_died() {
    let mut r = Run::plain();
    r.stop(400, FIRST_STOP);
    r.stop(401, FIRST_STOP);
    r.stop(401, Stop::Exited { status: SIGKILL });
    let mut out = Vec::new();
    r.t.release_all(|p| Some((p, CMD)), &mut out);
    assert_eq!(
        out,
        [
            fork(2 * STEP, CMD, 400),
            resume(400),
            fork(3 * STEP, CMD, 401),
            exit(4 * STEP, 401, 401, SIGKILL, CMD),
        ]
    );
    assert!(!r.t.has_held());
}

#[test]
fn vfork_as_posix_spawn_does_it_in_both_orders() {
    // A0: posix_spawn is reported as PTRACE_EVENT_VFORK. A3: P:VFORK, C:first stop, C:EXEC,
    // C:EXIT, C:exited (sequential), and the child's stop first (concurrent).
    for child_first in [false, true] {
        let mut r = Run::new(true, false);
        let mut events = Vec::new();
        if child_first {
            assert_eq!(r.stop(200, FIRST_STOP), [Action::Hold { pid: 200 }]);
            events.extend(r.stop(CMD, Stop::Vfork { child: 200 }));
        } else {
            events.extend(r.stop(CMD, Stop::Vfork { child: 200 }));
            assert_eq!(r.stop(200, FIRST_STOP), [resume(200)]);
        }
        events.extend(r.stop(200, Stop::Exec { former: Some(200) }));
        events.extend(r.stop(200, exiting(0)));
        events.extend(r.stop(CMD, Stop::Signal { sig: SIGCHLD }));
        let events = Run::events(&events);
        assert_eq!(
            events,
            [
                &Event::Fork {
                    ts: 2 * STEP,
                    parent_tgid: CMD,
                    child_pid: 200,
                    child_tgid: 200
                },
                &Event::Exec {
                    ts: 4 * STEP,
                    tgid: 200
                },
                &Event::Exit {
                    ts: 5 * STEP,
                    pid: 200,
                    tgid: 200,
                    status: 0,
                    parent_tgid: CMD
                },
            ],
            "child first: {child_first}"
        );
    }
}

#[test]
fn a_thread_is_a_task_of_its_process_whose_parent_is_the_processs_parent() {
    let mut r = Run::new(true, false);
    // The command forks 200, whose thread 200 clones thread 201, which clones 202.
    r.stop(CMD, Stop::Fork { child: 200 });
    r.stop(200, FIRST_STOP);
    let thread = |child| Stop::Clone { child, thread: true };
    let a = r.stop(200, thread(201));
    let thread_fork = |ts, child| {
        Action::Emit(Event::Fork {
            ts,
            parent_tgid: CMD,
            child_pid: child,
            child_tgid: 200,
        })
    };
    assert_eq!(a, [thread_fork(4 * STEP, 201), resume(200)]);
    r.stop(201, FIRST_STOP);
    assert_eq!(
        r.stop(201, thread(202)),
        [thread_fork(6 * STEP, 202), resume(201)]
    );
    // A clone without CLONE_THREAD from a thread is a process, child of the thread's process.
    assert_eq!(
        r.stop(
            202,
            Stop::Clone {
                child: 210,
                thread: false
            }
        ),
        [fork(7 * STEP, 200, 210), resume(202)]
    );
    // The threads end: figures at each exit stop, the process's at its last. A thread is let
    // go at its exit stop, its exit the stop's; the leader, leaving before its last thread,
    // stays: its exit is the process's, after the last thread's. (The process forked 210:
    // its I/O is read thread by thread.)
    let usage = |tid, last| read(200, tid, last, false);
    assert_eq!(
        r.stop(201, exiting(0)),
        [usage(201, false), detach(201), exit(8 * STEP, 201, 200, 0, CMD)]
    );
    assert_eq!(r.stop(200, exiting(0)), [usage(200, false), resume(200)]);
    // The event message could not be read: the thread stays, its exit comes by wait.
    assert_eq!(r.stop(202, EXITING_UNKNOWN), [usage(202, true), resume(202)]);
    // A second exit stop of a thread (none comes, but it would change nothing).
    assert_eq!(r.stop(202, exiting(0)), [resume(202)]);
    assert_eq!(
        r.stop(202, Stop::Exited { status: 0 }),
        [exit(12 * STEP, 202, 200, 0, CMD)]
    );
    assert_eq!(
        r.stop(200, Stop::Exited { status: 0 }),
        [exit(13 * STEP, 200, 200, 0, CMD)]
    );
}

/// The command stays attached at its exit stop: proctrace is its parent, and reaps it.
#[test]
fn the_command_is_not_let_go_at_its_exit_stop() {
    let mut r = Run::new(true, false);
    assert_eq!(r.stop(CMD, exiting(0)), [read(CMD, CMD, true, true), resume(CMD)]);
    let end = r.stop(CMD, Stop::Exited { status: 0 });
    assert_eq!(end.last(), Some(&Action::CommandExited { status: 0 }));
}

/// The shell skips `PTRACE_GETEVENTMSG` at an exec stop when [`Tracees::single_threaded`]
/// says so: it must say so only for a process that never had another thread (else a non-leader
/// exec would be taken for the leader's), and again for a new process under a reused pid.
#[test]
fn only_a_process_that_never_had_threads_execs_without_asking_which_thread() {
    let mut r = Run::plain();
    assert!(r.t.single_threaded(CMD), "the command, one thread");
    assert!(!r.t.single_threaded(300), "an unknown pid");
    r.process_with_threads(&[201]);
    assert!(!r.t.single_threaded(200), "a thread was cloned");
    r.stop(CMD, Stop::Fork { child: 210 });
    r.stop(210, FIRST_STOP);
    assert!(r.t.single_threaded(210), "a forked child");
    // Its thread gone, the process may still exec from it no more, but it is asked anyway.
    r.stop(201, Stop::Exited { status: 0 });
    assert!(!r.t.single_threaded(200));
    // A thread whose first stop came before its creator's clone event, let go as a thread by
    // what /proc says after waiting too long: its process counts as threaded too.
    r.stop(220, FIRST_STOP);
    let mut out = Vec::new();
    r.t.release_overdue(r.ts + HOLD_MAX_NS, |_| Some((210, CMD)), &mut out);
    assert!(!r.t.single_threaded(210), "{out:?}");
    // The leader's exit frees the pid: a new process under it starts single-threaded.
    r.stop(200, Stop::Exited { status: 0 });
    r.stop(CMD, Stop::Fork { child: 200 });
    r.stop(200, FIRST_STOP);
    assert!(r.t.single_threaded(200), "a new process under a reused pid");
}

#[test]
fn exec_from_a_thread_in_the_order_the_kernel_reports_it() {
    // A3: leader L (200), thread B (201) sleeping, thread C (202) execs. L gets EVENT_EXIT and
    // no exit notification; B gets EVENT_EXIT then exited 0; C gets neither; then EVENT_EXEC is
    // reported under L with C's old tid as the event message.
    for usage in [false, true] {
        let mut r = Run::new(usage, true);
        r.process_with_threads(&[201, 202]);
        let mut out = Vec::new();
        if usage {
            // B is let go at its exit stop: its exit is the stop's.
            out.extend(r.stop(200, exiting(0)));
            out.extend(r.stop(201, exiting(0)));
        } else {
            out.extend(r.stop(201, Stop::Exited { status: 0 }));
        }
        let exec_ts = r.ts + STEP;
        let at_exec = r.stop(200, Stop::Exec { former: Some(202) });
        assert_eq!(
            at_exec,
            [exec(exec_ts, 200), Action::ReadExec { tgid: 200 }, resume(200)]
        );
        out.extend(at_exec);
        // Only B's exit: neither the leader's nor C's.
        let exits: Vec<_> = Run::events(&out)
            .into_iter()
            .filter(|e| matches!(e, Event::Exit { .. }))
            .collect();
        assert_eq!(exits.len(), 1, "{out:?}");
        assert!(matches!(
            exits[0],
            Event::Exit {
                pid: 201,
                tgid: 200,
                ..
            }
        ));
        let reads: Vec<_> = out
            .iter()
            .filter(|a| matches!(a, Action::ReadUsage { .. }))
            .collect();
        if usage {
            assert_eq!(
                reads,
                [&read(200, 200, false, false), &read(200, 201, false, false)]
            );
        } else {
            assert!(reads.is_empty());
        }
        // The process goes on as one thread under the leader's pid: its exit stop is its last,
        // and its exit is the process's.
        let ts = r.ts + STEP;
        if usage {
            assert_eq!(
                r.stop(200, exiting(0)),
                [
                    read(200, 200, true, true),
                    detach(200),
                    exit(ts, 200, 200, 0, CMD)
                ]
            );
        } else {
            assert_eq!(r.stop(200, exiting(0)), [resume(200)]);
            assert_eq!(
                r.stop(200, Stop::Exited { status: 0 }),
                [exit(ts + STEP, 200, 200, 0, CMD)]
            );
        }
        // C's old tid is forgotten: a task reusing it is new (held until its parent's event).
        assert_eq!(r.stop(202, FIRST_STOP), [Action::Hold { pid: 202 }]);
    }
}

#[test]
fn group_stops_are_listened_and_signals_are_passed_on_during_and_after_them() {
    // A0: `kill -STOP`, then a signal while stopped, then `kill -CONT`.
    let mut r = Run::plain();
    let stop_sig = |sig| Stop::Signal { sig };
    assert_eq!(
        r.stop(CMD, stop_sig(SIGSTOP)),
        [Action::Resume {
            pid: CMD,
            sig: SIGSTOP
        }]
    );
    let listen = [Action::Listen { pid: CMD }];
    assert_eq!(r.stop(CMD, Stop::Trap { sig: SIGSTOP }), listen);
    // A signal sent during the group-stop re-traps it while still stopped: still listened.
    assert_eq!(r.stop(CMD, Stop::Trap { sig: SIGSTOP }), listen);
    // SIGCONT comes back as an ordinary signal-delivery stop, re-injected; the pending signal
    // follows once it runs.
    assert_eq!(
        r.stop(CMD, stop_sig(SIGCONT)),
        [Action::Resume {
            pid: CMD,
            sig: SIGCONT
        }]
    );
    assert_eq!(
        r.stop(CMD, stop_sig(SIGUSR1)),
        [Action::Resume {
            pid: CMD,
            sig: SIGUSR1
        }]
    );
    // The end of the group-stop, seen from LISTEN, is an event stop with SIGTRAP: it runs on.
    assert_eq!(r.stop(CMD, Stop::Trap { sig: SIGTRAP }), [resume(CMD)]);
    // Job control from a terminal: the same.
    assert_eq!(r.stop(CMD, Stop::Trap { sig: SIGTSTP }), listen);
    // No event for any of it.
    assert_eq!(r.stop(CMD, Stop::OtherEvent), [resume(CMD)]);
    assert_eq!(r.stop(CMD, Stop::Other), []);
}

#[test]
fn a_new_task_held_in_a_group_stop_stays_stopped_when_released() {
    // Forked while its process was stopping, its first stop is a group-stop.
    let mut r = Run::plain();
    assert_eq!(
        r.stop(200, Stop::Trap { sig: SIGSTOP }),
        [Action::Hold { pid: 200 }]
    );
    assert_eq!(
        r.stop(CMD, Stop::Fork { child: 200 }),
        [fork(2 * STEP, CMD, 200), Action::Listen { pid: 200 }, resume(CMD)]
    );
}

#[test]
fn only_the_commands_end_is_the_commands_exit() {
    let mut r = Run::plain();
    r.stop(CMD, Stop::Fork { child: 200 });
    r.stop(200, FIRST_STOP);
    let end = r.stop(200, Stop::Exited { status: 1 << 8 });
    assert!(
        !end.iter().any(|a| matches!(a, Action::CommandExited { .. })),
        "{end:?}"
    );
    let end = r.stop(CMD, Stop::Exited { status: SIGKILL });
    assert_eq!(end.last(), Some(&Action::CommandExited { status: SIGKILL }));
}

#[test]
fn a_process_that_ends_without_its_last_exit_stop_has_no_figures() {
    // A second SIGKILL during an exit stop, or a task killed while held: its exit stop never
    // comes. When that task was the last running one, the figures gathered are dropped.
    let mut r = Run::new(true, false);
    r.process_with_threads(&[201]);
    assert_eq!(
        r.stop(201, EXITING_UNKNOWN),
        [read(200, 201, false, false), resume(201)]
    );
    let events = r.stop(201, Stop::Exited { status: SIGKILL });
    assert!(!events.iter().any(|a| matches!(a, Action::ForgetUsage { .. })));
    let ts = r.ts + STEP;
    assert_eq!(
        r.stop(200, Stop::Exited { status: SIGKILL }),
        [
            Action::ForgetUsage { tgid: 200 },
            exit(ts, 200, 200, SIGKILL, CMD)
        ]
    );
}

#[test]
fn without_usage_or_details_nothing_is_read() {
    let mut r = Run::plain();
    r.stop(CMD, Stop::Fork { child: 200 });
    r.stop(200, FIRST_STOP);
    assert_eq!(
        r.stop(200, Stop::Exec { former: None }),
        [exec(4 * STEP, 200), resume(200)]
    );
    assert_eq!(r.stop(200, exiting(0)), [resume(200)]);
}

#[test]
fn wait_statuses_decode_into_stops() {
    let stopped = |sig: i32, event: i32| (event << 16) | (sig << 8) | 0x7f;
    let no_msg = || -> Option<u64> { panic!("no event message for this stop") };
    let no_thread = |_: Pid| -> bool { panic!("no thread question for this stop") };
    assert_eq!(decode(3 << 8, no_msg, no_thread), Stop::Exited { status: 3 << 8 });
    assert_eq!(
        decode(SIGKILL, no_msg, no_thread),
        Stop::Exited { status: SIGKILL }
    );
    assert_eq!(
        decode(stopped(SIGCHLD, 0), no_msg, no_thread),
        Stop::Signal { sig: SIGCHLD }
    );
    let fork = stopped(SIGTRAP, libc::PTRACE_EVENT_FORK);
    assert_eq!(decode(fork, || Some(7), no_thread), Stop::Fork { child: 7 });
    let vfork = stopped(SIGTRAP, libc::PTRACE_EVENT_VFORK);
    assert_eq!(decode(vfork, || Some(8), no_thread), Stop::Vfork { child: 8 });
    let clone = stopped(SIGTRAP, libc::PTRACE_EVENT_CLONE);
    assert_eq!(
        decode(clone, || Some(9), |c| c == 9),
        Stop::Clone {
            child: 9,
            thread: true
        }
    );
    // The new task's id could not be read: nothing to link, it runs on.
    assert_eq!(decode(clone, || None, no_thread), Stop::OtherEvent);
    let exec = stopped(SIGTRAP, libc::PTRACE_EVENT_EXEC);
    assert_eq!(
        decode(exec, || Some(12), no_thread),
        Stop::Exec { former: Some(12) }
    );
    assert_eq!(decode(exec, || None, no_thread), Stop::Exec { former: None });
    let exit = stopped(SIGTRAP, libc::PTRACE_EVENT_EXIT);
    assert_eq!(decode(exit, || Some(0x300), no_thread), exiting(3 << 8));
    assert_eq!(decode(exit, || None, no_thread), EXITING_UNKNOWN);
    let group = stopped(SIGSTOP, libc::PTRACE_EVENT_STOP);
    assert_eq!(decode(group, no_msg, no_thread), Stop::Trap { sig: SIGSTOP });
    let vfork_done = stopped(SIGTRAP, libc::PTRACE_EVENT_VFORK_DONE);
    assert_eq!(decode(vfork_done, no_msg, no_thread), Stop::OtherEvent);
    // WIFCONTINUED.
    assert_eq!(decode(0xffff, no_msg, no_thread), Stop::Other);
}

/// The untraced actions among `actions`.
fn untraced(actions: &[Action]) -> Vec<(Pid, Found)> {
    actions
        .iter()
        .filter_map(|a| match *a {
            Action::Untraced { pid, found } => Some((pid, found)),
            _ => None,
        })
        .collect()
}

/// A traced child's SIGCHLD reaches its parent after the tracer collected its exit: the child
/// is remembered as recently exited, not taken for an untraced process.
#[test]
fn a_traced_childs_sigchld_after_its_exit_is_no_blind_spot() {
    let mut r = Run::plain();
    r.stop(CMD, Stop::Fork { child: 200 });
    r.stop(200, FIRST_STOP);
    let exit = r.stop(200, Stop::Exited { status: 0 });
    assert!(untraced(&exit).is_empty());
    assert!(!r.t.is_unknown(200));
    let mut out = Vec::new();
    r.t.child_signal(CMD, 200, &mut out);
    assert!(untraced(&out).is_empty(), "{out:?}");
    // A live task and a held one are known too.
    r.stop(CMD, Stop::Fork { child: 201 });
    r.stop(202, FIRST_STOP);
    for pid in [CMD, 201, 202] {
        assert!(!r.t.is_unknown(pid), "{pid}");
        r.t.child_signal(CMD, pid, &mut out);
    }
    assert!(untraced(&out).is_empty(), "{out:?}");
}

/// A SIGCHLD from a pid the tracer never saw, then that pid's exit as proctrace's child (it
/// outlived its parent): one untraced process, reported once, named as found first.
#[test]
fn an_untraced_child_is_reported_once_however_it_is_found() {
    let mut r = Run::plain();
    assert!(r.t.is_unknown(300));
    let mut out = Vec::new();
    r.t.child_signal(CMD, 300, &mut out);
    assert_eq!(untraced(&out), [(300, Found::Signalled { parent: CMD })]);
    // Its stop, its continue, its exit: more SIGCHLDs, no more reports.
    assert!(!r.t.is_unknown(300));
    out.clear();
    r.t.child_signal(CMD, 300, &mut out);
    assert!(untraced(&out).is_empty());
    let reaped = r.stop(300, Stop::Exited { status: 0 });
    assert!(untraced(&reaped).is_empty(), "{reaped:?}");
    // Its pid, free again, taken by another untraced process reaped by proctrace: a second one.
    let again = r.stop(300, Stop::Exited { status: 0 });
    assert_eq!(untraced(&again), [(300, Found::Reaped)]);
    // An exit of a task the tracer knows is no blind spot.
    r.stop(CMD, Stop::Fork { child: 201 });
    r.stop(201, FIRST_STOP);
    assert!(untraced(&r.stop(201, Stop::Exited { status: 0 })).is_empty());
}

/// The recent exits are a bounded window: memory stays bounded however many processes exit.
#[test]
fn recent_exits_are_bounded() {
    let mut r = Run::plain();
    for i in 0..(RECENT_EXITS as Pid + 10) {
        let pid = 1000 + i;
        r.stop(CMD, Stop::Fork { child: pid });
        r.stop(pid, FIRST_STOP);
        r.stop(pid, Stop::Exited { status: 0 });
    }
    assert_eq!(r.t.recent_exits.len(), RECENT_EXITS);
    assert_eq!(r.t.recent_set.len(), RECENT_EXITS);
    // The oldest fell out of the window; the newest are in it. (All are remembered as gone
    // still, in a window of their own.)
    assert!(!r.t.recent_set.contains(&1000));
    assert!(r.t.recent_set.contains(&(1000 + RECENT_EXITS as Pid)));
    assert!(!r.t.is_unknown(1000));
}

/// At the end, the children of traced tasks and of proctrace that are neither known nor traced
/// are untraced processes still running; known, held and traced ones are not.
#[test]
fn untraced_processes_still_running_are_found_at_the_end() {
    let mut r = Run::plain();
    r.stop(CMD, Stop::Fork { child: 200 });
    r.stop(200, FIRST_STOP);
    // 202 stopped before its parent's event: held.
    r.stop(202, FIRST_STOP);
    let children = |p: Pid, out: &mut Vec<Pid>| match p {
        CMD => out.extend([200, 201, 202, 203]),
        200 => out.push(300),
        ME => out.push(400),
        _ => {}
    };
    // 203: a new task whose first stop is not collected yet (traced).
    let traced = |c: Pid| c == 203;
    let mut out = Vec::new();
    r.t.find_running_untraced(ME, children, traced, &mut out);
    let mut found = untraced(&out);
    found.sort_by_key(|f| f.0);
    assert_eq!(
        found,
        [
            (201, Found::Running { parent: CMD }),
            (300, Found::Running { parent: 200 }),
            (400, Found::Running { parent: ME }),
        ]
    );
}
