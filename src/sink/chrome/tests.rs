use std::sync::{Arc, Mutex};

use super::*;
use crate::model::event::Event;
use crate::model::tracker::Scope;
use crate::sink::LineDest;
use crate::sink::chrome_check::{Expect, ImageSlice, validate, validate_regions};
use crate::testkit::{self, exec, exit, fork, tracker};

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn header() -> Header {
    let mut h = testkit::header(1_000, &["make", "-j"]);
    h.tool.pid = 7;
    h
}

/// A build: `root` (pid 100) runs `jobs` jobs, each `sh` → `cc`, `par` at a time (as
/// `make -j` does: a job starts when a slot frees) with varied lengths; every 97th fails.
/// Events in time order.
fn build(jobs: i32, par: usize) -> Vec<Event> {
    let mut evs: Vec<(u64, u32, Event)> = vec![(1_000, 0, fork(1_000, 1, 100))];
    let mut slots = vec![2_000u64; par];
    for i in 0..jobs {
        let (sh, cc) = (1_000 + 2 * i, 1_001 + 2 * i);
        let slot = i as usize % par;
        let t = slots[slot] + 100;
        let d = 10_000 + (i as u64 * 7_919) % 20_000;
        let code = u32::from(i % 97 == 5);
        evs.push((t, 0, fork(t, 100, sh)));
        evs.push((t + 500, 0, fork(t + 500, sh, cc)));
        evs.push((t + d - 500, 1, exit(t + d - 500, cc, code)));
        evs.push((t + d, 1, exit(t + d, sh, code)));
        slots[slot] = t + d;
    }
    let last = slots.iter().max().copied().unwrap_or(0);
    evs.push((last + 1_000, 1, exit(last + 1_000, 100, 0)));
    evs.sort_by_key(|e| (e.0, e.1));
    evs.into_iter().map(|e| e.2).collect()
}

/// A C build as `make -jPAR` runs it: per job `cc` (a child of make, pid 100) runs `cc1`
/// then `as`; before every third job its slot runs a short `mkdir`. Jobs of different
/// lengths, so slots drift apart. Events in time order.
fn c_build(jobs: i32, par: usize) -> Vec<Event> {
    let mut evs: Vec<(u64, u32, Event)> = vec![(1_000, 0, fork(1_000, 1, 100))];
    let mut slots = vec![2_000u64; par];
    let mut pid = 1_000;
    let mut next = || {
        pid += 1;
        pid
    };
    for i in 0..jobs {
        let slot = i as usize % par;
        let mut t = slots[slot] + 50;
        if i % 3 == 0 {
            let m = next();
            evs.push((t, 0, fork(t, 100, m)));
            evs.push((t + 2_000, 1, exit(t + 2_000, m, 0)));
            t += 2_100;
        }
        let (cc, cc1, asm) = (next(), next(), next());
        let d = 30_000 + (i as u64 * 7_919) % 40_000;
        evs.push((t, 0, fork(t, 100, cc)));
        evs.push((t + 500, 0, fork(t + 500, cc, cc1)));
        evs.push((t + d, 1, exit(t + d, cc1, 0)));
        evs.push((t + d + 100, 0, fork(t + d + 100, cc, asm)));
        evs.push((t + d + 4_000, 1, exit(t + d + 4_000, asm, 0)));
        evs.push((t + d + 4_500, 1, exit(t + d + 4_500, cc, 0)));
        slots[slot] = t + d + 4_500;
    }
    let last = slots.iter().max().copied().unwrap_or(0);
    evs.push((last + 1_000, 1, exit(last + 1_000, 100, 0)));
    evs.sort_by_key(|e| (e.0, e.1));
    evs.into_iter().map(|e| e.2).collect()
}

/// Feeds `events` through a tracker into a Chrome sink; returns the sink, its output and
/// what the output must show (when records are retained).
fn drive(events: &[Event], retain: bool) -> (ChromeTrace, String, Vec<Expect>) {
    drive_with(events, retain, false)
}

