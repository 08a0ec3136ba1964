//! A recorded run replays to the same bytes, with no kernel involved.
use std::process::Command;

use crate::common::*;

both_backends! {
/// The JSON Lines, the git Trace2 event stream and the tree of a replay equal the live run's byte
/// for byte: the capture carries the header (tool, clock offset, backend), the run's decisions
/// (root, background children) and its summary.
fn replay_equals_the_live_run_byte_for_byte(backend: &str) {
    let cap = tmp("cap.jsonl");
    let live_t2 = tmp("live.t2.json");
    let (out, live, live_file) = run_file(
        &["--backend", backend, "--record", &cap, "--trace2-event", &live_t2],
        &["sh", "-c", "/bin/true; ls / >/dev/null; sh -c 'sleep 0.2; exit 3'; (sleep 0.3 &); exit 2"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(live.last().unwrap()["background"], 1);
    // The cost figures are part of what is replayed (and taskstats answered: its refusal would be
    // a live-only line on stderr).
    let exits: Vec<_> = live.iter().filter(|l| l["event"] == "exit").collect();
    assert!(
        !exits.is_empty() && exits.iter().all(|e| e["cpu_user_s"].is_number()),
        "{}",
        stderr(&out)
    );
    // eBPF's execs say the path exec'd, which the replay must say again.
    if backend == "ebpf" {
        let execs: Vec<_> = live.iter().filter(|l| l["event"] == "exec").collect();
        assert!(execs.iter().all(|e| e["filename"].is_string()), "{execs:?}");
    }
    let live_file = std::fs::read_to_string(live_file).unwrap();
    let replayed_file = tmp("replayed.jsonl");
    let replayed_t2 = tmp("replayed.t2.json");
    let rep = Command::new(PROCTRACE)
        .args(["replay", &cap, "-o", &replayed_file, "--trace2-event", &replayed_t2])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(rep.status.success(), "{}", stderr(&rep));
    assert_eq!(
        std::fs::read_to_string(&replayed_file).unwrap(),
        live_file,
        "JSON Lines differ"
    );
    assert_eq!(
        std::fs::read_to_string(&replayed_t2).unwrap(),
        std::fs::read_to_string(&live_t2).unwrap(),
        "trace2 streams differ"
    );
    assert_eq!(stderr(&rep), stderr(&out), "the tree differs");
}
}

#[test]
fn a_corrupt_capture_names_the_line() {
    let cap = tmp("bad.jsonl");
    std::fs::write(
        &cap,
        "{\"e\":\"exec\",\"ts\":1,\"tgid\":2}\nnot json\n{\"e\":\"exec\",\"ts\":1,\"tgid\":2}\n",
    )
    .unwrap();
    // Bad input, as for `analyze`: exit 65, naming the file and line, after every output was
    // written for what came before the bad line.
    let o = tmp("bad-replay-out.jsonl");
    let out = Command::new(PROCTRACE)
        .args(["replay", &cap, "-o", &o])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65));
    assert!(stderr(&out).contains(&format!("{cap}:2:")), "{}", stderr(&out));
    let written = std::fs::read_to_string(&o).unwrap();
    assert!(written.starts_with("{\"event\":\"start\""), "{written}");
    assert!(written.contains("\"event\":\"end\""), "{written}");
}
