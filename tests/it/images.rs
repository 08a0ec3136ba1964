//! Images (issue 23 item 1): a process's life is its fork image, when it stands on its own,
//! then one image per exec. The held-out case, dash's `(a; b)` subshell that runs `a` as a
//! child and then execs `b`, read from the recorded fixture and from a live run on each
//! backend: the tree and the summary (text, Markdown, JSON) read `… → sleep 0.3 → sleep 0.4`
//! with sleep 0.4 at ~0.4 s, never 0.7 s.
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::common::*;

const HELD_OUT: &str = "(/bin/sleep 0.3; /bin/sleep 0.4); true";

/// What the tree, the summary text, its JSON and Markdown said.
struct Said {
    stderr: String,
    json: Value,
    md: String,
}

fn said(out: &std::process::Output, json: &str, md: &str) -> Said {
    Said {
        stderr: stderr(out),
        json: serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap(),
        md: std::fs::read_to_string(md).unwrap(),
    }
}

/// Seconds of a `1.23s`/`401.1ms` duration word.
fn secs(word: &str) -> f64 {
    if let Some(ms) = word.strip_suffix("ms") {
        ms.parse::<f64>().unwrap() / 1e3
    } else if let Some(s) = word.strip_suffix('s') {
        s.parse().unwrap()
    } else {
        panic!("not a duration: {word}")
    }
}

/// Everything a person and a tool read says the subshell ran `[fork of sh]` ~0.3 s (with
/// sleep 0.3 as its child), then sleep 0.4 ~0.4 s.
fn check(s: &Said) {
    let text = &s.stderr;
    // The tree: the subshell's line names both images, the second's time in the column.
    let line = text
        .lines()
        .find(|l| l.contains("[fork of sh]") && l.contains("→ /bin/sleep 0.4"))
        .unwrap_or_else(|| panic!("no subshell line:\n{text}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let fork_at = words.iter().position(|w| *w == "sh]").unwrap();
    assert!((secs(words[fork_at + 1]) - 0.3).abs() < 0.1, "{line}");
    let arrow = words.iter().position(|w| *w == "→").unwrap();
    assert_eq!(&words[arrow + 1..arrow + 3], ["/bin/sleep", "0.4"], "{line}");
    assert!((secs(words[arrow + 3]) - 0.4).abs() < 0.1, "{line}");
    // The summary's critical path: sh -c, [fork of sh], sleep 0.3, sleep 0.4, in that order.
    let path: Vec<&Value> = s.json["critical_path"].as_array().unwrap().iter().collect();
    let names: Vec<String> = path
        .iter()
        .map(|p| match p["argv"].as_array() {
            Some(a) => a
                .iter()
                .map(|w| w.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(" "),
            None => p["program"].as_str().unwrap().to_string(),
        })
        .collect();
    assert_eq!(
        names,
        [
            format!("sh -c {HELD_OUT}"),
            "[fork of sh]".into(),
            "/bin/sleep 0.3".into(),
            "/bin/sleep 0.4".into()
        ],
        "{:#}",
        s.json["critical_path"]
    );
    let d = |i: usize| path[i]["duration_s"].as_f64().unwrap();
    assert!((d(3) - 0.4).abs() < 0.1 && (d(1) - 0.3).abs() < 0.1, "{path:?}");
    assert_eq!(path[3]["image"], 1);
    assert_eq!(path[1]["image"], 0);
    assert_eq!(path[2]["depth"], 2);
    // The text and Markdown path list them in that order too.
    for (what, body) in [("text", text.as_str()), ("markdown", s.md.as_str())] {
        // After the root's line (its command names both sleeps), in this order.
        let mut from = body
            .find("ritical path")
            .unwrap_or_else(|| panic!("{what}: {body}"));
        for needle in ["[fork of sh]", "/bin/sleep 0.3", "/bin/sleep 0.4"] {
            from += body[from..]
                .find(needle)
                .unwrap_or_else(|| panic!("{what}: no {needle} after the last in\n{body}"));
        }
    }
    // Slowest: sleep 0.4 is 0.4 s.
    let slow = s.json["slowest"].as_array().unwrap();
    let s4 = slow
        .iter()
        .find(|x| x["argv"][1] == "0.4")
        .unwrap_or_else(|| panic!("{slow:?}"));
    assert!((s4["duration_s"].as_f64().unwrap() - 0.4).abs() < 0.1, "{s4}");
    // By program: sleep twice (0.3 + 0.4), the subshell's fork image once.
    let bp = &s.json["by_program"];
    assert_eq!(bp["sleep"]["count"], 2, "{bp}");
    assert!(
        (bp["sleep"]["total_s"].as_f64().unwrap() - 0.7).abs() < 0.15,
        "{bp}"
    );
    assert_eq!(bp["[fork of sh]"]["count"], 1, "{bp}");
}

#[test]
fn the_recorded_held_out_case_reads_fork_then_sleep_03_then_sleep_04() {
    let cap = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/builds/dash-subshell.jsonl");
    let (json, md) = (tmp("held.json"), tmp("held.md"));
    let out = Command::new(PROCTRACE)
        .arg("replay")
        .arg(&cap)
        .args(["--summary-json", &json, "--summary-md", &md, "--tree", "full"])
        .env("NO_COLOR", "1")
        .env("COLUMNS", "120")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    check(&said(&out, &json, &md));
}

both_backends! {
    /// The same, live: real dash, real sleeps, on each backend.
    fn the_live_held_out_case_reads_fork_then_sleep_03_then_sleep_04(backend: &str) {
        let (json, md) = (tmp("live.json"), tmp("live.md"));
        let out = Command::new(PROCTRACE)
            .args(["run", "--backend", backend, "--summary-json", &json, "--summary-md", &md])
            .args(["--tree", "full", "--", "/bin/sh", "-c", HELD_OUT])
            .env("NO_COLOR", "1")
            .env("COLUMNS", "120")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let mut s = said(&out, &json, &md);
        // `run -- /bin/sh` names argv[0] as given.
        let p0 = s.json["critical_path"][0]["argv"][0].clone();
        assert_eq!(p0, "/bin/sh");
        s.json["critical_path"][0]["argv"][0] = "sh".into();
        check(&s);
    }
}

/// `sh -c 'x=1; exec /bin/sleep 0.2'`: one process, two images on its tree line; the summary
/// counts sleep 0.2 s, sh a few ms.
#[test]
fn an_exec_after_shell_work_is_two_images() {
    let cap = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/builds/dash-exec.jsonl");
    let json = tmp("exec.json");
    let out = Command::new(PROCTRACE)
        .arg("replay")
        .arg(&cap)
        .args(["--summary-json", &json, "--tree", "full"])
        .env("NO_COLOR", "1")
        .env("COLUMNS", "120")
        .output()
        .unwrap();
    let text = stderr(&out);
    assert!(
        text.lines()
            .any(|l| l.contains("28002 sh -c 'x=1; exec /bin/sleep 0.2' ")
                && l.contains("ms → /bin/sleep 0.2 ")),
        "{text}"
    );
    assert!(!text.contains("exec ×2"), "{text}");
    let j: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let bp = &j["by_program"];
    assert!(
        (bp["sleep"]["total_s"].as_f64().unwrap() - 0.2).abs() < 0.05,
        "{bp}"
    );
    assert!(bp["sh"]["total_s"].as_f64().unwrap() < 0.05, "{bp}");
    let path = j["critical_path"].as_array().unwrap();
    assert_eq!(path.len(), 2, "{path:?}");
    assert_eq!(
        (path[0]["image"].clone(), path[1]["image"].clone()),
        (0.into(), 1.into())
    );
}