/// [`drive`], reading exec details (argv) when `details`.
fn drive_with(events: &[Event], retain: bool, details: bool) -> (ChromeTrace, String, Vec<Expect>) {
    let h = header();
    let mut t = tracker(Scope::Tree, retain, details);
    t.expect_root(100);
    let out = Shared::default();
    let mut sink = ChromeTrace::new(LineDest::Stream(Box::new(out.clone())), true);
    sink.start(&h).unwrap();
    let mut facts = Vec::new();
    let mut end = h.ts;
    for ev in events {
        end = end.max(ev.ts().unwrap_or(0));
        t.apply(ev, &mut facts);
        for f in facts.drain(..) {
            sink.fact(&f, &t).unwrap();
        }
        t.sweep();
    }
    let sum = testkit::summary(end + 5_000, &t, Some(100));
    sink.finish(&sum, &t).unwrap();
    let mut expected = Vec::new();
    let mut todo = t.roots().to_vec();
    while let Some(id) = todo.pop() {
        let r = t.get(id).unwrap();
        todo.extend(r.children.iter().copied());
        let s = r.start_ns.unwrap() - h.ts;
        let (e, status) = match r.exit {
            Some(x) => (x.ts - h.ts, exit_text(x.status, Paint { on: false })),
            None => (sum.ts - h.ts, "running".to_string()),
        };
        expected.push(Expect {
            pid: r.pid as i64,
            start_ns: s,
            dur_ns: e - s,
            status,
        });
    }
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    (sink, text, expected)
}

#[test]
fn a_parallel_build_is_valid_with_jobs_side_by_side() {
    let (sink, text, expected) = drive(&build(3_000, 4), true);
    assert_eq!(expected.len(), 6_001);
    let got = validate(&text, &expected).unwrap();
    assert_eq!(got.slices, 6_001);
    // Four jobs at a time: four lanes, each job's sh → cc nested on one, the root on one.
    assert_eq!(got.lanes, 4, "{got:?}");
    assert_eq!(got.peak_running, 9, "{got:?}");
    assert_eq!(got.instants.get("failure"), Some(&(2 * 31)), "{got:?}");
    assert_eq!(sink.lanes(), got.lanes);
}

/// A `make -j` build keeps to about one lane per job slot, each job's `cc` → `cc1`, `as`
/// nested on one, however long the build.
#[test]
fn a_c_build_keeps_to_its_slots() {
    for par in [2, 4, 8] {
        let (sink, text, expected) = drive(&c_build(2_000, par), true);
        let got = validate(&text, &expected).unwrap();
        assert!(sink.lanes() <= par + 1, "-j{par}: {} lanes", sink.lanes());
        assert_eq!(got.peak_running as usize, 2 * par + 1, "{got:?}");
    }
}

/// The lanes' memory stays bounded however long the run: 100k processes under one root
/// that lives throughout (the case where nothing can be forgotten by age alone).
#[test]
fn lane_state_stays_bounded() {
    let (sink, text, _) = drive(&build(50_000, 4), false);
    assert!(sink.peak_intervals() <= 64, "peak {}", sink.peak_intervals());
    assert_eq!(sink.lanes(), 4);
    assert_eq!(text.matches("\"ph\":\"X\"").count(), 100_001);
    // And sequential processes, one at a time.
    let (sink, _, _) = drive(&build(20_000, 1), false);
    assert!(sink.peak_intervals() <= 16, "peak {}", sink.peak_intervals());
    assert!(sink.lanes() <= 2, "lanes {}", sink.lanes());
}

/// A process still running at the end gets a slice to the end, and its children nest in it.
#[test]
fn running_at_the_end() {
    let evs = [fork(1_000, 1, 100), fork(2_000, 100, 101), fork(3_000, 101, 102)];
    let (_, text, expected) = drive(&evs, true);
    let got = validate(&text, &expected).unwrap();
    assert_eq!((got.slices, got.lanes), (3, 1), "{text}");
    assert!(text.contains("\"cname\":\"grey\""));
    assert!(text.ends_with("}\n]\n"));
}

