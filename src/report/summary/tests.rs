//! Hand-made trees, built through the real [`Tracker`] from synthetic events, where the
//! answer is known.
use super::analysis::first_n;
use super::markdown::code;
use super::text::PATH_LINES;
use super::*;
use crate::model::event::BackgroundState;
use crate::model::event::Event;
use crate::model::tracker::Scope;
use crate::testkit;

const MS: u64 = 1_000_000;

// The shared builders, timed in milliseconds.
fn fork(ms: u64, parent: i32, child: i32) -> Event {
    testkit::fork(ms * MS, parent, child)
}
fn exit(ms: u64, pid: i32, code: u32) -> Event {
    testkit::exit(ms * MS, pid, code)
}
fn exec(ms: u64, pid: i32, argv: &[&str]) -> [Event; 2] {
    testkit::exec(ms * MS, pid, argv, None)
}

/// Feeds `events` to a tracker following root 1 (as `run` does) and summarizes.
fn report(events: &[Event]) -> RunReport {
    let mut t = testkit::tracker(Scope::Tree, true, true);
    t.expect_root(1);
    let mut facts = Vec::new();
    for e in events {
        t.apply(e, &mut facts);
    }
    let mut h = testkit::header(0, &["root"]);
    h.tool.pid = 0;
    h.tool.argv = vec![];
    let end = events.iter().filter_map(|e| e.ts()).max().unwrap_or(0);
    let sum = testkit::summary(end, &t, Some(1));
    summarize(&h, &t, &sum, true, Some(3))
}

fn path(r: &RunReport) -> Vec<(i32, usize)> {
    r.critical_path.iter().map(|s| (s.step.pid, s.depth)).collect()
}

/// `first_n` is a stable sort and `take(n)`: the same items in the same order, ties (many
/// here) in their own order, for every `n` up to past the end.
#[test]
fn first_n_is_a_stable_sort_then_take() {
    let items: Vec<(u64, u32)> = (0..500u32).map(|i| (u64::from(i * 7919 % 13), i)).collect();
    let cmp = |a: &(u64, u32), b: &(u64, u32)| b.0.cmp(&a.0);
    let mut sorted = items.clone();
    sorted.sort_by(cmp);
    for n in [0, 1, 5, 20, 499, 500, 600] {
        let want: Vec<_> = sorted.iter().copied().take(n).collect();
        assert_eq!(first_n(&items, n, cmp), want, "n = {n}");
    }
}

/// Fuzzing found these: a saved trace can hold an exit stamped before its fork, and
/// timestamps far from the origin (`cargo fuzz run capture`).
#[test]
fn an_exit_before_its_fork_and_far_timestamps_do_not_overflow() {
    // (Issue 23: the root succeeded, so its child's non-zero exit was handled: the old
    // `failures`, every non-zero exit, are `nonzero_exits` now.)
    let r = report(&[fork(0, 100, 1), fork(50, 1, 2), exit(30, 2, 1), exit(100, 1, 0)]);
    assert_eq!(r.nonzero_exits.len(), 1);
    assert!(r.failures.is_empty());
    let far = report(&[
        fork(0, 100, 1),
        testkit::fork(u64::MAX - 5, 1, 2),
        testkit::exit(u64::MAX - 1, 2, 3),
        exit(100, 1, 0),
    ]);
    assert_eq!(far.nonzero_exits.len(), 1);
    assert_eq!(far.nonzero_exits[0].start_ns, Some(-(5 + 1) as i64));
    // Two processes of one program, each lasting more than half of u64's nanoseconds: their
    // total saturates (fuzzing, 2026-12-01: the sum overflowed).
    let long = report(&[
        fork(0, 100, 1),
        testkit::fork(1, 1, 2),
        testkit::exit(u64::MAX / 2 + 10, 2, 0),
        testkit::fork(2, 1, 3),
        testkit::exit(u64::MAX / 2 + 20, 3, 0),
        exit(100, 1, 0),
    ]);
    assert!(
        long.by_program.0.iter().any(|(_, p)| p.total_ns == u64::MAX),
        "{:?}",
        long.by_program.0
    );
}

fn region(ms: (u64, u64), pid: i32, category: &str, label: &str, nesting: u32) -> Event {
    Event::Region {
        tgid: pid,
        region: crate::model::event::Region {
            ts: ms.0 * MS,
            end: ms.1 * MS,
            thread: "main".into(),
            category: category.into(),
            label: label.into(),
            msg: None,
            nesting,
        },
    }
}

