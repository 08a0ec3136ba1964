//! `watch`: system-wide and subtree streams.
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;

#[test]
fn watch_system_wide_sees_a_marked_process() {
    let out_file = tmp("watch.jsonl");
    let w = Command::new(PROCTRACE)
        .args(["watch", "-o", &out_file, "--duration", "1.5"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let st = Command::new("/bin/sh")
        .args(["-c", "/bin/sleep 0.2; exit 6"])
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(6));
    let out = w.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = read_lines(&out_file);
    let ps = processes(&lines);
    let sh = find(&ps, &["/bin/sh", "-c", "/bin/sleep 0.2; exit 6"]);
    assert_eq!(sh.exits[0]["code"], 6);
    assert!(ps.values().any(|p| p.ppid == sh.pid));
    assert!(
        stderr(&out).contains("events lost"),
        "totals printed: {}",
        stderr(&out)
    );
}

#[test]
fn watch_a_subtree_until_it_is_gone() {
    let mut target = Command::new("sh")
        .args(["-c", "sleep 0.6; /bin/sleep 0.2; exit 0"])
        .spawn()
        .unwrap();
    let pid = target.id();
    let out = Command::new(PROCTRACE)
        .args(["watch", "-p", &pid.to_string(), "--duration", "10"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    target.wait().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("{pid}")), "{text}");
    assert!(text.contains("(already running)"), "{text}");
    assert!(text.contains("/bin/sleep 0.2"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("exit") && l.contains(&pid.to_string())),
        "{text}"
    );
}
