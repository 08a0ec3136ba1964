//! The end-of-run summary: `--summary-json`, `--summary-md` (appended), the text after the tree,
//! and `watch --summary`, on real commands.
use std::process::Command;

use serde_json::Value;

use crate::common::*;

/// `sleep 0.3` in the background, `sleep 0.1` beside it, `wait`, then `sleep 0.2`, `exit 3`: the
/// critical path is sh → sleep 0.3 → sleep 0.2 (sleep 0.1 ended while sleep 0.3 still ran).
const SCRIPT: &str = "sleep 0.3 & sleep 0.1; wait; sleep 0.2; exit 3";

fn argv_of(v: &Value) -> String {
    v["argv"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| s.as_str().unwrap_or("?"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

both_backends! {
fn summary_json_says_what_happened(backend: &str) {
    let json = tmp("summary.json");
    let cap = tmp("cap.jsonl");
    let (out, lines) = run_on(
        backend,
        &["--summary-json", &json, "--record", &cap],
        &["sh", "-c", SCRIPT],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = std::fs::read_to_string(&json).unwrap();
    let s: Value = serde_json::from_str(&text).unwrap();
    let ps = processes(&lines);
    let sh = find(&ps, &["sh", "-c", SCRIPT]);
    let long = find(&ps, &["sleep", "0.3"]);
    let short = find(&ps, &["sleep", "0.1"]);
    let last = find(&ps, &["sleep", "0.2"]);

    let wall = s["wall_s"].as_f64().unwrap();
    assert!((0.5..3.0).contains(&wall), "wall {wall}");
    assert_eq!(s["processes"], 4);
    assert_eq!(s["execs"], 4);
    assert_eq!(s["lost"], 0);
    assert_eq!(s["background"], serde_json::json!([]));
    assert_eq!(s["status"]["code"], 3);
    assert_eq!(s["command"], serde_json::json!(["sh", "-c", SCRIPT]));
    // The one failure is the command itself.
    let failures = s["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{text}");
    assert_eq!(failures[0]["pid"], sh.pid);
    assert_eq!(failures[0]["code"], 3);
    assert_eq!(argv_of(&failures[0]), format!("sh -c {SCRIPT}"));
    // Slowest: the three sleeps, longest first, the root left out.
    let slowest: Vec<(i64, String)> = s["slowest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["pid"].as_i64().unwrap(), argv_of(v)))
        .collect();
    assert_eq!(
        slowest,
        [
            (long.pid, "sleep 0.3".to_string()),
            (last.pid, "sleep 0.2".to_string()),
            (short.pid, "sleep 0.1".to_string()),
        ]
    );
    let d0 = s["slowest"][0]["duration_s"].as_f64().unwrap();
    assert!((0.3..1.5).contains(&d0), "sleep 0.3 took {d0}");
    // The critical path, in order from the root.
    let path: Vec<(i64, String, i64)> = s["critical_path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["pid"].as_i64().unwrap(), argv_of(v), v["depth"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        path,
        [
            (sh.pid, format!("sh -c {SCRIPT}"), 0),
            (long.pid, "sleep 0.3".to_string(), 1),
            (last.pid, "sleep 0.2".to_string(), 1),
        ]
    );
    let step = |i: usize, k: &str| s["critical_path"][i][k].as_f64().unwrap();
    assert_eq!(step(0, "start_s"), 0.0);
    assert_eq!(step(0, "duration_s"), wall);
    assert!(step(1, "start_s") + step(1, "duration_s") <= step(2, "start_s"));
    assert!(step(2, "start_s") + step(2, "duration_s") <= wall);
    assert!(step(2, "duration_s") >= 0.2);
    assert_eq!(s["by_program"]["sleep"]["count"], 3);
    assert!(s["by_program"]["sleep"]["total_s"].as_f64().unwrap() >= 0.6);
    assert_eq!(s["by_program"]["sh"]["count"], 1);
    // The text after the tree says the same, before the verdict line.
    let err = stderr(&out);
    let at = |what: &str| err.find(what).unwrap_or_else(|| panic!("no {what:?} in:\n{err}"));
    assert!(at("summary: wall") < at("critical path:"));
    assert!(at("critical path:") < at("proctrace: sh -c"));
    assert!(err.contains(&format!("{}  sleep 0.3", long.pid)), "{err}");

    // A replay of the recording writes the same bytes.
    let replayed = tmp("replayed.json");
    let rep = Command::new(PROCTRACE)
        .args(["replay", &cap, "--summary-json", &replayed])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(rep.status.success(), "{}", stderr(&rep));
    assert_eq!(std::fs::read_to_string(&replayed).unwrap(), text);
}
}

#[test]
fn summary_md_appends_one_summary_per_run() {
    let md = tmp("step-summary.md");
    std::fs::write(&md, "# CI job\n\n").unwrap();
    let (a, _) = run(
        &["--summary-md", &md],
        &["sh", "-c", "sleep 0.1; ls /nonexistent"],
    );
    assert_eq!(a.status.code(), Some(2), "{}", stderr(&a));
    let (b, _) = run(
        &["--summary-md", &md, "--tree", "none"],
        &["sh", "-c", "sleep 2 & sleep 0.05"],
    );
    assert_eq!(b.status.code(), Some(0), "{}", stderr(&b));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.starts_with("# CI job\n\n### proctrace: `sh -c 'sleep 0.1; ls /nonexistent'`\n"),
        "{text}"
    );
    assert_eq!(text.matches("### proctrace: ").count(), 2, "{text}");
    let (first, second) = text.split_at(text.rfind("### proctrace: ").unwrap());
    assert!(first.contains("**exit 2**"), "{first}");
    assert!(first.contains("#### Critical path"), "{first}");
    assert!(first.contains("&emsp;`sleep 0.1` |"), "{first}");
    assert!(first.contains("&emsp;`ls /nonexistent` |"), "{first}");
    assert!(first.contains("#### Failures"), "{first}");
    assert!(first.contains("| exit 2 | `ls /nonexistent` |"), "{first}");
    assert!(
        second.starts_with("### proctrace: `sh -c 'sleep 2 & sleep 0.05'`"),
        "{second}"
    );
    assert!(second.contains("#### Background children (leaks)"), "{second}");
    assert!(second.contains("| still running | `sleep 2` |"), "{second}");
    assert!(!second.contains("#### Failures"), "{second}");
    // --tree none: the verdict line only, no text summary; the file is written all the same.
    assert!(!stderr(&b).contains("critical path"), "{}", stderr(&b));
}

#[test]
fn an_unwritable_summary_fails_before_the_command_runs() {
    let (out, marker) = run_touching_marker(&["--summary-json", "/nonexistent/dir/s.json"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("'/nonexistent/dir/s.json'"),
        "{}",
        stderr(&out)
    );
    assert!(!std::path::Path::new(&marker).exists(), "the command ran");
}

#[test]
fn a_summary_that_cannot_be_written_at_the_end_spares_the_other_outputs() {
    let md = tmp("ok.md");
    let (out, lines) = run(
        &["--summary-json", "/dev/full", "--summary-md", &md],
        &["sh", "-c", "exit 4"],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot write summary to '/dev/full'"),
        "{}",
        stderr(&out)
    );
    assert_eq!(lines.last().unwrap()["event"], "end", "{:?}", lines.last());
    assert!(std::fs::read_to_string(&md).unwrap().contains("**exit 4**"));
}

#[test]
fn watch_summary_of_a_subtree() {
    let json = tmp("watch.json");
    let (out, pid) = watch_sh(
        "sleep 0.6; /bin/sleep 0.2; exit 0",
        &["--duration", "10", "--summary", "--summary-json", &json],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("summary: wall"), "{err}");
    assert!(err.contains("critical path:"), "{err}");
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let path = s["critical_path"].as_array().unwrap();
    assert_eq!(path[0]["pid"], pid);
    let sleep = path
        .iter()
        .find(|v| argv_of(v) == "/bin/sleep 0.2")
        .unwrap_or_else(|| panic!("{path:?}"));
    assert_eq!(sleep["depth"], 1);
    assert!(sleep["duration_s"].as_f64().unwrap() >= 0.2);
    // `sleep 0.6` may be forked before `watch` attaches (then it is adopted from /proc, perhaps
    // before its exec: counted under its parent's name) or after: 1 or 2 sleeps, and at least
    // every sleep on the path.
    let sleeps = s["by_program"]["sleep"]["count"].as_u64().unwrap();
    let on_path = path.iter().filter(|v| argv_of(v) == "sleep 0.6").count() as u64;
    assert!((1 + on_path..=2).contains(&sleeps), "{}", s["by_program"]);
    assert!(s["command"].is_null());
}
