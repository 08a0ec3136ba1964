//! `--chrome FILE`: a real run's timeline follows the Chrome Trace Event Format, shows every
//! process the JSON Lines show with the same times and status, and replays to the same bytes.
use std::collections::HashMap;
use std::process::Command;

use serde_json::Value;

use crate::chrome_check::{Expect, validate};
use crate::common::*;

/// Seconds with nine decimals (a JSON Lines `ts`) to ns.
fn ns(v: &Value) -> u64 {
    (v.as_f64().unwrap() * 1e9).round() as u64
}

/// What the timeline must show, from the JSON Lines of the same run.
pub fn expected(lines: &[Value]) -> Vec<Expect> {
    let t0 = ns(&lines[0]["ts"]);
    let end = ns(&lines.last().unwrap()["ts"]);
    let mut forks: HashMap<i64, u64> = HashMap::new();
    let mut out = Vec::new();
    for l in lines {
        let pid = l["pid"].as_i64().unwrap_or(0);
        match l["event"].as_str().unwrap() {
            "fork" => {
                forks.insert(pid, ns(&l["ts"]).max(t0));
            }
            "exit" => {
                let s = forks.remove(&pid).expect("exit after fork");
                let status = match (l["code"].as_i64(), l["signal"].as_i64()) {
                    (Some(c), _) => format!("exit {c}"),
                    (None, Some(sig)) => format!("killed by {}", signame(sig)),
                    _ => "exit lost".to_string(),
                };
                out.push(Expect {
                    pid,
                    start_ns: s - t0,
                    dur_ns: ns(&l["ts"]) - s,
                    status,
                });
            }
            _ => {}
        }
    }
    for (pid, s) in forks {
        out.push(Expect {
            pid,
            start_ns: s - t0,
            dur_ns: end.max(s) - s,
            status: "running".into(),
        });
    }
    out
}

