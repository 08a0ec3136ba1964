//! Exit status pass-through, signal forwarding, failures to start.
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;

fn status_of(backend: &str, argv: &[&str]) -> Option<i32> {
    Command::new(PROCTRACE)
        .args(["run", "--backend", backend, "--tree", "none", "--"])
        .args(argv)
        .output()
        .unwrap()
        .status
        .code()
}

both_backends! {
fn exit_codes_pass_through_like_a_shell(backend: &str) {
    assert_eq!(status_of(backend, &["sh", "-c", "exit 7"]), Some(7));
    assert_eq!(status_of(backend, &["sh", "-c", "exit 0"]), Some(0));
    assert_eq!(status_of(backend, &["sh", "-c", "kill -TERM $$"]), Some(143));
    assert_eq!(status_of(backend, &["sh", "-c", "kill -KILL $$"]), Some(137));
    // SIGPIPE is back to its default for the command (Rust ignores it in proctrace itself).
    assert_eq!(status_of(backend, &["sh", "-c", "yes | head -c1 >/dev/null; exit 0"]), Some(0));
    assert_eq!(
        status_of(backend, &["sh", "-c", "yes | true; kill -0 $$"]),
        Some(0),
        "yes must die of SIGPIPE, not spin"
    );
}
}

both_backends! {
fn a_missing_command_is_127_and_says_so(backend: &str) {
    let out = Command::new(PROCTRACE)
        .args(["run", "--backend", backend, "--", "/nonexistent/cmd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(stderr(&out).contains("cannot run '/nonexistent/cmd'"), "{}", stderr(&out));
    let out = Command::new(PROCTRACE)
        .args(["run", "--backend", backend, "--", "no-such-command-anywhere"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    let out = Command::new(PROCTRACE)
        .args(["run", "--backend", backend, "--", "/etc/passwd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(126), "not executable: {}", stderr(&out));
}
}

both_backends! {
fn signals_to_proctrace_are_forwarded_to_the_command(backend: &str) {
    for (sig, code) in [
        (libc::SIGTERM, 42),
        (libc::SIGINT, 41),
        (libc::SIGHUP, 40),
        (libc::SIGQUIT, 39),
    ] {
        let marker = tmp("ready");
        let script = format!(
            "trap 'exit 42' TERM; trap 'exit 41' INT; trap 'exit 40' HUP; trap 'exit 39' QUIT; touch {marker}; while :; do sleep 0.02; done"
        );
        let mut child = Command::new(PROCTRACE)
            .args(["run", "--backend", backend, "--tree", "none", "--", "sh", "-c", &script])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_file(&marker);
        unsafe { libc::kill(child.id() as i32, sig) };
        let st = child.wait().unwrap();
        assert_eq!(st.code(), Some(code), "signal {sig}");
    }
}
}

both_backends! {
fn killing_the_tracer_leaves_only_whole_lines(backend: &str) {
    let sh = shapes();
    let out_file = tmp("killed.jsonl");
    let mut child = Command::new(PROCTRACE)
        .args(["run", "--backend", backend, "-o", &out_file, "--", sh, "spawn", "100000", "/bin/true"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed mid-run: once lines are in the file, with the storm going on.
    wait_for_text(&out_file, "lines", |t| t.matches('\n').count() > 50);
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let lines = read_lines(&out_file); // panics on any torn line
    assert!(lines.len() > 10, "some lines were written before the kill");
    let text = std::fs::read_to_string(&out_file).unwrap();
    assert!(text.ends_with('\n'));
    // The workload was orphaned by the kill: stop it.
    let root = lines
        .iter()
        .find(|l| l["event"] == "fork")
        .and_then(|l| l["pid"].as_i64())
        .unwrap();
    // No process of the tree is left stopped by a tracer that is gone: it keeps spawning.
    let state = |pid: i64| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit(") ").next().and_then(|r| r.chars().next()))
    };
    let stat = || std::fs::read_to_string(format!("/proc/{root}/stat")).unwrap_or_default();
    let forks_then = stat();
    // Its figures (CPU, faults) move as it keeps forking; a stopped one's never do.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while stat() == forks_then && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_ne!(state(root), Some('t'), "left in a tracing stop");
    assert_ne!(stat(), forks_then, "the workload runs on");
    unsafe { libc::kill(root as i32, libc::SIGKILL) };
}
}
