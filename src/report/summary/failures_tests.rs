//! The classification of non-zero exits on hand-made trees, built through the real
//! [`Tracker`] from synthetic events, where the answer is known.
use super::*;
use crate::model::event::{BackgroundState, Event};
use crate::model::tracker::Scope;
use crate::testkit;

const MS: u64 = 1_000_000;

fn fork(ms: u64, parent: i32, child: i32) -> Event {
    testkit::fork(ms * MS, parent, child)
}
fn exit(ms: u64, pid: i32, code: u32) -> Event {
    testkit::exit(ms * MS, pid, code)
}

/// A finished trace of `events` (as `run` follows root 1, or `watch -p 1` when `watch`).
fn trace(events: &[Event], watch: bool) -> (Tracker, Mode, Summary) {
    let mut t = testkit::tracker(Scope::Tree, true, true);
    t.expect_root(1);
    let mut facts = Vec::new();
    for e in events {
        t.apply(e, &mut facts);
    }
    let end = events.iter().filter_map(|e| e.ts()).max().unwrap_or(0);
    if watch {
        let sum = testkit::summary(end, &t, None);
        (t, Mode::Watch { root: Some(1) }, sum)
    } else {
        let sum = testkit::summary(end, &t, Some(1));
        (
            t,
            Mode::Run {
                argv: vec!["x".into()],
            },
            sum,
        )
    }
}

/// The failures' pids, the causes' pids, and each cause's chain of pids.
fn classify(events: &[Event], watch: bool) -> (Vec<i32>, Vec<i32>, Vec<Vec<i32>>) {
    let (t, mode, sum) = trace(events, watch);
    let f = Failures::of(&t, &mode, &sum);
    let ids = crate::report::summary::all_records(&t);
    let pid = |id: ProcId| t.get(id).map_or(-1, |r| r.pid);
    let mut failures: Vec<i32> = ids
        .iter()
        .copied()
        .filter(|&id| f.contains(id))
        .map(pid)
        .collect();
    failures.sort_unstable();
    assert_eq!(failures.len(), f.len());
    let causes: Vec<ProcId> = ids.iter().copied().filter(|&id| f.is_cause(&t, id)).collect();
    let chains = causes
        .iter()
        .map(|&c| f.chain(&t, c).into_iter().map(pid).collect())
        .collect();
    (failures, causes.into_iter().map(pid).collect(), chains)
}

#[test]
fn a_successful_configure_with_failing_probes_has_no_failure() {
    let (f, c, _) = classify(
        &[
            fork(0, 100, 1),
            fork(10, 1, 2),
            exit(11, 2, 1), // test -f
            fork(12, 1, 3),
            fork(13, 3, 4),
            exit(14, 4, 1), // cc1 of a probe that does not compile
            exit(15, 3, 1), // its gcc
            fork(16, 1, 5),
            testkit::exit_status(17 * MS, 5, 13), // SIGPIPE: `yes | head`
            exit(100, 1, 0),
        ],
        false,
    );
    assert!(f.is_empty(), "{f:?}");
    assert!(c.is_empty());
}

#[test]
fn a_failing_make_names_the_compile_as_the_cause() {
    // make (1) runs two recipe shells; 2's gcc (3) fails in its cc1 (4); 5's compile (6) works,
    // after a handled `test -d` (7) in its recipe. make starts nothing after 2 fails.
    let (f, c, chains) = classify(
        &[
            fork(0, 100, 1),
            fork(10, 1, 2),
            fork(11, 1, 5),
            fork(12, 2, 3),
            fork(13, 3, 4),
            fork(14, 5, 7),
            exit(15, 7, 1),
            fork(16, 5, 6),
            exit(40, 4, 1),
            exit(41, 3, 1),
            exit(42, 2, 1),
            exit(60, 6, 0),
            exit(61, 5, 0),
            exit(70, 1, 2),
        ],
        false,
    );
    assert_eq!(f, [1, 2, 3, 4]);
    assert_eq!(c, [4], "the deepest failed process");
    assert_eq!(chains, [vec![1, 2, 3]]);
}