/// Regions: the slowest listed longest first with their process, totals by name; a run
/// without regions has no section at all (and no `regions` key in the JSON).
#[test]
fn regions_are_summarized_only_when_reported() {
    let mut evs = vec![fork(0, 100, 1)];
    evs.extend(exec(1, 1, &["git", "fetch"]));
    evs.extend([
        fork(10, 1, 2),
        region((2, 40), 1, "fetch", "remote_refs", 1),
        region((5, 9), 1, "index", "do_read_index", 2),
        region((50, 60), 1, "index", "do_read_index", 1),
        exit(70, 2, 0),
        region((12, 68), 2, "pack", "write", 1),
        exit(100, 1, 0),
    ]);
    let r = report(&evs);
    let g = r.regions.as_ref().unwrap();
    assert_eq!(g.count, 4);
    let slow: Vec<(&str, i32, u64)> = g
        .slowest
        .iter()
        .map(|s| (s.name.as_str(), s.pid, s.duration_ns / MS))
        .collect();
    assert_eq!(
        slow,
        [
            ("pack:write", 2, 56),
            ("fetch:remote_refs", 1, 38),
            ("index:do_read_index", 1, 10),
            ("index:do_read_index", 1, 4)
        ]
    );
    assert_eq!(g.slowest[1].start_ns, 2 * MS as i64);
    let names: Vec<(&str, u64, u64)> = g
        .by_name
        .0
        .iter()
        .map(|(n, s)| (n.as_str(), s.count, s.total_ns / MS))
        .collect();
    assert_eq!(
        names,
        [
            ("pack:write", 1, 56),
            ("fetch:remote_refs", 1, 38),
            ("index:do_read_index", 2, 14)
        ]
    );
    let text = render_text(
        &r,
        TextOptions {
            color: false,
            width: 100,
        },
    );
    assert!(text.contains("regions: (4 reported"), "{text}");
    assert!(text.contains(" pack:write\n"), "{text}");
    assert!(render_markdown(&r).contains("#### Regions (4 reported"));
    let json: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(json["regions"]["slowest"][0]["name"], "pack:write");
    assert_eq!(json["regions"]["by_name"]["index:do_read_index"]["count"], 2);

    let plain = report(&[fork(0, 100, 1), exit(10, 1, 0)]);
    assert!(plain.regions.is_none());
    assert!(
        !render_text(
            &plain,
            TextOptions {
                color: false,
                width: 100
            }
        )
        .contains("regions")
    );
    assert!(!render_json(&plain).contains("regions"));
}

#[test]
fn a_chain_is_all_on_the_path() {
    let r = report(&[
        fork(0, 100, 1),
        fork(10, 1, 2),
        fork(20, 2, 3),
        exit(80, 3, 0),
        exit(90, 2, 0),
        exit(100, 1, 0),
    ]);
    assert_eq!(path(&r), [(1, 0), (2, 1), (3, 2)]);
    assert_eq!(r.wall_ns, 100 * MS);
    let starts: Vec<i64> = r.critical_path.iter().map(|s| s.step.start_ns).collect();
    assert_eq!(starts, [0, 10 * MS as i64, 20 * MS as i64]);
    let durs: Vec<u64> = r.critical_path.iter().map(|s| s.step.duration_ns).collect();
    assert_eq!(durs, [100 * MS, 80 * MS, 60 * MS]);
}

#[test]
fn a_fan_out_puts_the_longest_child_on_the_path() {
    let r = report(&[
        fork(0, 100, 1),
        fork(10, 1, 2),
        fork(10, 1, 3),
        fork(10, 1, 4),
        exit(50, 2, 0),
        exit(90, 3, 0),
        exit(70, 4, 0),
        exit(100, 1, 0),
    ]);
    assert_eq!(path(&r), [(1, 0), (3, 1)]);
    let slowest: Vec<i32> = r.slowest.iter().map(|s| s.pid).collect();
    assert_eq!(slowest, [3, 4, 2], "longest first, root excluded");
}

#[test]
fn a_fan_in_takes_the_later_of_the_parallel_pair_then_the_join() {
    let r = report(&[
        fork(0, 100, 1),
        fork(10, 1, 2), // A
        fork(10, 1, 3), // B
        exit(40, 3, 0),
        exit(60, 2, 0),
        fork(61, 1, 4), // C, after both
        exit(90, 4, 0),
        exit(100, 1, 0),
    ]);
    assert_eq!(path(&r), [(1, 0), (2, 1), (4, 1)]);
}

#[test]
fn a_background_child_never_counts() {
    let r = report(&[
        fork(0, 100, 1),
        fork(10, 1, 2),
        fork(20, 1, 3), // left running, then ends long after the command
        exit(50, 2, 0),
        exit(100, 1, 0),
        Event::Background {
            ts: 101 * MS,
            tgid: 3,
            state: BackgroundState::Ready,
            report: false,
        },
        exit(500, 3, 0),
    ]);
    assert_eq!(path(&r), [(1, 0), (2, 1)]);
    assert_eq!(r.wall_ns, 100 * MS, "wall time is the command's, not the leak's");
    assert_eq!(r.background.len(), 1);
    assert_eq!(r.background[0].pid, 3);
    assert!(r.slowest.iter().all(|s| s.pid != 3), "{:?}", r.slowest);
}

