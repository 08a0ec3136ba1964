use super::*;
use crate::model::event::{Data, Event, Region};
use crate::model::tracker::Scope;
use crate::testkit::{self, exit, fork, tracker};

fn region(ts: u64, end: u64, pid: i32, thread: &str, label: &str, nesting: u32) -> Event {
    Event::Region {
        tgid: pid,
        region: Region {
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

fn data(ts: u64, pid: i32, key: &str, nesting: u32, value: DataValue) -> Event {
    Event::Data {
        tgid: pid,
        data: Data {
            ts,
            thread: "main".into(),
            category: "cat".into(),
            key: key.into(),
            nesting,
            value,
        },
    }
}

/// The Trace2 event stream a sink writes for `evs` (a tree rooted at pid 100, started at
/// `start_ns` running `argv`, ended at `end_ns`), through a temporary file named after `name`.
fn event_stream(name: &str, argv: &[&str], start_ns: u64, end_ns: u64, evs: &[Event]) -> String {
    let dir = std::env::temp_dir().join(format!("proctrace-t2-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&dir);
    let targets = [Trace2Target {
        kind: TargetKind::Event,
        value: dir.to_string_lossy().into_owned(),
    }];
    let mut sink = Trace2Sink::new(&targets, false, true).unwrap();
    sink.start(&testkit::header(start_ns, argv)).unwrap();
    let mut t = tracker(Scope::Tree, true, false);
    t.expect_root(100);
    let mut facts = Vec::new();
    for ev in evs {
        t.apply(ev, &mut facts);
        for f in facts.drain(..) {
            sink.fact(&f, &t).unwrap();
        }
    }
    sink.finish(&testkit::summary(end_ns, &t, Some(100)), &t).unwrap();
    let text = std::fs::read_to_string(&dir).unwrap();
    let _ = std::fs::remove_file(&dir);
    text
}

/// What a process cost goes into its own session as `data` events in category `proctrace`
/// just before its end (its `exit`, or its `signal` when killed); a process without
/// figures has none.
#[test]
fn cost_is_data_before_the_end() {
    let ms = 1_000_000u64;
    let evs = [
        fork(ms, 1, 100),
        fork(2 * ms, 100, 101),
        fork(3 * ms, 100, 102),
        testkit::usage(101, 1250, 3, 2048),
        testkit::exit_status(5 * ms, 101, 9),
        exit(6 * ms, 102, 0),
        testkit::usage(100, 1, 2, 512),
        exit(10 * ms, 100, 0),
    ];
    let text = event_stream("usage", &["make"], 1_000_000, 20 * ms, &evs);
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let session = |pid: i32| -> Vec<String> {
        let sid = lines
            .iter()
            .find(|e| e["event"] == "version" && e["sid"].as_str().unwrap().ends_with(&format!("P{pid:08x}")))
            .map(|e| e["sid"].as_str().unwrap().to_string())
            .unwrap();
        lines
            .iter()
            .filter(|e| e["sid"] == sid.as_str() && e["event"] != "version" && e["event"] != "start")
            .map(|e| match e["event"].as_str().unwrap() {
                "data" => {
                    assert_eq!(e["category"], "proctrace");
                    format!("{}={}", e["key"].as_str().unwrap(), e["value"].as_str().unwrap())
                }
                other => other.to_string(),
            })
            .collect()
    };
    assert_eq!(
        session(101),
        [
            "cpu_user_s=1.250000",
            "cpu_sys_s=0.003000",
            "max_rss_kib=2048",
            "read_chars=6144",
            "write_chars=4096",
            "read_bytes=4096",
            "write_bytes=8192",
            "cancelled_write_bytes=0",
            "ctx_switches_voluntary=5",
            "ctx_switches_involuntary=7",
            "cpu_delay_s=0.001000",
            "signal",
        ]
    );
    assert_eq!(session(102), ["exit", "atexit"]);
    let root = session(100);
    let at = root.iter().position(|k| k == "exit").unwrap();
    assert_eq!(root[at - 11], "cpu_user_s=0.001000", "{root:?}");
}

/// A process's regions (arriving inner first, one after its exit, two threads) and data go
/// into its own session as a Trace2 reader expects them: each thread's regions balanced
/// and nested, in time order, data timed from the innermost region; a process still
/// running has its notes written at the end.
#[test]
fn regions_and_data_in_their_session() {
    let ms = 1_000_000u64;
    let evs = [
        fork(ms, 1, 100),
        fork(2 * ms, 100, 101),
        data(3 * ms, 100, "early", 1, DataValue::Text("1".into())),
        region(5 * ms, 6 * ms, 100, "main", "inner", 2),
        data(7 * ms, 100, "in-outer", 2, DataValue::Json(r#"{"a":1}"#.into())),
        region(4 * ms, 8 * ms, 100, "main", "outer", 1),
        region(4 * ms, 9 * ms, 100, "th01:w", "worker", 1),
        data(
            9 * ms,
            100,
            "t",
            1,
            DataValue::Timer {
                intervals: 2,
                total_ns: 3 * ms,
                min_ns: ms,
                max_ns: 2 * ms,
                per_thread: false,
            },
        ),
        exit(10 * ms, 100, 0),
        region(9_500_000, 9_800_000, 100, "main", "late", 1),
        region(11 * ms, 12 * ms, 101, "main", "still-running", 1),
    ];
    let text = event_stream("notes", &["git", "fetch"], 1_000_000, 20 * ms, &evs);
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let sid_of = |pid: i32| {
        lines
            .iter()
            .find(|e| e["event"] == "version" && e["sid"].as_str().unwrap().ends_with(&format!("P{pid:08x}")))
            .map(|e| e["sid"].as_str().unwrap().to_string())
            .unwrap()
    };
    let git = sid_of(100);
    let kinds: Vec<String> = lines
        .iter()
        .filter(|e| e["sid"] == git.as_str())
        .map(|e| {
            let label = e["label"]
                .as_str()
                .or(e["key"].as_str())
                .or(e["name"].as_str())
                .unwrap_or("");
            format!(
                "{}:{}:{}",
                e["event"].as_str().unwrap(),
                e["thread"].as_str().unwrap(),
                label
            )
        })
        .collect();
    assert_eq!(
        kinds[kinds.iter().position(|k| k.starts_with("data")).unwrap()..],
        [
            "data:main:early",
            "region_enter:main:outer",
            "region_enter:th01:w:worker",
            "region_enter:main:inner",
            "region_leave:main:inner",
            "data_json:main:in-outer",
            "region_leave:main:outer",
            // At the same moment: threads in name order.
            "timer:main:t",
            "region_leave:th01:w:worker",
            "exit:main:",
            "atexit:main:",
            "region_enter:main:late",
            "region_leave:main:late",
        ],
        "{text}"
    );
    let find = |ev: &str, label: &str| {
        lines
            .iter()
            .find(|e| {
                e["sid"] == git.as_str() && e["event"] == ev && (e["label"] == label || e["key"] == label)
            })
            .unwrap()
    };
    assert_eq!(find("region_enter", "inner")["nesting"], 2);
    assert_eq!(find("region_leave", "outer")["t_rel"], 0.004);
    // Timed from the innermost region around it (`outer`, entered at 4 ms).
    assert_eq!(find("data_json", "in-outer")["t_rel"], 0.003);
    assert_eq!(find("data_json", "in-outer")["value"]["a"], 1);
    assert_eq!(
        find("region_enter", "outer")["time"],
        "1970-01-01T00:00:00.004000Z"
    );
    // The child still running: its region at the end, in its own session.
    let child = sid_of(101);
    assert!(
        lines.iter().any(|e| e["sid"] == child.as_str()
            && e["event"] == "region_leave"
            && e["label"] == "still-running"),
        "{text}"
    );
}

/// Random nested regions on two threads of two processes, arriving in end order, some after
/// the exit: in the event stream every `region_leave` closes the region its thread entered
/// last, with the right label, nesting and `t_rel`, each region exactly once, and each
/// thread's times never go back before the exit.
#[test]
fn random_regions_pair_up_in_the_stream() {
    let mut rnd = crate::testkit::xorshift(0x2545_F491_4F6C_DD1Du64);
    for round in 0..100 {
        let procs = [(100, 1, 1_000u64, 900_000u64), (101, 100, 5_000, 800_000)];
        let mut evs: Vec<(u64, u32, Event)> = Vec::new();
        let mut want = 0;
        for &(pid, ppid, s, e) in &procs {
            evs.push((s, 0, fork(s, ppid, pid)));
            evs.push((e, 2, exit(e, pid, 0)));
            for thread in ["main", "th01:w"] {
                let mut todo = vec![(s, e, 1u32)];
                while let Some((a, b, n)) = todo.pop() {
                    if n > 4 || b <= a + 2 {
                        continue;
                    }
                    let mut at = a + 1;
                    for _ in 0..rnd(4) {
                        if at >= b {
                            break;
                        }
                        // Trace2 times are microseconds: equal starts and ends are common.
                        let rs = if rnd(3) == 0 {
                            at
                        } else {
                            at + rnd((b - at) / 2 + 1)
                        } / 1_000
                            * 1_000;
                        let re = ((rs + rnd(b - rs + 1)).min(b) / 1_000 * 1_000).max(rs);
                        let arrive = if rnd(6) == 0 { e + 1 + rnd(1_000) } else { re };
                        evs.push((
                            arrive,
                            1,
                            region(rs.max(at), re.max(at), pid, thread, &format!("r{n}.{rs}"), n),
                        ));
                        want += 1;
                        todo.push((rs.max(at), re.max(at), n + 1));
                        at = re.max(at) + 1;
                    }
                }
            }
        }
        evs.sort_by_key(|e| (e.0, e.1));
        let evs: Vec<Event> = evs.into_iter().map(|(_, _, ev)| ev).collect();
        let text = event_stream("rnd", &["x"], 1_000, 1_000_000, &evs);
        // By (SID, thread): the regions entered and not left, (label, nesting).
        type Key = (String, String);
        let mut open: HashMap<Key, Vec<(String, u64)>> = HashMap::new();
        let mut last: HashMap<Key, String> = HashMap::new();
        let mut exited: std::collections::HashSet<String> = Default::default();
        let mut pairs = 0;
        for line in text.lines() {
            let e: serde_json::Value = serde_json::from_str(line).unwrap();
            let sid = e["sid"].as_str().unwrap().to_string();
            let key = (sid.clone(), e["thread"].as_str().unwrap().to_string());
            let time = e["time"].as_str().unwrap().to_string();
            if !exited.contains(&sid) && e["event"].as_str().unwrap().starts_with("region") {
                if let Some(prev) = last.get(&key) {
                    assert!(*prev <= time, "round {round}: time goes back in {key:?}\n{text}");
                }
                last.insert(key.clone(), time.clone());
            }
            match e["event"].as_str().unwrap() {
                "region_enter" => open.entry(key).or_default().push((
                    e["label"].as_str().unwrap().to_string(),
                    e["nesting"].as_u64().unwrap(),
                )),
                "region_leave" => {
                    let (label, nesting) = open
                        .get_mut(&key)
                        .and_then(|v| v.pop())
                        .unwrap_or_else(|| panic!("round {round}: leave without enter\n{text}"));
                    assert_eq!(e["label"].as_str().unwrap(), label, "round {round}\n{text}");
                    assert_eq!(e["nesting"].as_u64().unwrap(), nesting, "round {round}");
                    assert_eq!(format!("r{nesting}."), label[..label.find('.').unwrap() + 1]);
                    pairs += 1;
                }
                "atexit" => {
                    exited.insert(sid);
                }
                _ => {}
            }
        }
        assert!(
            open.values().all(Vec::is_empty),
            "round {round}: regions left open\n{text}"
        );
        assert_eq!(pairs, want, "round {round}: {text}");
    }
}

/// Down to [`SID_COMPONENTS_MAX`] components a SID is git's (parent's SID, `/`, its own);
/// deeper, it keeps the outermost ones, its parent's own and its own: unique, bounded.
#[test]
fn sids_of_a_deep_chain_are_capped() {
    let mut sid = nested_sid(None, "c0");
    assert_eq!(sid, "c0");
    let mut all = std::collections::HashSet::new();
    for d in 1..3 * SID_COMPONENTS_MAX {
        let comp = format!("c{d}");
        let next = nested_sid(Some(&sid), &comp);
        let parts: Vec<&str> = next.split('/').collect();
        if d < SID_COMPONENTS_MAX {
            assert_eq!(next, format!("{sid}/{comp}"));
        } else {
            assert_eq!(parts.len(), SID_COMPONENTS_MAX, "{next}");
            // The outermost ancestors, the parent's own component, its own.
            let outer: Vec<String> = (0..SID_COMPONENTS_MAX - 2).map(|i| format!("c{i}")).collect();
            assert_eq!(parts[..SID_COMPONENTS_MAX - 2], outer[..]);
            assert_eq!(parts[SID_COMPONENTS_MAX - 2], format!("c{}", d - 1));
        }
        assert_eq!(parts.last(), Some(&comp.as_str()));
        assert!(all.insert(next.clone()), "{next} repeated");
        sid = next;
    }
}

/// A 500-deep chain through the event format: every session's SID stays within the cap, its
/// last component is its own and the one before its parent's (as `child_start` names it).
#[test]
fn a_deep_chain_gives_bounded_sids_in_the_stream() {
    let n = 500;
    let mut evs = vec![fork(0, 1, 100)];
    for i in 1..n {
        evs.push(fork(i as u64 * 1000, 99 + i, 100 + i));
    }
    for i in (0..n).rev() {
        evs.push(exit(1_000_000 + (n - i) as u64, 100 + i, 0));
    }
    let text = event_stream("deep", &["sh"], 0, 2_000_000, &evs);
    let mut sessions = std::collections::HashSet::new();
    let mut longest = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let sid = v["sid"].as_str().unwrap();
        longest = longest.max(sid.split('/').count());
        sessions.insert(sid.to_string());
    }
    // proctrace's own session and one per process.
    assert_eq!(sessions.len(), n as usize + 1);
    assert_eq!(longest, SID_COMPONENTS_MAX);
    // About 6 lines per process of at most 16 components of ~45 bytes each: linear in n.
    assert!(text.len() < n as usize * 8_000, "{} bytes", text.len());
}
