//! The `tracing` layer (feature `tracing`, enabled for tests by the crate's
//! dev-dependency on itself): `examples/tracing_demo.rs`, a program
//! instrumented only with `tracing` macros, must write streams that pass
//! the checks the native API's pass — event lines round-trip byte for
//! byte, normal and perf lines are what the formatters make of the event
//! stream, regions are balanced per thread — end its session with its real
//! exit status, and nest under git when git runs it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use trace2::reader::{ReadOptions, Record, group_by_sid, infer_nesting, read_file};
use trace2::{EventKind, FormatOptions, Target, TargetKind};

use crate::common::*;
use crate::formats::{format_all, mask_clock, mask_perf_tabs, mask_tgt_line, target_location};

/// The example's binary: cargo builds examples beside `deps/` for `cargo
/// test` (the whole package or workspace).
fn demo_exe() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(Path::parent).unwrap();
    let demo = dir.join("examples").join("tracing_demo");
    let built = std::fs::metadata(&demo).and_then(|m| m.modified()).ok();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let newest = newest_source(&manifest.join("src")).max(newest_source(&manifest.join("examples")));
    assert!(
        built.is_some_and(|b| Some(b) >= newest),
        "{} is missing or older than the sources: run `cargo test -p proctrace-trace2` (which \
         builds examples), or `cargo build -p proctrace-trace2 --example tracing_demo` before \
         running these tests alone",
        demo.display()
    );
    demo
}

/// The newest modification time of the `.rs` files under `dir`.
fn newest_source(dir: &Path) -> Option<std::time::SystemTime> {
    let mut newest = None;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let t = if p.is_dir() {
            newest_source(&p)
        } else if p.extension().is_some_and(|x| x == "rs") {
            e.metadata().and_then(|m| m.modified()).ok()
        } else {
            None
        };
        newest = newest.max(t);
    }
    newest
}

fn demo(home: &Path) -> Command {
    clean(demo_exe().to_str().unwrap(), home)
}

/// Checks every thread's regions: enters and leaves balanced, each leave
/// naming the region it closes, `nesting` equal to the depth, `data` one
/// deeper than the innermost region, `thread_start` first and `thread_exit`
/// last on threads other than `main`. Returns the region labels per thread.
fn check_regions(records: &[Record]) -> BTreeMap<String, Vec<String>> {
    let mut stacks: BTreeMap<(String, String), Vec<(String, String)>> = BTreeMap::new();
    let mut labels: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut per_thread: BTreeMap<(String, String), Vec<&str>> = BTreeMap::new();
    for r in records {
        let e = &r.event;
        let key = (e.sid.to_string(), e.thread.to_string());
        per_thread.entry(key.clone()).or_default().push(e.kind.name());
        let stack = stacks.entry(key).or_default();
        match &e.kind {
            EventKind::RegionEnter { category, label, .. } => {
                assert_eq!(e.nesting as usize, stack.len() + 1, "enter at line {}", r.line_no);
                let (c, l) = (
                    category.clone().unwrap().into_owned(),
                    label.clone().unwrap().into_owned(),
                );
                labels.entry(e.thread.to_string()).or_default().push(l.clone());
                stack.push((c, l));
            }
            EventKind::RegionLeave { category, label, .. } => {
                let (c, l) = stack
                    .pop()
                    .unwrap_or_else(|| panic!("leave without enter, line {}", r.line_no));
                assert_eq!(category.as_deref(), Some(c.as_str()), "line {}", r.line_no);
                assert_eq!(label.as_deref(), Some(l.as_str()), "line {}", r.line_no);
                assert_eq!(e.nesting as usize, stack.len() + 1, "leave at line {}", r.line_no);
            }
            EventKind::Data { .. } => {
                assert_eq!(e.nesting as usize, stack.len() + 1, "data at line {}", r.line_no);
            }
            _ => {}
        }
    }
    for ((sid, thread), stack) in &stacks {
        assert!(stack.is_empty(), "{sid} {thread}: regions left open: {stack:?}");
    }
    for ((_, thread), names) in &per_thread {
        if thread != "main" {
            assert_eq!(names.first(), Some(&"thread_start"), "{thread}: {names:?}");
            assert_eq!(names.last(), Some(&"thread_exit"), "{thread}: {names:?}");
        }
    }
    labels
}