/// A process that outlived its parent (a double fork: conmon, containerd-shim's `start`,
/// runc's container init) is on the path of the ancestor that was still running when it
/// ended, when that one waits for orphans (a client or server of an engine, as the kernel hands
/// an orphan to its subreaper); never twice, never its dead parent's; and not under `make`,
/// which never waits for what a shell left running.
#[test]
fn an_orphan_is_on_the_path_of_the_engine_that_outlived_it() {
    let with = |mut events: Vec<Event>, argvs: &[(u64, i32, &[&str])]| {
        for &(ms, pid, argv) in argvs {
            let at = events
                .iter()
                .position(|e| matches!(e, Event::Fork { child_tgid, .. } if *child_tgid == pid))
                .unwrap();
            for (k, e) in exec(ms, pid, argv).into_iter().enumerate() {
                events.insert(at + 1 + k, e);
            }
        }
        report(&events)
    };
    let podman: &[&str] = &["podman", "run", "--rm", "img", "true"];
    let conmon: &[&str] = &["/usr/bin/conmon", "--api-version", "1"];
    let r = with(
        vec![
            fork(0, 100, 1),
            fork(5, 1, 2),
            fork(10, 2, 3), // 2 forks 3 and exits: 3 is the work the command waits for
            exit(12, 2, 0),
            exit(80, 3, 0),
            exit(100, 1, 0),
        ],
        &[(0, 1, podman), (5, 2, conmon)],
    );
    assert_eq!(path(&r), [(1, 0), (3, 1)]);
    // Deeper: 4 outlives its parent 3 but not 2 (conmon), which waited for it.
    let r = with(
        vec![
            fork(0, 100, 1),
            fork(5, 1, 2),
            fork(10, 2, 3),
            fork(12, 3, 4),
            exit(15, 3, 0),
            exit(60, 4, 0),
            exit(90, 2, 0),
            exit(100, 1, 0),
        ],
        &[(0, 1, podman), (5, 2, conmon)],
    );
    assert_eq!(path(&r), [(1, 0), (2, 1), (4, 2)]);
    // An orphan that outlived the command is in the background: never on the path.
    let r = with(
        vec![
            fork(0, 100, 1),
            fork(5, 1, 2),
            fork(10, 2, 3),
            exit(12, 2, 0),
            exit(100, 1, 0),
            Event::Background {
                ts: 101 * MS,
                tgid: 3,
                state: BackgroundState::Ready,
                report: false,
            },
            exit(200, 3, 0),
        ],
        &[(0, 1, podman), (5, 2, conmon)],
    );
    assert_eq!(path(&r), [(1, 0), (2, 1)]);
    // conmon's detached fork (3) outlives podman and is left in the background: the container
    // (5), which outlived runc (4), is podman's, which waited for it.
    let r = with(
        vec![
            fork(0, 100, 1),
            fork(5, 1, 2),
            fork(6, 2, 3),
            exit(7, 2, 0),
            fork(8, 3, 4),
            fork(9, 4, 5),
            exit(10, 4, 0),
            exit(80, 5, 0),
            exit(100, 1, 0),
            Event::Background {
                ts: 101 * MS,
                tgid: 3,
                state: BackgroundState::Ready,
                report: false,
            },
            exit(150, 3, 0),
        ],
        &[
            (0, 1, podman),
            (5, 2, conmon),
            (8, 4, &["runc", "create", "x"]),
            (9, 5, &["sh", "-c", "sleep 0.07"]),
        ],
    );
    assert_eq!(path(&r), [(1, 0), (2, 1), (5, 1)]);
    // make: a recipe's shell leaves `sleep` running and exits; the compile after it is what
    // make waited for, though the sleep ended later.
    let r = with(
        vec![
            fork(0, 100, 1),
            fork(5, 1, 2),
            fork(6, 2, 3),
            exit(8, 2, 0),
            fork(10, 1, 4),
            exit(70, 4, 0),
            exit(90, 3, 0),
            exit(100, 1, 0),
        ],
        &[
            (0, 1, &["make", "-j2"]),
            (5, 2, &["sh", "-c", "sleep 0.08 &"]),
            (6, 3, &["sleep", "0.08"]),
            (10, 4, &["cc", "-c", "x.c"]),
        ],
    );
    assert_eq!(path(&r), [(1, 0), (2, 1), (4, 1)], "the sleep (3) is not on it");
}

#[test]
fn sequential_children_are_all_on_the_path() {
    let r = report(&[
        fork(0, 100, 1),
        fork(10, 1, 2),
        exit(30, 2, 0),
        fork(30, 1, 3),
        exit(50, 3, 0),
        fork(55, 1, 4),
        exit(90, 4, 1),
        exit(100, 1, 1),
    ]);
    assert_eq!(path(&r), [(1, 0), (2, 1), (3, 1), (4, 1)]);
    let f: Vec<(i32, Option<i32>)> = r.failures.iter().map(|f| (f.pid, f.status.code)).collect();
    assert_eq!(f, [(1, Some(1)), (4, Some(1))]);
}

#[test]
fn a_process_with_unknown_exit_never_counts() {
    let r = report(&[
        fork(0, 100, 1),
        fork(10, 1, 2),
        Event::Lost {
            ts: Some(20 * MS),
            count: 1,
        }, // 2's exit
        fork(60, 1, 2), // the pid again: the first instance is closed with its exit unknown
        exit(70, 2, 0),
        exit(100, 1, 0),
    ]);
    assert_eq!(path(&r), [(1, 0), (2, 1)]);
    assert_eq!(
        r.critical_path[1].step.start_ns,
        60 * MS as i64,
        "the second instance"
    );
    assert_eq!(r.exit_unknown, 1);
    assert_eq!(r.lost, 1);
    assert_eq!(r.slowest.len(), 1);
    assert!(r.failures.is_empty(), "an unknown exit is not a failure");
}

#[test]
fn gaps_are_the_parents_own_work_and_overlaps_pick_the_gating_child() {
    // make -j2 in miniature: 2 and 3 start together; 4 starts when 2 ends; the link (5)
    // starts when the later of 3 and 4 ends. Path: 2 → 4 → 5 (3 finished earlier).
    let r = report(&[
        fork(0, 100, 1),
        fork(5, 1, 2),
        fork(5, 1, 3),
        exit(40, 2, 0),
        fork(41, 1, 4),
        exit(60, 3, 0),
        exit(80, 4, 0),
        fork(85, 1, 5),
        exit(95, 5, 0),
        exit(100, 1, 0),
    ]);
    assert_eq!(path(&r), [(1, 0), (2, 1), (4, 1), (5, 1)]);
}

