//! A recorded run replays to the same lines, with no kernel involved.
use std::process::Command;

use crate::common::*;

#[test]
fn record_then_replay_gives_the_same_facts() {
    let cap = tmp("cap.jsonl");
    let (out, live) = run(
        &["--record", &cap],
        &["sh", "-c", "/bin/true; sh -c 'sleep 0.2; exit 3'; exit 2"],
    );
    assert_eq!(out.status.code(), Some(2));
    let root = live.iter().find(|l| l["event"] == "fork").unwrap()["pid"]
        .as_i64()
        .unwrap();
    let replayed_file = tmp("replayed.jsonl");
    let out = Command::new(PROCTRACE)
        .args(["replay", &cap, "--root", &root.to_string(), "-o", &replayed_file])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let replayed = read_lines(&replayed_file);
    let body = |v: &[serde_json::Value]| -> Vec<String> {
        v.iter()
            .filter(|l| !matches!(l["event"].as_str(), Some("start" | "end" | "background")))
            .map(|l| l.to_string())
            .collect()
    };
    assert_eq!(body(&live), body(&replayed));
    assert!(stderr(&out).contains("sh -c 'sleep 0.2; exit 3'"));
}

#[test]
fn a_corrupt_capture_names_the_line() {
    let cap = tmp("bad.jsonl");
    std::fs::write(
        &cap,
        "{\"e\":\"exec\",\"ts\":1,\"tgid\":2}\nnot json\n{\"e\":\"exec\",\"ts\":1,\"tgid\":2}\n",
    )
    .unwrap();
    let out = Command::new(PROCTRACE).args(["replay", &cap]).output().unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(stderr(&out).contains(&format!("{cap}:2:")), "{}", stderr(&out));
}
