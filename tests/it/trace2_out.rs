//! Trace2 streams of observed processes: readable by the trace2 reader, nested like git's.
use std::collections::BTreeMap;
use std::path::Path;

use trace2::EventKind;
use trace2::reader::{ReadOptions, read_path};

use crate::common::*;

both_backends! {
fn observed_tree_as_trace2_sessions(backend: &str) {
    let sh = shapes();
    let ev = tmp("t2.json");
    let perf = tmp("t2.perf");
    let normal = tmp("t2.normal");
    let script = format!(
        "sleep 0.2 | tr a b; sh -c 'sleep 0.2; exit 3'; {sh} double-fork 3; {sh} fork-no-exec; exit 0"
    );
    let (out, lines) = run_on(
        backend,
        &[
            "--trace2-event",
            &ev,
            "--trace2-perf",
            &perf,
            "--trace2-normal",
            &normal,
        ],
        &["sh", "-c", &script],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (records, stats) = read_path(Path::new(&ev), ReadOptions { lenient: false, ..Default::default() }).unwrap();
    assert_eq!(stats.bad_lines, 0);
    let mut by_sid: BTreeMap<String, Vec<EventKind<'static>>> = BTreeMap::new();
    for r in records {
        by_sid
            .entry(r.event.sid.to_string())
            .or_default()
            .push(r.event.kind);
    }
    // proctrace's own session is the only one at depth 0; every other nests under it.
    let top: Vec<&String> = by_sid.keys().filter(|s| !s.contains('/')).collect();
    assert_eq!(top.len(), 1, "{:?}", by_sid.keys());
    let me = top[0].clone();
    assert!(
        by_sid
            .keys()
            .all(|s| s == &me || s.starts_with(&format!("{me}/")))
    );
    // One session per observed process, plus proctrace's.
    let processes = lines.iter().filter(|l| l["event"] == "fork").count();
    assert_eq!(by_sid.len(), processes + 1);
    // Every session starts with version; every exited process has exit+atexit or signal.
    for (sid, evs) in &by_sid {
        assert!(matches!(evs[0], EventKind::Version { .. }), "{sid}: {evs:?}");
    }
    // Parents account for children: child_exit for each exit line (same pid and code),
    // child_ready for the background daemon.
    let all: Vec<&EventKind> = by_sid.values().flatten().collect();
    for l in lines.iter().filter(|l| l["event"] == "exit") {
        let pid = l["pid"].as_i64().unwrap();
        let code = l["code"]
            .as_i64()
            .unwrap_or_else(|| 128 + l["signal"].as_i64().unwrap());
        assert!(
            all.iter().any(|e| matches!(e, EventKind::ChildExit { pid: p, code: c, .. } if *p == pid && *c as i64 == code)),
            "no child_exit for {l}"
        );
    }
    let starts = all
        .iter()
        .filter(|e| matches!(e, EventKind::ChildStart { .. }))
        .count();
    let ends = all
        .iter()
        .filter(|e| matches!(e, EventKind::ChildExit { .. } | EventKind::ChildReady { .. }))
        .count();
    assert_eq!(starts, ends);
    assert!(all.iter().any(|e| matches!(
        e,
        EventKind::ChildReady {
            ready: trace2::ReadyState::Ready,
            ..
        }
    )));
    assert!(all.iter().any(
        |e| matches!(e, EventKind::Start { argv } if argv.iter().map(|a| a.as_ref()).eq(["tr", "a", "b"]))
    ));
    assert!(all.iter().any(|e| matches!(e, EventKind::Exit { code: 3 })));
    // The other two formats carry the same sessions.
    let perf_text = std::fs::read_to_string(&perf).unwrap();
    assert!(
        perf_text
            .lines()
            .any(|l| l.contains("| d1 |") && l.contains("child_start"))
    );
    assert!(
        perf_text
            .lines()
            .any(|l| l.contains("| d2 |") && l.contains("exit") && l.ends_with("code:3"))
    );
    let normal_text = std::fs::read_to_string(&normal).unwrap();
    assert!(
        normal_text.lines().any(|l| l.ends_with("start tr a b")),
        "{normal_text}"
    );
    assert!(
        normal_text
            .lines()
            .any(|l| l.contains("child_ready[") && l.contains("ready:ready")),
        "{normal_text}"
    );
    if let Some(d) = lines.iter().find(|l| l["event"] == "background") {
        let _ = std::process::Command::new("kill")
            .arg(d["pid"].to_string())
            .status();
    }
}
}

both_backends! {
fn a_directory_target_gets_one_file_per_process(backend: &str) {
    let dir = tmp("t2dir");
    std::fs::create_dir_all(&dir).unwrap();
    let (out, lines) = run_on(
        backend,
        &["--trace2-event", &dir],
        &["sh", "-c", "/bin/true; sh -c 'exit 2'; exit 0"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files = std::fs::read_dir(&dir).unwrap().count();
    let processes = lines.iter().filter(|l| l["event"] == "fork").count();
    assert_eq!(files, processes + 1);
    let (records, _) = read_path(Path::new(&dir), ReadOptions { lenient: false, ..Default::default() }).unwrap();
    assert!(
        records
            .iter()
            .any(|r| matches!(r.event.kind, EventKind::Exit { code: 2 }))
    );
}
}

#[test]
fn a_bad_trace2_destination_is_refused_before_running() {
    let marker = tmp("never");
    let out = std::process::Command::new(PROCTRACE)
        .args(["run", "--trace2-event", "relative/path", "--", "touch", &marker])
        .output()
        .unwrap();
    // A value git would refuse is a usage error, found before any output is opened (was 125).
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("not a trace2 destination"),
        "{}",
        stderr(&out)
    );
    assert!(!Path::new(&marker).exists());
}