#[test]
fn programs_and_folding_of_wrappers() {
    let mut ev = vec![fork(0, 100, 1)];
    ev.extend(exec(1, 1, &["make", "-j2"]));
    ev.push(fork(10, 1, 2));
    ev.extend(exec(11, 2, &["/usr/bin/cc", "-c", "f.c"]));
    ev.push(fork(12, 2, 3));
    ev.extend(exec(13, 3, &["/usr/lib/gcc/cc1", "f.c"]));
    ev.extend([exit(60, 3, 0), exit(62, 2, 0)]);
    ev.push(fork(63, 1, 4)); // a fork of make that never execs
    ev.extend([exit(64, 4, 0), exit(100, 1, 0)]);
    let r = report(&ev);
    let progs: Vec<(&str, u64, u64)> = r
        .by_program
        .0
        .iter()
        .map(|(n, s)| (n.as_str(), s.count, s.total_ns))
        .collect();
    assert_eq!(
        progs,
        [
            ("make", 1, 100 * MS),
            ("cc", 1, 52 * MS),
            ("cc1", 1, 48 * MS),
            ("[fork of make]", 1, MS)
        ]
    );
    // cc1 takes 48 of cc's 52 ms: folded into `cc -c f.c`, which names the compile.
    let slowest: Vec<i32> = r.slowest.iter().map(|s| s.pid).collect();
    assert_eq!(slowest, [2, 4]);
    assert_eq!(path(&r), [(1, 0), (2, 1), (3, 2), (4, 1)]);
    let j: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(j["critical_path"][2]["argv"][0], "/usr/lib/gcc/cc1");
    assert_eq!(j["critical_path"][2]["start_s"], 0.012);
    assert_eq!(j["critical_path"][2]["duration_s"], 0.048);
    assert_eq!(j["by_program"]["cc1"]["count"], 1);
    assert_eq!(j["wall_s"], 0.1);
}

/// The text of `r`'s critical path section, 100 columns.
fn path_section(r: &RunReport) -> String {
    let text = render_text(
        r,
        TextOptions {
            color: false,
            width: 100,
        },
    );
    text.lines()
        .skip_while(|l| !l.starts_with("critical path:"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_long_path_of_short_steps_is_said_as_its_parents_work_and_whole_in_json() {
    // 100 sequential jobs, each with one grandchild: a path of 201 steps, none big.
    let mut ev = vec![fork(0, 100, 1)];
    for j in 0..100u64 {
        let (c, g) = (2 + 2 * j as i32, 3 + 2 * j as i32);
        ev.extend([
            fork(10 * j + 1, 1, c),
            fork(10 * j + 2, c, g),
            exit(10 * j + 8, g, 0),
            exit(10 * j + 9, c, 0),
        ]);
    }
    ev.push(exit(1000, 1, 0));
    let r = report(&ev);
    assert_eq!(r.critical_path.len(), 201);
    let text = path_section(&r);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].contains("(201 steps; 1 shown, holding 100% of the 1.00s wall"),
        "{text}"
    );
    assert!(lines[1].contains("1.00s  100%  1 [fork of ?]"), "{text}");
    assert!(
        lines[2].contains("its own work and 200 shorter steps; most: 100× [fork of ?] 800.0ms"),
        "{text}"
    );
    let md = render_markdown(&r);
    assert!(
        md.contains("201 steps; 1 shown, holding 100% of the 1.00s wall"),
        "{md}"
    );
    assert!(md.contains("its own work and 200 shorter steps"), "{md}");
}

/// 60 one-ms probes, then one compile chain of 400 ms under make (`make → sh → libtool → gcc
/// → cc1`), then a link: the compile is one row naming the work, its parents folded.
#[test]
fn a_big_step_deep_in_a_long_path_is_one_row_with_its_parents_folded() {
    let mut ev = vec![testkit::fork(0, 100, 1)];
    ev.extend(testkit::exec(1, 1, &["make"], None));
    for j in 0..60u64 {
        let c = 10 + j as i32;
        ev.push(testkit::fork(MS * (1 + 2 * j), 1, c));
        ev.extend(testkit::exec(
            MS * (1 + 2 * j) + 10,
            c,
            &["test", "-f", &format!("x{j}")],
            None,
        ));
        ev.push(testkit::exit(MS * (2 + 2 * j), c, 1));
    }
    let t0 = 130 * MS;
    ev.push(testkit::fork(t0, 1, 2));
    ev.extend(testkit::exec(
        t0 + 10,
        2,
        &["sh", "-c", "libtool --mode=compile gcc -c src/closures.c"],
        None,
    ));
    ev.push(testkit::fork(t0 + MS, 2, 3));
    ev.extend(testkit::exec(
        t0 + MS + 10,
        3,
        &["libtool", "--mode=compile", "gcc", "-c", "src/closures.c"],
        None,
    ));
    ev.push(testkit::fork(t0 + 2 * MS, 3, 4));
    ev.extend(testkit::exec(
        t0 + 2 * MS + 10,
        4,
        &["gcc", "-c", "src/closures.c", "-o", "closures.o"],
        None,
    ));
    ev.push(testkit::fork(t0 + 3 * MS, 4, 5));
    ev.extend(testkit::exec(
        t0 + 3 * MS + 10,
        5,
        &["/usr/lib/gcc/cc1", "src/closures.c"],
        None,
    ));
    ev.push(testkit::exit(t0 + 400 * MS, 5, 0));
    ev.push(testkit::exit(t0 + 401 * MS, 4, 0));
    ev.push(testkit::exit(t0 + 402 * MS, 3, 0));
    ev.push(testkit::exit(t0 + 403 * MS, 2, 0));
    ev.push(testkit::fork(t0 + 404 * MS, 1, 6));
    ev.extend(testkit::exec(t0 + 404 * MS + 10, 6, &["ld", "-o", "app"], None));
    ev.push(testkit::exit(t0 + 460 * MS, 6, 0));
    ev.push(testkit::exit(t0 + 461 * MS, 1, 0));
    let r = report(&ev);
    assert!(r.critical_path.len() > PATH_LINES);
    let text = path_section(&r);
    let cc1 = text
        .lines()
        .position(|l| l.contains("/usr/lib/gcc/cc1 src/closures.c"))
        .unwrap_or_else(|| panic!("{text}"));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[cc1].contains("397.0ms"), "{text}");
    assert!(
        lines[cc1 + 1].trim_start().starts_with("in sh → libtool → gcc"),
        "{text}"
    );
    assert!(text.contains("ld -o app"), "{text}");
    // make's probes are its own stretch, counted.
    assert!(
        text.contains("its own work and 60 shorter steps; most: 60× test 60.0ms"),
        "{text}"
    );
    // Never one of the probes on its own.
    assert!(!text.contains("test -f"), "{text}");
}

