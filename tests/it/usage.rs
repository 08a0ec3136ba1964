//! What each process cost, against ground truth: a C program (`tests/fixtures/costs.c`) forks
//! children that burn known CPU, touch known memory and write known bytes, and reaps each with
//! `wait4`; its `rusage` is what the exit lines must say, on both backends.
use std::collections::HashSet;
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::*;

/// `tests/fixtures/costs.c`, compiled once per test run.
fn costs() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| compile_fixture("costs"))
}

/// What `wait4` said about one child.
#[derive(Debug)]
struct Truth {
    status: i64,
    cpu_us: i64,
    maxrss_kib: i64,
}

/// The children in fork order (the file's; pids may wrap around).
fn truths(path: &str) -> Vec<(i64, Truth)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let v = |k: &str| -> i64 {
                let i = w.iter().position(|x| *x == k).unwrap();
                w[i + 1].parse().unwrap()
            };
            (
                v("pid"),
                Truth {
                    status: v("status"),
                    cpu_us: v("cpu_us"),
                    maxrss_kib: v("maxrss_kib"),
                },
            )
        })
        .collect()
}

/// The exit line of `pid` (each test's pids are its own: no reuse within one run).
fn exit_of(lines: &[Value], pid: i64) -> &Value {
    let mut exits = lines.iter().filter(|l| l["event"] == "exit" && l["pid"] == pid);
    let e = exits.next().unwrap_or_else(|| panic!("no exit line for {pid}"));
    assert!(exits.next().is_none(), "one exit line for {pid}");
    e
}

fn cpu_us(exit: &Value) -> i64 {
    let cpu = |k: &str| exit[k].as_f64().unwrap_or_else(|| panic!("no {k}: {exit}"));
    let s = cpu("cpu_user_s") + cpu("cpu_sys_s");
    (s * 1e6).round() as i64
}

both_backends! {
    /// CPU within 10 ms + 2 %, peak RSS within 2 % of `wait4`; write_chars at least the bytes
    /// written; threads' CPU summed, also when the main thread leaves first (`pthread_exit`); a
    /// SIGKILLed process still has its figures; the time runnable but waiting for a CPU is there
    /// on both backends.
    fn known_costs_match_wait4(backend: &str) {
        let truth_file = tmp("costs.txt");
        // cpu_ms, MiB, bytes, threads, killed (1) or main thread leaving first (2)
        let specs = [
            ("300,40,1048576,1,0", 300, 1048576, 1),
            ("150,40,65536,3,0", 150, 65536, 3),
            ("120,48,4096,1,1", 120, 4096, 1),
            ("150,40,65536,3,2", 150, 65536, 3),
        ];
        let mut argv = vec![costs(), truth_file.as_str()];
        argv.extend(specs.iter().map(|s| s.0));
        let (out, lines) = run_on(backend, &["--tree", "none"], &argv);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let truth = truths(&truth_file);
        assert_eq!(truth.len(), specs.len());
        // What the capture says it lost (taskstats records dropped, groups split), for a failure.
        let end = lines.last().cloned().unwrap_or_default();
        for ((pid, t), (spec, cpu_ms, bytes, threads)) in truth.iter().zip(specs) {
            let e = exit_of(&lines, *pid);
            let what = format!("{backend} {spec}: {e} against {t:?}; end: {end}");
            assert!(e.get("cpu_user_s").is_some(), "no figures: {what}");
            let cpu = cpu_us(e);
            assert!(
                (cpu - t.cpu_us).abs() as f64 <= 10_000.0 + 0.02 * t.cpu_us as f64,
                "CPU {cpu} µs: {what}"
            );
            assert!(cpu >= threads * cpu_ms * 1000, "every thread's spin counted: {what}");
            let rss = e["max_rss_kib"].as_i64().unwrap();
            assert!(
                (rss - t.maxrss_kib).abs() as f64 <= 0.02 * t.maxrss_kib as f64,
                "peak RSS {rss} KiB: {what}"
            );
            assert!(e["write_chars"].as_i64().unwrap() >= bytes, "{what}");
            let ctx = &e["ctx_switches"];
            assert!(ctx["voluntary"].as_i64().is_some() && ctx["involuntary"].as_i64().is_some(), "{what}");
            assert!(e["cpu_delay_s"].as_f64().is_some_and(|d| d >= 0.0), "{what}");
            if spec.ends_with(",1") {
                assert_eq!(t.status & 0x7f, 9, "{what}");
                assert_eq!(e["signal"], 9, "{what}");
            } else {
                assert_eq!(t.status, 0, "{what}");
                assert_eq!(e["code"], 0, "{what}");
            }
        }
        // Every process of the tree has figures, and the end line counts them.
        let exits: Vec<&Value> = lines.iter().filter(|l| l["event"] == "exit").collect();
        for e in &exits {
            assert!(e["cpu_user_s"].is_number() && e["max_rss_kib"].is_number(), "{e}");
        }
        let end = lines.last().unwrap();
        assert_eq!(end["usage"].as_u64(), Some(exits.len() as u64), "{end}");
        assert_eq!(end["usage_lost"], 0, "{end}");
        assert_eq!(end["usage_incomplete"], 0, "{end}");
        assert!(!stderr(&out).contains("without cost figures"), "{}", stderr(&out));
    }
}

