//! Failures that mattered (issue 23): on real processes, a successful command's non-zero exits
//! are handled, not failures; a failing `make -j2` of C files names the compile that failed as
//! the cause, with make and its recipe shell among the failures, in the JSON, the Markdown and
//! the text summary.
use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::*;

fn pids(v: &Value) -> BTreeSet<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|f| f["pid"].as_i64().unwrap())
        .collect()
}

both_backends! {
/// `test` and `grep -q` failing on purpose under a command that succeeds: 0 failures, 2
/// handled. (`/usr/bin/test`: the shell's own `test` is a builtin, no process.)
fn a_successful_command_has_handled_exits_not_failures(backend: &str) {
    let json = tmp("summary.json");
    let md = tmp("summary.md");
    let (out, _) = run_on(
        backend,
        &["--summary-json", &json, "--summary-md", &md],
        &["sh", "-c", "/usr/bin/test -f /nonexistent; grep -q x /dev/null; exit 0"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(s["failures"], serde_json::json!([]), "{s:#}");
    assert_eq!(s["causes"], serde_json::json!([]), "{s:#}");
    let nz = s["nonzero_exits"].as_array().unwrap();
    assert_eq!(nz.len(), 2, "{s:#}");
    assert!(nz.iter().all(|f| f["handled"] == true && f["code"] == 1), "{nz:?}");
    let err = stderr(&out);
    assert!(err.contains("0 failures, 2 handled non-zero exits"), "{err}");
    assert!(!err.contains("cause:"), "{err}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("0 failures, 2 handled non-zero exits"), "{md}");
    assert!(!md.contains("#### Why it failed") && !md.contains("#### Failures"), "{md}");
}
}

both_backends! {
/// `make -j2` of three C files, one of which does not compile: the cause is the compiler
/// process that failed (cc1, the deepest failed process, under `cc -c bad.c`), the failures
/// are make, the recipe shell, cc and cc1, and the summaries open with the cause.
fn a_failing_make_names_the_failed_compile_as_its_cause(backend: &str) {
    let dir = format!("{}/tests/fixtures/failing-make", env!("CARGO_MANIFEST_DIR"));
    let objs = tmp("objs");
    std::fs::create_dir_all(&objs).unwrap();
    let (json, md) = (tmp("summary.json"), tmp("summary.md"));
    let (out, lines) = run_on(
        backend,
        &["--summary-json", &json, "--summary-md", &md],
        &["make", "-s", "-j2", "-C", &dir, &format!("OUT={objs}")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let ps = processes(&lines);
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();

    let causes = s["causes"].as_array().unwrap();
    assert_eq!(causes.len(), 1, "{s:#}");
    let cause = &causes[0];
    assert_eq!(cause["code"], 1, "{cause}");
    assert!(cause["program"].as_str().unwrap().contains("cc1"), "{cause}");
    assert!(cause["duration_s"].as_f64().unwrap() > 0.0, "{cause}");
    // Its parents, from the capture: cc -c bad.c, the recipe shell, make (the command).
    let parent = |pid: i64| ps[&pid].ppid;
    let cc = parent(cause["pid"].as_i64().unwrap());
    let sh = parent(cc);
    let make = parent(sh);
    let argv = |pid: i64| ps[&pid].execs.last().cloned().flatten().unwrap_or_default();
    assert_eq!(argv(make).first().map(String::as_str), Some("make"), "{ps:#?}");
    assert!(argv(cc).iter().any(|a| a == "bad.c"), "{:?}", argv(cc));
    assert!(argv(sh).first().is_some_and(|a| a.ends_with("sh")), "{:?}", argv(sh));
    assert_eq!(cause["chain"], serde_json::json!([make, sh, cc]), "{cause}");

    let failures = pids(&s["failures"]);
    let want: BTreeSet<i64> = [make, sh, cc, cause["pid"].as_i64().unwrap()].into();
    assert_eq!(failures, want, "{s:#}");
    assert!(pids(&s["nonzero_exits"]).is_superset(&failures));
    // The compiles that worked are not failures.
    for p in ps.values().filter(|p| argv(p.pid).iter().any(|a| a == "a.c" || a == "b.c")) {
        assert!(!failures.contains(&p.pid), "{p:?}");
    }

    // The Markdown opens with the cause, before any table, and folds its chain to one line.
    let md = std::fs::read_to_string(&md).unwrap();
    let at = |what: &str| md.find(what).unwrap_or_else(|| panic!("no {what:?} in:\n{md}"));
    assert!(at("#### Why it failed") < at("#### Critical path"), "{md}");
    assert!(at("#### Why it failed") < at("| "), "{md}");
    let why = &md[at("#### Why it failed")..at("#### Critical path")];
    assert!(why.contains("cc1") && why.contains("exit 1 after "), "{why}");
    assert!(why.contains("under `make ") && why.contains(" → ") && why.contains("cc -c bad.c"), "{why}");

    // The text summary: the headline, then the cause.
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.starts_with("summary: "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(lines[head].contains("4 failures"), "{err}");
    assert!(lines[head + 1].starts_with("cause: ") && lines[head + 1].contains("cc1"), "{err}");
    assert!(lines[head + 2].trim_start().starts_with("under: make "), "{err}");
}
}
