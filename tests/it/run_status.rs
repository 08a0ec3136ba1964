//! Exit status pass-through, signal forwarding, failures to start.
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;

fn status_of(argv: &[&str]) -> Option<i32> {
    Command::new(PROCTRACE)
        .args(["run", "--tree", "none", "--"])
        .args(argv)
        .output()
        .unwrap()
        .status
        .code()
}

#[test]
fn exit_codes_pass_through_like_a_shell() {
    assert_eq!(status_of(&["sh", "-c", "exit 7"]), Some(7));
    assert_eq!(status_of(&["sh", "-c", "exit 0"]), Some(0));
    assert_eq!(status_of(&["sh", "-c", "kill -TERM $$"]), Some(143));
    assert_eq!(status_of(&["sh", "-c", "kill -KILL $$"]), Some(137));
}

#[test]
fn a_missing_command_is_127_and_says_so() {
    let out = Command::new(PROCTRACE)
        .args(["run", "--", "/nonexistent/cmd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(stderr(&out).contains("cannot run '/nonexistent/cmd'"));
}

#[test]
fn signals_to_proctrace_are_forwarded_to_the_command() {
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
            .args(["run", "--tree", "none", "--", "sh", "-c", &script])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_file(&marker);
        unsafe { libc::kill(child.id() as i32, sig) };
        let st = child.wait().unwrap();
        assert_eq!(st.code(), Some(code), "signal {sig}");
    }
}

#[test]
fn killing_the_tracer_leaves_only_whole_lines() {
    let sh = shapes();
    let out_file = tmp("killed.jsonl");
    let mut child = Command::new(PROCTRACE)
        .args(["run", "-o", &out_file, "--", sh, "spawn", "100000", "/bin/true"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let lines = read_lines(&out_file); // panics on any torn line
    assert!(lines.len() > 10, "some lines were written before the kill");
    let text = std::fs::read_to_string(&out_file).unwrap();
    assert!(text.ends_with('\n'));
    // The workload was orphaned by the kill: stop it.
    if let Some(root) = lines
        .iter()
        .find(|l| l["event"] == "fork")
        .and_then(|l| l["pid"].as_i64())
    {
        unsafe { libc::kill(root as i32, libc::SIGKILL) };
    }
}
