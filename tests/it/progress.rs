//! The live status line of `run`, under a real pseudo-terminal (Python's `pty` module).
use std::process::Command;

use crate::common::*;

/// Runs `argv` with stdin, stdout and stderr on a fresh pseudo-terminal; returns everything the
/// terminal received and the exit code.
fn on_pty(argv: &[&str]) -> (String, i32) {
    const SCRIPT: &str = r#"
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        d = os.read(fd, 65536)
    except OSError:
        break
    if not d:
        break
    out += d
_, st = os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
sys.exit(os.waitstatus_to_exitcode(st))
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .args(argv)
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .output()
        .unwrap();
    assert!(out.status.code().is_some(), "{}", stderr(&out));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap(),
    )
}

/// `N running · M finished · K failed` in one drawn status.
fn counts(status: &str) -> Option<(u64, u64, u64)> {
    let mut it = status.split(" · ");
    let num = |s: Option<&str>, word: &str| -> Option<u64> {
        let s = s?;
        let i = s.find(&format!(" {word}"))?;
        s[..i].rsplit(' ').next()?.parse().ok()
    };
    Some((
        num(it.next(), "running")?,
        num(it.next(), "finished")?,
        num(it.next(), "failed")?,
    ))
}

both_backends! {
fn status_line_shows_and_is_cleared(backend: &str) {
    let (text, code) = on_pty(&[
        PROCTRACE,
        "run",
        "--backend",
        backend,
        "--",
        "sh",
        "-c",
        "sleep 1 & sleep 1; wait; exit 0",
    ]);
    assert_eq!(code, 0, "{text:?}");
    // indicatif clears the line with CR + erase-line before each redraw and at the end.
    let parts: Vec<&str> = text.split("\r\x1b[2K").collect();
    assert!(parts.len() > 3, "redrawn: {text:?}");
    let drawn: Vec<(u64, u64, u64)> = parts.iter().filter_map(|p| counts(p)).collect();
    assert!(!drawn.is_empty(), "{text:?}");
    for &(running, finished, failed) in &drawn {
        assert!(running <= 3 && finished <= 3 && failed == 0, "{drawn:?}");
    }
    assert!(
        drawn.contains(&(3, 0, 0)),
        "sh and both sleeps seen running: {drawn:?}"
    );
    assert!(
        parts
            .iter()
            .any(|p| p.contains("longest") && p.contains("sleep 1")),
        "the longest-running command named: {text:?}"
    );
    // The last thing after the final clear is the tree, and no status text.
    let last = parts.last().unwrap();
    assert!(!last.contains(" running · "), "cleared: {last:?}");
    assert!(
        last.contains("sh -c 'sleep 1 & sleep 1; wait; exit 0'") && last.contains("3 processes"),
        "{last:?}"
    );
}
}

#[test]
fn no_status_line_when_stderr_is_not_a_terminal() {
    let err_file = tmp("stderr.txt");
    let cmd = format!("exec {PROCTRACE} run -- sh -c 'sleep 0.5 & sleep 0.5; wait; echo done' 2>{err_file}");
    let (text, code) = on_pty(&["sh", "-c", &cmd]);
    assert_eq!(code, 0, "{text:?}");
    assert!(text.contains("done"), "the command's output: {text:?}");
    assert!(!text.contains('\x1b') && !text.contains("running"), "{text:?}");
    let err = std::fs::read_to_string(&err_file).unwrap();
    assert!(!err.contains('\x1b'), "no escape codes: {err:?}");
    assert!(!err.contains(" running · "), "no status text: {err:?}");
    assert!(err.contains("3 processes"), "the tree is still there: {err:?}");
}

#[test]
fn quiet_prints_nothing_but_errors() {
    let o = tmp("quiet.jsonl");
    let (text, code) = on_pty(&[
        PROCTRACE,
        "run",
        "--quiet",
        "-o",
        &o,
        "--",
        "sh",
        "-c",
        "sleep 0.5; echo hi; exit 3",
    ]);
    assert_eq!(code, 3, "{text:?}");
    assert_eq!(text, "hi\r\n", "only the command's own output");
    let lines = read_lines(&o);
    assert_eq!(lines.last().unwrap()["event"], "end", "the file is still written");
    let (text, code) = on_pty(&[PROCTRACE, "run", "-q", "--", "/nonexistent/cmd"]);
    assert_eq!(code, 127);
    assert!(
        text.contains("cannot run '/nonexistent/cmd'"),
        "errors still print: {text:?}"
    );
    assert!(!text.contains('\x1b'), "{text:?}");
}