#[test]
fn a_failing_configure_is_caused_by_its_last_probe_not_every_probe() {
    // Probes 2 and 3 fail and configure goes on; probe 5 (a failed link) is the last thing it
    // ran before failing.
    let (f, c, _) = classify(
        &[
            fork(0, 100, 1),
            fork(10, 1, 2),
            exit(11, 2, 1),
            fork(12, 1, 3),
            exit(13, 3, 1),
            fork(14, 1, 4),
            exit(15, 4, 0),
            fork(16, 1, 5),
            exit(17, 5, 1),
            exit(20, 1, 1),
        ],
        false,
    );
    assert_eq!(f, [1, 5]);
    assert_eq!(c, [5]);
}

#[test]
fn a_cleanup_after_the_failure_does_not_hide_it() {
    // `trap 'rm -rf $tmp' EXIT`: the failed child, then an rm, then the failed exit.
    let (f, c, _) = classify(
        &[
            fork(0, 100, 1),
            fork(10, 1, 2),
            exit(20, 2, 1),
            fork(21, 1, 3),
            exit(22, 3, 0),
            exit(30, 1, 1),
        ],
        false,
    );
    assert_eq!(f, [1, 2]);
    assert_eq!(c, [2]);
}

#[test]
fn a_failure_whose_parent_is_still_running_is_handled() {
    // 2 never ends; its child 3 failed. The root failed on its own.
    let events = [
        fork(0, 100, 1),
        fork(10, 1, 2),
        fork(11, 2, 3),
        exit(12, 3, 1),
        exit(50, 1, 4),
    ];
    let (f, c, _) = classify(&events, false);
    assert_eq!(f, [1]);
    assert_eq!(c, [1], "the command itself");
    // `watch -p 1` of a command still running: no failure at all.
    let (f, _, _) = classify(&events[..4], true);
    assert!(f.is_empty(), "{f:?}");
}

#[test]
fn a_background_child_or_one_ending_after_its_parent_is_not_part_of_the_failure() {
    let (f, _, _) = classify(
        &[
            fork(0, 100, 1),
            fork(10, 1, 2),
            fork(11, 1, 3),
            exit(50, 1, 1),
            Event::Background {
                ts: 51 * MS,
                tgid: 2,
                state: BackgroundState::Ready,
                report: false,
            },
            exit(60, 2, 1),
            exit(61, 3, 1),
        ],
        false,
    );
    assert_eq!(f, [1]);
}

#[test]
fn killed_with_the_command_counts_and_watch_without_a_root_takes_each_failed_root() {
    // The root and its child killed by SIGTERM at once (Ctrl-C's process group).
    let (f, c, _) = classify(
        &[
            fork(0, 100, 1),
            fork(10, 1, 2),
            testkit::exit_status(50 * MS, 2, 15),
            testkit::exit_status(50 * MS, 1, 15),
        ],
        false,
    );
    assert_eq!((f, c), (vec![1, 2], vec![2]));

    // System-wide: two roots, one failed with a failed child, one succeeded over a handled one.
    let mut t = testkit::tracker(Scope::All, true, true);
    let mut facts = Vec::new();
    for e in [
        fork(0, 100, 1),
        fork(1, 200, 7),
        fork(2, 1, 2),
        fork(3, 7, 8),
        exit(4, 2, 1),
        exit(5, 8, 1),
        exit(6, 1, 1),
        exit(7, 7, 0),
    ] {
        t.apply(&e, &mut facts);
    }
    let sum = testkit::summary(10 * MS, &t, None);
    let f = Failures::of(&t, &Mode::Watch { root: None }, &sum);
    let failed: Vec<i32> = crate::report::summary::all_records(&t)
        .into_iter()
        .filter(|&id| f.contains(id))
        .filter_map(|id| t.get(id).map(|r| r.pid))
        .collect();
    assert_eq!(t.roots().len(), 2, "two roots");
    assert_eq!(failed, [1, 2]);
}