both_backends! {
/// Three jobs side by side and a failing one: a valid trace with a slice per process (times and
/// status as the JSON Lines say), jobs on parallel lanes, the failure marked; `replay` of the
/// recorded run writes the same bytes.
fn a_real_run_and_its_replay(backend: &str) {
    let chrome = tmp("live.chrome.json");
    let cap = tmp("cap.jsonl");
    let (out, lines) = run_on(
        backend,
        &["--chrome", &chrome, "--record", &cap],
        &["sh", "-c", "sleep 0.3 & sleep 0.2 & sh -c 'sleep 0.1; exit 3'; wait; exit 0"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&chrome).unwrap();
    let want = expected(&lines);
    assert_eq!(want.len(), 5, "{lines:?}");
    let got = validate(&text, &want).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(got.slices, 5);
    assert!(got.lanes >= 3, "three jobs at once need three lanes: {got:?}\n{text}");
    assert!(got.peak_running >= 4, "{got:?}");
    assert_eq!(got.instants.get("failure"), Some(&1), "{got:?}");
    assert!(got.counters >= 2);
    assert!(text.contains(r#""cmd":"sleep 0.3""#), "{text}");

    let replayed = tmp("replayed.chrome.json");
    let rep = Command::new(PROCTRACE)
        .args(["replay", &cap, "--tree", "none", "--chrome", &replayed])
        .output()
        .unwrap();
    assert!(rep.status.success(), "{}", stderr(&rep));
    assert_eq!(std::fs::read_to_string(&replayed).unwrap(), text, "replay differs");
}
}

/// An output that cannot be opened stops the run before the command starts.
#[test]
fn an_unwritable_chrome_file_is_an_error_before_running() {
    let (out, marker) = run_touching_marker(&["--chrome", "/nonexistent/dir/t.json"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("/nonexistent/dir/t.json"),
        "{}",
        stderr(&out)
    );
    assert!(!std::path::Path::new(&marker).exists(), "the command ran");
}

/// A killed proctrace leaves whole event lines: the file lacks only its closing `]` (after a
/// trailing comma), which is how both viewers read an unfinished trace.
#[test]
fn a_killed_tracer_leaves_a_loadable_trace() {
    let sh = shapes();
    let chrome = tmp("killed.chrome.json");
    let out_file = tmp("killed.jsonl");
    let mut child = Command::new(PROCTRACE)
        .args([
            "run",
            "-o",
            &out_file,
            "--chrome",
            &chrome,
            "--",
            sh,
            "spawn",
            "100000",
            "/bin/true",
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed mid-run: once slices are in the file, with the storm going on.
    wait_for_text(&chrome, "slices", |t| t.matches("\"ph\":\"X\"").count() > 10);
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    // The workload was orphaned by the kill: stop it.
    let lines = read_lines(&out_file);
    if let Some(root) = lines
        .iter()
        .find(|l| l["event"] == "fork")
        .and_then(|l| l["pid"].as_i64())
    {
        unsafe { libc::kill(root as i32, libc::SIGKILL) };
    }
    let text = std::fs::read_to_string(&chrome).unwrap();
    assert!(
        text.starts_with("[\n") && text.ends_with(",\n"),
        "{}",
        &text[text.len().saturating_sub(200)..]
    );
    for l in text.lines().skip(1) {
        let ev: Value = serde_json::from_str(l.strip_suffix(',').unwrap_or(l))
            .unwrap_or_else(|e| panic!("a torn line: {e}: {l}"));
        assert!(ev["ph"].is_string(), "{l}");
    }
    let closed = format!("{}]", text.trim_end().trim_end_matches(','));
    let all: Vec<Value> = serde_json::from_str(&closed).unwrap();
    let slices = all.iter().filter(|e| e["ph"] == "X").count();
    assert!(slices > 10, "slices were written while it ran: {slices}");
}

/// Under a `watch` filter a process is on the timeline when its fork or its exit passes: with
/// `--comm sh`, the `sleep`s that sh forks pass at their fork (the parent is sh) but not at their
/// exit (they are sleep by then), and still get their whole slice, the counter back to 0.
#[test]
fn a_watch_filter_keeps_whole_slices() {
    let chrome = tmp("filtered.chrome.json");
    let (out, _) = watch_sh(
        "sleep 0.5; sleep 0.2; sleep 0.2; exit 0",
        &[
            "--comm",
            "sh",
            "-o",
            "/dev/null",
            "--chrome",
            &chrome,
            "--duration",
            "10",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&chrome).unwrap();
    let all: Vec<Value> = serde_json::from_str(&text).unwrap();
    let sleeps: Vec<&Value> = all
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "sleep" && e["args"]["cmd"] == "sleep 0.2")
        .collect();
    assert_eq!(sleeps.len(), 2, "{text}");
    for s in &sleeps {
        assert_eq!(s["args"]["status"], "exit 0", "{text}");
        let dur = s["dur"].as_f64().unwrap();
        assert!(
            (150_000.0..2_000_000.0).contains(&dur),
            "a whole slice: {dur} µs\n{text}"
        );
    }
    let last = all.last().unwrap();
    assert_eq!(
        (last["ph"].as_str(), last["args"]["processes"].as_i64()),
        (Some("C"), Some(0)),
        "{text}"
    );
    let peak = all
        .iter()
        .filter_map(|e| e["args"]["processes"].as_i64())
        .max()
        .unwrap();
    assert!(
        peak <= 2,
        "the counter counts the shown processes only: {peak}\n{text}"
    );
}

/// A recorded build (`tests/fixtures/builds/NAME.jsonl`).
fn build_capture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/builds/{name}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// `proctrace ARGS --chrome FILE`: the timeline written.
fn chrome_of(args: &[&str], name: &str) -> String {
    let file = tmp(name);
    let out = Command::new(PROCTRACE)
        .args(args)
        .args(["--tree", "none", "--chrome", &file])
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    std::fs::read_to_string(&file).unwrap()
}

/// The same trace gives the same bytes whoever writes it: `replay` of a capture (twice),
/// `analyze` of the capture, and `analyze` of the JSON Lines that replay wrote; the Chrome
/// process is the traced root's pid, in every event.
#[test]
fn a_trace_is_the_same_bytes_whoever_writes_it() {
    for name in ["dash-subshell", "dash-exec", "libffi-run1"] {
        let cap = build_capture(name);
        let jsonl = tmp(&format!("{name}.same.jsonl"));
        let replayed = chrome_of(&["replay", &cap, "-o", &jsonl], &format!("{name}.r1.json"));
        let again = chrome_of(&["replay", &cap], &format!("{name}.r2.json"));
        let analyzed = chrome_of(&["analyze", &cap], &format!("{name}.a1.json"));
        let from_jsonl = chrome_of(&["analyze", &jsonl], &format!("{name}.a2.json"));
        assert!(replayed == again, "{name}: two replays differ");
        assert!(
            replayed == analyzed,
            "{name}: analyze of the capture differs from its replay"
        );
        assert!(
            replayed == from_jsonl,
            "{name}: analyze of the replay's JSON Lines differs"
        );
        let lines = read_lines(&jsonl);
        let root = lines.iter().find(|l| l["event"] == "fork").unwrap()["pid"]
            .as_i64()
            .unwrap();
        let all: Vec<Value> = serde_json::from_str(&replayed).unwrap();
        assert!(
            all.iter().all(|e| e["pid"].as_i64() == Some(root)),
            "{name}: pid {root}"
        );
        validate(&replayed, &expected(&lines)).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// The held-out case, recorded: dash's subshell is its fork image (which holds `sleep 0.3`)
/// then `sleep 0.4` for its ~0.4 s, both nested in its slice on its lane; `sh -c 'x=1; exec
/// /bin/sleep 0.2'` is `sh` then `sleep`.
#[test]
fn recorded_subshell_and_exec_show_each_image() {
    let cap = build_capture("dash-subshell");
    let jsonl = tmp("images.subshell.jsonl");
    let text = chrome_of(&["replay", &cap, "-o", &jsonl], "images.subshell.json");
    let got = validate(&text, &expected(&read_lines(&jsonl))).unwrap_or_else(|e| panic!("{e}"));
    // The README's facts: 27996 is the subshell, 27997 its sleep 0.3.
    let im: Vec<_> = got
        .images
        .iter()
        .map(|i| (i.pid, i.name.as_str(), i.cmd.as_str()))
        .collect();
    assert_eq!(
        im,
        [
            (27996, "[fork of sh]", "[fork of sh]"),
            (27996, "sleep", "/bin/sleep 0.4")
        ],
        "{text}"
    );
    assert_eq!(got.images_on_process_lane, 2, "{text}");
    let (fork, last) = (&got.images[0], &got.images[1]);
    let ms = |ns: i64| ns as f64 / 1e6;
    assert!(
        (390.0..420.0).contains(&ms(last.end_ns - last.start_ns)),
        "{last:?}"
    );
    assert!(
        (290.0..320.0).contains(&ms(fork.end_ns - fork.start_ns)),
        "{fork:?}"
    );
    // sleep 0.3 lies in the fork image, before sleep 0.4 starts.
    let all: Vec<Value> = serde_json::from_str(&text).unwrap();
    let s3 = all.iter().find(|e| e["args"]["cmd"] == "/bin/sleep 0.3").unwrap();
    let s3_start = (s3["ts"].as_f64().unwrap() * 1000.0).round() as i64;
    let s3_end = s3_start + (s3["dur"].as_f64().unwrap() * 1000.0).round() as i64;
    assert!(fork.start_ns < s3_start && s3_end <= fork.end_ns, "{text}");
    assert!(s3_end <= last.start_ns, "{text}");

    let cap = build_capture("dash-exec");
    let jsonl = tmp("images.exec.jsonl");
    let text = chrome_of(&["replay", &cap, "-o", &jsonl], "images.exec.json");
    let got = validate(&text, &expected(&read_lines(&jsonl))).unwrap_or_else(|e| panic!("{e}"));
    let im: Vec<_> = got
        .images
        .iter()
        .map(|i| (i.name.as_str(), i.cmd.as_str()))
        .collect();
    assert_eq!(
        im,
        [
            ("sh", "sh -c 'x=1; exec /bin/sleep 0.2'"),
            ("sleep", "/bin/sleep 0.2")
        ],
        "{text}"
    );
    let last = &got.images[1];
    assert!(
        (190.0..230.0).contains(&ms(last.end_ns - last.start_ns)),
        "{last:?}"
    );
    assert!(text.contains(r#""name":"sh → sleep","cat":"process""#), "{text}");
}

both_backends! {
/// The held-out case live: the run's timeline has the subshell's two images and is the same
/// bytes as a replay of its recording, its process the root's pid (not proctrace's).
fn a_live_subshell_and_its_replay(backend: &str) {
    let chrome = tmp("live-subshell.chrome.json");
    let cap = tmp("live-subshell.cap.jsonl");
    let (out, lines) = run_on(
        backend,
        &["--chrome", &chrome, "--record", &cap],
        &["sh", "-c", "(/bin/sleep 0.3; /bin/sleep 0.4); true"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&chrome).unwrap();
    let got = validate(&text, &expected(&lines)).unwrap_or_else(|e| panic!("{e}\n{text}"));
    // The subshell's images (on a loaded machine another fork may run 10 ms before its exec
    // and have images too).
    let sub = got.images.iter().find(|i| i.cmd == "/bin/sleep 0.4").unwrap().pid;
    let ims: Vec<_> = got.images.iter().filter(|i| i.pid == sub).collect();
    let names: Vec<_> = ims.iter().map(|i| i.cmd.as_str()).collect();
    assert_eq!(names, ["[fork of sh]", "/bin/sleep 0.4"], "{text}");
    let last = ims[1];
    let ms = (last.end_ns - last.start_ns) as f64 / 1e6;
    assert!((390.0..4_000.0).contains(&ms), "{last:?}");
    let root = lines.iter().find(|l| l["event"] == "fork").unwrap()["pid"].as_i64().unwrap();
    let all: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert!(all.iter().all(|e| e["pid"].as_i64() == Some(root)), "pid {root}\n{text}");
    assert_eq!(chrome_of(&["replay", &cap], "live-subshell.replayed.json"), text, "replay differs");
}
}