/// `make -j2` keeping both slots busy: the stretch is said to be bounded by its job slots, with
/// its longest job, not one slot's compiles as if they gated the build.
#[test]
fn a_stretch_bounded_by_job_slots_says_so() {
    let mut ev = vec![testkit::fork(0, 100, 1)];
    ev.extend(testkit::exec(1, 1, &["make", "-j2"], None));
    // Two slots, refilled: 20 jobs of 30 ms, two at a time; one of 90 ms.
    let mut pid = 10;
    for slot in 0..2u64 {
        let mut t = MS + slot * MS / 2;
        for j in 0..10u64 {
            let d = if slot == 1 && j == 3 { 90 * MS } else { 30 * MS };
            ev.push(testkit::fork(t, 1, pid));
            ev.extend(testkit::exec(
                t + 10,
                pid,
                &["cc", "-c", &format!("f{slot}{j}.c")],
                None,
            ));
            ev.push(testkit::exit(t + d, pid, 0));
            t += d + 100_000;
            pid += 1;
        }
    }
    ev.push(testkit::exit(400 * MS, 1, 0));
    let r = report(&ev);
    assert_eq!(r.parallel.len(), 1, "{:?}", r.parallel);
    let p = &r.parallel[0];
    assert_eq!((p.pid, p.slots), (1, 2));
    assert!(p.full_ns as f64 >= 0.8 * p.window_ns as f64);
    let job = p.longest_job.as_ref().unwrap();
    assert_eq!(job.argv.as_ref().unwrap().join(" "), "cc -c f13.c");
    let text = path_section(&r);
    assert!(text.contains("make -j2: 2 jobs at once for"), "{text}");
    assert!(
        text.contains("bounded by its job slots, not by one chain"),
        "{text}"
    );
    let j: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(j["parallel"][0]["slots"], 2);
    assert_eq!(j["parallel"][0]["longest_job"]["duration_s"], 0.09);
}

/// A pipeline runs its few children at once by design: not job slots.
#[test]
fn a_pipeline_is_not_bounded_by_job_slots() {
    let mut ev = vec![testkit::fork(0, 100, 1)];
    ev.extend(testkit::exec(1, 1, &["sh", "-c", "a | b"], None));
    ev.extend([
        testkit::fork(MS, 1, 2),
        testkit::fork(MS, 1, 3),
        testkit::exit(90 * MS, 2, 0),
        testkit::exit(91 * MS, 3, 0),
    ]);
    ev.push(testkit::exit(92 * MS, 1, 0));
    assert!(report(&ev).parallel.is_empty());
}

#[test]
fn colour_only_when_asked() {
    let r = report(&[fork(0, 100, 1), fork(10, 1, 2), exit(50, 2, 1), exit(100, 1, 0)]);
    let on = render_text(
        &r,
        TextOptions {
            color: true,
            width: 100,
        },
    );
    // The root succeeded: its child's exit 1 was handled, muted and counted apart (issue 23:
    // it was "1 failure" in red).
    assert!(on.contains("0 failures"), "{on:?}");
    assert!(on.contains("\x1b[90m1 handled non-zero exit\x1b[0m"), "{on:?}");
    assert!(!on.contains("\x1b[31m"), "nothing red: {on:?}");
    // The same tree failing: the child ended before its failed parent, so both are failures.
    let failed = report(&[fork(0, 100, 1), fork(10, 1, 2), exit(50, 2, 1), exit(100, 1, 1)]);
    let on = render_text(
        &failed,
        TextOptions {
            color: true,
            width: 100,
        },
    );
    assert!(on.contains("\x1b[31mexit 1\x1b[0m"), "{on:?}");
    assert!(on.contains("\x1b[31m2 failures\x1b[0m"), "{on:?}");
    let off = render_text(
        &r,
        TextOptions {
            color: false,
            width: 100,
        },
    );
    assert!(!off.contains('\x1b'), "{off:?}");
    assert!(!render_markdown(&r).contains('\x1b'));
}

#[test]
fn markdown_survives_pipes_and_backticks() {
    assert_eq!(code("a|b"), r"`a\|b`");
    assert_eq!(code("x `y` z"), "``x `y` z``");
    assert_eq!(code("`q"), "`` `q ``");
}