/// Runs the demo with all three targets in files and checks them the way
/// `formats.rs` checks git's.
fn check_streams(brief: bool) {
    let home = TempDir::new(if brief { "layer-brief" } else { "layer" });
    let (n, p, e) = (home.join("normal"), home.join("perf"), home.join("event"));
    let b = if brief { "1" } else { "0" };
    let out = run(demo(home.path())
        .arg("ok")
        .env("GIT_TRACE2", &n)
        .env("GIT_TRACE2_PERF", &p)
        .env("GIT_TRACE2_EVENT", &e)
        .env("GIT_TRACE2_BRIEF", b)
        .env("GIT_TRACE2_PERF_BRIEF", b)
        .env("GIT_TRACE2_EVENT_BRIEF", b)
        .env("GIT_TRACE2_EVENT_NESTING", "100"));
    assert!(out.status.success(), "{out:?}");
    let opts = FormatOptions {
        brief,
        event_nesting: 100,
        ..FormatOptions::default()
    };
    let raw = std::fs::read(&e).unwrap();
    let (mut records, stats) = read_file(&e, ReadOptions::default()).unwrap();
    assert_eq!(stats.bad_lines, 0);
    assert!(!stats.truncated_last_line);
    // 1. event: byte-identical round trip.
    let ours = format_all(&records, TargetKind::Event, &opts).join("\n") + "\n";
    assert_eq!(ours, String::from_utf8_lossy(&raw));
    // 2. normal: what the normal formatter makes of the events.
    let written: Vec<String> = read(&n).lines().map(|l| mask_tgt_line(&mask_clock(l))).collect();
    let ours: Vec<String> = format_all(&records, TargetKind::Normal, &opts)
        .iter()
        .map(|l| mask_tgt_line(&mask_clock(l)))
        .collect();
    assert_eq!(ours, written);
    // 3. perf.
    infer_nesting(&mut records);
    let written: Vec<String> = read(&p).lines().map(mask_clock).collect();
    let (mut ours, mut masked) = (Vec::new(), Vec::new());
    for r in &records {
        let mut buf = Vec::new();
        if TargetKind::Perf.format(&target_location(r, TargetKind::Perf), &opts, &mut buf) {
            let l = String::from_utf8_lossy(&buf).into_owned();
            // Events without `t_abs` in the event format (regions, threads)
            // have it in perf: that column is masked on both sides.
            let has = r.event.t_abs.is_some();
            ours.push(mask_perf_tabs(&mask_clock(&l), has, brief));
            let w = written.get(ours.len() - 1).map_or("<missing>", |s| s.as_str());
            masked.push(mask_perf_tabs(w, has, brief));
        }
    }
    assert_eq!(ours.len(), written.len());
    assert_eq!(ours, masked);

    // The session: start, what the program reported, exit.
    let names: Vec<&str> = records.iter().map(|r| r.event.kind.name()).collect();
    assert_eq!(&names[..3], ["version", "start", "cmd_ancestry"], "{names:?}");
    assert!(names.ends_with(&["exit", "atexit"]), "{names:?}");
    assert_eq!(
        records
            .iter()
            .map(|r| r.event.sid.as_ref())
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        1
    );
    let labels = check_regions(&records);
    assert_eq!(
        labels["main"],
        ["sync", "fetch", "fetch", "fetch", "fetch", "sync"]
    );
    assert_eq!(labels["th01:worker-1"], ["work"]);
    assert_eq!(labels["th02:unknown"], ["work"]);
    // Spans: category = target, label = name, msg = fields (recorded later too).
    let enters: Vec<(String, String, Option<String>)> = records
        .iter()
        .filter_map(|r| match &r.event.kind {
            EventKind::RegionEnter { category, label, msg } if r.event.thread == "main" => Some((
                category.clone().unwrap().into_owned(),
                label.clone().unwrap().into_owned(),
                msg.as_ref().map(|m| m.to_string()),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(enters[0], ("demo".into(), "sync".into(), Some("repos=2".into())));
    assert_eq!(
        enters[1],
        (
            "demo::fetch".into(),
            "fetch".into(),
            Some("repo=alpha depth=1".into())
        )
    );
    assert_eq!(enters[5].2.as_deref(), Some("repos=2 result=ok"));
    // Events: message → printf (error at ERROR), other fields → data.
    let mut printf = Vec::new();
    let mut data = Vec::new();
    for r in &records {
        match &r.event.kind {
            EventKind::Printf { msg } => printf.push(msg.as_deref().unwrap_or("").to_string()),
            EventKind::Data {
                category, key, value, ..
            } => data.push(format!("{}/{category}/{key}={value}", r.event.thread)),
            EventKind::Error { .. } => panic!("no error expected in mode ok"),
            _ => {}
        }
    }
    assert_eq!(
        printf,
        [
            "fetched alpha",
            "fetched alpha",
            "fetched beta",
            "fetched beta",
            "fetched all",
            "slow network",
            "worker 1 done",
            "worker 2 done"
        ]
    );
    assert!(data.contains(&"main/demo/total=90".to_string()), "{data:?}");
    assert!(
        data.contains(&"main/demo/path=\"/tmp/x y\"".to_string()),
        "{data:?}"
    );
    assert!(
        data.contains(&"th01:worker-1/demo::worker/done=true".to_string()),
        "{data:?}"
    );
    assert_eq!(data.iter().filter(|d| d.contains("/item=")).count(), 6);
    // file:line of the macros, not of the library (brief streams have none).
    let enter = records
        .iter()
        .find(|r| r.event.kind.name() == "region_enter")
        .unwrap();
    assert_eq!(
        enter
            .event
            .file
            .as_deref()
            .map(|f| f.ends_with("examples/tracing_demo.rs")),
        (!brief).then_some(true)
    );
}

#[test]
fn layer_streams_pass_the_native_checks() {
    check_streams(false);
}

#[test]
fn layer_streams_pass_the_native_checks_brief() {
    check_streams(true);
}

#[test]
fn exit_is_the_real_exit_status() {
    for (args, code) in [
        (&["ok"][..], 0),
        (&["fail"][..], 1),
        (&["exit", "3"][..], 3),
        (&["exit", "300"][..], 300 & 0xff),
        (&["panic"][..], 101),
    ] {
        let home = TempDir::new("layer-exit");
        let e = home.join("event");
        let out = run(demo(home.path()).args(args).env("GIT_TRACE2_EVENT", &e));
        assert_eq!(out.status.code(), Some(code), "{args:?}: {out:?}");
        let (records, _) = read_file(&e, ReadOptions::default()).unwrap();
        let tail: Vec<&EventKind> = records.iter().rev().take(2).map(|r| &r.event.kind).collect();
        assert!(
            matches!(tail[..], [EventKind::Atexit { code: a }, EventKind::Exit { code: x }] if *a == code && *x == code),
            "{args:?}: {tail:?}"
        );
        let errors: Vec<_> = records
            .iter()
            .filter(|r| r.event.kind.name() == "error")
            .collect();
        assert_eq!(errors.len(), usize::from(args[0] == "exit"), "{args:?}");
    }
}

#[test]
fn nests_under_git_when_run_by_a_git_alias() {
    let home = TempDir::new("layer-git");
    let e = home.join("event");
    let alias = format!("alias.demo=!{}", demo_exe().display());
    let out = run(git(home.path())
        .args(["-c", &alias, "demo", "ok"])
        .env("GIT_TRACE2_EVENT", &e));
    assert!(out.status.success(), "{out:?}");
    let (records, stats) = read_file(&e, ReadOptions::default()).unwrap();
    assert_eq!(stats.bad_lines, 0);
    let sessions = group_by_sid(&records);
    assert_eq!(sessions.len(), 2, "{:?}", sessions.keys());
    let (git_sid, ours) = {
        let mut it = sessions.keys();
        (*it.next().unwrap(), *it.next().unwrap())
    };
    // The demo's SID is git's followed by its own component.
    assert!(ours.starts_with(&format!("{git_sid}/")), "{git_sid} vs {ours}");
    assert_eq!(ours.matches('/').count(), 1);
    // git started it as the alias's child; the child's events lie between
    // git's child_start and child_exit, and the child's own session is whole.
    let child = &sessions[ours];
    let names: Vec<&str> = child.iter().map(|r| r.event.kind.name()).collect();
    assert_eq!(&names[..2], ["version", "start"]);
    assert!(names.ends_with(&["exit", "atexit"]), "{names:?}");
    let start = records
        .iter()
        .position(|r| matches!(&r.event.kind, EventKind::ChildStart { child_class, .. } if child_class == "shell_alias"))
        .unwrap();
    let EventKind::ChildStart { child_id, .. } = records[start].event.kind else {
        unreachable!()
    };
    let exit = records
        .iter()
        .position(|r| matches!(r.event.kind, EventKind::ChildExit { child_id: c, .. } if c == child_id))
        .unwrap();
    let EventKind::ChildExit { pid, code, .. } = records[exit].event.kind else {
        unreachable!()
    };
    assert_eq!(code, 0);
    // The SID's last component names the process: `…-P<pid in hex>`.
    assert!(ours.ends_with(&format!("-P{pid:08x}")), "{ours} vs pid {pid}");
    let mine: Vec<usize> = (0..records.len())
        .filter(|&i| records[i].event.sid == ours)
        .collect();
    assert!(
        start < mine[0] && *mine.last().unwrap() < exit,
        "{start} {mine:?} {exit}"
    );
    let owned: Vec<Record> = child.iter().map(|r| (*r).clone()).collect();
    check_regions(&owned);
}

#[test]
fn no_target_means_no_layer_and_nothing_enabled() {
    use tracing_subscriber::layer::SubscriberExt;
    // Not initialised: init with no target returns false and leaves the
    // process untraced, so this in-process test disturbs nothing else.
    let layer = trace2::layer::Trace2Layer::new(trace2::Config::new("T2LAYERTEST"));
    assert!(layer.is_none());
    assert!(!trace2::is_enabled());
    // `Option::None` tells tracing the subscriber wants nothing at all, so
    // the macros stop at the global level filter (one atomic load).
    let sub = tracing_subscriber::registry().with(layer);
    assert_eq!(
        tracing::Subscriber::max_level_hint(&sub),
        Some(tracing::level_filters::LevelFilter::OFF)
    );
}

/// Spans exited out of order, a span entered on two threads at once, and a
/// span entered again while entered, in a child process (this test binary
/// run again with `TRACE2_LAYER_CHILD`).
#[test]
fn out_of_order_shared_and_recursive_spans() {
    if std::env::var_os("TRACE2_LAYER_CHILD").is_some() {
        child_main();
        return;
    }
    let home = TempDir::new("layer-edge");
    let e = home.join("event");
    let out = run(
        clean(std::env::current_exe().unwrap().to_str().unwrap(), home.path())
            .args([
                "layer::out_of_order_shared_and_recursive_spans",
                "--exact",
                "--test-threads=1",
            ])
            .env("TRACE2_LAYER_CHILD", "1")
            .env("GIT_TRACE2_EVENT", &e)
            .env("GIT_TRACE2_EVENT_NESTING", "100"),
    );
    assert!(out.status.success(), "{out:?}");
    let (records, _) = read_file(&e, ReadOptions::default()).unwrap();
    let labels = check_regions(&records);
    // a, b entered; a exited first: b is left first, then a; b's own exit writes nothing.
    // r entered twice (recursion) nests twice.
    assert_eq!(labels["main"], ["a", "b", "r", "r"]);
    let shared: Vec<_> = labels
        .iter()
        .filter(|(t, _)| t.as_str() != "main")
        .map(|(_, l)| l.clone())
        .collect();
    assert_eq!(shared, [vec!["shared".to_string()], vec!["shared".to_string()]]);
    let leaves: Vec<String> = records
        .iter()
        .filter_map(|r| match &r.event.kind {
            EventKind::RegionLeave { label, .. } if r.event.thread == "main" => {
                label.as_ref().map(|l| l.to_string())
            }
            _ => None,
        })
        .collect();
    assert_eq!(leaves, ["b", "a", "r", "r"]);
    // The two threads overlapped: both entered before either left.
    let shared_events: Vec<&str> = records
        .iter()
        .filter(|r| r.event.thread != "main")
        .map(|r| r.event.kind.name())
        .filter(|n| n.starts_with("region_"))
        .collect();
    assert_eq!(
        shared_events,
        ["region_enter", "region_enter", "region_leave", "region_leave"]
    );
}

fn child_main() {
    use std::sync::{Arc, Barrier};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    tracing_subscriber::registry()
        .with(trace2::layer::Trace2Layer::from_env("GIT"))
        .init();
    let a = tracing::info_span!("a");
    let b = tracing::info_span!("b");
    let ga = a.enter();
    let gb = b.enter();
    drop(ga);
    drop(gb);
    let r = tracing::info_span!("r");
    {
        let _g1 = r.enter();
        let _g2 = r.enter();
    }
    let shared = tracing::info_span!("shared");
    let barrier = Arc::new(Barrier::new(2));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (s, bar) = (shared.clone(), barrier.clone());
            std::thread::spawn(move || {
                let _g = s.enter();
                bar.wait();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}
