//! Blind spots said, never reported as completeness: under `--backend ptrace` a process the
//! tracer never saw start (a `clone(CLONE_UNTRACED)` child) is counted as `untraced` on the end
//! line, in the JSON Lines `end` record and in the summaries, and named once on stderr.
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::*;

/// `tests/fixtures/untraced.c`, compiled once per test run.
pub fn untraced_bin() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| compile_fixture("untraced"))
}

fn end(lines: &[Value]) -> &Value {
    lines
        .iter()
        .rfind(|l| l["event"] == "end")
        .expect("an end record")
}

/// The stderr lines that warn about an untraced process.
fn warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("never seen starting"))
        .collect()
}

/// The last line of stderr: the verdict.
fn verdict(stderr: &str) -> &str {
    stderr
        .lines()
        .rfind(|l| l.starts_with("proctrace: "))
        .unwrap_or("")
}

/// A `CLONE_UNTRACED` child that stops itself, so that its traced parent's SIGCHLD comes while it
/// is alive: counted once, named with its pid, comm and argv, and the trace is not called
/// complete anywhere.
#[test]
fn a_clone_untraced_child_is_counted_and_named_once() {
    let summary = tmp("summary.json");
    let t2 = tmp("untraced.trace2.json");
    let (out, lines) = run_on(
        "ptrace",
        &["--summary-json", &summary, "--trace2-event", &t2],
        &[
            untraced_bin(),
            "signal",
            "sh",
            "-c",
            "kill -STOP $$; /bin/true; exit 0",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let pid: i64 = stdout
        .trim()
        .strip_prefix("untraced ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("fixture said {stdout:?}"));
    // The child (and its own children) are not in the trace.
    assert!(
        lines.iter().all(|l| l["pid"] != pid),
        "pid {pid} traced after all"
    );
    let e = end(&lines);
    assert!(e["untraced"].as_u64().unwrap_or(0) >= 1, "{e}");
    let w = warnings(&stderr);
    assert_eq!(w.len(), 1, "{stderr}");
    assert!(w[0].contains(&format!("pid {pid} ")), "{}", w[0]);
    assert!(w[0].contains("comm sh"), "{}", w[0]);
    assert!(w[0].contains("kill -STOP"), "argv named: {}", w[0]);
    let v = verdict(&stderr);
    assert!(v.contains("untraced: the tree is incomplete"), "{v}");
    assert!(!stderr.contains("0 events lost"), "{stderr}");
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert!(s["untraced"].as_u64().unwrap_or(0) >= 1, "{s}");
    // proctrace's own Trace2 session says so too, as a `proctrace` data event.
    let t2 = std::fs::read_to_string(&t2).unwrap();
    assert!(
        t2.lines()
            .any(|l| l.contains("\"event\":\"data\"") && l.contains("\"key\":\"untraced\"")),
        "{t2}"
    );
}

/// An untraced child left an orphan is reparented to proctrace (the subreaper) and found when
/// it exits there.
#[test]
fn an_untraced_orphan_is_found_when_it_exits() {
    let cmd = format!("{} orphan | cat", untraced_bin());
    let (out, lines) = run_on("ptrace", &[], &["sh", "-c", &cmd]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}");
    let pid: i64 = stdout
        .trim()
        .strip_prefix("orphan ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("fixture said {stdout:?}"));
    assert_eq!(end(&lines)["untraced"], 1, "{stderr}");
    let w = warnings(&stderr);
    assert_eq!(w.len(), 1, "{stderr}");
    assert!(
        w[0].contains(&format!("pid {pid} exited as proctrace's child")),
        "{}",
        w[0]
    );
    assert!(!stderr.contains("0 events lost"), "{stderr}");
}

/// An untraced child still running when the command ends (here an orphan, reparented to
/// proctrace) is found at the end, named with what `/proc` shows of it.
#[test]
fn an_untraced_process_still_running_at_the_end_is_found() {
    let (out, lines) = run_on("ptrace", &[], &[untraced_bin(), "leave", "sleep", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}");
    let pid: i64 = stdout
        .trim()
        .strip_prefix("left ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("fixture said {stdout:?}"));
    assert_eq!(end(&lines)["untraced"], 1, "{stderr}");
    let w = warnings(&stderr);
    assert_eq!(w.len(), 1, "{stderr}");
    // Named as it is: sleeping, or still the fixture between its clone and its exec.
    let named = format!("pid {pid} (an orphan, child of proctrace, comm ");
    assert!(w[0].contains(&named), "{}", w[0]);
    assert!(w[0].contains("was still running at the end"), "{}", w[0]);
    assert!(!stderr.contains("0 events lost"), "{stderr}");
}

/// A command in a pid namespace of its own: both backends see into it (under proctrace's pids),
/// and the children's SIGCHLDs inside it, whose sender pids are the inner namespace's, are not
/// taken for untraced processes.
#[test]
fn a_pid_namespace_is_seen_into_without_false_blind_spots() {
    for backend in ["ptrace", "connector"] {
        let (out, lines) = run_on(
            backend,
            &[],
            &[
                "unshare",
                "--pid",
                "--fork",
                "sh",
                "-c",
                // Long enough for the connector to read their argv on a loaded machine.
                "/bin/sleep 0.05; /bin/sleep 0.05; sh -c '/bin/sleep 0.05'; echo $$",
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{backend}: {stderr}");
        // The shell is pid 1 of its namespace.
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1", "{backend}");
        let ps = processes(&lines);
        let trues = ps
            .values()
            .filter(|p| p.execs.iter().flatten().any(|a| a == &["/bin/sleep", "0.05"]))
            .count();
        assert_eq!(trues, 3, "{backend}: {stderr}");
        let inner = find(
            &ps,
            &[
                "sh",
                "-c",
                "/bin/sleep 0.05; /bin/sleep 0.05; sh -c '/bin/sleep 0.05'; echo $$",
            ],
        );
        assert!(inner.pid > 1, "{backend}: proctrace's pid, not the inner 1");
        assert!(end(&lines).get("untraced").is_none(), "{backend}: {stderr}");
        assert!(warnings(&stderr).is_empty(), "{backend}: {stderr}");
        assert!(verdict(&stderr).contains("0 events lost"), "{backend}: {stderr}");
    }
}

/// A traced tree that forks and reaps ordinarily has no blind spot: the SIGCHLD of every traced
/// child (which reaches its parent after the tracer collected its exit) is not taken for one,
/// nor a traced child still running at the end.
#[test]
fn an_ordinary_tree_under_ptrace_has_no_untraced() {
    let (out, lines) = run_on(
        "ptrace",
        &[],
        &[
            "sh",
            "-c",
            // Ending with a traced child left running in the background.
            "for i in 1 2 3 4 5 6 7 8; do /bin/true & done; wait; /bin/true; sleep 1 &",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(end(&lines).get("untraced").is_none(), "{stderr}");
    assert!(warnings(&stderr).is_empty(), "{stderr}");
}

/// With usage capture the ptrace backend lets each process go at its exit stop: a child whose
/// parent never reaps it stays a zombie, and when the parent leaves first proctrace (the
/// subreaper) reaps it. That is a traced process gone, not an untraced one: one exit line, with
/// its figures, and no blind spot; the same without usage capture (never let go).
#[test]
fn a_traced_zombie_reaped_by_proctrace_is_no_blind_spot() {
    for usage in [true, false] {
        let extra: &[&str] = if usage { &[] } else { &["--no-usage"] };
        // The inner shell becomes `sleep`, which never reaps the background /bin/true.
        let (out, lines) = run_on(
            "ptrace",
            extra,
            &["sh", "-c", "sh -c '/bin/true & exec sleep 0.5'; sleep 0.3"],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert_eq!(
            end(&lines)["untraced"].as_u64().unwrap_or(0),
            0,
            "usage {usage}: {stderr}"
        );
        assert!(warnings(&stderr).is_empty(), "{stderr}");
        let ps = processes(&lines);
        let t = find(&ps, &["/bin/true"]);
        assert_eq!(t.exits.len(), 1, "{:?}", t.exits);
        assert_eq!(t.exits[0]["code"], 0);
        assert_eq!(t.exits[0]["max_rss_kib"].is_number(), usage, "{}", t.exits[0]);
    }
}