/// A build with figures: `make` (1) runs `cc` (2, whose `cc1` 4 does its work) and a
/// `link` (3) side by side, and `sh` (5) that was not measured.
fn costly() -> Vec<Event> {
    let u = testkit::usage;
    let mut ev = vec![fork(0, 0, 1)];
    ev.extend(exec(0, 1, &["make", "-j2"]));
    ev.push(fork(10, 1, 2));
    ev.extend(exec(11, 2, &["cc", "-c", "big.c"]));
    ev.push(fork(12, 2, 4));
    ev.extend(exec(13, 4, &["/usr/lib/gcc/cc1", "big.c"]));
    ev.push(fork(20, 1, 3));
    ev.extend(exec(21, 3, &["link", "-o", "app"]));
    ev.push(fork(30, 1, 5));
    ev.extend(exec(31, 5, &["sh", "-c", "true"]));
    ev.extend([u(5, 0, 0, 1), exit(40, 5, 0)]);
    ev.extend([u(4, 700, 50, 300_000), exit(990, 4, 0)]);
    ev.extend([u(2, 2, 1, 2_000), exit(995, 2, 0)]);
    ev.extend([u(3, 200, 40, 900_000), exit(800, 3, 0)]);
    ev.extend([u(1, 5, 2, 3_000), exit(1000, 1, 0)]);
    ev
}

#[test]
fn costs_name_the_hungriest_and_the_parallelism() {
    let r = report(&costly());
    let c = r.costs.as_ref().expect("figures were given");
    assert_eq!(c.measured, 5, "sh's zero figures are figures too");
    assert_eq!(c.cpu_user_ns, (700 + 2 + 200 + 5) * MS);
    assert_eq!(c.cpu_sys_ns, (50 + 1 + 40 + 2) * MS);
    let par = c.parallelism.unwrap();
    assert!((par - 1000.0 / 1000.0).abs() < 1e-9, "{par}");
    let pids = |l: &[Cost]| l.iter().map(|x| x.pid).collect::<Vec<_>>();
    assert_eq!(pids(&c.top_cpu), [4, 3, 1, 2, 5]);
    assert_eq!(pids(&c.top_rss), [3, 4, 1, 2, 5]);
    // cc1 did cc's work: named with cc's command.
    assert_eq!(c.top_cpu[0].label, "cc1, for: cc -c big.c");
    assert_eq!(c.top_cpu[1].label, "link -o app");
    // cc took most of make's time, but less CPU than make: its own command.
    assert_eq!(c.top_cpu[3].label, "cc -c big.c");
    let cc1 = r.by_program.0.iter().find(|p| p.0 == "cc1").unwrap().1;
    assert_eq!((cc1.cpu_ns, cc1.max_rss_kib), (Some(750 * MS), Some(300_000)));

    let text = render_text(
        &r,
        TextOptions {
            color: false,
            width: 100,
        },
    );
    assert!(
        text.contains("cost: CPU 1.00s over 1.00s wall: 1.0 cores on average\n"),
        "{text}"
    );
    assert!(
        text.contains("hungriest: 750.0ms CPU, 293 MiB peak: 4 cc1, for: cc -c big.c\n"),
        "{text}"
    );
    assert!(
        text.contains("most memory: (peak RSS)\n   879 MiB  240.0ms  3  link -o app\n"),
        "{text}"
    );
    let md = render_markdown(&r);
    assert!(
        md.contains("Hungriest: `cc1, for: cc -c big.c` (pid 4, 750.0ms CPU, 293 MiB peak)"),
        "{md}"
    );
    assert!(
        md.contains("| program | count | total | cpu | largest peak |"),
        "{md}"
    );
    let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(v["cpu_s"], 1.0);
    assert_eq!(v["parallelism"], 1.0);
    assert_eq!(v["measured"], 5);
    assert_eq!(v["top_cpu"][0]["pid"], 4);
    assert_eq!(v["top_cpu"][0]["cpu_user_s"], 0.7);
    assert_eq!(v["top_rss"][0]["max_rss_kib"], 900_000);
    assert_eq!(v["by_program"]["link"]["cpu_s"], 0.24);
    assert_eq!(v["by_program"]["link"]["max_rss_kib"], 900_000);
}