both_backends! {
    /// A burst of short-lived processes: when taskstats keeps up, no exit is without figures.
    fn every_exit_of_a_burst_has_its_figures(backend: &str) {
        let pids_file = tmp("burst.txt");
        let (out, lines) = run_on(backend, &["--tree", "none"], &[costs(), &pids_file, "burst", "400"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let pids: Vec<i64> = std::fs::read_to_string(&pids_file)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        assert_eq!(pids.len(), 400);
        let end = lines.last().unwrap();
        assert_eq!(end["lost"], 0, "{end}");
        assert_eq!(end["usage_lost"], 0, "{end}");
        for pid in pids {
            let e = exit_of(&lines, pid);
            assert_eq!(e["code"], 0);
            assert!(e["cpu_user_s"].is_number() && e["max_rss_kib"].as_u64().unwrap() > 0, "{e}");
            assert_eq!(e["write_chars"], 0, "{e}");
        }
    }
}

both_backends! {
    /// `--no-usage`: no figures anywhere, and no sign of them in the end line.
    fn no_usage_leaves_the_fields_out(backend: &str) {
        let truth_file = tmp("costs.txt");
        let (out, lines) = run_on(backend, &["--tree", "none", "--no-usage"], &[costs(), &truth_file, "10,1,1024,1,0"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let exits: Vec<&Value> = lines.iter().filter(|l| l["event"] == "exit").collect();
        assert_eq!(exits.len(), 2);
        for e in exits {
            assert!(e.get("cpu_user_s").is_none() && e.get("max_rss_kib").is_none(), "{e}");
        }
        let end = lines.last().unwrap();
        assert!(end.get("usage").is_none() && end.get("usage_lost").is_none(), "{end}");
    }
}

/// A taskstats socket far too small for a storm of exits: its loss is counted apart from the
/// connector's, said on stderr, nothing panics, and every exit is still there (some without
/// figures, never more than were lost).
#[test]
fn forced_taskstats_overflow_is_counted_and_exits_survive() {
    let dir = tmp("storm");
    let files: Vec<String> = (0..4).map(|i| format!("{dir}-{i}.txt")).collect();
    let script = files
        .iter()
        .map(|f| format!("{} {f} burst 1500 &", costs()))
        .collect::<String>()
        + " wait";
    let (out, lines) = run_on(
        "connector",
        &["--tree", "none", "--usage-buffer", "1"],
        &["sh", "-c", &script],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let end = lines.last().unwrap();
    assert_eq!(end["event"], "end");
    let usage_lost = end["usage_lost"].as_u64().unwrap();
    assert!(
        usage_lost > 0,
        "a minimal taskstats buffer under a storm must overflow: {end}"
    );
    assert!(
        stderr(&out).contains("taskstats exit records lost"),
        "{}",
        stderr(&out)
    );
    assert_eq!(end["lost"], 0, "the connector's own buffer kept up: {end}");
    let burst: HashSet<i64> = files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(|l| l.parse::<i64>().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(burst.len(), 6000);
    let exits: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "exit" && burst.contains(&l["pid"].as_i64().unwrap()))
        .collect();
    assert_eq!(exits.len(), 6000, "every exit is there, figures or not");
    let without = exits.iter().filter(|e| e.get("cpu_user_s").is_none()).count() as u64;
    assert!(without > 0, "{end}");
    assert!(
        without <= usage_lost + end["usage_incomplete"].as_u64().unwrap(),
        "{without} exits without figures, only {usage_lost} records lost: {end}"
    );
}
