//! Recorded captures (tests/fixtures/captures, made with `proctrace run --record`) replayed
//! into the tracker, plus hand-made sequences for what the kernel rarely does on demand.
use super::store::CHUNK;
use super::*;
use crate::cmd::replay::parse_capture;
use crate::model::event::{Event, ExitStatus};
use crate::testkit::{exit, fork, tracker};

fn capture(name: &str) -> Vec<Event> {
    let path = format!(
        "{}/tests/fixtures/captures/{name}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    parse_capture(text.as_bytes(), &path).unwrap().events
}

/// Replays with the first forked child of the recorder as root, as `run` did.
fn replay_run(events: &[Event]) -> (Tracker, Vec<Fact>) {
    let root = crate::cmd::replay::Capture {
        events: events.to_vec(),
        ..Default::default()
    }
    .command_pid()
    .unwrap();
    let mut t = tracker(Scope::Tree, true, true);
    t.expect_root(root);
    let mut facts = Vec::new();
    for e in events {
        t.apply(e, &mut facts);
    }
    (t, facts)
}

fn root_record(t: &Tracker) -> &ProcessRecord {
    assert_eq!(t.roots().len(), 1);
    t.get(t.roots()[0]).unwrap()
}

#[test]
fn pid_reuse_gives_two_instances() {
    let (t, facts) = replay_run(&capture("reuse-pid"));
    let root = root_record(&t);
    assert_eq!(root.exit.unwrap().status, Some(ExitStatus::Code(0)));
    assert_eq!(root.children.len(), 2);
    let a = t.get(root.children[0]).unwrap();
    let b = t.get(root.children[1]).unwrap();
    assert_eq!(a.pid, b.pid, "same pid, recreated with clone3(set_tid)");
    assert_ne!(a.start_ns, b.start_ns);
    assert_eq!(a.exit.unwrap().status, Some(ExitStatus::Code(1)));
    assert_eq!(b.exit.unwrap().status, Some(ExitStatus::Code(2)));
    assert_eq!(facts.iter().filter(|f| matches!(f, Fact::Exit(_))).count(), 3);
    assert_eq!(t.stats().processes, 3);
}

#[test]
fn non_leader_exec_is_one_process_with_two_execs() {
    let (t, facts) = replay_run(&capture("thread-exec"));
    let r = root_record(&t);
    assert_eq!(r.execs.len(), 2);
    assert_eq!(r.argv().unwrap(), ["/bin/true"]);
    assert_eq!(r.exit.unwrap().status, Some(ExitStatus::Code(0)));
    // The leader's EXIT before the EXEC was provisional: exactly one exit fact, last.
    let exits: Vec<_> = facts.iter().filter(|f| matches!(f, Fact::Exit(_))).collect();
    assert_eq!(exits.len(), 1);
    assert!(matches!(facts.last(), Some(Fact::Exit(_))));
    assert!(r.children.is_empty(), "threads are not child processes");
    assert_eq!(t.stats().threads, 2);
}

#[test]
fn threads_exiting_before_the_leader() {
    let (t, _) = replay_run(&capture("threads-then-leader"));
    let r = root_record(&t);
    assert_eq!(r.exit.unwrap().status, Some(ExitStatus::Code(4)));
    assert!(r.children.is_empty());
    assert_eq!(t.stats().threads, 3);
    assert_eq!(t.stats().processes, 1);
}

#[test]
fn leader_exiting_first_takes_status_from_the_last_thread() {
    let events = capture("leader-exits-first");
    let (t, facts) = replay_run(&events);
    let r = root_record(&t);
    let x = r.exit.unwrap();
    assert_eq!(x.status, Some(ExitStatus::Code(3)));
    let last_ts = events.iter().rev().find_map(|e| e.ts()).unwrap();
    assert_eq!(
        x.ts, last_ts,
        "the process ended with its last thread, not its leader"
    );
    assert_eq!(facts.iter().filter(|f| matches!(f, Fact::Exit(_))).count(), 1);
    // /proc had nothing to give (the leader was gone): argv unavailable, comm kept.
    assert!(r.argv().is_none());
    assert_eq!(r.comm.as_deref(), Some("shapes"));
}

#[test]
fn exec_twice_keeps_every_exec() {
    let (t, _) = replay_run(&capture("exec-twice"));
    let r = root_record(&t);
    assert_eq!(r.execs.len(), 3);
    assert_eq!(r.argv().unwrap(), ["/bin/echo", "hi"]);
    assert!(r.execs.windows(2).all(|w| w[0].ts < w[1].ts));
}

#[test]
fn lost_exit_then_reuse_closes_the_old_instance_as_unknown() {
    let mut t = tracker(Scope::Tree, true, false);
    t.expect_root(10);
    let mut f = Vec::new();
    for e in [
        fork(1, 1, 10),
        fork(2, 10, 11),
        Event::Lost {
            ts: Some(3),
            count: 1,
        }, // 11's exit
        fork(4, 10, 11),
        exit(5, 11, 0),
        exit(6, 10, 0),
    ] {
        t.apply(&e, &mut f);
    }
    let root = t.get(t.roots()[0]).unwrap();
    let old = t.get(root.children[0]).unwrap();
    assert_eq!(old.exit.unwrap().status, None);
    assert_eq!(old.exit.unwrap().ts, 4);
    assert_eq!(
        t.get(root.children[1]).unwrap().exit.unwrap().status,
        Some(ExitStatus::Code(0))
    );
    assert_eq!(t.stats().exits_inferred, 1);
    assert_eq!(t.stats().lost, 1);
}

#[test]
fn a_lost_root_fork_still_gives_a_tree() {
    let mut t = tracker(Scope::Tree, true, false);
    t.expect_root(10);
    let mut f = Vec::new();
    for e in [
        Event::Lost { ts: None, count: 3 }, // includes 10's FORK
        fork(2, 10, 11),
        exit(3, 11, 0),
        Event::Exec { ts: 4, tgid: 10 },
        exit(5, 10, 2),
    ] {
        t.apply(&e, &mut f);
    }
    let root = t.get(t.roots()[0]).unwrap();
    assert_eq!(root.pid, 10);
    assert_eq!(root.start_ns, None);
    assert_eq!(root.children.len(), 1);
    assert_eq!(root.execs.len(), 1);
    assert_eq!(root.exit.unwrap().status, Some(ExitStatus::Code(2)));
    assert_eq!(root.duration_ns(), None);
}

#[test]
fn after_a_loss_unknown_descendants_are_resolved_from_ancestry() {
    let mut t = tracker(Scope::Tree, true, false);
    t.expect_root(10);
    let mut f = Vec::new();
    t.apply(&fork(1, 1, 10), &mut f);
    // Before any loss, strangers are just ignored.
    assert_eq!(t.apply(&fork(2, 99, 100), &mut f), Followup::None);
    t.apply(&Event::Lost { ts: None, count: 1 }, &mut f); // 20's FORK from 10
    let child_of_20 = fork(4, 20, 21);
    assert_eq!(t.apply(&child_of_20, &mut f), Followup::ResolveAncestry(20));
    assert_eq!(t.stats().processes, 1, "nothing changed by the asking call");
    t.apply(
        &Event::Ancestry {
            tgid: 20,
            ppid: 10,
            start_ns: Some(3),
        },
        &mut f,
    );
    assert_eq!(t.apply(&child_of_20, &mut f), Followup::None);
    let root = t.get(t.roots()[0]).unwrap();
    let twenty = t.get(root.children[0]).unwrap();
    assert_eq!(twenty.pid, 20);
    assert_eq!(t.get(twenty.children[0]).unwrap().pid, 21);
    assert_eq!(t.stats().recovered, 1);
    // An unrelated process is asked about once, then ignored.
    assert_eq!(t.apply(&exit(5, 500, 0), &mut f), Followup::ResolveAncestry(500));
    assert_eq!(t.apply(&exit(5, 500, 0), &mut f), Followup::None);
}

/// Records span many slot chunks and pids come round again: every record, every pid's
/// latest instance and every parent link stay right (the chunked slots, the pid hash).
#[test]
fn many_records_across_chunks_and_reused_pids() {
    let mut t = tracker(Scope::All, true, false);
    let mut f = Vec::new();
    let n = 3 * CHUNK as u64 + 17;
    // Pids cycle through a small range (each comes round again) and every third is above
    // 2^30, so neighbouring and far-apart pids share the table.
    let pid_of = |i: u64| 1000 + (i % 5000) as i32 + if i.is_multiple_of(3) { 1 << 30 } else { 0 };
    for i in 0..n {
        t.apply(&fork(i * 10, 1, pid_of(i)), &mut f);
        t.apply(&exit(i * 10 + 5, pid_of(i), (i % 7) as u32), &mut f);
    }
    assert_eq!(t.stats().processes, n);
    let mut seen = 0u64;
    let mut ids: Vec<ProcId> = f
        .iter()
        .filter_map(|x| match x {
            Fact::Fork(id) => Some(*id),
            _ => None,
        })
        .collect();
    ids.dedup();
    for (i, id) in ids.iter().enumerate() {
        let r = t.get(*id).unwrap();
        let i = i as u64;
        assert_eq!((r.pid, r.start_ns), (pid_of(i), Some(i * 10)));
        assert_eq!(r.exit.unwrap().status, Some(ExitStatus::Code((i % 7) as i32)));
        seen += 1;
    }
    assert_eq!(seen, n);
    // The latest instance of a pid is the one a late note finds.
    let last = n - 1;
    let id = t.lookup_at(pid_of(last), last * 10 + 6).unwrap();
    assert_eq!(t.get(id).unwrap().start_ns, Some(last * 10));
    assert_eq!(t.live_count(), 0);
}

#[test]
fn tree_scope_ignores_strangers_and_all_scope_adopts_them() {
    let events = [
        fork(1, 1, 10),
        fork(2, 500, 501),
        exit(3, 501, 0),
        exit(4, 77, 1),
        exit(5, 10, 0),
    ];
    let mut t = tracker(Scope::Tree, true, false);
    t.expect_root(10);
    let mut f = Vec::new();
    for e in &events {
        t.apply(e, &mut f);
    }
    assert_eq!(t.stats().processes, 1);
    let mut t = tracker(Scope::All, true, false);
    for e in &events {
        t.apply(e, &mut f);
    }
    assert_eq!(t.stats().processes, 3);
    assert_eq!(t.stats().exits, 3);
}

#[test]
fn watch_mode_memory_stays_flat() {
    let mut t = tracker(Scope::All, false, false);
    let mut f = Vec::new();
    for i in 0..100_000u64 {
        let pid = 1000 + (i % 30_000) as i32;
        t.apply(&fork(i * 10, 1, pid), &mut f);
        t.apply(
            &Event::Exec {
                ts: i * 10 + 1,
                tgid: pid,
            },
            &mut f,
        );
        t.apply(&exit(i * 10 + 2, pid, 0), &mut f);
        f.clear();
        t.sweep();
    }
    assert_eq!(t.stats().processes, 100_000);
    // Only the first root's record stays (read at the end: a run's command).
    assert_eq!(t.stats().held, 1);
    let first = t.first_root().unwrap();
    assert_eq!(t.get(first).map(|r| r.pid), Some(1000));
    assert!(t.stats().peak_held <= 3, "{:?}", t.stats());
    assert!(t.slots.len() <= 3);
}

#[test]
fn a_long_lived_parent_does_not_grow_in_watch_mode() {
    let mut t = tracker(Scope::All, false, false);
    let mut f = Vec::new();
    t.apply(&fork(1, 1, 50), &mut f);
    let parent = t.lookup(50).unwrap();
    for i in 0..50_000u64 {
        let pid = 100 + (i % 20_000) as i32;
        t.apply(&fork(i * 10 + 2, 50, pid), &mut f);
        t.apply(&exit(i * 10 + 3, pid, 0), &mut f);
        f.clear();
        t.sweep();
    }
    assert!(t.get(parent).unwrap().children.is_empty());
    assert!(t.stats().peak_held <= 3, "{:?}", t.stats());
    assert_eq!(t.roots().len(), 1);
}

/// Found by fuzzing (`cargo fuzz run capture`): a region ending before it starts.
#[test]
fn a_region_never_ends_before_it_starts() {
    let mut t = tracker(Scope::All, true, false);
    let mut f = Vec::new();
    t.apply(&fork(1, 1, 10), &mut f);
    let region = crate::model::event::Region {
        ts: 50,
        end: 20,
        thread: "main".into(),
        category: "c".into(),
        label: "l".into(),
        msg: None,
        nesting: 1,
    };
    t.apply(
        &Event::Region {
            tgid: 10,
            region: region.clone(),
        },
        &mut f,
    );
    // By value too (`analyze` feeds owned events; the capture fuzz target found this path
    // without the fix).
    t.apply_owned(Event::Region { tgid: 10, region }, &mut f);
    let r = t.get(t.lookup(10).unwrap()).unwrap();
    assert_eq!((r.regions[0].ts, r.regions[0].end), (50, 50));
    assert_eq!((r.regions[1].ts, r.regions[1].end), (50, 50));
}

#[test]
fn uid_changes_reported_once_per_process_not_per_thread() {
    let mut t = tracker(Scope::All, true, false);
    let mut f = Vec::new();
    t.apply(&fork(1, 1, 10), &mut f);
    f.clear();
    for _ in 0..3 {
        t.apply(
            &Event::Uid {
                ts: 2,
                tgid: 10,
                ruid: 65534,
                euid: 65534,
            },
            &mut f,
        );
    }
    assert_eq!(f.len(), 1);
}

fn region_at(ts: u64) -> Event {
    Event::Region {
        tgid: 10,
        region: crate::model::event::Region {
            ts,
            end: ts + 1,
            thread: "main".into(),
            category: "c".into(),
            label: "l".into(),
            msg: None,
            nesting: 1,
        },
    }
}

/// Regions held by process 10's record after `n` regions, each released as the engine does
/// after its facts reached the sinks, then after its exit.
fn held_after(kept: NotesKept, n: u64) -> (usize, usize, Tracker) {
    let mut t = tracker(Scope::All, true, false);
    t.keep_notes(kept);
    let mut f = Vec::new();
    t.apply(&fork(1, 1, 10), &mut f);
    for i in 0..n {
        t.apply(&region_at(10 + i), &mut f);
        // Every fact names the region just added, readable at its fact.
        let Some(Fact::Region { id, index }) = f.pop() else {
            panic!("no region fact")
        };
        assert_eq!(t.get(id).unwrap().regions[index].ts, 10 + i);
        t.release_notes();
    }
    let id = t.lookup(10).unwrap();
    let live = t.get(id).unwrap().regions.len();
    t.apply(&exit(10_000, 10, 0), &mut f);
    t.release_notes();
    let exited = t.get(id).unwrap().regions.len();
    (live, exited, t)
}

/// Notes are kept only as long as an output needs them: at their fact only, until their
/// process exits, or to the end.
#[test]
fn notes_are_kept_only_as_long_as_asked() {
    assert_eq!(held_after(NotesKept::AtFact, 100).0, 0);
    assert_eq!(held_after(NotesKept::AtFact, 100).1, 0);
    assert_eq!(held_after(NotesKept::UntilExit, 100).0, 100);
    assert_eq!(held_after(NotesKept::UntilExit, 100).1, 0);
    assert_eq!(held_after(NotesKept::ToEnd, 100).0, 100);
    let (_, exited, t) = held_after(NotesKept::ToEnd, 100);
    assert_eq!(exited, 100);
    assert_eq!(t.notes_held(), 100);
    assert_eq!(t.stats().notes, 100);
    assert_eq!(t.stats().notes_dropped, 0);
    // A note after the exit, under UntilExit: written at its fact, then dropped.
    let (_, _, mut t) = held_after(NotesKept::UntilExit, 3);
    let mut f = Vec::new();
    t.apply(&region_at(20), &mut f);
    assert!(matches!(f.last(), Some(Fact::Region { .. })));
    t.release_notes();
    assert_eq!(t.notes_held(), 0);
}

/// A process that floods proctrace with regions while they are kept to the end: its record
/// keeps [`NOTES_PER_PROCESS_MAX`]; the rest still make their facts (JSON Lines writes them)
/// but are not kept after, and are counted as dropped.
#[test]
fn a_flood_of_notes_is_capped_and_counted() {
    let n = NOTES_PER_PROCESS_MAX as u64 + 25;
    let (live, _, t) = held_after(NotesKept::ToEnd, NOTES_PER_PROCESS_MAX as u64);
    assert_eq!(live, NOTES_PER_PROCESS_MAX);
    drop(t);
    let mut t = tracker(Scope::All, true, false);
    let mut f = Vec::new();
    t.apply(&fork(1, 1, 10), &mut f);
    f.clear();
    for i in 0..n {
        t.apply(&region_at(10 + i), &mut f);
        // Readable at its fact, kept or not.
        let Some(&Fact::Region { id, index }) = f.last() else {
            panic!("no region fact")
        };
        assert_eq!(t.get(id).unwrap().regions[index].ts, 10 + i);
        t.release_notes();
    }
    assert_eq!(f.len() as u64, n);
    assert_eq!(t.stats().notes, n);
    assert_eq!(t.stats().notes_dropped, 25);
    let r = t.get(t.lookup(10).unwrap()).unwrap();
    assert_eq!(r.regions.len(), NOTES_PER_PROCESS_MAX);
    // The first ones are kept.
    assert_eq!(
        r.regions.last().unwrap().ts,
        10 + NOTES_PER_PROCESS_MAX as u64 - 1
    );
    assert_eq!(t.notes_held(), NOTES_PER_PROCESS_MAX as u64);
    // Under AtFact the same flood costs nothing and drops nothing.
    let (live, _, t) = held_after(NotesKept::AtFact, n);
    assert_eq!(live, 0);
    assert_eq!(t.stats().notes_dropped, 0);
}

/// `watch -p`: the backend is subscribed before `/proc` is read, so a fork or exec that lands
/// between the two arrives after the process was taken in from `/proc` with what it runs then.
/// Applied again, it made a second record (the fork: pid reuse) or a second exec of the same
/// image; applied when it came after the read, it is a real new fork or exec.
#[test]
fn a_fork_or_exec_already_in_what_proc_said_is_not_applied_twice() {
    let existing = |tgid, ppid, seen| Event::Existing {
        tgid,
        ppid,
        start_ns: Some(5),
        details: Some(ExecDetails::default()),
        seen_ns: Some(seen),
        daemon: None,
    };
    let mut t = tracker(Scope::Tree, true, false);
    let mut f = Vec::new();
    t.apply(&existing(10, 1, 100), &mut f);
    t.apply(&existing(11, 10, 110), &mut f);
    // Queued before the reads: the child's fork, the exec of each.
    t.apply(&fork(20, 10, 11), &mut f);
    t.apply(&Event::Exec { ts: 50, tgid: 10 }, &mut f);
    t.apply(&Event::Exec { ts: 105, tgid: 11 }, &mut f);
    assert_eq!(t.stats().processes, 2, "{f:?}");
    assert_eq!(t.stats().execs, 0);
    let execs = f.iter().filter(|x| matches!(x, Fact::Exec { .. })).count();
    assert_eq!(execs, 2, "one exec each, from /proc: {f:?}");
    // After the reads: real ones.
    t.apply(&Event::Exec { ts: 120, tgid: 11 }, &mut f);
    t.apply(&fork(130, 11, 12), &mut f);
    assert_eq!((t.stats().processes, t.stats().execs), (3, 1));
    let r = t.get(t.lookup(11).unwrap()).unwrap();
    assert_eq!(r.execs.len(), 2);
    // The pid's next life is not the seeded one: after its exit nothing is held back.
    t.apply(&exit(140, 11, 0), &mut f);
    t.apply(&fork(150, 10, 11), &mut f);
    assert_eq!(t.stats().processes, 4);
}

/// `run --include-daemons`: a followed daemon is taken in when it (or a process under it that
/// existed before) starts a process during the run, as a node of its own after the command's
/// tree; what it starts once the command has exited is not the run's; a followed pid that
/// exits without starting anything is forgotten (its pid may be another's next).
#[test]
fn a_followed_daemon_comes_in_with_its_first_work_during_the_run() {
    use crate::model::elsewhere::DaemonKind;
    let sccache = DaemonKind::of_name("sccache").unwrap();
    let existing = |tgid, ppid, start, daemon| Event::Existing {
        tgid,
        ppid,
        start_ns: Some(start),
        details: None,
        seen_ns: None,
        daemon,
    };
    let mut t = tracker(Scope::Tree, true, false);
    let mut f = Vec::new();
    // 50 the daemon, 51 a worker under it, 52 another process under it.
    t.follow_daemons(&[(50, sccache)], &[51, 52], 100);
    // Before following began: nothing.
    assert_eq!(t.apply(&fork(90, 50, 60), &mut f), Followup::None);
    // The daemon's first work while the command has not even forked: taken in.
    assert_eq!(t.apply(&fork(110, 50, 61), &mut f), Followup::TakeIn(50));
    t.apply(&existing(50, 1, 100, Some(sccache)), &mut f);
    assert_eq!(t.apply(&fork(110, 50, 61), &mut f), Followup::None);
    t.expect_root(10);
    t.apply(&fork(120, 1, 10), &mut f);
    // Work started by the worker: the worker comes in under the daemon (the engine reads the
    // chain), then its child under it.
    assert_eq!(t.apply(&fork(130, 51, 62), &mut f), Followup::TakeIn(51));
    t.apply(&existing(51, 50, 100, None), &mut f);
    t.apply(&fork(130, 51, 62), &mut f);
    // Work's own children are work.
    t.apply(&fork(140, 62, 63), &mut f);
    // 52 exits without starting anything: forgotten; its pid reused by another is not followed.
    t.apply(&exit(150, 52, 0), &mut f);
    assert_eq!(t.apply(&fork(160, 52, 64), &mut f), Followup::None);
    // The command exits; what the daemon and the worker start afterwards is not the run's,
    // but the children of work started during the run still are.
    t.apply(&exit(200, 10, 0), &mut f);
    t.apply(&fork(210, 50, 65), &mut f);
    t.apply(&fork(210, 51, 66), &mut f);
    t.apply(&fork(210, 63, 67), &mut f);

    let roots: Vec<&ProcessRecord> = t.roots().iter().map(|&id| t.get(id).unwrap()).collect();
    assert_eq!(
        roots.iter().map(|r| r.pid).collect::<Vec<_>>(),
        [10, 50],
        "the command first"
    );
    assert_eq!(t.first_root().and_then(|id| t.get(id)).map(|r| r.pid), Some(10));
    let node = roots[1];
    assert_eq!(node.daemon_node(), Some(sccache));
    assert!(roots[0].daemon_node().is_none() && roots[0].ran_in.is_none());
    let kids =
        |r: &ProcessRecord| -> Vec<Pid> { r.children.iter().map(|&c| t.get(c).unwrap().pid).collect() };
    assert_eq!(kids(node), [61, 51]);
    let worker = t.get(t.lookup(51).unwrap()).unwrap();
    assert!(worker.pre_existing && worker.ran_in == Some(sccache) && worker.daemon_node().is_none());
    assert_eq!(kids(worker), [62]);
    let work = t.get(t.lookup(63).unwrap()).unwrap();
    assert_eq!(work.ran_in, Some(sccache));
    assert_eq!(kids(work), [67]);
    for pid in [60, 64, 65, 66] {
        assert!(t.lookup(pid).is_none(), "{pid} is not the run's");
    }
}