#[test]
fn a_partly_measured_run_says_so_and_an_unmeasured_one_shows_nothing() {
    // The same run without sh's figures: the sums are over the 4 measured.
    let ev: Vec<Event> = costly()
        .into_iter()
        .filter(|e| !matches!(e, Event::Usage { tgid: 5, .. }))
        .collect();
    let r = report(&ev);
    assert_eq!(r.costs.as_ref().unwrap().measured, 4);
    let text = render_text(
        &r,
        TextOptions {
            color: false,
            width: 100,
        },
    );
    assert!(text.contains("(4 of 5 processes measured)"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert!(v["by_program"]["sh"].get("cpu_s").is_none(), "{v}");

    // No figures at all: not a word of cost, no key in the JSON.
    let ev: Vec<Event> = costly()
        .into_iter()
        .filter(|e| !matches!(e, Event::Usage { .. }))
        .collect();
    let r = report(&ev);
    assert!(r.costs.is_none());
    let text = render_text(
        &r,
        TextOptions {
            color: false,
            width: 100,
        },
    );
    assert!(
        !text.contains("cost") && !text.contains("hungriest") && !text.contains("CPU"),
        "{text}"
    );
    let md = render_markdown(&r);
    assert!(!md.contains("cost") && !md.contains("cpu"), "{md}");
    let json = render_json(&r);
    for k in [
        "cpu_s",
        "parallelism",
        "top_cpu",
        "top_rss",
        "measured",
        "max_rss_kib",
    ] {
        assert!(!json.contains(k), "{k} in {json}");
    }
}

mod make_j2 {
    //! The recorded `make -j2` of a 7-file C project: the summary names the slowest compile and
    //! the jobs that gated the link.
    use super::*;
    use crate::cmd::replay::{parse_capture, replay};
    use crate::sink::Fanout;

    #[test]
    fn names_the_slowest_compile_and_the_jobs_that_gated_the_link() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/captures/make-j2.jsonl"
        );
        let cap = parse_capture(std::fs::read(path).unwrap().as_slice(), path).unwrap();
        let h = cap.header.clone().unwrap();
        let (engine, sum) = replay(&cap, None, Fanout::new(), h.clone());
        let r = summarize(&h, &engine.tracker, &sum, true, Some(3));
        let argv = |s: &Step| s.argv.clone().unwrap_or_default().join(" ");
        assert_eq!(argv(&r.slowest[0]), "cc -O1 -c -o f5.o f5.c");
        let top: Vec<(String, usize)> = r
            .critical_path
            .iter()
            .filter(|s| s.depth <= 1)
            .map(|s| (argv(&s.step), s.depth))
            .collect();
        let want = [
            "make -j2",
            "cc -O1 -c -o main.o main.c",
            "cc -O1 -c -o f2.o f2.c",
            "cc -O1 -c -o f4.o f4.c",
            "cc -O1 -c -o f6.o f6.c",
            "cc -o app main.o f1.o f2.o f3.o f4.o f5.o f6.o",
        ];
        assert_eq!(top.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(), want);
        // Each job starts when the one before it ended (a -j2 slot freed), in time order.
        for w in r
            .critical_path
            .windows(2)
            .filter(|w| w[0].depth == 1 && w[1].depth == 1)
        {
            assert!(w[0].step.start_ns + w[0].step.duration_ns as i64 <= w[1].step.start_ns);
        }
        let last = r.critical_path.last().unwrap();
        assert_eq!((last.step.program.as_str(), last.depth), ("ld", 3));
        assert_eq!(r.by_program.0[1].0, "cc1");
        assert_eq!(r.by_program.0[1].1.count, 7);
    }
}

/// Words a traced process can choose to break a summary: terminal controls, line breaks, and
/// everything that is markup in Markdown (a table cell's end, code fences, HTML, links,
/// emphasis, headings, entities).
const HOSTILE: [&str; 10] = [
    "\x1b]0;PWNED\x07\x1b[31mRED",
    "x\nproctrace: fake verdict\r",
    "a|b | c",
    "``x`` `y`",
    "<script>alert(1)</script>",
    "[link](https://evil.example/) ![img](x)",
    "*em* _u_ **b**",
    "# head",
    "&amp; &lt;",
    "\n\n# injected\n| --- |",
];

/// The same tree twice, `words` in its argv, its names and its region (benign words give the
/// shape the hostile ones must keep).
fn named_tree(words: &[&str]) -> RunReport {
    let argv = |i: usize| [words[i % words.len()], words[(i + 1) % words.len()]];
    let mut evs = vec![fork(0, 100, 1)];
    evs.extend(exec(1, 1, &argv(0)));
    for (i, pid) in (2..8).enumerate() {
        evs.push(fork(2 + i as u64, 1, pid));
        evs.extend(exec(3 + i as u64, pid, &argv(i + 1)));
        evs.push(exit(20 + 10 * i as u64, pid, (i % 2) as u32));
    }
    // A fork renamed (prctl(PR_SET_NAME)) that never exec'd.
    evs.push(fork(5, 1, 9));
    evs.push(Event::Comm {
        ts: 6 * MS,
        pid: 9,
        tgid: 9,
        comm: words[0].to_string(),
    });
    evs.push(exit(90, 9, 2));
    evs.push(Event::Region {
        tgid: 1,
        region: crate::model::event::Region {
            ts: 10 * MS,
            end: 30 * MS,
            thread: words[1].into(),
            category: words[2].into(),
            label: words[3].into(),
            msg: None,
            nesting: 1,
        },
    });
    evs.push(exit(100, 1, 0));
    report(&evs)
}