/// Events from different CPUs arrive slightly out of order: the counter still says how many
/// slices cover each moment.
#[test]
fn late_events_keep_the_counter_exact() {
    let evs = [
        fork(1_000, 1, 100),
        fork(5_000, 100, 101),
        exit(6_000, 101, 0),
        fork(5_500, 100, 102), // reported after 101's exit, though it came before
        exit(7_000, 102, 0),
        exit(8_000, 100, 0),
    ];
    let (_, text, expected) = drive(&evs, true);
    let got = validate(&text, &expected).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(got.peak_running, 3, "{text}");
}

/// A process seen only after the counter was written past its start (here: one found
/// already running, its start from `/proc`) gets its slice but stays out of the counter, and
/// says so.
#[test]
fn a_process_seen_late_is_not_counted() {
    let evs = [
        fork(1_000, 1, 100),
        fork(2_000, 100, 101),
        exit(30_000_000, 101, 0),
        Event::Existing {
            tgid: 200,
            ppid: 100,
            start_ns: Some(1_500),
            details: None,
            seen_ns: None,
            daemon: None,
        },
        exit(31_000_000, 200, 0),
        exit(32_000_000, 100, 0),
    ];
    let (_, text, expected) = drive(&evs, true);
    let got = validate(&text, &expected).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!((got.slices, got.peak_running), (3, 2), "{text}");
    assert_eq!(text.matches(r#""counted":false"#).count(), 1, "{text}");
}

/// Measured processes carry their figures in their slices' args, and the memory counter
/// sums the peaks of those running at each moment (the checker recomputes it from the
/// slices), ending at zero; a process seen too late for values already written stays out
/// and says so.
#[test]
fn measured_processes_have_figures_and_a_memory_counter() {
    use crate::testkit::usage;
    assert_eq!(MEMORY_COUNTER, crate::sink::chrome_check::MEMORY_COUNTER);
    let ms = 1_000_000;
    let evs = [
        fork(1_000, 1, 100),
        fork(2 * ms, 100, 101),
        fork(3 * ms, 100, 102),
        usage(101, 40, 2, 1_000),
        exit(50 * ms, 101, 0),
        fork(60 * ms, 100, 103),
        usage(102, 10, 1, 3_000),
        exit(70 * ms, 102, 0),
        exit(80 * ms, 103, 0), // not measured
        usage(100, 1, 1, 500),
        exit(200 * ms, 100, 0),
        // Found late, measured, after everything before was written.
        Event::Existing {
            tgid: 200,
            ppid: 1,
            start_ns: Some(1_500),
            details: None,
            seen_ns: None,
            daemon: None,
        },
        usage(200, 1, 1, 7_000),
        exit(300 * ms, 200, 0),
    ];
    let (_, text, expected) = drive(&evs, true);
    let got = validate(&text, &expected).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(got.measured, 4, "{text}");
    assert_eq!(got.peak_memory_kib, 500 + 1_000 + 3_000, "{text}");
    assert!(got.memory_counters >= 5, "{got:?}");
    assert_eq!(text.matches(r#""in_memory_counter":false"#).count(), 1, "{text}");
    let slice = text.lines().find(|l| l.contains(r#""pid":101,"#)).unwrap();
    for want in [
        r#""cpu":"42.0ms""#,
        r#""peak_rss":"1000 KiB""#,
        r#""cpu_user_s":0.040000000"#,
        r#""max_rss_kib":1000"#,
        r#""ctx_switches":{"voluntary":5,"involuntary":7}"#,
        r#""cpu_delay_s":0.001000000"#,
    ] {
        assert!(slice.contains(want), "{want} in {slice}");
    }
    assert!(!slice.contains("io_delay_s"), "unknown, left out: {slice}");

    // A counter that does not add up is caught.
    let wrong = text.replacen(r#""KiB":1500"#, r#""KiB":1400"#, 1);
    assert_ne!(wrong, text);
    assert!(
        validate(&wrong, &expected)
            .unwrap_err()
            .contains("memory counter")
    );

    // Without figures there is no memory counter and no cost in any slice.
    let bare: Vec<Event> = evs
        .iter()
        .filter(|e| !matches!(e, Event::Usage { .. }))
        .cloned()
        .collect();
    let (_, text, _) = drive(&bare, true);
    assert!(
        !text.contains(MEMORY_COUNTER) && !text.contains("max_rss_kib"),
        "{text}"
    );
}

/// Figures from a hostile saved trace (every field at its maximum) neither panic nor
/// overflow: the peaks are capped and the counter saturates.
#[test]
fn absurd_figures_do_not_overflow() {
    let huge = |pid| Event::Usage {
        tgid: pid,
        usage: Box::new(crate::model::event::Usage {
            cpu_user_ns: u64::MAX,
            cpu_sys_ns: u64::MAX,
            max_rss_kib: u64::MAX,
            read_chars: u64::MAX,
            write_chars: u64::MAX,
            read_bytes: u64::MAX,
            write_bytes: u64::MAX,
            cancelled_write_bytes: u64::MAX,
            vol_ctx_switches: u64::MAX,
            invol_ctx_switches: u64::MAX,
            cpu_delay_ns: Some(u64::MAX),
            io_delay_ns: Some(u64::MAX),
        }),
    };
    let mut evs = vec![fork(1_000, 1, 100)];
    for p in 101..120 {
        evs.push(fork(2_000 + p as u64, 100, p));
    }
    for p in 101..120 {
        evs.push(huge(p));
        evs.push(exit(50_000_000 + p as u64, p, 0));
    }
    evs.push(huge(100));
    evs.push(exit(60_000_000, 100, 0));
    let (_, text, expected) = drive(&evs, true);
    let got = validate(&text, &expected).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(got.peak_memory_kib, 20 * (1 << 40), "capped at 1 PiB each");
    // The other whole-run outputs take them too.
    let mut t = tracker(Scope::Tree, true, false);
    t.expect_root(100);
    let mut facts = Vec::new();
    for e in &evs {
        t.apply(e, &mut facts);
    }
    let h = header();
    let sum = testkit::summary(70_000_000, &t, Some(100));
    let r = crate::report::summary::summarize(&h, &t, &sum, true, Some(3));
    let text = crate::report::summary::render_text(
        &r,
        crate::report::summary::TextOptions {
            color: false,
            width: 80,
        },
    );
    assert!(text.contains("hungriest:"), "{text}");
    let _ = crate::report::summary::render_markdown(&r);
    let _ = crate::report::summary::render_json(&r);
    let _ = crate::report::svg::render(&h, &t, &sum, Default::default());
    let _ = crate::report::tree::render(
        &t,
        &h.mode,
        &sum,
        crate::report::tree::TreeOptions {
            color: false,
            redact: true,
            max_lines: 100,
            width: 80,
        },
    );
}

/// Only a process's own descendants are drawn under it: an unrelated process that runs
/// inside its interval gets a lane of its own.
#[test]
fn unrelated_processes_do_not_nest() {
    let evs = [
        fork(1_000, 1, 100),
        fork(2_000, 100, 101), // long sibling
        fork(3_000, 100, 102), // short sibling inside 101's interval
        exit(4_000, 102, 0),
        exit(9_000, 101, 0),
        exit(10_000, 100, 0),
    ];
    let (_, text, expected) = drive(&evs, true);
    let got = validate(&text, &expected).unwrap();
    assert_eq!(got.lanes, 2, "{text}");
}

fn region(ts: u64, end: u64, pid: i32, thread: &str, label: &str, nesting: u32) -> Event {
    Event::Region {
        tgid: pid,
        region: crate::model::event::Region {
            ts,
            end,
            thread: thread.into(),
            category: "c".into(),
            label: label.into(),
            msg: None,
            nesting,
        },
    }
}

/// Regions nest inside their process's slice: around a child process that runs inside one,
/// beside one that overlaps it partly, a worker thread's next to the main thread's, one
/// entered in the microsecond its process started, one of no length, and one that arrives
/// after its process's exit (on a lane of its own); data go into the slice's args, or an
/// instant when late.
#[test]
fn regions_nest_inside_their_process() {
    let data = |ts, pid, key: &str| Event::Data {
        tgid: pid,
        data: crate::model::event::Data {
            ts,
            thread: "main".into(),
            category: "cat".into(),
            key: key.into(),
            nesting: 1,
            value: crate::model::event::DataValue::Text("7".into()),
        },
    };
    let evs = [
        fork(1_000, 1, 100),
        fork(5_000, 100, 101),
        exit(9_000, 101, 0),
        fork(15_000, 100, 102),
        region(1_000, 2_000, 100, "main", "at-start", 1),
        region(3_000, 3_000, 100, "main", "empty", 1),
        region(9_200, 9_800, 100, "main", "inner", 2),
        region(4_000, 10_000, 100, "main", "around-101", 1),
        region(11_000, 13_000, 100, "th01:w", "thread", 1),
        region(12_000, 16_000, 100, "main", "part-102", 1),
        data(12_500, 100, "k"),
        exit(20_000, 102, 0),
        exit(30_000, 100, 0),
        region(25_000, 29_000, 100, "main", "late", 1),
        data(29_500, 100, "late-key"),
    ];
    let h = header();
    let (_, text, expected) = drive(&evs, true);
    let mut t = tracker(Scope::Tree, true, false);
    t.expect_root(100);
    let mut facts = Vec::new();
    for ev in &evs {
        t.apply(ev, &mut facts);
    }
    let regions = crate::sink::golden::expected_regions(&t, h.ts, 30_000 + 5_000);
    assert_eq!(regions.len(), 7);
    let got = validate_regions(&text, &expected, &regions).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!((got.slices, got.regions), (3, 7), "{text}");
    // All but the late one and the one overlapping 102 partly are on the process's lane.
    assert_eq!(got.regions_on_process_lane, 5, "{got:?}\n{text}");
    assert_eq!(text.matches(r#""late":true"#).count(), 1, "{text}");
    assert!(text.contains(r#""regions":6,"trace2":[{"cat/k":"7"}]"#), "{text}");
    assert!(text.contains(r#""name":"100: cat/late-key""#), "{text}");
    assert_eq!(got.instants.get("data"), Some(&1), "{got:?}");
}

/// Random trees of processes with random regions (nested per thread, two threads, some
/// sticking out of their process's lifetime, some arriving after the exit, some of no
/// length, many starting in the same microsecond): every trace is valid and shows each
/// region once, inside its process's slice.
#[test]
fn random_trees_with_regions_stay_valid() {
    let mut rnd = crate::testkit::xorshift(0x9E37_79B9_7F4A_7C15u64);
    let (mut total, mut late, mut on_lane) = (0, 0, 0);
    for round in 0..300 {
        // (pid, parent, start, end)
        let mut procs: Vec<(i32, i32, u64, u64)> = vec![(100, 1, 1_000, 1_000 + 50_000 + rnd(50_000))];
        for k in 0..(1 + rnd(10)) as usize {
            let (ppid, ps, pe) = {
                let p = procs[rnd(procs.len() as u64) as usize];
                (p.0, p.2, p.3)
            };
            if pe - ps < 4 {
                continue;
            }
            let s = ps + 1 + rnd(pe - ps - 2);
            let e = s + 1 + rnd(pe - s - 1);
            procs.push((101 + k as i32, ppid, s, e));
        }
        // (arrival, order, event)
        let mut evs: Vec<(u64, u32, Event)> = Vec::new();
        for &(pid, ppid, s, e) in &procs {
            evs.push((s, 0, fork(s, ppid, pid)));
            evs.push((e, 2, exit(e, pid, (rnd(5) == 0) as u32)));
            for thread in ["main", "th01:w"] {
                // Regions nested by splitting: (from, to, nesting).
                let mut todo = vec![(s, e, 1u32)];
                while let Some((a, b, n)) = todo.pop() {
                    if n > 3 || b <= a {
                        continue;
                    }
                    let mut at = a;
                    for _ in 0..rnd(3) {
                        if at >= b {
                            break;
                        }
                        // Same microsecond as what it is in, now and then.
                        let rs = if rnd(3) == 0 {
                            at
                        } else {
                            at + rnd((b - at) / 2 + 1)
                        };
                        let re = (rs + rnd(b - rs + 1)).min(b);
                        // Now and then past its process's end (a clock that disagrees).
                        let (rs, re) = if rnd(10) == 0 {
                            (rs.saturating_sub(300), re + 300)
                        } else {
                            (rs, re)
                        };
                        let arrive = if rnd(5) == 0 { e + 1 + rnd(1_000) } else { re };
                        let label = format!("r{n}-{rs}");
                        evs.push((arrive, 1, region(rs, re, pid, thread, &label, n)));
                        todo.push((rs, re, n + 1));
                        at = re + 1;
                    }
                }
            }
        }
        evs.sort_by_key(|e| (e.0, e.1));
        let evs: Vec<Event> = evs.into_iter().map(|e| e.2).collect();
        let (_, text, expected) = drive(&evs, true);
        let mut t = tracker(Scope::Tree, true, false);
        t.expect_root(100);
        let mut facts = Vec::new();
        let mut end = 0;
        for ev in &evs {
            end = end.max(ev.ts().unwrap_or(0));
            t.apply(ev, &mut facts);
        }
        let regions = crate::sink::golden::expected_regions(&t, header().ts, end + 5_000);
        let got = validate_regions(&text, &expected, &regions)
            .unwrap_or_else(|e| panic!("round {round}: {e}\n{text}"));
        assert_eq!(got.regions, regions.len());
        total += got.regions;
        on_lane += got.regions_on_process_lane;
        late += text.matches(r#""late":true"#).count();
    }
    // The test drew something: many regions, late ones among them, and most of the others
    // on their process's lane (two threads' random regions often overlap partly).
    assert!(
        total > 3_000 && late > 300 && on_lane * 2 > total - late,
        "{total} {late} {on_lane}"
    );
}

#[test]
fn lane_fit_and_swallow() {
    let (a, b) = (ProcId::test(1), ProcId::test(2));
    let mut l = Lane::default();
    let span = |s, e, p| Span {
        s,
        e,
        parent: Some(p),
    };
    l.insert(span(10, 20, a));
    l.insert(span(30, 40, a));
    assert!(l.fits(5, 45, a), "contains both children");
    assert!(!l.fits(5, 45, b), "not its children");
    assert!(!l.fits(15, 35, a), "partial overlap");
    assert!(l.fits(20, 30, b), "touching ends is no overlap");
    assert!(!l.fits(12, 12, b), "inside a slice");
    assert!(
        !l.fits(10, 45, a),
        "a contained slice starting at the same moment"
    );
    l.insert(span(5, 45, b));
    assert_eq!(l.ivs, [span(5, 45, b)]);
    let mut starts = BTreeMap::new();
    l.insert(span(50, 60, b));
    l.insert(span(70, 80, b));
    starts.insert(65, 1);
    l.compact(&starts, &HashMap::new());
    // The parent is gone: nothing will swallow them; merged up to the live start at 65.
    assert_eq!(
        l.ivs,
        [
            Span {
                s: 5,
                e: 60,
                parent: None
            },
            Span {
                s: 70,
                e: 80,
                parent: None
            }
        ]
    );
    assert!(l.fits(60, 70, a) && l.fits(80, 100, a));
    assert!(!l.fits(55, 100, a) && !l.fits(65, 100, a));
}

const MS: u64 = 1_000_000;

/// dash's `(sleep 0.3; sleep 0.4)`: the subshell (101) forks `sleep 0.3` (102), then execs
/// `sleep 0.4`. Times from 1 ms (the header's start is 1 µs).
fn subshell() -> Vec<Event> {
    let mut ev = vec![fork(MS, 1, 100)];
    ev.extend(exec(
        MS + MS / 2,
        100,
        &["sh", "-c", "(/bin/sleep 0.3; /bin/sleep 0.4)"],
        None,
    ));
    ev.push(fork(2 * MS, 100, 101));
    ev.push(fork(3 * MS, 101, 102));
    ev.extend(exec(3 * MS + 100_000, 102, &["/bin/sleep", "0.3"], None));
    ev.push(exit(303 * MS, 102, 0));
    ev.extend(exec(304 * MS, 101, &["/bin/sleep", "0.4"], None));
    ev.push(exit(704 * MS, 101, 0));
    ev.push(exit(705 * MS, 100, 0));
    ev
}

/// The held-out case: the subshell's slice covers its life, with its fork image (holding
/// `sleep 0.3`) then `sleep 0.4` for its 0.4 s nested in it, on its lane; with and without
/// records kept (the sink decides the fork image as the first exec arrives, when the child
/// that makes it stand may be gone by the exit).
#[test]
fn a_subshell_is_its_fork_image_then_its_exec() {
    let mut texts = Vec::new();
    for retain in [true, false] {
        let (_, text, expected) = drive_with(&subshell(), retain, true);
        texts.push(text.clone());
        if !retain {
            continue;
        }
        let got = validate(&text, &expected).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(got.slices, 3, "{text}");
        let t0 = header().ts as i64;
        let want = [
            ImageSlice {
                pid: 101,
                index: 1,
                of: 2,
                name: "[fork of sh]".into(),
                cmd: "[fork of sh]".into(),
                start_ns: 2 * MS as i64 + 1 - t0,
                end_ns: 304 * MS as i64 - t0,
                fork: true,
            },
            ImageSlice {
                pid: 101,
                index: 2,
                of: 2,
                name: "sleep".into(),
                cmd: "/bin/sleep 0.4".into(),
                start_ns: 304 * MS as i64 - t0,
                end_ns: 704 * MS as i64 - t0,
                fork: false,
            },
        ];
        assert_eq!(got.images, want, "{text}");
        assert_eq!(got.images_on_process_lane, 2, "{text}");
        // The process's own slice is named by its images, and says how many.
        assert!(
            text.contains(r#""name":"[fork of sh] → sleep","cat":"process""#),
            "{text}"
        );
        assert!(text.contains(r#""images":2"#), "{text}");
        // One lane: sh ⊃ subshell ⊃ (fork image ⊃ sleep 0.3, sleep 0.4).
        assert_eq!(got.lanes, 1, "{text}");
    }
    assert_eq!(
        texts[0], texts[1],
        "the same bytes whether records are kept or not"
    );
}

/// A plain fork+exec is one image (no image slices, its process slice as before), and a fork
/// image of a few hundred µs that forked nothing is part of its exec's image; one that ran
/// 15 ms on its own stands.
#[test]
fn a_plain_fork_exec_is_one_image() {
    let mut ev = vec![fork(MS, 1, 100)];
    ev.extend(exec(MS + 300_000, 100, &["make"], None));
    ev.push(fork(2 * MS, 100, 101));
    ev.extend(exec(2 * MS + 300_000, 101, &["cc", "-c", "a.c"], None));
    ev.push(exit(9 * MS, 101, 0));
    // 115 ms between fork and exec: past `FORK_IMAGE_MIN_NS`.
    ev.push(fork(10 * MS, 100, 102));
    ev.extend(exec(125 * MS, 102, &["cc", "-c", "b.c"], None));
    ev.push(exit(130 * MS, 102, 0));
    ev.push(exit(131 * MS, 100, 0));
    for retain in [true, false] {
        let (_, text, expected) = drive_with(&ev, retain, true);
        if retain {
            let got = validate(&text, &expected).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let names: Vec<_> = got.images.iter().map(|i| (i.pid, i.name.as_str())).collect();
            assert_eq!(names, [(102, "[fork of make]"), (102, "cc")], "{text}");
        }
        assert_eq!(text.matches(r#""cat":"image"#).count(), 2, "{text}");
    }
}

/// Random trees of processes that exec now and then (children left running across an exec
/// among them): the trace stays valid, and the sink's images — decided as facts arrive, with
/// exited records freed — are the model's ([`crate::model::images::images`] over retained
/// records): the same count, programs and times for every process.
#[test]
fn random_trees_with_execs_have_the_models_images() {
    let mut rnd = crate::testkit::xorshift(0x2545_F491_4F6C_DD1Du64);
    let (mut images, mut off_lane) = (0, 0);
    for round in 0..300 {
        // (pid, parent, start, end), µs-scale times so that the 10 ms rule goes both ways.
        let mut procs: Vec<(i32, i32, u64, u64)> = vec![(100, 1, MS, MS + 50 * MS + rnd(50 * MS))];
        for k in 0..(1 + rnd(12)) as usize {
            let p = procs[rnd(procs.len() as u64) as usize];
            if p.3 - p.2 < 4 {
                continue;
            }
            let s = p.2 + 1 + rnd(p.3 - p.2 - 2);
            let e = s + 1 + rnd(p.3 - s - 1);
            procs.push((101 + k as i32, p.0, s, e));
        }
        let mut evs: Vec<(u64, u32, Event)> = Vec::new();
        for &(pid, ppid, s, e) in &procs {
            evs.push((s, 0, fork(s, ppid, pid)));
            evs.push((e, 3, exit(e, pid, 0)));
            let mut at = s;
            for n in 0..rnd(4) {
                at += 1 + rnd((e - at) / 2 + 1);
                if at >= e {
                    break;
                }
                let prog = format!("/bin/p{n}");
                for x in exec(at, pid, &[prog.as_str(), "x"], None) {
                    evs.push((at, 1, x));
                }
            }
        }
        evs.sort_by_key(|e| (e.0, e.1));
        let evs: Vec<Event> = evs.into_iter().map(|e| e.2).collect();
        let (_, text, _) = drive_with(&evs, false, true);
        let (_, kept, expected) = drive_with(&evs, true, true);
        assert_eq!(text, kept, "round {round}: records kept or not");
        let got = validate(&text, &expected).unwrap_or_else(|e| panic!("round {round}: {e}\n{text}"));
        let mut t = tracker(Scope::Tree, true, true);
        t.expect_root(100);
        let mut facts = Vec::new();
        for ev in &evs {
            t.apply(ev, &mut facts);
        }
        let t0 = header().ts as i64;
        let mut want = Vec::new();
        let mut todo = t.roots().to_vec();
        while let Some(id) = todo.pop() {
            let r = t.get(id).unwrap();
            todo.extend(r.children.iter().copied());
            let ims = crate::model::images::images(&t, r);
            if ims.len() < 2 {
                continue;
            }
            for im in ims {
                let s = im.start_ns.unwrap() as i64 - t0;
                let first = im.index == 0;
                want.push((
                    r.pid as i64,
                    im.index as i64 + 1,
                    crate::model::naming::image_program(&im),
                    s + i64::from(first),
                    im.end_ns.unwrap() as i64 - t0,
                ));
            }
        }
        let mut have: Vec<_> = got
            .images
            .iter()
            .map(|i| (i.pid, i.index, i.name.clone(), i.start_ns, i.end_ns))
            .collect();
        want.sort();
        have.sort();
        assert_eq!(have, want, "round {round}\n{text}");
        images += have.len();
        off_lane += have.len() - got.images_on_process_lane;
    }
    // The test drew something: many images, a few that a child outlived (off their lane).
    assert!(images > 500 && off_lane > 0, "{images} {off_lane}");
}