/// The structure of a Markdown document (tables with their cells, headings, emphasis, links,
/// HTML, where code spans and text are): the words left out.
fn markdown_shape(md: &str) -> Vec<String> {
    use pulldown_cmark::{Event as Md, Options, Parser};
    Parser::new_ext(md, Options::ENABLE_TABLES)
        .map(|e| match e {
            Md::Start(t) => format!("start {t:?}"),
            Md::End(t) => format!("end {t:?}"),
            Md::Html(h) | Md::InlineHtml(h) => format!("html {h}"),
            Md::Code(_) => "code".into(),
            Md::Text(_) => "text".into(),
            Md::SoftBreak | Md::HardBreak => "break".into(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn hostile_names_cannot_forge_a_line_or_inject_markdown() {
    let benign: Vec<String> = (0..HOSTILE.len()).map(|i| format!("w{i}")).collect();
    let benign: Vec<&str> = benign.iter().map(String::as_str).collect();
    let (good, bad) = (named_tree(&benign), named_tree(&HOSTILE));
    assert_eq!(bad.nonzero_exits.len(), 4);
    let o = TextOptions {
        color: false,
        width: 200,
    };
    let (good_text, bad_text) = (render_text(&good, o), render_text(&bad, o));
    // No control character but the line ends, and as many lines as the benign tree's.
    assert!(
        !bad_text
            .chars()
            .any(|c| c != '\n' && (c.is_control() || ('\u{80}'..='\u{9f}').contains(&c))),
        "{bad_text}"
    );
    assert_eq!(bad_text.lines().count(), good_text.lines().count(), "{bad_text}");
    assert!(bad_text.contains(r"$'\e]0;PWNED\a\e[31mRED'"), "{bad_text}");
    assert!(
        bad_text.contains(r"[fork of \e]0;PWNED\a\e[31mRED]"),
        "{bad_text}"
    );
    assert!(
        bad_text.contains(r"[x\nproctrace: fake verdict\r]"),
        "the thread: {bad_text}"
    );
    // Markdown: the same document shape (every table keeps its cells, no heading, link,
    // emphasis or HTML from a name), nothing but code spans changed.
    let (good_md, bad_md) = (render_markdown(&good), render_markdown(&bad));
    let (gs, bs) = (markdown_shape(&good_md), markdown_shape(&bad_md));
    assert!(!bs.iter().any(|e| e.starts_with("html")), "{bad_md}");
    assert_eq!(bs, gs, "{bad_md}");
    assert!(bs.iter().any(|e| e.starts_with("start TableCell")));
    assert_eq!(bad_md.lines().count(), good_md.lines().count(), "{bad_md}");
    assert!(!bad_md.contains('\x1b') && !bad_md.contains('\r'));
    // And the code spans say what the names were: the backticks and pipes come back.
    let codes: Vec<String> = pulldown_cmark::Parser::new_ext(&bad_md, pulldown_cmark::Options::ENABLE_TABLES)
        .filter_map(|e| match e {
            pulldown_cmark::Event::Code(c) => Some(c.to_string()),
            _ => None,
        })
        .collect();
    assert!(codes.iter().any(|c| c.contains("'a|b | c'")), "{codes:?}");
    assert!(codes.iter().any(|c| c.contains("'``x`` `y`'")), "{codes:?}");
    assert!(
        codes.iter().any(|c| c.contains("'<script>alert(1)</script>'")),
        "{codes:?}"
    );
}

/// Two clients of one followed daemon (`run --include-daemons`) asking at once: the critical
/// path from a client goes into its own work, told by the files both argvs name, not into the
/// other's work done while it waited.
#[test]
fn a_clients_path_goes_into_its_own_work_in_the_daemon() {
    use crate::model::elsewhere::DaemonKind;
    let sccache = DaemonKind::of_name("sccache").unwrap();
    let mut t = testkit::tracker(Scope::Tree, true, true);
    t.follow_daemons(&[(50, sccache)], &[], 0);
    let mut facts = Vec::new();
    let server = testkit::exec(0, 50, &["/usr/bin/sccache"], None);
    let Event::ExecDetails { details, .. } = &server[1] else {
        unreachable!()
    };
    t.apply(
        &Event::Existing {
            tgid: 50,
            ppid: 999,
            start_ns: Some(0),
            details: Some(details.clone()),
            seen_ns: None,
            daemon: Some(sccache),
        },
        &mut facts,
    );
    t.expect_root(1);
    // Groups of events at a time (an exec's details carry none), put in time order.
    let mut groups: Vec<(u64, Vec<Event>)> = vec![(0, vec![fork(0, 0, 1)])];
    groups[0]
        .1
        .extend(exec(0, 1, &["sh", "-c", "sccache … & sccache … & wait"]));
    for (pid, f) in [(2, "a"), (3, "b")] {
        let (src, obj) = (format!("{f}.c"), format!("{f}.o"));
        let mut g = vec![fork(1, 1, pid)];
        g.extend(exec(1, pid, &["sccache", "cc", "-c", &src, "-o", &obj]));
        groups.push((1, g));
    }
    // a's preprocessing, b's (while a's server side hashes), a's compile; b's compile.
    let work = [
        (61, 2, 10, vec!["/usr/bin/cc", "-x", "c", "-E", "a.c"]),
        (62, 12, 20, vec!["/usr/bin/cc", "-x", "c", "-E", "b.c"]),
        (
            63,
            22,
            60,
            vec!["/usr/bin/cc", "-x", "c", "-c", "a.c", "-o", "a.o"],
        ),
        (
            64,
            25,
            40,
            vec!["/usr/bin/cc", "-x", "c", "-c", "b.c", "-o", "b.o"],
        ),
    ];
    for (pid, s, e, argv) in &work {
        let mut g = vec![fork(*s, 50, *pid)];
        g.extend(exec(*s, *pid, argv));
        groups.push((*s, g));
        groups.push((*e, vec![exit(*e, *pid, 0)]));
    }
    groups.extend([
        (41, vec![exit(41, 3, 0)]),
        (61, vec![exit(61, 2, 0)]),
        (62, vec![exit(62, 1, 0)]),
    ]);
    groups.sort_by_key(|g| g.0);
    let events: Vec<Event> = groups.into_iter().flat_map(|g| g.1).collect();
    for e in &events {
        t.apply(e, &mut facts);
    }
    let mut h = testkit::header(0, &["root"]);
    h.tool.pid = 0;
    h.tool.argv = vec![];
    h.daemons = vec![crate::model::session::Followed {
        daemon: sccache,
        pid: 50,
    }];
    let sum = testkit::summary(62 * MS, &t, Some(1));
    let r = summarize(&h, &t, &sum, true, Some(3));
    let pids: Vec<i32> = r.critical_path.iter().map(|s| s.step.pid).collect();
    assert!(pids.contains(&2) && pids.contains(&63), "{pids:?}");
    assert!(pids.contains(&61), "a's own preprocessing: {pids:?}");
    assert!(!pids.contains(&62), "b's preprocessing is not a's: {pids:?}");
}
